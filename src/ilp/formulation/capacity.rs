//! Group 8 of `formulations/README.md`: no PCIe switch holds more GPUs than it has, no server
//! gives more cores or memory than it has.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::model::SwitchId;

/// Group 8: `Σ_j g_jb ≤ cap_b` (where the variables' own bounds do not already say it);
/// `Σ_j (cpu_w m_js + cpu_p q_js) ≤ CPU_s`; the same for memory. A job whose options differ
/// in CPU/memory tier splits its workers by tier, `Σ_t mt_jts = m_js` with
/// `mt_jts ≤ ub(m_js) · Σ_{k: tier t} y_jk` (one option at most, so every worker takes the
/// chosen option's tier), and its workers hold `Σ_t cpu_t mt_jts` cores.
pub(super) fn capacity(model: &mut Model, ctx: &Ctx<'_>, jobs: &[JobVars]) {
    for jv in jobs {
        for (tier, row) in jv.m_tier.iter().enumerate() {
            let ys = jv.ys_where(|o| usize::from(o.tier) == tier);
            for &mt in row.iter().flatten() {
                let ub = model.info_ub(mt);
                let mut e = vec![(1.0, mt)];
                e.extend(ys.iter().map(|&y| (-ub, y)));
                model.push(Group::Capacity, lin(&e).leq(0.0));
            }
        }
        if !jv.m_tier.is_empty() {
            for (s, ms) in jv.m.iter().enumerate() {
                let Some(ms) = *ms else { continue };
                let mut e = vec![(-1.0, ms)];
                e.extend(
                    jv.m_tier
                        .iter()
                        .filter_map(|row| row[s])
                        .map(|mt| (1.0, mt)),
                );
                model.push(Group::Capacity, lin(&e).eq(0.0));
            }
        }
    }
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
            let job = ctx.job(jv);
            let d = job.demand;
            if jv.m_tier.is_empty() {
                if let Some(ms) = jv.m[s] {
                    cpu.push((d.cpu_per_worker, ms));
                    mem.push((d.mem_per_worker_gib, ms));
                }
            } else {
                for (tier, row) in jv.m_tier.iter().enumerate() {
                    if let Some(mt) = row[s] {
                        let (c, m) = job.worker_hold(tier as u8);
                        cpu.push((c, mt));
                        mem.push((m, mt));
                    }
                }
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
