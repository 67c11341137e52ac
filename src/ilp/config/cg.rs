//! Column generation at the root: the master's relaxation over the columns so far, each
//! server's best column priced against its duals, until no server has a column that would
//! raise it. Its value is then a bound on the round (every pricing exact); before that, the
//! relaxation plus every server's best reduced cost is one (Lagrangian: each server takes at
//! most one column).

use super::column::Column;
use super::master::solve_lp;
use super::price::{price_greedy, price_server};
use crate::error::Result;
use crate::ilp::settings::CheckedSettings;
use crate::objective::RoundPricing;

/// What column generation did.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    /// The columns: the seed and every column priced in.
    pub pool: Vec<Column>,
    /// The last relaxation's value over the pool.
    pub lp: f64,
    /// The best valid bound on the round seen (NaN if no pricing round was exact).
    pub bound: f64,
    /// Relaxations solved.
    pub iterations: usize,
    /// Whether it stopped because no column could raise the relaxation (then `bound == lp`).
    pub converged: bool,
    /// The last relaxation's value of each pool column.
    pub lambda: Vec<f64>,
}

/// A dive from column generation's root: the pool column with the largest fractional value is
/// held at 1 and columns generated again, until the relaxation takes whole columns only (or
/// `max_depth` columns are held, or the deadline passes). Returns the pool with every column
/// the dive generated: the integer master over it then has the dive's schedule among its
/// solutions. Finds schedules, proves nothing (the root keeps the bound).
pub(crate) fn dive(
    pricing: &RoundPricing<'_>,
    root: &Generated,
    settings: &CheckedSettings,
    node_limit: u64,
    max_depth: usize,
    deadline: Option<std::time::Instant>,
) -> Result<Vec<Column>> {
    let mut pool = root.pool.clone();
    let mut lambda = root.lambda.clone();
    let mut fixed: Vec<usize> = Vec::new();
    for _ in 0..max_depth {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        let servers: Vec<usize> = fixed.iter().map(|&i| pool[i].server).collect();
        let pick = (0..pool.len())
            .filter(|&i| !fixed.contains(&i) && !servers.contains(&pool[i].server))
            // Columns priced after the last relaxation have no value yet: 0.
            .filter(|&i| {
                let l = lambda.get(i).copied().unwrap_or(0.0);
                l > 1e-6 && l < 1.0 - 1e-6
            })
            .max_by(|&a, &b| lambda[a].total_cmp(&lambda[b]).then(b.cmp(&a)));
        let Some(i) = pick else { break };
        fixed.push(i);
        let node = generate_fixed(pricing, pool, &fixed, settings, 50, node_limit, deadline)?;
        pool = node.pool;
        lambda = node.lambda;
    }
    Ok(pool)
}

/// Column generation from `seed` (which should make the master feasible: any pool does, every
/// job may wait), at most `max_iterations` relaxations, each server's pricing searching at most
/// `node_limit` nodes.
pub(crate) fn generate_columns(
    pricing: &RoundPricing<'_>,
    seed: Vec<Column>,
    settings: &CheckedSettings,
    max_iterations: usize,
    node_limit: u64,
    deadline: Option<std::time::Instant>,
) -> Result<Generated> {
    generate_fixed(
        pricing,
        seed,
        &[],
        settings,
        max_iterations,
        node_limit,
        deadline,
    )
}

