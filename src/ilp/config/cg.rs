//! Column generation at the root: the master's relaxation over the columns so far, each
//! server's best column priced against its duals, until no server has a column that would
//! raise it. Its value is then a bound on the round (every pricing exact); before that, the
//! relaxation plus every server's best reduced cost (or any bound on it) is one (Lagrangian: each
//! server takes at most one column). Servers are priced once per class of identical ones.

use super::budget::Budget;
use super::column::{Classes, Column};
use super::master::{Duals, solve_lp};
use super::price::{Pricer, price_greedy_on, problems};
use crate::error::{Error, Result};
use crate::ilp::settings::CheckedSettings;
use crate::objective::RoundPricing;

/// Nodes of the short search that bounds every server's best column at an iteration where
/// greedy pricing found columns.
const PROBE_NODES: u64 = 2_000;

/// Each class (by representative) with servers not taken by the `fixed` pool columns, and how
/// many it has left.
fn free_servers(classes: &Classes, pool: &[Column], fixed: &[usize]) -> Vec<(usize, usize)> {
    classes
        .reps()
        .map(|r| {
            let taken = fixed.iter().filter(|&&i| pool[i].server == r).count();
            (r, classes.count(r).saturating_sub(taken))
        })
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// What every relaxation and pricing of one generation shares: the round, the solver settings,
/// the jobs held where they run, each search's node limit and the phase's budget.
#[derive(Clone, Copy)]
pub(crate) struct Gen<'p, 'a> {
    /// The round.
    pub pricing: &'p RoundPricing<'a>,
    /// Settings of the relaxations.
    pub settings: &'p CheckedSettings,
    /// Jobs (by position) held where they run.
    pub held: &'p [bool],
    /// Nodes one exact pricing search may visit.
    pub node_limit: u64,
    /// When to stop (the relaxation so far stands): a deadline or the solve's search nodes.
    pub budget: Budget<'p>,
}

/// The most columns a dive holds.
const MAX_DIVE_DEPTH: usize = 64;

/// What column generation did.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    /// The columns: the seed and every column priced in.
    pub pool: Vec<Column>,
    /// The last relaxation's value over the pool.
    pub lp: f64,
    /// The best valid bound on the round seen (NaN if none: losses below zero, or a dive's node).
    pub bound: f64,
    /// Relaxations solved.
    pub iterations: usize,
    /// Whether it stopped because no column could raise the relaxation (then `bound == lp`).
    pub converged: bool,
    /// The last relaxation's value of each pool column.
    pub lambda: Vec<f64>,
    /// The last relaxation's duals (where it converged, no column prices above 0 at them).
    pub duals: Duals,
}

/// A dive from column generation's root: the pool column with the largest fractional value is
/// held at 1 and columns generated again, until the relaxation takes whole columns only (or
/// [`MAX_DIVE_DEPTH`] columns are held, or the deadline passes). Returns the pool with every column
/// the dive generated: the integer master over it then has the dive's schedule among its
/// solutions. Finds schedules, proves nothing (the root keeps the bound). `pool` is the root's
/// pool and any columns earlier dives added (indices of the root's unchanged); the root
/// columns in `skip` are not held first (earlier dives began with them). Also returns the
/// column this dive held first.
pub(crate) fn dive(
    g: Gen<'_, '_>,
    root: &Generated,
    pool: Vec<Column>,
    skip: &[usize],
) -> Result<(Vec<Column>, Option<usize>)> {
    let classes = Classes::of(g.pricing);
    let mut pool = pool;
    let mut lambda = root.lambda.clone();
    let mut fixed: Vec<usize> = Vec::new();
    // Columns whose fixing left the node without a relaxation (a multi-server job's other
    // fragments missing from the pool): not fixed again.
    let mut tried: Vec<usize> = skip.to_vec();
    let mut first = None;
    for _ in 0..MAX_DIVE_DEPTH {
        if g.budget.late() {
            break;
        }
        let room = free_servers(&classes, &pool, &fixed);
        let pick = (0..pool.len())
            .filter(|&i| !fixed.contains(&i) && !tried.contains(&i))
            .filter(|&i| room.iter().any(|&(r, _)| r == pool[i].server))
            // Columns priced after the last relaxation have no value yet: 0.
            .filter(|&i| {
                let l = lambda.get(i).copied().unwrap_or(0.0);
                l > 1e-6 && l < 1.0 - 1e-6
            })
            .max_by(|&a, &b| lambda[a].total_cmp(&lambda[b]).then(b.cmp(&a)));
        let Some(i) = pick else { break };
        fixed.push(i);
        match generate_fixed(g, pool.clone(), &fixed, 50) {
            Ok(node) => {
                pool = node.pool;
                lambda = node.lambda;
                first.get_or_insert(i);
            }
            Err(Error::Solver { .. }) => {
                fixed.pop();
                tried.push(i);
            }
            Err(e) => return Err(e),
        }
        if fixed.len() == 1 {
            // Past the first hold, `skip` (root columns) no longer applies.
            tried.retain(|t| !skip.contains(t));
        }
    }
    Ok((pool, first))
}

