//! Group 8 of `formulations/README.md`: no PCIe switch holds more GPUs than it has, no server
//! gives more cores or memory than it has.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::model::SwitchId;

/// Group 8: `Σ_j g_jb ≤ cap_b` (where the variables' own bounds do not already say it);
/// `Σ_j (cpu_w m_js + cpu_p q_js) ≤ CPU_s`; the same for memory.
pub(super) fn capacity(model: &mut Model, ctx: &Ctx<'_>, jobs: &[JobVars]) {
    for (b, sw) in ctx.topology.switches().iter().enumerate() {
        let b = SwitchId(b);
        let cap = sw.gpus.len() as f64;
        let terms: Vec<(f64, Variable)> = jobs
            .iter()
            .filter_map(|jv| jv.g.get(&b).map(|&(gv, _)| (1.0, gv)))
            .collect();
        if terms.len() > 1 || terms.iter().any(|&(_, gv)| model.info_ub(gv) > cap) {
            model.push(Group::Capacity, lin(&terms).leq(cap));
        }
    }
    for (s, srv) in ctx.snapshot.cluster.servers.iter().enumerate() {
        let mut cpu = Vec::new();
        let mut mem = Vec::new();
        for jv in jobs {
            let d = ctx.job(jv).demand;
            if let Some(ms) = jv.m[s] {
                cpu.push((d.cpu_per_worker, ms));
                mem.push((d.mem_per_worker_gib, ms));
            }
            if let Some(qs) = jv.q[s] {
                cpu.push((d.cpu_per_ps, qs));
                mem.push((d.mem_per_ps_gib, qs));
            }
        }
        if !cpu.is_empty() {
            model.push(Group::Capacity, lin(&cpu).leq(srv.cpu_cores));
            model.push(Group::Capacity, lin(&mem).leq(srv.memory_gib));
        }
    }
}
