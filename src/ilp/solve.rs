//! Building the round program and solving it with HiGHS: limits, seed, MIP start, an honest
//! report.

use std::time::Instant;

use good_lp::SolverModel;
use good_lp::solvers::highs::highs;
use serde::{Deserialize, Serialize};

use super::formulation::{Formulation, FormulationOptions, ModelSize};
use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;

/// Solver settings, checked by [`SolveSettings::check`]; defaults written down here.
///
/// ```
/// // Settings are checked where they are used: a negative time limit is a typed error.
/// use coda::{CalibratedPerf, ClusterSnapshot, ExactScheduler, Objective, Scheduler, SolveSettings};
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let bad = SolveSettings { time_limit_s: -1.0, ..SolveSettings::default() };
/// let mut exact = ExactScheduler::new(CalibratedPerf::shipped(), Objective::default(), bad);
/// assert!(matches!(exact.schedule(&snapshot), Err(coda::Error::InvalidSetting { .. })));
/// # Ok::<(), coda::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolveSettings {
    /// Wall-clock limit, seconds, on building the model and solving it together (default 60).
    pub time_limit_s: f64,
    /// Stop when the relative gap is below this (default 1e-6: prove optimality).
    pub mip_rel_gap: f64,
    /// Or when the absolute gap is below this (default 1e-6, HiGHS' own): "optimal" means within
    /// this of the best possible objective.
    pub mip_abs_gap: f64,
    /// Branch-and-bound node limit, a repeatable work limit (default: none).
    pub node_limit: Option<u64>,
    /// Solver threads (default 1).
    pub threads: u32,
    /// HiGHS random seed (default 0).
    pub seed: u32,
    /// Order interchangeable servers (default on).
    pub symmetry_breaking: bool,
    /// Add the valid inequalities on co-location (default off): a tighter relaxation, the same
    /// optimum, a larger program.
    #[serde(default)]
    pub colocation_cuts: bool,
    /// Print the solver log.
    pub verbose: bool,
}

impl Default for SolveSettings {
    fn default() -> Self {
        SolveSettings {
            time_limit_s: 60.0,
            mip_rel_gap: 1e-6,
            mip_abs_gap: 1e-6,
            node_limit: None,
            threads: 1,
            seed: 0,
            symmetry_breaking: true,
            colocation_cuts: false,
            verbose: false,
        }
    }
}

impl SolveSettings {
    /// How the program is built under these settings.
    pub fn formulation(&self) -> FormulationOptions {
        FormulationOptions {
            symmetry_breaking: self.symmetry_breaking,
            colocation_cuts: self.colocation_cuts,
        }
    }

    /// Rejects settings no solve can use.
    pub fn check(&self) -> Result<()> {
        let bad = |f: &str, v: String, why: &str| Err(Error::setting("solve settings", f, v, why));
        // Infinity is allowed: no limit (HiGHS' own default).
        if self.time_limit_s.is_nan() || self.time_limit_s <= 0.0 {
            return bad(
                "time_limit_s",
                self.time_limit_s.to_string(),
                "must be > 0 (or infinite: no limit)",
            );
        }
        if !(self.mip_rel_gap.is_finite() && self.mip_rel_gap >= 0.0) {
            return bad("mip_rel_gap", self.mip_rel_gap.to_string(), "must be >= 0");
        }
        if !(self.mip_abs_gap.is_finite() && self.mip_abs_gap >= 0.0) {
            return bad("mip_abs_gap", self.mip_abs_gap.to_string(), "must be >= 0");
        }
        if self.threads == 0 {
            return bad("threads", "0".into(), "must be >= 1");
        }
        Ok(())
    }
}

/// The relative and absolute gap under which a solve is called optimal.
const PROVEN_GAP: f64 = 1e-6;

pub use crate::scheduler::SolveStatus;