/// Column generation from `seed` (which should make the master feasible: any pool holding
/// the held jobs' kept fragments does, every other job may wait), at most `max_iterations`
/// relaxations.
pub(crate) fn generate_columns(
    g: Gen<'_, '_>,
    seed: Vec<Column>,
    max_iterations: usize,
) -> Result<Generated> {
    generate_fixed(g, seed, &[], max_iterations)
}

/// [`generate_columns`] with the pool columns `fixed` (indices into `seed`) held at 1: a node of
/// a dive. Its bound is then the node's, not the round's.
fn generate_fixed(
    g: Gen<'_, '_>,
    seed: Vec<Column>,
    fixed: &[usize],
    max_iterations: usize,
) -> Result<Generated> {
    let Gen {
        pricing,
        settings,
        held,
        node_limit,
        budget,
    } = g;
    let classes = Classes::of(pricing);
    let mut pool = seed;
    let mut bound = f64::INFINITY;
    let mut iterations = 0;
    loop {
        let relaxation = solve_lp(pricing, &pool, fixed, settings, held)?;
        let (lp, duals) = (relaxation.value, &relaxation.duals);
        // The classes with servers left, and how many (all of them at the root).
        let room = free_servers(&classes, &pool, fixed);
        iterations += 1;
        // Greedy pricing first, once per class, on the problems the exact search then takes.
        let reps: Vec<usize> = room.iter().map(|&(r, _)| r).collect();
        // Classes priced side by side when the solve has threads to spare.
        let parallel = settings.threads > 1;
        let problems = problems(pricing, duals, &reps, parallel);
        let mut new = 0;
        for (&s, problem) in reps.iter().zip(&problems) {
            let p = price_greedy_on(duals, s, problem);
            if p.reduced_cost > 1e-9 && !p.column.fragments.is_empty() && !pool.contains(&p.column)
            {
                pool.push(p.column);
                new += 1;
            }
        }
        // Every server's best reduced cost, or a bound on it: the exact search when greedy
        // found nothing (to certify or to find what greedy missed), else a short probe whose
        // cut-off subtrees still bound it — so the round has a bound at every iteration.
        // At the root the exact search runs through (its best column is the steepest, and its
        // end certifies); in a dive, which certifies nothing, it stops at a column worth
        // adding (a relative 1e-4 of the relaxation).
        let limit = if new == 0 { node_limit } else { PROBE_NODES };
        let enough = if fixed.is_empty() {
            f64::INFINITY
        } else {
            1e-4 * lp.abs().max(1.0)
        };
        let (mut gain, mut exact, mut slack) = (0.0, new == 0, 0.0);
        let pricer = Pricer {
            pricing,
            duals,
            node_limit: limit,
            budget,
            parallel,
            shapes: settings.shape_pricing,
            floors: settings.colocation_floors,
        };
        for (p, &(_, n)) in pricer
            .price_servers_on(&reps, &problems, enough)
            .into_iter()
            .zip(&room)
        {
            exact &= p.exact;
            // A class may take its best column once per server it has.
            slack += n as f64 * p.bound.max(0.0);
            if p.reduced_cost > 1e-9 && !p.column.fragments.is_empty() {
                gain += p.reduced_cost;
                for c in std::iter::once(p.column).chain(p.passed) {
                    if !pool.contains(&c) {
                        pool.push(c);
                        new += 1;
                    }
                }
            }
        }
        if slack.is_finite() && fixed.is_empty() {
            bound = bound.min(lp + slack);
        }
        if new == 0 || iterations >= max_iterations || budget.late() {
            return Ok(Generated {
                pool,
                lp,
                bound: if bound.is_finite() { bound } else { f64::NAN },
                iterations,
                converged: exact && gain <= 1e-9,
                lambda: relaxation.lambda,
                duals: relaxation.duals,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ilp::SolveSettings;
    use crate::ilp::config::{columns_of, solve_lp, solve_master};
    use crate::objective::Objective;
    use crate::perf::CalibratedPerf;

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
            let (snap, exact) = crate::ilp::config::proven_optimum(name);
            let pricing = RoundPricing::new(perf, &snap, objective);
            let keep = snap.current_schedule();
            let (seed, choices) = columns_of(&pricing, &keep).unwrap();
            let held = vec![false; snap.jobs.len()];
            let spent = std::sync::atomic::AtomicU64::new(0);
            let gen_ = Gen {
                pricing: &pricing,
                settings: &settings,
                held: &held,
                node_limit: 5_000_000,
                budget: Budget::unlimited(&spent),
            };
            let g = generate_columns(gen_, seed.clone(), 200).unwrap();
            assert!(g.converged, "{name}: {g:?}");
            assert!(
                g.bound >= exact.report.objective - 1e-6,
                "{name}: bound {} below the optimum {}",
                g.bound,
                exact.report.objective
            );
            let r = solve_lp(&pricing, &g.pool, &[], &settings, &held).unwrap();
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
                        crate::ilp::config::price::Pricer {
                            pricing: &pricing,
                            duals: &r.duals,
                            node_limit: 5_000_000,
                            budget: Budget::unlimited(&spent),
                            parallel: false,
                            shapes: true,
                            floors: true,
                        },
                        srv,
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
            let m =
                solve_master(&pricing, &g.pool, &settings, Some((&seed, &choices)), &held).unwrap();
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
