//! Group 10 of `formulations/README.md`: the sharing pressures each job meets — co-location on
//! its servers, other jobs under its PCIe switches, other distributed jobs on its servers' NICs —
//! aggregated per (job, server) and (job, switch): O(jobs × places) variables instead of one per
//! pair of jobs. Every pressure only ever costs utility, so the objective pushes it down onto
//! its bound and the bound is exact at every optimum.

use std::collections::BTreeMap;

use good_lp::Variable;

use super::{Ctx, Group, JobVars, Model, ShareDef, lin};
use crate::model::JobPos;
use crate::objective::{Mode, RoundPricing, Sharing};

/// Adds `var >= gate·(Σ terms)` in big-M form: `var >= Σ terms − M·(#gates − Σ gates)`, where
/// each gate is a sum of binaries (0 or 1).
fn gated_sum(
    model: &mut Model,
    var: Variable,
    gates: Vec<Vec<Variable>>,
    terms: Vec<(f64, Variable)>,
    big_m: f64,
) {
    let mut e: Vec<(f64, Variable)> = vec![(1.0, var)];
    e.extend(terms.iter().map(|&(c, x)| (-c, x)));
    for g in &gates {
        e.extend(g.iter().map(|&x| (-big_m, x)));
    }
    model.push(
        Group::SharingCounts,
        lin(&e).geq(-big_m * gates.len() as f64),
    );
    model.shares.push(ShareDef { var, gates, terms });
}

/// Group 10: `ωcol_js ≥ Σ_{i≠j} c_ji(s) v_is − M(1 − v_js)`; `ωpci_jb ≥ Σ_{i≠j} u_ib − cap_b(1 − u_jb)`;
/// `μ_js ≥ a_js + D_j − 1`, `ωnic_js ≥ Σ_{i≠j} μ_is − M(2 − a_js − D_j)`.
pub(super) fn sharing(
    model: &mut Model,
    ctx: &Ctx<'_>,
    pricing: &RoundPricing<'_>,
    jobs: &mut [JobVars],
) {
    let servers = &ctx.snapshot.cluster.servers;
    let n = jobs.len();
    let multi_ys = |jv: &JobVars| jv.ys_where(|o| o.mode == Mode::Multi);
    // μ_js = job j is on several servers and has a task on s.
    let mut mu: BTreeMap<(usize, usize), Variable> = BTreeMap::new();
    for (j, jv) in jobs.iter().enumerate() {
        let d = multi_ys(jv);
        if d.is_empty() {
            continue;
        }
        let id = ctx.job(jv).id;
        for s in 0..servers.len() {
            let Some(a) = jv.any_task(s) else { continue };
            let m = model.add_var(format!("mu_j{id}_s{s}"), 0.0, 1.0, false);
            // m >= a + D − 1 (an AND of two binaries, pushed down wherever it is read).
            let mut e: Vec<(f64, Variable)> = vec![(1.0, m), (-1.0, a)];
            e.extend(d.iter().map(|&x| (-1.0, x)));
            model.push(Group::SharingCounts, lin(&e).geq(-1.0));
            model.shares.push(ShareDef {
                var: m,
                gates: vec![vec![a], d.clone()],
                terms: vec![],
            });
            mu.insert((j, s), m);
        }
    }
    for i in 0..n {
        if jobs[i].options.is_empty() {
            continue;
        }
        let id = ctx.job(&jobs[i]).id;
        // Co-location: ω_is >= v_is · Σ_j (slowdown_ij − 1)·v_js.
        for s in 0..servers.len() {
            let Some(vi) = jobs[i].v[s] else { continue };
            let terms: Vec<(f64, Variable)> = (0..n)
                .filter(|&k| k != i)
                .filter_map(|k| {
                    let vk = jobs[k].v[s]?;
                    let c = pricing.colocation_excess(JobPos(jobs[i].job), JobPos(jobs[k].job), s);
                    (c > 0.0).then_some((c, vk))
                })
                .collect();
            if terms.is_empty() {
                continue;
            }
            // When job i is absent, up to one co-runner per GPU of the server may be there.
            let slots = servers[s].num_gpus() as usize;
            let mut cs: Vec<f64> = terms.iter().map(|t| t.0).collect();
            cs.sort_by(|a, b| b.total_cmp(a));
            let big_m: f64 = cs.iter().take(slots).sum();
            // When it is there, it holds one of those GPUs.
            let most: f64 = cs.iter().take(slots.saturating_sub(1)).sum();
            let w = model.add_var(format!("wcol_j{id}_s{s}"), 0.0, f64::INFINITY, false);
            gated_sum(model, w, vec![vec![vi]], terms, big_m);
            jobs[i].pressure[Sharing::Colocation.index()].push((1.0, w, most));
            jobs[i].wcol.insert(s, w);
        }
        // PCIe: ω_ib >= u_ib · #other jobs under switch b.
        let bs: Vec<_> = jobs[i].g.keys().copied().collect();
        for b in bs {
            let cap = ctx.topology.switch(b).gpus.len();
            if cap < 2 {
                continue;
            }
            let ui = jobs[i].g[&b].1;
            let terms: Vec<(f64, Variable)> = (0..n)
                .filter(|&k| k != i)
                .filter_map(|k| jobs[k].g.get(&b).map(|&(_, u)| (1.0, u)))
                .collect();
            if terms.is_empty() {
                continue;
            }
            let big_m = (terms.len() as f64).min(cap as f64);
            let most = (terms.len() as f64).min(cap as f64 - 1.0);
            let w = model.add_var(format!("wpci_j{id}_b{}", b.0), 0.0, f64::INFINITY, false);
            gated_sum(model, w, vec![vec![ui]], terms, big_m);
            jobs[i].pressure[Sharing::Pcie.index()].push((1.0, w, most));
        }
        // NIC: ω_is >= [i multi-server, on s] · #other multi-server jobs on s.
        let di = multi_ys(&jobs[i]);
        if di.is_empty() {
            continue;
        }
        for s in 0..servers.len() {
            let Some(ai) = jobs[i].any_task(s) else {
                continue;
            };
            let terms: Vec<(f64, Variable)> = (0..n)
                .filter(|&k| k != i)
                .filter_map(|k| mu.get(&(k, s)).map(|&m| (1.0, m)))
                .collect();
            if terms.is_empty() {
                continue;
            }
            let big_m = terms.len() as f64;
            let w = model.add_var(format!("wnic_j{id}_s{s}"), 0.0, f64::INFINITY, false);
            gated_sum(model, w, vec![vec![ai], di.clone()], terms, big_m);
            jobs[i].pressure[Sharing::Nic.index()].push((1.0, w, big_m));
        }
    }
}
