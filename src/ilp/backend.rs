//! The solver behind the round program: a small [`Backend`] trait and its HiGHS implementation,
//! the only place that speaks HiGHS (options, statuses, and the unsafe C calls: column bounds,
//! the node count, the improving-solution callback).

use std::sync::Mutex;
use std::time::Instant;

use good_lp::solvers::highs::highs;
use good_lp::{Constraint, Expression, ProblemVariables, SolverModel};

use super::settings::SolveSettings;
use crate::error::{Error, Result};
use crate::scheduler::SolveStatus;

/// What one run of a backend left: outcome, column values, objective and bound (without the
/// formulation's constant), nodes and times.
pub(crate) struct BackendRun {
    pub(crate) status: SolveStatus,
    pub(crate) values: Vec<f64>,
    /// Row duals and column reduced costs, HiGHS' convention (`c − Aᵀy` for a column): of the
    /// linear program when every column is continuous, not meaningful for a MIP.
    pub(crate) row_duals: Vec<f64>,
    /// See `row_duals`.
    pub(crate) column_duals: Vec<f64>,
    pub(crate) objective: f64,
    pub(crate) bound: Option<f64>,
    pub(crate) nodes: Option<u64>,
    pub(crate) build_time_s: f64,
    pub(crate) wall_time_s: f64,
    /// Each improving integer solution HiGHS found, when it was found and its objective
    /// (without the formulation's constant), in order: the run's incumbent over time.
    pub(crate) improvements: Vec<(Instant, f64)>,
}

/// The program as good_lp holds it: columns, objective (maximised) and rows.
pub(crate) struct Program {
    pub(crate) vars: ProblemVariables,
    pub(crate) objective: Expression,
    pub(crate) rows: Vec<Constraint>,
}

/// One run of a MIP solver on a program: what the round solve needs of a solver, and all it
/// knows of one. Columns are numbered in variable order (the decoder's indices).
pub(crate) trait Backend {
    /// Solves `program` under `settings` (its time limit counted from `t0`, the start of the
    /// build), with the columns of `fixings` held at their values and `start` as the MIP start.
    /// An infeasible run comes back with status `Infeasible`, one stopped by a limit before any
    /// feasible solution with `NoSolution`; both without values.
    fn run(
        &self,
        program: Program,
        fixings: &[(usize, f64)],
        start: Option<&[f64]>,
        settings: &SolveSettings,
        t0: Instant,
    ) -> Result<BackendRun>;
}

/// HiGHS, through good_lp, with the calls its safe wrapper lacks (column bounds by index, the
/// 64-bit node count, the improving-solution callback) made through its C API here and nowhere
/// else.
pub(crate) struct Highs;

impl Backend for Highs {
    fn run(
        &self,
        program: Program,
        fixings: &[(usize, f64)],
        start: Option<&[f64]>,
        settings: &SolveSettings,
        t0: Instant,
    ) -> Result<BackendRun> {
        // The thread count may change from run to run on one thread: HiGHS keeps a task
        // scheduler per OS thread and refuses a run asking another size, but its C API resets
        // the thread's scheduler when a model is destroyed (`Highs_destroy`, the wrapper's
        // drop), and each run here builds and drops its own model (test
        // `pricing_on_two_threads_finds_what_one_does`: 1, 2, then 1 thread on one thread).
        let Program {
            vars,
            objective: obj,
            rows: constraints,
        } = program;
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
        // HiGHS 1.15 restarts the search on a presolved copy once enough integer columns are
        // fixed at the root, and that copy can lose the optimum: a 1-server round (5 jobs,
        // seed 7364, one GPU added to its last switch) was reported "Optimal" at 0.9606 where a
        // feasible 0.9686 exists (random seed 0; seeds 1-5, presolve off or no restart: 0.9686).
        // The same solver has restart-related wrong optima on record (HiGHS issues 2171, 2439).
        // A proven optimum must be one, so no restarts (`ilp::the_optimum_survives_a_gpu_added`).
        model.set_option("mip_allow_restart", false);
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
        let seen: Mutex<Vec<(Instant, f64)>> = Mutex::new(Vec::new());
        watch_improvements(&mut model, &seen)?;
        let t1 = Instant::now();
        let solved = model
            .try_solve()
            .map_err(|e| highs_error(format!("{e:?}")))?;
        // Taken, not moved out: `seen` stays where HiGHS points until `solved` (declared after
        // it, so dropped first) is gone.
        let improvements = seen
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        let wall_time_s = t1.elapsed().as_secs_f64();
        use highs::HighsModelStatus as H;
        let status = match solved.status() {
            H::Optimal => SolveStatus::Optimal,
            H::Infeasible | H::UnboundedOrInfeasible => SolveStatus::Infeasible,
            H::ReachedTimeLimit => SolveStatus::TimeLimit,
            H::ReachedIterationLimit | H::ReachedSolutionLimit => SolveStatus::NodeLimit,
            H::ObjectiveBound | H::ObjectiveTarget => SolveStatus::GapLimit,
            other => {
                return Err(highs_error(format!("status {other:?}")));
            }
        };
        let nodes = node_count(&solved);
        let feasible = solved.primal_solution_status() == highs::HighsSolutionStatus::Feasible;
        if status == SolveStatus::Infeasible || !feasible {
            return Ok(BackendRun {
                status: if status == SolveStatus::Infeasible {
                    SolveStatus::Infeasible
                } else {
                    SolveStatus::NoSolution
                },
                values: Vec::new(),
                row_duals: Vec::new(),
                column_duals: Vec::new(),
                objective: f64::NAN,
                bound: None,
                nodes,
                build_time_s,
                wall_time_s,
                improvements,
            });
        }
        let solution = solved.get_solution();
        Ok(BackendRun {
            status,
            values: solution.columns().to_vec(),
            row_duals: solution.dual_rows().to_vec(),
            column_duals: solution.dual_columns().to_vec(),
            objective: solved.objective_value(),
            bound: solved.double_info_value(c"mip_dual_bound").ok(),
            nodes,
            build_time_s,
            wall_time_s,
            improvements,
        })
    }
}

