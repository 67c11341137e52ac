//! Group 14 of `formulations/README.md`: valid inequalities that let the linear relaxation see
//! co-location. Without them the relaxation spreads every job thinly over every server (`v_js`
//! fractional), the big-M rows of group 10 are slack, and the root bound is the
//! contention-free optimum. Two facts hold in every integer solution and cut that off:
//!
//! * a running job is somewhere: `Σ_s v_js ≥ run_j` (so the presences of the running jobs add up
//!   to at least their number, however thinly they are spread);
//! * `n` jobs on one server make `n(n−1)/2` pairs, and `n(n−1)/2 ≥ t·n − t(t+1)/2` for every
//!   integer `t` (the chords of a convex function through consecutive integers). With a pair
//!   variable `z_ijs = v_is·v_js` (McCormick: `z ≤ v_is`, `z ≤ v_js`, `z ≥ v_is + v_js − 1`)
//!   that reads `Σ_{i<j} z_ijs ≥ t·Σ_j v_js − t(t+1)/2` for `t = 1 … (most jobs the server can
//!   hold) − 1`, and the co-location pressure is priced pair by pair:
//!   `ωcol_js ≥ Σ_{i≠j} c_ji(s)·z_ijs`.
//!
//! So a relaxation that runs more jobs than there are servers must pay for the pairs that makes,
//! at the cheapest pairs' price. Every row is valid (it holds at `z = v·v` for every integer
//! point), so no schedule is cut and the optimum is unchanged.

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, ShareDef, lin};
use crate::model::JobPos;
use crate::objective::RoundPricing;

/// Group 14: presence cover per job, pair variables, pair-priced co-location and clique rows
/// per server.
pub(super) fn colocation_cuts(
    model: &mut Model,
    ctx: &Ctx<'_>,
    pricing: &RoundPricing<'_>,
    jobs: &[JobVars],
) {
    // A running job has workers on at least one server.
    for jv in jobs {
        if jv.options.is_empty() {
            continue;
        }
        let mut e: Vec<(f64, Variable)> = jv.v.iter().flatten().map(|&x| (1.0, x)).collect();
        e.extend(jv.y.iter().map(|&x| (-1.0, x)));
        model.push(Group::ColocationCuts, lin(&e).geq(0.0));
    }
    let servers = &ctx.snapshot.cluster.servers;
    for s in 0..servers.len() {
        let here: Vec<usize> = (0..jobs.len())
            .filter(|&j| !jobs[j].options.is_empty() && jobs[j].v[s].is_some())
            .collect();
        if here.len() < 2 {
            continue;
        }
        // Each job present holds at least gpus_per_worker GPUs of the server.
        let min_gpw = here
            .iter()
            .map(|&j| ctx.job(&jobs[j]).demand.gpus_per_worker.max(1))
            .min()
            .unwrap_or(1);
        let most = here.len().min((servers[s].num_gpus() / min_gpw) as usize);
        if most < 2 {
            continue;
        }
        let v = |j: usize| jobs[j].v[s].expect("filtered on v");
        // z for every pair present, priced or not: the clique rows count all pairs.
        let mut pairs: Vec<(usize, usize, Variable)> = Vec::new();
        for (a, &i) in here.iter().enumerate() {
            for &k in &here[a + 1..] {
                let (idi, idk) = (ctx.job(&jobs[i]).id, ctx.job(&jobs[k]).id);
                let z = model.add_var(format!("zc_j{idi}_j{idk}_s{s}"), 0.0, 1.0, false);
                let (vi, vk) = (v(i), v(k));
                model.push(Group::ColocationCuts, lin(&[(1.0, z), (-1.0, vi)]).leq(0.0));
                model.push(Group::ColocationCuts, lin(&[(1.0, z), (-1.0, vk)]).leq(0.0));
                model.push(
                    Group::ColocationCuts,
                    lin(&[(1.0, z), (-1.0, vi), (-1.0, vk)]).geq(-1.0),
                );
                model.shares.push(ShareDef {
                    var: z,
                    gates: vec![vec![vi], vec![vk]],
                    terms: vec![],
                });
                pairs.push((i, k, z));
            }
        }
        // Co-location pressure, pair by pair (the same c the group-10 rows read).
        for &j in &here {
            let Some(&w) = jobs[j].wcol.get(&s) else {
                continue;
            };
            let mut e: Vec<(f64, Variable)> = vec![(1.0, w)];
            for &(i, k, z) in &pairs {
                let other = if i == j {
                    k
                } else if k == j {
                    i
                } else {
                    continue;
                };
                let c = pricing.colocation_excess(JobPos(jobs[j].job), JobPos(jobs[other].job), s);
                if c > 0.0 {
                    e.push((-c, z));
                }
            }
            if e.len() > 1 {
                model.push(Group::ColocationCuts, lin(&e).geq(0.0));
            }
        }
        // Clique rows: Σ z ≥ t·Σ v − t(t+1)/2.
        for t in 1..most {
            let tf = t as f64;
            let mut e: Vec<(f64, Variable)> = pairs.iter().map(|&(_, _, z)| (1.0, z)).collect();
            e.extend(here.iter().map(|&j| (-tf, v(j))));
            model.push(Group::ColocationCuts, lin(&e).geq(-tf * (tf + 1.0) / 2.0));
        }
    }
}