/// What a solve did and found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolveReport {
    /// How it ended.
    pub status: SolveStatus,
    /// Objective of the returned schedule (solver value + constant).
    pub objective: f64,
    /// The same, recomputed by [`Objective::score`] on the decoded schedule.
    pub objective_check: f64,
    /// The schedule's utility with the PerfModel's compounded in-context speeds
    /// ([`Objective::perf_model_utility`]): how far the first-order objective is from it.
    pub perf_model_utility: f64,
    /// Best proven upper bound on the objective.
    pub best_bound: f64,
    /// Relative gap `(bound − objective) / max(|objective|, 1e-9)`.
    pub gap: f64,
    /// Seconds spent building the model.
    pub build_time_s: f64,
    /// Seconds in the solver.
    pub wall_time_s: f64,
    /// Branch-and-bound nodes.
    pub nodes: Option<u64>,
    /// Model size.
    pub size: ModelSize,
    /// Whether the solver was handed a MIP start.
    pub warm_started: bool,
    /// Objective of the best start: the running jobs kept where they are, the caller's warm
    /// start and any candidate schedules, whichever scores highest.
    pub start_objective: f64,
    /// Whether the schedule returned is that start, because the solver found none or none that
    /// scores higher: a solve never returns less than its start.
    pub returned_start: bool,
}

/// A solved round: the schedule (empty if infeasible) and the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Solved {
    /// Best schedule found.
    pub schedule: Schedule,
    /// Report.
    pub report: SolveReport,
}

/// Builds and solves the round program for a snapshot, optionally from a MIP start (which must
/// be a valid schedule the program can express: an error otherwise). The solve starts from the
/// best of that start and the running jobs kept where they are, and returns the solver's
/// schedule only if it scores higher than that start ([`SolveReport::returned_start`]).
pub fn solve(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    settings: &SolveSettings,
    warm_start: Option<&Schedule>,
) -> Result<Solved> {
    solve_from(snapshot, perf, objective, settings, warm_start, &[])
}

/// [`solve`], with `candidates` (for example heuristic schedules) also considered as the start:
/// a candidate that is invalid, or that the program cannot express, is passed over (as a MIP
/// start, or altogether), never an error.
pub fn solve_from(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    settings: &SolveSettings,
    warm_start: Option<&Schedule>,
    candidates: &[Schedule],
) -> Result<Solved> {
    solve_restricted(
        snapshot,
        perf,
        objective,
        settings,
        warm_start,
        candidates,
        &[],
    )
}