/// [`generate_columns`] with the pool columns `fixed` (indices into `seed`) held at 1: a node of
/// a dive. Its bound is then the node's, not the round's.
fn generate_fixed(
    pricing: &RoundPricing<'_>,
    seed: Vec<Column>,
    fixed: &[usize],
    settings: &CheckedSettings,
    max_iterations: usize,
    node_limit: u64,
    deadline: Option<std::time::Instant>,
) -> Result<Generated> {
    let servers = pricing.snapshot().cluster.servers.len();
    let mut pool = seed;
    let mut bound = f64::NAN;
    let mut iterations = 0;
    loop {
        let relaxation = solve_lp(pricing, &pool, fixed, settings)?;
        let (lp, duals) = (relaxation.value, &relaxation.duals);
        let taken: Vec<usize> = fixed.iter().map(|&i| pool[i].server).collect();
        iterations += 1;
        // Greedy pricing first; the exact search only when it finds nothing, to certify.
        let mut new = 0;
        for s in (0..servers).filter(|s| !taken.contains(s)) {
            let p = price_greedy(pricing, duals, s);
            if p.reduced_cost > 1e-9 && !p.column.fragments.is_empty() && !pool.contains(&p.column)
            {
                pool.push(p.column);
                new += 1;
            }
        }
        let (mut gain, mut exact) = (0.0, new == 0);
        if new == 0 {
            for s in (0..servers).filter(|s| !taken.contains(s)) {
                let p = price_server(pricing, duals, s, node_limit, deadline);
                exact &= p.exact;
                if p.reduced_cost > 1e-9 && !p.column.fragments.is_empty() {
                    gain += p.reduced_cost;
                    if !pool.contains(&p.column) {
                        pool.push(p.column);
                        new += 1;
                    }
                }
            }
        }
        if exact {
            let b = lp + gain;
            bound = if bound.is_nan() { b } else { bound.min(b) };
        }
        let late = deadline.is_some_and(|d| std::time::Instant::now() >= d);
        if new == 0 || iterations >= max_iterations || late {
            return Ok(Generated {
                pool,
                lp,
                bound,
                iterations,
                converged: exact && gain <= 1e-9,
                lambda: relaxation.lambda,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ilp::config::{columns_of, solve_lp, solve_master};
    use crate::ilp::{SolveRequest, SolveSettings};
    use crate::objective::Objective;
    use crate::perf::CalibratedPerf;
    use crate::scheduler::SolveStatus;

    use crate::ilp::config::test_instance as instance;

    /// On rounds the compact program proves, column generation from the keep-everything
    /// columns converges to a bound no lower than the proven optimum; the reduced costs it
    /// prices with are HiGHS' own; the master over its columns finds a valid schedule between
    /// the start and the bound.
    #[test]
    fn column_generation_bounds_the_proven_optimum() {
        let perf = CalibratedPerf::shipped();
        let objective = Objective::default();
        let settings = SolveSettings {
            time_limit_s: 60.0,
            ..Default::default()
        }
        .checked()
        .unwrap();
        for name in [
            "gen_s02_j04_seed1",
            "gen_s02_j06_seed2",
            "gen_s03_j06_seed1",
        ] {
            let snap = instance(name);
            let pricing = RoundPricing::new(perf, &snap, objective);
            let exact = SolveRequest::new(&snap, perf, objective)
                .unwrap()
                .settings(settings.clone())
                .solve()
                .unwrap();
            assert_eq!(exact.report.status, SolveStatus::Optimal);
            let keep = snap.current_schedule();
            let (seed, choices) = columns_of(&pricing, &keep).unwrap();
            let g =
                generate_columns(&pricing, seed.clone(), &settings, 200, 5_000_000, None).unwrap();
            assert!(g.converged, "{name}: {g:?}");
            assert!(
                g.bound >= exact.report.objective - 1e-6,
                "{name}: bound {} below the optimum {}",
                g.bound,
                exact.report.objective
            );
            let r = solve_lp(&pricing, &g.pool, &[], &settings).unwrap();
            for (c, &rc) in g.pool.iter().zip(&r.reduced) {
                let mine = r.duals.reduced_cost(&pricing, c);
                assert!(
                    (mine - rc).abs() < 1e-6,
                    "{name}: reduced cost {mine} vs HiGHS {rc}"
                );
            }
            // The search prices a column as the column prices itself (its losses, its duals).
            for srv in 0..snap.cluster.servers.len() {
                for p in [
                    crate::ilp::config::price::price_server(
                        &pricing, &r.duals, srv, 5_000_000, None,
                    ),
                    crate::ilp::config::price::price_greedy(&pricing, &r.duals, srv),
                ] {
                    let direct = r.duals.reduced_cost(&pricing, &p.column);
                    assert!(
                        (p.reduced_cost - direct).abs() < 1e-9,
                        "{name}: search {} vs column {direct}",
                        p.reduced_cost
                    );
                }
            }
            let m = solve_master(&pricing, &g.pool, &settings, Some((&seed, &choices))).unwrap();
            assert!(m.schedule.validate(&snap).is_empty());
            let score = pricing.score(&m.schedule).unwrap().total;
            assert!((score - m.objective).abs() < 1e-6);
            assert!(m.objective <= g.bound + 1e-6);
            eprintln!(
                "{name}: optimum {:.6}, configuration LP bound {:.6} (gap {:.3} %), restricted master {:.6}, {} iterations, {} columns",
                exact.report.objective,
                g.bound,
                100.0 * (g.bound - exact.report.objective) / exact.report.objective.abs(),
                m.objective,
                g.iterations,
                g.pool.len()
            );
        }
    }
}
