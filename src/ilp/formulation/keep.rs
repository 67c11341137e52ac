//! Group 12 of `formulations/README.md`: `keep_j` = the running job stays exactly where it is
//! (same GPU count under every switch, same PS count on every server), which pays back its
//! restart cost.

use std::collections::BTreeMap;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::error::{Error, Result};
use crate::model::ServerIdx;
use crate::model::{Architecture, SwitchId};

/// Group 12: `keep_j ≤ run_j`; `|g_jb − cur_jb| ≤ cap_b (1 − keep_j)` for every switch;
/// `|q_js − cur_js| ≤ P_j (1 − keep_j)` for every server; `keep_j = 0` when the current
/// placement uses a switch the job has no variable for.
pub(super) fn keep(model: &mut Model, ctx: &Ctx<'_>, jv: &JobVars) -> Result<()> {
    let job = ctx.job(jv);
    let (Some(kv), Some(cur)) = (jv.keep, &job.run.current) else {
        return Ok(());
    };
    let mut cur_g: BTreeMap<SwitchId, f64> = BTreeMap::new();
    for w in &cur.workers {
        for &gi in &w.gpus {
            let (b, _) =
                ctx.topology
                    .switch_of(w.server.0, gi)
                    .ok_or_else(|| Error::InvalidInstance {
                        context: "snapshot".into(),
                        reason: format!(
                            "job {}: current GPU {gi} of server {} not found",
                            job.id, w.server
                        ),
                    })?;
            *cur_g.entry(b).or_default() += 1.0;
        }
    }
    let mut pinned = true;
    for (b, sw) in ctx.topology.switches().iter().enumerate() {
        let b = SwitchId(b);
        let c = cur_g.get(&b).copied().unwrap_or(0.0);
        match jv.g.get(&b) {
            Some(&(gv, _)) => {
                let cap = sw.gpus.len() as f64;
                model.push(Group::Keep, lin(&[(1.0, gv), (cap, kv)]).leq(c + cap));
                model.push(Group::Keep, lin(&[(-1.0, gv), (c, kv)]).leq(0.0));
            }
            None if c > 0.0 => pinned = false,
            None => {}
        }
    }
    if job.arch == Architecture::ParameterServer {
        let p_max = jv.p_max();
        for s in 0..jv.q.len() {
            let c = cur.ps.iter().filter(|p| p.server == ServerIdx(s)).count() as f64;
            let qs = jv.q[s].expect("PS jobs have q");
            model.push(Group::Keep, lin(&[(1.0, qs), (p_max, kv)]).leq(c + p_max));
            model.push(Group::Keep, lin(&[(-1.0, qs), (c, kv)]).leq(0.0));
        }
    }
    model.push(
        Group::Keep,
        lin(&[(1.0, kv)]).leq(if pinned { 1.0 } else { 0.0 }),
    );
    let mut e = jv.run();
    e.push((-1.0, kv));
    model.push(Group::Keep, lin(&e).geq(0.0));
    Ok(())
}