/// [`solve_from`] with the jobs `fixed` held to what `warm_start` does with them (their option
/// or waiting, and every worker, PS, GPU switch and socket): a smaller program. Its bound is
/// the restricted program's, **not** a bound of the round; [`fix_and_solve`] frees the jobs
/// afterwards to report an honest one.
pub fn solve_restricted(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    settings: &SolveSettings,
    warm_start: Option<&Schedule>,
    candidates: &[Schedule],
    fixed: &[crate::model::JobId],
) -> Result<Solved> {
    settings.check()?;
    if !fixed.is_empty() && warm_start.is_none() {
        return Err(Error::setting(
            "solve",
            "fixed jobs",
            fixed.len(),
            "fixing jobs needs the warm start that says what to fix them to",
        ));
    }
    // A snapshot built in code gets the checks a JSON instance gets (finite work, unique ids,
    // jobs that fit, consistent current placements) before any of it reaches the solver.
    snapshot.check("snapshot")?;
    let t0 = Instant::now();
    // The round is priced once: the program's coefficients, the MIP start and the final score
    // all read the same options and costs.
    let pricing = RoundPricing::new(perf, snapshot, *objective);
    let form = Formulation::from_pricing(&pricing, settings.formulation())?;
    let size = form.size();
    let (vars, obj, constraints, decoder) = form.into_parts();
    // The caller's start must be usable; the others are tried. Keeping every running job where
    // it is is always valid (the snapshot's check), so there is always a start to fall back on.
    // Every start is relabelled onto the ordering of interchangeable servers and switches the
    // program imposes (group 13): otherwise HiGHS finds the start infeasible and drops it.
    let canonical = |s: &Schedule| {
        if settings.symmetry_breaking {
            super::formulation::relabel(snapshot, pricing.topology(), s)
        } else {
            s.clone()
        }
    };
    let user = match warm_start {
        Some(s) => {
            let s = canonical(s);
            let x = decoder.encode(&pricing, &s)?;
            Some((s, x))
        }
        None => None,
    };
    // Fixed columns are held by their bounds (presolve removes them outright), not by rows.
    let mut fixings: Vec<(usize, f64)> = Vec::new();
    if let Some((_, x)) = &user {
        for id in fixed {
            let Some(j) = snapshot.job_index(*id) else {
                continue;
            };
            for v in decoder.integer_columns_of(j) {
                let i = decoder.index(v);
                fixings.push((i, x[i].round()));
            }
        }
    }
    let keep = snapshot.current_schedule();
    // (schedule, its score, its encoding if the program can express it)
    let mut best: Option<(Schedule, f64, Option<Vec<f64>>)> = None;
    // Everyone waiting is valid too, should a running job's current allocation not be priced.
    let others = [keep, Schedule::default()]
        .into_iter()
        .chain(candidates.iter().map(canonical));
    let tried = user
        .map(|(s, x)| (s, Some(x)))
        .into_iter()
        .chain(others.map(|s| (s, None)));
    for (s, encoded) in tried {
        if !s.validate(snapshot).is_empty() {
            continue;
        }
        let Ok(score) = pricing.score(&s) else {
            continue;
        };
        if best.as_ref().is_some_and(|b| b.1 >= score.total) {
            continue;
        }
        let encoded = encoded.or_else(|| decoder.encode(&pricing, &s).ok());
        best = Some((s, score.total, encoded));
    }
    let Some((start_schedule, start_objective, start)) = best else {
        return Err(Error::Solver {
            solver: "start".into(),
            reason: "not even the schedule in which every job waits can be priced".into(),
        });
    };
    let run = if size.variables == 0 {
        // No job has an option (or there is no job): waiting is the only, optimal, schedule.
        // HiGHS reports an empty model with a solution status its bindings cannot read.
        HighsRun {
            status: SolveStatus::Optimal,
            values: Vec::new(),
            objective: 0.0,
            bound: Some(0.0),
            nodes: Some(0),
            build_time_s: t0.elapsed().as_secs_f64(),
            wall_time_s: 0.0,
        }
    } else {
        run_highs(
            vars,
            obj,
            constraints,
            &fixings,
            start.as_deref(),
            settings,
            t0,
        )?
    };
    if matches!(
        run.status,
        SolveStatus::Infeasible | SolveStatus::NoSolution
    ) {
        // Nothing from the solver: the start is the answer, and the report says so.
        let score = pricing.score(&start_schedule)?;
        let report = SolveReport {
            status: run.status,
            objective: start_objective,
            objective_check: start_objective,
            perf_model_utility: pricing.perf_model_utility(&start_schedule, &score)?,
            best_bound: f64::NAN,
            gap: f64::NAN,
            build_time_s: run.build_time_s,
            wall_time_s: run.wall_time_s,
            nodes: run.nodes,
            size,
            warm_started: start.is_some(),
            start_objective,
            returned_start: true,
        };
        return Ok(Solved {
            schedule: start_schedule,
            report,
        });
    }
    let HighsRun {
        status,
        values,
        build_time_s,
        wall_time_s,
        nodes,
        ..
    } = run;
    let value = |v: good_lp::Variable| values[decoder.index(v)];
    let solved = decoder.decode(snapshot, &value);
    let solved_value = run.objective + decoder.objective_constant();
    let solved_score = pricing.score(&solved)?;
    // The solver's schedule only if it beats the start (by more than the solver's own
    // tolerance): a time-limited incumbent can be worse than keeping the cluster as it is, and
    // one no better is the start itself or a needless change.
    let returned_start = solved_score.total <= start_objective + PROVEN_GAP;
    let (schedule, objective_value, score) = if returned_start {
        let score = pricing.score(&start_schedule)?;
        (start_schedule, start_objective, score)
    } else {
        (solved, solved_value, solved_score)
    };
    let bound = run
        .bound
        .map(|b| b + decoder.objective_constant())
        .unwrap_or(objective_value);
    // HiGHS' gap is relative to the primal value; recompute it on the shifted objective.
    let gap = relative_gap(bound, objective_value);
    let check = score.total;
    let perf_model_utility = pricing.perf_model_utility(&schedule, &score)?;
    let abs_gap = (bound - objective_value).max(0.0);
    // HiGHS says "optimal" when the gap is within the requested tolerances, however loose:
    // only a gap within the default ones (1e-6) is called optimal here, a looser stop is a
    // gap-limit stop (`--gap 1` accepts any feasible schedule).
    let status = if status == SolveStatus::Optimal
        && gap > PROVEN_GAP * 1.0001
        && abs_gap > PROVEN_GAP * 1.0001
    {
        SolveStatus::GapLimit
    } else {
        status
    };
    let report = SolveReport {
        status,
        objective: objective_value,
        objective_check: check,
        perf_model_utility,
        best_bound: bound,
        gap,
        build_time_s,
        wall_time_s,
        nodes,
        size,
        warm_started: start.is_some(),
        start_objective,
        returned_start,
    };
    Ok(Solved { schedule, report })
}

