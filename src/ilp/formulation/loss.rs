//! Group 11 of `formulations/README.md`: each sharing loss is the chosen option's coefficient
//! times the job's pressure of that kind, exactly, by one big-M row per option.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, lin};
use crate::objective::Sharing;

/// Group 11: `l_j ≥ coef_k · P_j − coef_k · Pmax_j · (1 − y_jk)` for every option `k`, plus the valid
/// `l_j ≥ (min_k coef_k) · P_j`.
pub(super) fn losses(model: &mut Model, ctx: &Ctx<'_>, jobs: &[JobVars]) {
    let servers = ctx.snapshot.cluster.servers.len() as f64;
    let switches = ctx.topology.switches().len() as f64;
    for jv in jobs {
        let job = ctx.job(jv);
        let (w_max, p_max) = (jv.w_max(), jv.p_max());
        let gpw = f64::from(job.demand.gpus_per_worker);
        for kind in Sharing::ALL {
            let p = &jv.pressure[kind.index()];
            if p.is_empty() {
                continue;
            }
            // Big-M: the most pressure the job can meet with any of its options — the lesser of
            // every pair variable at its most, and the places the job can hold at once times
            // the most one of them can carry. A pair variable sums co-runners, so its most is
            // its own (see group 10), not 1.
            let most = |&(c, _, m): &(f64, Variable, f64)| c * m;
            let all: f64 = p.iter().map(most).sum();
            let one = p.iter().map(most).fold(0.0, f64::max);
            let places = match kind {
                Sharing::Colocation => w_max.min(servers),
                Sharing::Pcie => (w_max * gpw).min(switches),
                Sharing::Nic => (w_max + p_max).min(servers),
            };
            let pmax = all.min(places * one);
            let coefs: Vec<f64> = jv.options.iter().map(|o| o.terms.coef(kind)).collect();
            let loss = jv.loss[kind.index()];
            for (k, &coef) in coefs.iter().enumerate() {
                if coef <= 0.0 {
                    continue;
                }
                // Binding only for the chosen option.
                let mut e: Vec<(f64, Variable)> = vec![(1.0, loss)];
                e.extend(p.iter().map(|&(c, x, _)| (-coef * c, x)));
                e.push((-coef * pmax, jv.y[k]));
                model.push(Group::Losses, lin(&e).geq(-coef * pmax));
            }
            // Valid for every option (pressure is 0 when the job waits): strengthens the
            // relaxation, where the big-M rows above are slack.
            let min_coef = coefs.iter().copied().fold(f64::INFINITY, f64::min);
            if min_coef > 0.0 && min_coef.is_finite() {
                let mut e: Vec<(f64, Variable)> = vec![(1.0, loss)];
                e.extend(p.iter().map(|&(c, x, _)| (-min_coef * c, x)));
                model.push(Group::Losses, lin(&e).geq(0.0));
            }
        }
    }
}
