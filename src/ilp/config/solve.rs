//! A round solved with the configuration program: columns generated at the root, the master
//! as an integer program, a dive where it leaves a gap; never below the best start.

use std::sync::atomic::AtomicU64;
use std::time::Instant;

use super::budget::Budget;
use super::cg::{Gen, Generated, dive, generate_columns, generate_from};
use super::column::{Classes, Column, JobChoice, columns_of};
use super::master::{MasterSolve, solve_master};
use super::price::Pricer;
use crate::error::{Error, Result};
use crate::ilp::report::{ColumnStats, SolveReport, SolveStatus, Solved, Trail, relative_gap};
use crate::ilp::settings::{CheckedSettings, PROVEN_GAP};
use crate::model::{JobId, Schedule};
use crate::objective::{RoundPricing, same_assignment};

/// The most columns enumerated to close a root gap (more: the gap stays open).
const ENUMERATION_CAP: usize = 50_000;

/// The most nodes one class's enumeration visits (its bounds are loose a gap's depth below the
/// best column: past this, the gap stays open).
const ENUMERATION_NODES: u64 = 2_000_000;

/// The best valid start of a configuration solve: the schedule, its objective, and its columns
/// and choices when the program can express it (then it is also the master's MIP start).
struct Start {
    schedule: Schedule,
    objective: f64,
    columns: Vec<Column>,
    choices: Vec<JobChoice>,
}

/// One solve's clock and work budget: each phase stops at its share of the time limit or of
/// the work limit, whichever comes first.
struct Clock<'s> {
    t0: Instant,
    settings: &'s CheckedSettings,
    /// Pricing-search nodes spent so far.
    spent: &'s AtomicU64,
}

impl<'s> Clock<'s> {
    /// The budget of a phase that may run to `share` of the limits.
    fn phase(&self, share: f64) -> Budget<'s> {
        let limit = self.settings.time_limit_s;
        let deadline = limit
            .is_finite()
            .then(|| self.t0 + std::time::Duration::from_secs_f64(share * limit));
        let nodes = self.settings.work_limit.map(|w| (share * w as f64) as u64);
        Budget::unlimited(self.spent).until(deadline, nodes)
    }

    /// The settings with the time left.
    fn left(&self) -> CheckedSettings {
        self.settings
            .with_time_limit(self.settings.time_limit_s - self.t0.elapsed().as_secs_f64())
    }
}

/// Whether a gap is still open (NaN, no bound or no schedule, counts as open).
fn is_open(bound: f64, objective: f64) -> bool {
    let gap = relative_gap(bound, objective);
    gap.is_nan() || gap > PROVEN_GAP
}