/// What [`fix_and_solve`] did, phase by phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FixReport {
    /// Jobs fixed in the first phase.
    pub fixed: usize,
    /// The restricted program's objective and status after the first phase.
    pub restricted_objective: f64,
    /// Its status.
    pub restricted_status: SolveStatus,
    /// Seconds of the first phase (build included).
    pub restricted_s: f64,
}

/// Fix-and-solve: the jobs `fixed` are held to what `start` does with them while the smaller
/// program is solved (at most `share` of the time limit), then every job is freed and the whole
/// program is solved from the best schedule so far with the time left. The result is the best
/// valid schedule seen, never below `start` or `candidates`, and its bound and gap are those
/// of the whole program (the second phase), so they are honest. With no job to fix, the first
/// phase is skipped.
#[allow(clippy::too_many_arguments)]
pub fn fix_and_solve(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    settings: &SolveSettings,
    start: &Schedule,
    candidates: &[Schedule],
    fixed: &[crate::model::JobId],
    share: f64,
) -> Result<(Solved, FixReport)> {
    if !(share > 0.0 && share < 1.0) {
        return Err(Error::setting(
            "fix and solve",
            "share",
            share,
            "strictly between 0 and 1",
        ));
    }
    let t0 = Instant::now();
    let (restricted, report) = if fixed.is_empty() {
        (None, None)
    } else {
        let first = SolveSettings {
            time_limit_s: settings.time_limit_s * share,
            ..settings.clone()
        };
        let r = solve_restricted(
            snapshot,
            perf,
            objective,
            &first,
            Some(start),
            candidates,
            fixed,
        )?;
        let rep = FixReport {
            fixed: fixed.len(),
            restricted_objective: r.report.objective,
            restricted_status: r.report.status,
            restricted_s: t0.elapsed().as_secs_f64(),
        };
        (Some(r.schedule), Some(rep))
    };
    let left = (settings.time_limit_s - t0.elapsed().as_secs_f64()).max(0.01);
    let second = SolveSettings {
        time_limit_s: left,
        ..settings.clone()
    };
    let mut all: Vec<Schedule> = candidates.to_vec();
    all.push(start.clone());
    let warm = restricted.as_ref().unwrap_or(start);
    let mut solved = solve_from(snapshot, perf, objective, &second, Some(warm), &all)?;
    // The whole run's time, both phases, so that it compares with a single solve's.
    solved.report.wall_time_s = t0.elapsed().as_secs_f64();
    let report = report.unwrap_or(FixReport {
        fixed: 0,
        restricted_objective: f64::NAN,
        restricted_status: SolveStatus::NoSolution,
        restricted_s: 0.0,
    });
    Ok((solved, report))
}