/// Asks HiGHS to report every improving integer solution of the run into `seen` (the time it
/// was found and its objective). `seen` must outlive the run: the caller's `try_solve` happens
/// while it is borrowed, and the model is dropped with the run.
#[allow(unsafe_code)]
fn watch_improvements(model: &mut highs::Model, seen: &Mutex<Vec<(Instant, f64)>>) -> Result<()> {
    let data = seen as *const Mutex<Vec<(Instant, f64)>> as *mut std::ffi::c_void;
    // SAFETY: `model` owns a live HiGHS instance; `on_improving` matches HiGHS' C callback
    // type; `data` points to a Mutex that outlives every call HiGHS makes during the run (it
    // lives in `Highs::run`'s frame, which also drops the model), and the callback only locks
    // it.
    let status = unsafe {
        let set = highs_sys::Highs_setCallback(model.as_mut_ptr(), Some(on_improving), data);
        if set != 0 {
            set
        } else {
            highs_sys::Highs_startCallback(
                model.as_mut_ptr(),
                highs_sys::kHighsCallbackMipImprovingSolution,
            )
        }
    };
    if status != 0 {
        return Err(highs_error(format!(
            "improving-solution callback: status {status}"
        )));
    }
    Ok(())
}

/// HiGHS' callback: an improving solution's time and objective pushed into the run's list. It
/// never unwinds into C (a poisoned lock drops the record).
#[allow(unsafe_code)]
unsafe extern "C" fn on_improving(
    kind: std::ffi::c_int,
    _message: *const std::ffi::c_char,
    out: *const highs_sys::HighsCallbackDataOut,
    _input: *mut highs_sys::HighsCallbackDataIn,
    data: *mut std::ffi::c_void,
) {
    if kind != highs_sys::kHighsCallbackMipImprovingSolution as std::ffi::c_int
        || out.is_null()
        || data.is_null()
    {
        return;
    }
    let now = Instant::now();
    // SAFETY: HiGHS passes a valid `out` for the call's duration; `data` is the Mutex handed to
    // `Highs_setCallback` by `watch_improvements`, alive for the run.
    let (objective, seen) = unsafe {
        (
            (*out).objective_function_value,
            &*(data as *const Mutex<Vec<(Instant, f64)>>),
        )
    };
    if let Ok(mut seen) = seen.lock() {
        seen.push((now, objective));
    }
}

/// A HiGHS failure, with why.
fn highs_error(reason: String) -> Error {
    Error::Solver {
        solver: "HiGHS".into(),
        reason,
    }
}

/// Holds column `i` at `v` for every `(i, v)` (good_lp numbers HiGHS columns in variable order,
/// the order the decoder's indices follow); the safe wrapper cannot name a column it did not
/// create, so the bounds go through the C API.
#[allow(unsafe_code)]
fn fix_columns(model: &mut highs::Model, fixings: &[(usize, f64)]) -> Result<()> {
    let cols = model.num_cols();
    for &(i, v) in fixings {
        if i >= cols {
            return Err(highs_error(format!("fixed column {i} of {cols}")));
        }
        // SAFETY: `model` owns a live HiGHS instance for the call; `i` is a column index below
        // its column count (checked above); bounds are finite.
        let status =
            unsafe { highs_sys::Highs_changeColBounds(model.as_mut_ptr(), i as i32, v, v) };
        if status != 0 {
            return Err(highs_error(format!(
                "fixing column {i} at {v}: status {status}"
            )));
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