/// The configuration program: columns generated from every valid start's columns (60 % of
/// the time limit and of the work limit), then the master over them as an integer program from
/// the best start; where it leaves a gap, the columns within it enumerated (if the root
/// converged) and dives (to 85 %); never less than the start. The bound is column generation's (a bound on the
/// round whenever its pricing was exact) or, after an enumeration, the master's over every
/// column within the gap — never a restricted master's alone. The running jobs `held` stay
/// exactly where they run (the bound is then the restricted program's); a start that moves one
/// is passed over.
///
/// With more than one thread ([`crate::SolveSettings::threads`]) the server classes are priced
/// side by side on a pool of that many threads (HiGHS takes the same count), except under a work
/// limit, whose nodes go to the searches in order.
pub(crate) fn solve(
    pricing: &RoundPricing<'_>,
    settings: &CheckedSettings,
    warm_start: Option<&Schedule>,
    candidates: &[Schedule],
    held: &[JobId],
) -> Result<Solved> {
    let run = || solve_on(pricing, settings, warm_start, candidates, held);
    if settings.threads <= 1 {
        return run();
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(settings.threads as usize)
        .build()
        .map_err(|e| Error::Solver {
            solver: "configuration program".into(),
            reason: format!("cannot start {} pricing threads: {e}", settings.threads),
        })?
        .install(run)
}

/// [`solve`] on the current thread pool.
fn solve_on(
    pricing: &RoundPricing<'_>,
    settings: &CheckedSettings,
    warm_start: Option<&Schedule>,
    candidates: &[Schedule],
    held: &[JobId],
) -> Result<Solved> {
    let spent = AtomicU64::new(0);
    let clock = Clock {
        t0: Instant::now(),
        settings,
        spent: &spent,
    };
    let snapshot = pricing.snapshot();
    let held: Vec<bool> = snapshot
        .jobs
        .iter()
        .map(|j| held.contains(&j.id) && j.run.current.is_some())
        .collect();
    let (start, seed) = best_start(pricing, warm_start, candidates, &held)?;
    let mut trail = Trail::new(clock.t0);
    trail.record(start.objective);
    let g = Gen {
        pricing,
        settings,
        held: &held,
        node_limit: 20_000_000,
        budget: clock.phase(0.6),
    };
    let start_cols =
        (!start.choices.is_empty()).then_some((start.columns.as_slice(), start.choices.as_slice()));
    let (generated, interim) = generate_anytime(g, seed, &clock, start_cols, &mut trail)?;
    let master = solve_master(pricing, &generated.pool, &clock.left(), start_cols, &held)?;
    trail.record_master(&master);
    let mut search = Search {
        master,
        pool: generated.pool.clone(),
        bound: generated.bound,
        trail,
    };
    if let Some(m) = interim {
        search.offer(m);
    }
    search.enumerate_gap(g, &generated, &clock, start_cols, start.objective)?;
    search.dive_until_closed(g, &generated, &clock, start_cols)?;
    let generation_s = clock.t0.elapsed().as_secs_f64();
    let stats = ColumnStats {
        columns: search.pool.len(),
        iterations: generated.iterations,
        converged: generated.converged,
        relaxation: generated.lp,
        generation_s,
        search_nodes: spent.load(std::sync::atomic::Ordering::Relaxed),
    };
    outcome(pricing, &clock, start, search, stats)
}

/// Most of the time limit one master between chunks of column generation may take
/// ([`generate_anytime`]).
const INTERIM_MASTER_SHARE: f64 = 0.05;

/// Most of the time limit all of them may take.
const INTERIM_MASTERS_SHARE: f64 = 0.15;

/// Column generation from `seed` over the phase's budget, and the best master solved on the
/// way. With a time limit and no work limit it runs in chunks of 1, 2, 4 … relaxations, the
/// master solved over the pool between chunks (each in at most [`INTERIM_MASTER_SHARE`] of the
/// limit, all in at most [`INTERIM_MASTERS_SHARE`]): a deadline-bound caller has schedules
/// from the columns within the first iterations instead of after generation's 60 % of the
/// limit. The columns are the same either way (a chunk resumes from the pool and the smoothing
/// center, and each relaxation reads the pool alone); the masters only take time from
/// generation. Under a work
/// limit, in one piece: the masters' time limits would make the run unrepeatable (and so with
/// [`crate::SolveSettings::interim_masters`] off).
fn generate_anytime(
    g: Gen<'_, '_>,
    seed: Vec<Column>,
    clock: &Clock<'_>,
    start_cols: Option<(&[Column], &[JobChoice])>,
    trail: &mut Trail,
) -> Result<(Generated, Option<MasterSolve>)> {
    let limit = clock.settings.time_limit_s;
    if g.budget.counts_nodes() || !limit.is_finite() || !clock.settings.interim_masters {
        return Ok((generate_columns(g, seed, usize::MAX)?, None));
    }
    let (mut pool, mut chunk, mut iterations) = (seed, 1, 0);
    let mut center = None;
    let (mut bound, mut best): (f64, Option<MasterSolve>) = (f64::NAN, None);
    let mut allowance = INTERIM_MASTERS_SHARE * limit;
    loop {
        let gen_ = generate_from(g, pool, center, chunk)?;
        iterations += gen_.iterations;
        bound = bound.min(gen_.bound); // NaN-ignoring: a chunk without a bound keeps the others'
        if gen_.converged || gen_.iterations < chunk || g.budget.late() {
            let generated = Generated {
                iterations,
                bound,
                ..gen_
            };
            return Ok((generated, best));
        }
        pool = gen_.pool;
        center = gen_.center;
        if allowance <= 0.0 {
            // The masters' share is spent: generation runs on to its end in one chunk.
            chunk = usize::MAX;
            continue;
        }
        let cap = (INTERIM_MASTER_SHARE * limit).min(allowance);
        let settings = clock.left();
        let settings = settings.with_time_limit(settings.time_limit_s.min(cap));
        let t = Instant::now();
        let m = solve_master(g.pricing, &pool, &settings, start_cols, g.held)?;
        allowance -= t.elapsed().as_secs_f64();
        trail.record_master(&m);
        if best
            .as_ref()
            .is_none_or(|b| m.objective > b.objective || b.objective.is_nan())
        {
            best = Some(m);
        }
        chunk *= 2;
    }
}

/// Every valid start that keeps the `held` jobs where they run — the caller's warm start (an
/// error if it is not a valid schedule), the running jobs kept, everyone waiting, the
/// candidates — the best of them, and the columns of all of them (column generation's seed).
fn best_start(
    pricing: &RoundPricing<'_>,
    warm_start: Option<&Schedule>,
    candidates: &[Schedule],
    held: &[bool],
) -> Result<(Start, Vec<Column>)> {
    let snapshot = pricing.snapshot();
    let agrees = |s: &Schedule| {
        snapshot
            .jobs
            .iter()
            .zip(held)
            .filter(|(_, h)| **h)
            .all(|(j, _)| {
                let cur = j.run.current.as_ref();
                s.assignments
                    .iter()
                    .find(|a| a.job == j.id)
                    .is_some_and(|a| cur.is_some_and(|c| same_assignment(c, a)))
            })
    };
    let mut starts: Vec<Schedule> = Vec::new();
    if let Some(s) = warm_start {
        let v = s.validate(snapshot);
        if !v.is_empty() {
            return Err(Error::InvalidSchedule {
                context: "warm start".into(),
                violations: v,
            });
        }
        starts.push(s.clone());
    }
    starts.push(snapshot.current_schedule());
    starts.push(Schedule::default());
    starts.extend(candidates.iter().cloned());
    let mut seed = Vec::new();
    let mut best: Option<Start> = None;
    for s in starts {
        if !s.validate(snapshot).is_empty() || !agrees(&s) {
            continue;
        }
        let Ok(score) = pricing.score(&s) else {
            continue;
        };
        // A start the program cannot express (an option outside the round's list) still counts
        // as the fallback; it only seeds no columns and is no MIP start.
        let encoded = columns_of(pricing, &s).ok();
        if let Some((columns, _)) = &encoded {
            for c in columns {
                if !seed.contains(c) {
                    seed.push(c.clone());
                }
            }
        }
        if best.as_ref().is_none_or(|b| score.total > b.objective) {
            let (columns, choices) = encoded.unwrap_or_default();
            best = Some(Start {
                schedule: s,
                objective: score.total,
                columns,
                choices,
            });
        }
    }
    let best = best.ok_or_else(|| Error::Solver {
        solver: "start".into(),
        reason: "not even the schedule in which every job waits can be priced".into(),
    })?;
    Ok((best, seed))
}

/// The search after column generation: the best master so far, the column pool, the bound,
/// the incumbents so far.
struct Search {
    master: MasterSolve,
    pool: Vec<Column>,
    bound: f64,
    trail: Trail,
}

impl Trail {
    /// A master's improving solutions and its final schedule.
    fn record_master(&mut self, m: &MasterSolve) {
        self.record_run(&m.improvements, 0.0);
        self.record(m.objective);
    }
}

impl Search {
    /// Keeps master `m` if it beats the best so far (or that found nothing).
    fn offer(&mut self, m: MasterSolve) {
        self.trail.record_master(&m);
        if m.objective > self.master.objective || self.master.objective.is_nan() {
            self.master = m;
        }
    }

    /// Where the root converged and a gap is left, every column that could be in a better
    /// schedule is enumerated (reduced cost within the gap, `price::enumerate_columns`) and the
    /// master solved over them: its bound is the round's, and solved to optimality it proves it.
    fn enumerate_gap(
        &mut self,
        g: Gen<'_, '_>,
        generated: &Generated,
        clock: &Clock<'_>,
        start_cols: Option<(&[Column], &[JobChoice])>,
        start_objective: f64,
    ) -> Result<()> {
        let incumbent = self.master.objective.max(start_objective);
        let delta = generated.lp - incumbent;
        if !(is_open(self.bound, self.master.objective)
            && generated.converged
            && delta.is_finite()
            && delta > 0.0
            && !clock.phase(0.85).late())
        {
            return Ok(());
        }
        let reps: Vec<usize> = Classes::of(g.pricing).reps().collect();
        let pricer = Pricer {
            pricing: g.pricing,
            duals: &generated.duals,
            node_limit: ENUMERATION_NODES,
            budget: clock.phase(0.85),
            // The enumeration fills one capped list in class order.
            parallel: false,
            shapes: g.settings.shape_pricing,
            floors: g.settings.colocation_floors,
        };
        let Some(more) = pricer.enumerate_columns(&reps, delta, ENUMERATION_CAP) else {
            return Ok(());
        };
        for c in more {
            if !self.pool.contains(&c) {
                self.pool.push(c);
            }
        }
        let all = solve_master(g.pricing, &self.pool, &clock.left(), start_cols, g.held)?;
        // Any schedule better than the incumbent is in this master: its bound (proven or not)
        // bounds the round.
        if all.bound.is_finite() {
            self.bound = self.bound.min(all.bound.max(incumbent));
        }
        self.offer(all);
        Ok(())
    }

    /// Where a gap is still open, dives until it closes or 85 % of the limit: each begins with
    /// a root column no earlier dive began with, and every dive's columns stay in the pool.
    fn dive_until_closed(
        &mut self,
        g: Gen<'_, '_>,
        generated: &Generated,
        clock: &Clock<'_>,
        start_cols: Option<(&[Column], &[JobChoice])>,
    ) -> Result<()> {
        let mut skip: Vec<usize> = Vec::new();
        while is_open(self.bound, self.master.objective) && !clock.phase(0.85).late() {
            let dive_gen = Gen {
                budget: clock.phase(0.85),
                ..g
            };
            let pool = std::mem::take(&mut self.pool);
            let (grown, first) = dive(dive_gen, generated, pool, &skip)?;
            self.pool = grown;
            let again = solve_master(g.pricing, &self.pool, &clock.left(), start_cols, g.held)?;
            self.offer(again);
            match first {
                Some(i) => skip.push(i),
                None => break,
            }
        }
        Ok(())
    }
}

/// The schedule returned (the master's if it beats the start, else the start), its status and
/// the report.
fn outcome(
    pricing: &RoundPricing<'_>,
    clock: &Clock<'_>,
    start: Start,
    search: Search,
    stats: ColumnStats,
) -> Result<Solved> {
    let Search {
        master,
        bound,
        trail,
        ..
    } = search;
    // A master that found nothing (NaN) or nothing better returns the start.
    let beats = master.objective.is_finite() && master.objective > start.objective + PROVEN_GAP;
    let returned_start = !beats;
    let (schedule, objective) = if returned_start {
        (start.schedule, start.objective)
    } else {
        (master.schedule, master.objective)
    };
    let score = pricing.score(&schedule)?;
    let gap = relative_gap(bound, objective);
    let proven = gap <= PROVEN_GAP || (bound - objective) <= PROVEN_GAP;
    let status = if proven {
        SolveStatus::Optimal
    } else if clock.t0.elapsed().as_secs_f64() >= clock.settings.time_limit_s {
        SolveStatus::TimeLimit
    } else if clock.phase(0.6).out_of_nodes() {
        // Column generation, at least, ran out of its share of the work limit.
        SolveStatus::NodeLimit
    } else {
        SolveStatus::GapLimit
    };
    let report = SolveReport {
        status,
        objective,
        objective_check: score.total,
        perf_model_utility: pricing.perf_model_utility(&schedule, &score)?,
        best_bound: bound,
        gap,
        build_time_s: stats.generation_s,
        wall_time_s: clock.t0.elapsed().as_secs_f64(),
        nodes: master.nodes,
        size: master.size,
        warm_started: true,
        start_objective: start.objective,
        returned_start,
        incumbents: trail.into_points(),
        columns: Some(stats),
    };
    Ok(Solved {
        schedule,
        report,
        phases: None,
    })
}