/// `(bound − objective)⁺ / max(|objective|, 1e-9)`: how far a bound is above a schedule's
/// objective, relative to it (the gap of every report, and the root gap of `bench-solve`);
/// NaN when either is (a bound never proved stays unknown, not 0).
pub fn relative_gap(bound: f64, objective: f64) -> f64 {
    let above = bound - objective;
    if above.is_nan() {
        return f64::NAN;
    }
    above.max(0.0) / objective.abs().max(1e-9)
}

/// What one HiGHS run left: outcome, column values, objective and bound (without the
/// formulation's constant), nodes and times.
struct HighsRun {
    status: SolveStatus,
    values: Vec<f64>,
    objective: f64,
    bound: Option<f64>,
    nodes: Option<u64>,
    build_time_s: f64,
    wall_time_s: f64,
}

/// Hands the program to HiGHS with the settings and an optional MIP start. An infeasible run
/// comes back with status `Infeasible`, one stopped by a limit before any feasible solution with
/// `NoSolution`; both without values.
fn run_highs(
    vars: good_lp::ProblemVariables,
    obj: good_lp::Expression,
    constraints: Vec<good_lp::Constraint>,
    fixings: &[(usize, f64)],
    start: Option<&[f64]>,
    settings: &SolveSettings,
    t0: Instant,
) -> Result<HighsRun> {
    let mut problem = vars.maximise(obj).using(highs);
    for c in constraints {
        problem.add_constraint(c);
    }
    let build_time_s = t0.elapsed().as_secs_f64();
    let mut model = problem.into_inner();
    fix_columns(&mut model, fixings)?;
    if !fixings.is_empty() {
        // HiGHS 1.15's RENS sub-MIP on a program with fixed columns can loop in presolve's
        // doubleton elimination without reading the clock (seen on a 2-server, 6-job round,
        // with the columns fixed by rows or by bounds alike): no RENS there.
        model.set_option("mip_heuristic_run_rens", false);
    }
    // Options set through good_lp only reach HiGHS inside good_lp's own solve(); set them here.
    model.set_option("output_flag", settings.verbose);
    model.set_option("log_to_console", settings.verbose);
    // The limit covers the whole solve, model build included: HiGHS gets what is left of it.
    model.set_option(
        "time_limit",
        (settings.time_limit_s - t0.elapsed().as_secs_f64()).max(1e-3),
    );
    model.set_option("mip_rel_gap", settings.mip_rel_gap);
    model.set_option("mip_abs_gap", settings.mip_abs_gap);
    model.set_option("threads", settings.threads as i32);
    model.set_option("random_seed", settings.seed as i32);
    if let Some(n) = settings.node_limit {
        model.set_option("mip_max_nodes", i32::try_from(n).unwrap_or(i32::MAX));
    }
    if let Some(x) = start {
        model.set_solution(Some(x), None, None, None);
    }
    let t1 = Instant::now();
    let solved = model.try_solve().map_err(|e| Error::Solver {
        solver: "HiGHS".into(),
        reason: format!("{e:?}"),
    })?;
    let wall_time_s = t1.elapsed().as_secs_f64();
    use highs::HighsModelStatus as H;
    let status = match solved.status() {
        H::Optimal => SolveStatus::Optimal,
        H::Infeasible | H::UnboundedOrInfeasible => SolveStatus::Infeasible,
        H::ReachedTimeLimit => SolveStatus::TimeLimit,
        H::ReachedIterationLimit | H::ReachedSolutionLimit => SolveStatus::NodeLimit,
        H::ObjectiveBound | H::ObjectiveTarget => SolveStatus::GapLimit,
        other => {
            return Err(Error::Solver {
                solver: "HiGHS".into(),
                reason: format!("status {other:?}"),
            });
        }
    };
    let nodes = node_count(&solved);
    let feasible = solved.primal_solution_status() == highs::HighsSolutionStatus::Feasible;
    if status == SolveStatus::Infeasible || !feasible {
        return Ok(HighsRun {
            status: if status == SolveStatus::Infeasible {
                SolveStatus::Infeasible
            } else {
                SolveStatus::NoSolution
            },
            values: Vec::new(),
            objective: f64::NAN,
            bound: None,
            nodes,
            build_time_s,
            wall_time_s,
        });
    }
    Ok(HighsRun {
        status,
        values: solved.get_solution().columns().to_vec(),
        objective: solved.objective_value(),
        bound: solved.double_info_value(c"mip_dual_bound").ok(),
        nodes,
        build_time_s,
        wall_time_s,
    })
}

