//! Groups 3–5 of `formulations/README.md`: a job's GPUs sit under the switches of the servers
//! its workers are on, all on the option's GPU type, and PS jobs know where any of their tasks is.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::model::Architecture;

/// Group 3: `Σ_{b on s} g_jb = gpw_j · m_js`; `m_js ≤ M v_js`, `v_js ≤ m_js`; `g_jb ≤ cap_b u_jb`,
/// `u_jb ≤ g_jb`.
pub(super) fn gpus_follow_workers(model: &mut Model, ctx: &Ctx<'_>, jv: &JobVars) {
    let gpw = f64::from(ctx.job(jv).demand.gpus_per_worker);
    for s in 0..jv.m.len() {
        let Some(ms) = jv.m[s] else { continue };
        let mut e: Vec<(f64, Variable)> = vec![(-gpw, ms)];
        for &b in ctx.topology.switches_on(s) {
            e.push((1.0, jv.g[&b].0));
        }
        model.push(Group::GpusFollowWorkers, lin(&e).eq(0.0));
        let vs = jv.v[s].expect("v exists with m");
        let cap = model.info_ub(ms);
        model.push(
            Group::GpusFollowWorkers,
            lin(&[(1.0, ms), (-cap, vs)]).leq(0.0),
        );
        model.push(
            Group::GpusFollowWorkers,
            lin(&[(1.0, vs), (-1.0, ms)]).leq(0.0),
        );
    }
    for (&b, &(gv, uv)) in &jv.g {
        let cap = ctx.topology.switch(b).gpus.len() as f64;
        model.push(
            Group::GpusFollowWorkers,
            lin(&[(1.0, gv), (-cap, uv)]).leq(0.0),
        );
        model.push(
            Group::GpusFollowWorkers,
            lin(&[(1.0, uv), (-1.0, gv)]).leq(0.0),
        );
    }
}

/// Group 4: `Σ_{s: type(s)≠τ} m_js ≤ W_j (1 − Σ_{k: τ_k=τ} y_jk)` for every type `τ` — needed only
/// where the job could mix types.
pub(super) fn one_gpu_type(model: &mut Model, ctx: &Ctx<'_>, jv: &JobVars) {
    let servers = &ctx.snapshot.cluster.servers;
    let mut types: Vec<&str> = jv.options.iter().map(|o| o.gpu_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let mixed = types.len() > 1
        || (0..servers.len()).any(|s| jv.m[s].is_some() && servers[s].gpu_type != types[0]);
    if !mixed {
        return;
    }
    let w_max = jv.w_max();
    for ty in &types {
        let mut e: Vec<(f64, Variable)> = (0..servers.len())
            .filter(|&s| servers[s].gpu_type != *ty)
            .filter_map(|s| jv.m[s].map(|x| (1.0, x)))
            .collect();
        e.extend(
            jv.ys_where(|o| o.gpu_type == *ty)
                .into_iter()
                .map(|x| (w_max, x)),
        );
        model.push(Group::OneGpuType, lin(&e).leq(w_max));
    }
}

/// Group 5: PS jobs: `v_js ≤ a_js ≤ v_js + q_js`, `q_js ≤ P_j a_js`.
pub(super) fn presence(model: &mut Model, ctx: &Ctx<'_>, jv: &JobVars) {
    let job = ctx.job(jv);
    if job.arch != Architecture::ParameterServer {
        return;
    }
    let p_max = jv.p_max().max(1.0);
    for s in 0..jv.q.len() {
        let (qs, as_) = (
            jv.q[s].expect("PS jobs have q"),
            jv.a[s].expect("PS jobs have a"),
        );
        if let Some(vs) = jv.v[s] {
            model.push(Group::Presence, lin(&[(1.0, vs), (-1.0, as_)]).leq(0.0));
            model.push(
                Group::Presence,
                lin(&[(1.0, as_), (-1.0, vs), (-1.0, qs)]).leq(0.0),
            );
        } else {
            model.push(Group::Presence, lin(&[(1.0, as_), (-1.0, qs)]).leq(0.0));
        }
        model.push(Group::Presence, lin(&[(1.0, qs), (-p_max, as_)]).leq(0.0));
    }
}
