//! A round solved with the configuration program: columns generated at the root, the master
//! as an integer program, a dive where it leaves a gap; never below the best start.

use std::cell::Cell;
use std::time::Instant;

use super::budget::Budget;
use super::cg::{Gen, dive, generate_columns};
use super::column::{Classes, Column, JobChoice, columns_of};
use super::master::solve_master;
use super::price::enumerate_columns;
use crate::error::{Error, Result};
use crate::ilp::settings::{CheckedSettings, PROVEN_GAP};
use crate::ilp::{ColumnStats, SolveReport, SolveStatus, Solved, relative_gap};
use crate::model::{JobId, Schedule};
use crate::objective::{RoundPricing, same_assignment};

/// The most columns enumerated to close a root gap (more: the gap stays open).
const ENUMERATION_CAP: usize = 50_000;

/// The most nodes one class's enumeration visits (its bounds are loose a gap's depth below the
/// best column: past this, the gap stays open).
const ENUMERATION_NODES: u64 = 2_000_000;

/// The configuration program: columns generated from every valid start's columns (60 % of
/// the time limit and of the work limit), then the master over them as an integer program from
/// the best start; where it leaves a gap, the columns within it enumerated (if the root
/// converged) and dives (to 85 %); never less than the start. The bound is column generation's (a bound on the
/// round whenever its pricing was exact) or, after an enumeration, the master's over every
/// column within the gap — never a restricted master's alone. The running jobs `held` stay
/// exactly where they run (the bound is then the restricted program's); a start that moves one
/// is passed over.
pub(crate) fn solve(
    pricing: &RoundPricing<'_>,
    settings: &CheckedSettings,
    warm_start: Option<&Schedule>,
    candidates: &[Schedule],
    held: &[JobId],
) -> Result<Solved> {
    let t0 = Instant::now();
    let snapshot = pricing.snapshot();
    let held: Vec<bool> = snapshot
        .jobs
        .iter()
        .map(|j| held.contains(&j.id) && j.run.current.is_some())
        .collect();
    let agrees = |s: &Schedule| {
        snapshot
            .jobs
            .iter()
            .zip(&held)
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
    let mut best: Option<(Schedule, f64, Vec<Column>, Vec<JobChoice>)> = None;
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
        if best.as_ref().is_none_or(|b| score.total > b.1) {
            let (columns, choices) = encoded.unwrap_or_default();
            best = Some((s, score.total, columns, choices));
        }
    }
    let (start, start_objective, start_columns, start_choices) =
        best.ok_or_else(|| Error::Solver {
            solver: "start".into(),
            reason: "not even the schedule in which every job waits can be priced".into(),
        })?;
    let limit = settings.time_limit_s;
    // Each phase stops at its share of the time limit or of the work limit, whichever first.
    let spent = Cell::new(0);
    let phase = |share: f64| {
        let deadline = limit
            .is_finite()
            .then(|| t0 + std::time::Duration::from_secs_f64(share * limit));
        let nodes = settings.work_limit.map(|w| (share * w as f64) as u64);
        Budget::unlimited(&spent).until(deadline, nodes)
    };
    let g = Gen {
        pricing,
        settings,
        held: &held,
        node_limit: 20_000_000,
        budget: phase(0.6),
    };
    let generated = generate_columns(g, seed, usize::MAX)?;
    let left = || settings.with_time_limit(limit - t0.elapsed().as_secs_f64());
    let start_cols =
        (!start_choices.is_empty()).then_some((start_columns.as_slice(), start_choices.as_slice()));
    let mut master = solve_master(pricing, &generated.pool, &left(), start_cols, &held)?;
    let mut columns = generated.pool.len();
    let mut pool = generated.pool.clone();
    let mut bound = generated.bound;
    // NaN (no bound, or no schedule) counts as open.
    let is_open = |bound: f64, objective: f64| {
        let gap = relative_gap(bound, objective);
        gap.is_nan() || gap > PROVEN_GAP
    };
    // Where the root converged and a gap is left, every column that could be in a better
    // schedule is enumerated (reduced cost within the gap, `price::enumerate_columns`) and the
    // master solved over them: its bound is the round's, and solved to optimality it proves it.
    let incumbent = master.objective.max(start_objective);
    let delta = generated.lp - incumbent;
    if is_open(bound, master.objective)
        && generated.converged
        && delta.is_finite()
        && delta > 0.0
        && !phase(0.85).late()
    {
        let reps: Vec<usize> = Classes::of(pricing).reps().collect();
        if let Some(more) = enumerate_columns(
            pricing,
            &generated.duals,
            &reps,
            delta,
            ENUMERATION_CAP,
            ENUMERATION_NODES,
            phase(0.85),
        ) {
            for c in more {
                if !pool.contains(&c) {
                    pool.push(c);
                }
            }
            columns = pool.len();
            let all = solve_master(pricing, &pool, &left(), start_cols, &held)?;
            // Any schedule better than the incumbent is in this master: its bound (proven or
            // not) bounds the round.
            if all.bound.is_finite() {
                bound = bound.min(all.bound.max(incumbent));
            }
            if all.objective > master.objective || master.objective.is_nan() {
                master = all;
            }
        }
    }
    // Where a gap is still open, dives until it closes or 85 % of the limit: each begins with
    // a root column no earlier dive began with, and every dive's columns stay in the pool.
    let mut skip: Vec<usize> = Vec::new();
    while is_open(bound, master.objective) && !phase(0.85).late() {
        let dive_gen = Gen {
            budget: phase(0.85),
            ..g
        };
        let (grown, first) = dive(dive_gen, &generated, pool, &skip)?;
        pool = grown;
        columns = pool.len();
        let again = solve_master(pricing, &pool, &left(), start_cols, &held)?;
        if again.objective > master.objective || master.objective.is_nan() {
            master = again;
        }
        match first {
            Some(i) => skip.push(i),
            None => break,
        }
    }
    let generation_s = t0.elapsed().as_secs_f64();
    // A master that found nothing (NaN) or nothing better returns the start.
    let beats = master.objective.is_finite() && master.objective > start_objective + PROVEN_GAP;
    let returned_start = !beats;
    let (schedule, objective) = if returned_start {
        (start, start_objective)
    } else {
        (master.schedule, master.objective)
    };
    let score = pricing.score(&schedule)?;
    let gap = relative_gap(bound, objective);
    let proven = gap <= PROVEN_GAP || (bound - objective) <= PROVEN_GAP;
    let status = if proven {
        SolveStatus::Optimal
    } else if t0.elapsed().as_secs_f64() >= limit {
        SolveStatus::TimeLimit
    } else if phase(0.6).out_of_nodes() {
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
        build_time_s: generation_s,
        wall_time_s: t0.elapsed().as_secs_f64(),
        nodes: master.nodes,
        size: master.size,
        warm_started: true,
        start_objective,
        returned_start,
        columns: Some(ColumnStats {
            columns,
            iterations: generated.iterations,
            converged: generated.converged,
            relaxation: generated.lp,
            generation_s,
            search_nodes: spent.get(),
        }),
    };
    Ok(Solved {
        schedule,
        report,
        phases: None,
    })
}