/// Holds column `i` at `v` for every `(i, v)` (good_lp numbers HiGHS columns in variable order,
/// the order the decoder's indices follow); the safe wrapper cannot name a column it did not
/// create, so the bounds go through the C API.
#[allow(unsafe_code)]
fn fix_columns(model: &mut highs::Model, fixings: &[(usize, f64)]) -> Result<()> {
    let cols = model.num_cols();
    for &(i, v) in fixings {
        if i >= cols {
            return Err(Error::Solver {
                solver: "HiGHS".into(),
                reason: format!("fixed column {i} of {cols}"),
            });
        }
        // SAFETY: `model` owns a live HiGHS instance for the call; `i` is a column index below
        // its column count (checked above); bounds are finite.
        let status =
            unsafe { highs_sys::Highs_changeColBounds(model.as_mut_ptr(), i as i32, v, v) };
        if status != 0 {
            return Err(Error::Solver {
                solver: "HiGHS".into(),
                reason: format!("fixing column {i} at {v}: status {status}"),
            });
        }
    }
    Ok(())
}

/// Branch-and-bound nodes: HiGHS keeps the count as a 64-bit info value, which the safe wrapper
/// does not read; the 32-bit reader fails on it, so it is read through the C API.
#[allow(unsafe_code)]
fn node_count(solved: &highs::SolvedModel) -> Option<u64> {
    let mut n: i64 = -1;
    // SAFETY: `solved` owns a live HiGHS instance for the duration of the call; the name is a
    // NUL-terminated C string; `n` is a valid i64 out-parameter.
    let status = unsafe {
        highs_sys::Highs_getInt64InfoValue(solved.as_ptr(), c"mip_node_count".as_ptr(), &mut n)
    };
    (status == 0 && n >= 0).then_some(n as u64)
}

/// The optimum of the program's linear relaxation (every column continuous, the same rows,
/// built as `settings` say), in objective units: the root bound before the solver's own
/// presolve and cuts. `None` when the relaxation does not solve within the time limit.
pub fn relaxation_bound(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    settings: &SolveSettings,
) -> Result<Option<f64>> {
    settings.check()?;
    snapshot.check("snapshot")?;
    let t0 = Instant::now();
    let pricing = RoundPricing::new(perf, snapshot, *objective);
    let form = Formulation::from_pricing_with(&pricing, settings.formulation(), true)?;
    if form.size().variables == 0 {
        return Ok(Some(form.objective_constant()));
    }
    let constant = form.objective_constant();
    let (vars, obj, constraints, _) = form.into_parts();
    let run = run_highs(vars, obj, constraints, &[], None, settings, t0)?;
    Ok((run.status == SolveStatus::Optimal).then_some(run.objective + constant))
}

/// Exports the round program of a snapshot as MPS.
pub fn export_mps(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    options: FormulationOptions,
    out: &mut dyn std::io::Write,
) -> Result<ModelSize> {
    snapshot.check("<input>")?;
    let form = Formulation::build(snapshot, perf, objective, options)?;
    form.write_mps(out).map_err(|e| Error::io("<mps>", e))?;
    Ok(form.size())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        assert!(SolveSettings::default().check().is_ok());
        assert!(
            SolveSettings {
                time_limit_s: 0.0,
                ..Default::default()
            }
            .check()
            .is_err()
        );
        assert!(
            SolveSettings {
                mip_rel_gap: f64::NAN,
                ..Default::default()
            }
            .check()
            .is_err()
        );
        assert!(
            SolveSettings {
                threads: 0,
                ..Default::default()
            }
            .check()
            .is_err()
        );
    }
}
