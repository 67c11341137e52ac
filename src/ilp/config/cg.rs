//! Column generation at the root: the master's relaxation over the columns so far, each
//! server's best column priced against its duals, until no server has a column that would
//! raise it. Its value is then a bound on the round (every pricing exact); before that, the
//! relaxation plus every server's best reduced cost (or any bound on it) is one (Lagrangian: each
//! server takes at most one column). Servers are priced once per class of identical ones. At
//! the root, pricing goes first to duals smoothed toward the best Lagrangian bound so far
//! ([`Stabilizer`]), whose own Lagrangian bound ([`Duals::lagrangian`]) counts too.

use super::budget::Budget;
use super::column::{Classes, Column};
use super::duals::Duals;
use super::master::solve_lp;
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
    /// The root's smoothing center (duals with the least Lagrangian bound, and that bound),
    /// for a generation that resumes where this one stopped ([`generate_from`]).
    pub center: Option<(Duals, f64)>,
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
        match generate_fixed(g, pool.clone(), &fixed, None, 50) {
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

/// Weight of the best duals so far in the point column generation prices at first
/// (Wentges' smoothing; 0.5 is the usual first choice).
const SMOOTHING: f64 = 0.5;

/// Dual smoothing at the root (Wentges): column generation prices first at a point between
/// the duals with the least Lagrangian bound so far (the *center*) and the relaxation's own.
/// Why: on rounds of many identical servers the relaxation's duals jump from one extreme
/// point to another while its value barely moves (degenerate masters), and pricing at them
/// adds one column per class per relaxation; the smoothed point moves less, its columns
/// raise the relaxation faster, and its Lagrangian bound ([`Duals::lagrangian`]) is a bound
/// on the round like any other — often a tighter one than the relaxation's duals give. A
/// point whose columns do not raise the relaxation (a mispricing) falls back to the
/// relaxation's duals, so column generation converges as without it.
#[derive(Default)]
struct Stabilizer {
    center: Option<(Duals, f64)>,
}

impl Stabilizer {
    /// Where to price first at `duals`: the smoothed point, once there is a center.
    fn point(&self, duals: &Duals) -> Option<Duals> {
        self.center.as_ref().map(|(c, _)| c.mix(SMOOTHING, duals))
    }

    /// Duals at which the Lagrangian bound is `l`: the new center when better.
    fn offer(&mut self, duals: Duals, l: f64) {
        if self.center.as_ref().is_none_or(|c| l < c.1) {
            self.center = Some((duals, l));
        }
    }
}

/// What pricing every class at one set of duals did.
struct Round {
    /// Columns added to the pool.
    new: usize,
    /// The reduced costs of the classes' best columns that were added, summed.
    gain: f64,
    /// Whether every class's search finished.
    exact: bool,
    /// `Σ n_S · max(0, bound on the best reduced cost)` over the classes (infinite where
    /// nothing bounds a search).
    slack: f64,
    /// The Lagrangian bound at these duals (at the root, where every search is bounded).
    lagrangian: Option<f64>,
}

/// Prices every class of `room` at `duals` — greedily first, then by the exact search (a
/// short probe where greedy found columns, whose cut-off subtrees still bound the class) —
/// adding the columns found to `pool`: every one with a positive reduced cost at `duals`, or,
/// where `duals` is a smoothed point, at the relaxation's duals `lp_duals`.
fn price_round(
    g: Gen<'_, '_>,
    duals: &Duals,
    lp_duals: Option<&Duals>,
    classes: &Classes,
    room: &[(usize, usize)],
    pool: &mut Vec<Column>,
    enough: f64,
) -> Result<Round> {
    let pricing = g.pricing;
    // Whether a column of reduced cost `rc` at `duals` raises the relaxation.
    let pays =
        |c: &Column, rc: f64| lp_duals.map_or(rc > 1e-9, |d| d.reduced_cost(pricing, c) > 1e-9);
    let reps: Vec<usize> = room.iter().map(|&(r, _)| r).collect();
    // Classes priced side by side when the solve has threads to spare.
    let parallel = g.settings.threads > 1;
    let problems = problems(pricing, duals, &reps, parallel);
    let mut new = 0;
    for (&s, problem) in reps.iter().zip(&problems) {
        let p = price_greedy_on(duals, s, problem);
        if p.reduced_cost > 1e-9
            && !p.column.fragments.is_empty()
            && pays(&p.column, p.reduced_cost)
            && !pool.contains(&p.column)
        {
            pool.push(p.column);
            new += 1;
        }
    }
    let limit = if new == 0 { g.node_limit } else { PROBE_NODES };
    let pricer = Pricer {
        pricing,
        duals,
        node_limit: limit,
        budget: g.budget,
        parallel,
        shapes: g.settings.shape_pricing,
        floors: g.settings.colocation_floors,
    };
    let (mut gain, mut exact, mut slack) = (0.0, new == 0, 0.0);
    let mut best = Vec::with_capacity(reps.len());
    for (p, &(r, n)) in pricer
        .price_servers_on(&reps, &problems, enough)
        .into_iter()
        .zip(room)
    {
        exact &= p.exact;
        // A class may take its best column once per server it has.
        slack += n as f64 * p.bound.max(0.0);
        best.push((r, p.bound + duals.server.get(&r).copied().unwrap_or(0.0)));
        if p.reduced_cost > 1e-9 && !p.column.fragments.is_empty() {
            gain += p.reduced_cost;
            for c in std::iter::once(p.column).chain(p.passed) {
                // The passed columns' own reduced costs are positive, at most the best's.
                if pays(&c, p.reduced_cost) && !pool.contains(&c) {
                    pool.push(c);
                    new += 1;
                }
            }
        }
    }
    let lagrangian = if slack.is_finite() && enough.is_infinite() {
        Some(duals.lagrangian(pricing, classes, &best)?)
    } else {
        None
    };
    Ok(Round {
        new,
        gain,
        exact,
        slack,
        lagrangian,
    })
}

/// Column generation from `seed` (which should make the master feasible: any pool holding
/// the held jobs' kept fragments does, every other job may wait), at most `max_iterations`
/// relaxations.
pub(crate) fn generate_columns(
    g: Gen<'_, '_>,
    seed: Vec<Column>,
    max_iterations: usize,
) -> Result<Generated> {
    generate_from(g, seed, None, max_iterations)
}

/// [`generate_columns`] resuming with the smoothing center `center` of an earlier generation
/// from the same round ([`Generated::center`]): chunks of a generation price as one would.
pub(crate) fn generate_from(
    g: Gen<'_, '_>,
    seed: Vec<Column>,
    center: Option<(Duals, f64)>,
    max_iterations: usize,
) -> Result<Generated> {
    generate_fixed(g, seed, &[], center, max_iterations)
}

/// [`generate_columns`] with the pool columns `fixed` (indices into `seed`) held at 1: a node of
/// a dive. Its bound is then the node's, not the round's.
fn generate_fixed(
    g: Gen<'_, '_>,
    seed: Vec<Column>,
    fixed: &[usize],
    center: Option<(Duals, f64)>,
    max_iterations: usize,
) -> Result<Generated> {
    let Gen {
        pricing,
        settings,
        held,
        node_limit: _,
        budget,
    } = g;
    let classes = Classes::of(pricing);
    let mut pool = seed;
    let mut bound = f64::INFINITY;
    let mut iterations = 0;
    let mut stab = (fixed.is_empty() && settings.dual_smoothing).then_some(Stabilizer { center });
    loop {
        let relaxation = solve_lp(pricing, &pool, fixed, settings, held)?;
        let (lp, duals) = (relaxation.value, &relaxation.duals);
        // The classes with servers left, and how many (all of them at the root).
        let room = free_servers(&classes, &pool, fixed);
        iterations += 1;
        // In a dive, which certifies nothing, a search stops at a column worth adding (a
        // relative 1e-4 of the relaxation); at the root it runs through (its best column is the
        // steepest, and its end certifies).
        let enough = if fixed.is_empty() {
            f64::INFINITY
        } else {
            1e-4 * lp.abs().max(1.0)
        };
        // At the root, price first between the best duals so far and the relaxation's
        // (smoothing: see `Stabilizer`); only where that finds no column that raises the
        // relaxation, at the relaxation's own.
        let mut new = 0;
        if let Some(sep) = stab.as_ref().and_then(|s| s.point(duals)) {
            let at = price_round(g, &sep, Some(duals), &classes, &room, &mut pool, enough)?;
            new = at.new;
            if let (Some(st), Some(l)) = (stab.as_mut(), at.lagrangian) {
                bound = bound.min(l);
                st.offer(sep, l);
            }
        }
        let (mut gain, mut exact) = (0.0, false);
        if new == 0 {
            let at = price_round(g, duals, None, &classes, &room, &mut pool, enough)?;
            (new, gain, exact) = (at.new, at.gain, at.exact);
            if at.slack.is_finite() && fixed.is_empty() {
                bound = bound.min(lp + at.slack);
            }
            if let (Some(st), Some(l)) = (stab.as_mut(), at.lagrangian) {
                bound = bound.min(l);
                st.offer(duals.clone(), l);
            }
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
                center: stab.and_then(|s| s.center),
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

    /// Each class's bound on its best column's value before its own dual, at `duals`, every
    /// search finishing (what [`Duals::lagrangian`] takes).
    fn class_bests(
        pricing: &RoundPricing<'_>,
        classes: &Classes,
        duals: &Duals,
        spent: &std::sync::atomic::AtomicU64,
        name: &str,
    ) -> Vec<(usize, f64)> {
        let reps: Vec<usize> = classes.reps().collect();
        Pricer {
            pricing,
            duals,
            node_limit: 20_000_000,
            budget: Budget::unlimited(spent),
            parallel: false,
            shapes: true,
            floors: true,
        }
        .price_servers(&reps, f64::INFINITY)
        .iter()
        .zip(&reps)
        .map(|(p, &s)| {
            assert!(p.exact, "{name}");
            (s, p.bound + duals.server.get(&s).copied().unwrap_or(0.0))
        })
        .collect()
    }

    /// On rounds the compact program proves, column generation from the keep-everything
    /// columns converges to a bound no lower than the proven optimum; the reduced costs it
    /// prices with are HiGHS' own; the Lagrangian bound is the relaxation's value at its
    /// converged duals and no lower than the optimum at points between them and the start's;
    /// the master over its columns finds a valid schedule between the start and the bound.
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
            // The Lagrangian bound: the relaxation's value at its own converged duals, and a
            // bound on the round at points between them and the start's duals.
            let classes = Classes::of(&pricing);
            let lagrangian = |duals: &Duals| {
                let best = class_bests(&pricing, &classes, duals, &spent, name);
                duals.lagrangian(&pricing, &classes, &best).unwrap()
            };
            let at_lp = lagrangian(&r.duals);
            assert!(
                (at_lp - r.value).abs() < 1e-6,
                "{name}: {at_lp} vs {}",
                r.value
            );
            let start = solve_lp(&pricing, &seed, &[], &settings, &held).unwrap();
            for w in [0.25, 0.5, 0.75, 1.0] {
                let l = lagrangian(&start.duals.mix(w, &r.duals));
                assert!(l >= exact.report.objective - 1e-6, "{name} at {w}: {l}");
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

    /// The Lagrangian bound accounts for every row of the master. At the relaxation's duals
    /// (after 1 and 3 relaxations, and at convergence) it is the relaxation's value plus what
    /// each class's best column would add (`Σ n_S · (max(0, v_S) − π_S)`; at convergence, the
    /// value itself) — on rounds with running jobs (keep rows). And moving a multi-server
    /// option's one-fragment-per-server dual up at the converged duals (still duals that bound
    /// the round) never takes it below the master's schedule over the converged columns:
    /// where that option is in the best columns, what they lose its choice regains.
    #[test]
    fn the_lagrangian_bound_accounts_for_every_row() {
        let perf = CalibratedPerf::shipped();
        let settings = SolveSettings::default().checked().unwrap();
        let spent = std::sync::atomic::AtomicU64::new(0);
        let mut moved = 0;
        for name in [
            "gen_s04_j08_seed1",
            "gen_s05_j10_seed1",
            "gen_s05_j10_seed2",
            "gen_s06_j12_seed1",
            "gen_s08_j12_seed2",
        ] {
            let snap = crate::ilp::config::test_instance(name);
            let pricing = RoundPricing::new(perf, &snap, Objective::default());
            let (seed, choices) = columns_of(&pricing, &snap.current_schedule()).unwrap();
            let held = vec![false; snap.jobs.len()];
            let gen_ = Gen {
                pricing: &pricing,
                settings: &settings,
                held: &held,
                node_limit: 20_000_000,
                budget: Budget::unlimited(&spent),
            };
            let classes = Classes::of(&pricing);
            let reps: Vec<usize> = classes.reps().collect();
            let best = |duals: &Duals| class_bests(&pricing, &classes, duals, &spent, name);
            for iterations in [1, 3, 500] {
                let g = generate_columns(gen_, seed.clone(), iterations).unwrap();
                let b = best(&g.duals);
                let l = g.duals.lagrangian(&pricing, &classes, &b).unwrap();
                let adds: f64 = b
                    .iter()
                    .map(|&(s, v)| {
                        let pi = g.duals.server.get(&s).copied().unwrap_or(0.0);
                        classes.count(s) as f64 * (v.max(0.0) - pi)
                    })
                    .sum();
                let lp = g.lp;
                assert!(
                    (l - lp - adds).abs() < 1e-6,
                    "{name}, {iterations}: {l}, {lp} + {adds}"
                );
                if iterations < 500 {
                    continue;
                }
                assert!(g.converged && (l - lp).abs() < 1e-6, "{name}: {l} vs {lp}");
                let m = solve_master(&pricing, &g.pool, &settings, Some((&seed, &choices)), &held)
                    .unwrap();
                for j in 0..snap.jobs.len() {
                    for (k, o) in pricing.options(crate::model::JobPos(j)).iter().enumerate() {
                        if o.mode != crate::objective::Mode::Multi {
                            continue;
                        }
                        for &s in &reps {
                            let mut d = g.duals.clone();
                            *d.spread.entry((j, k, s)).or_default() += 1.0;
                            let moved_l = d.lagrangian(&pricing, &classes, &best(&d)).unwrap();
                            assert!(moved_l >= m.objective - 1e-6, "{name} ({j}, {k}, {s})");
                            moved += usize::from(best(&d) != b);
                        }
                    }
                }
            }
        }
        // Some moves changed a class's best column (the spread term then carried the bound).
        assert!(moved > 0);
    }
}
