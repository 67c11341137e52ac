//! What a solve returns: the schedule and an honest report (status, objective, bound, gap,
//! times, sizes), shared by both programs (`solve` the compact one, `config` the configuration
//! program).

use serde::Serialize;

use super::formulation::ModelSize;
use crate::model::{ClusterSnapshot, Schedule};
use crate::scheduler::RoundSolve;
pub use crate::scheduler::SolveStatus;

impl RoundSolve {
    /// The record of a solve of `snapshot`'s round with `held` running jobs held where they
    /// are, from its report.
    pub fn of(snapshot: &ClusterSnapshot, held: usize, r: &SolveReport) -> Self {
        RoundSolve {
            time_s: snapshot.time_s,
            jobs: snapshot.jobs.len(),
            held,
            status: r.status,
            objective: r.objective,
            start_objective: r.start_objective,
            returned_start: r.returned_start,
            best_bound: r.best_bound,
            gap: r.gap,
            build_s: r.build_time_s,
            solve_s: r.wall_time_s,
            nodes: r.nodes,
            columns: r.columns.as_ref().map(|c| c.columns),
            search_nodes: r.columns.as_ref().map(|c| c.search_nodes),
        }
    }
}

/// What a solve did and found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolveReport {
    /// How it ended.
    pub status: SolveStatus,
    /// Objective of the returned schedule (solver value + constant).
    pub objective: f64,
    /// The same, recomputed by [`crate::Objective::score`] on the decoded schedule.
    pub objective_check: f64,
    /// The schedule's utility with the PerfModel's compounded in-context speeds
    /// ([`crate::Objective::perf_model_utility`]): how far the first-order objective is from it.
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
    /// The configuration program only: columns generated (the seed's included), and whether
    /// column generation converged (then `best_bound` is its relaxation, a bound on the round).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<ColumnStats>,
}

/// What column generation did in a solve of the configuration program.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ColumnStats {
    /// Columns in the final pool.
    pub columns: usize,
    /// Relaxations solved.
    pub iterations: usize,
    /// Whether no column could raise the last relaxation (every pricing exact).
    pub converged: bool,
    /// The last relaxation's value over the pool (the bound when converged).
    pub relaxation: f64,
    /// Seconds generating columns (the rest of the solve is the restricted master).
    pub generation_s: f64,
    /// Pricing-search nodes visited in all: what [`crate::ilp::SolveSettings::work_limit`] counts.
    pub search_nodes: u64,
}

/// Which program a solve builds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum SolveProgram {
    /// By size: the configuration program for rounds of at least
    /// [`SolveProgram::AUTO_CONFIG_SIZE`] servers × jobs (but a fix-and-solve), else the compact
    /// one (measured in `formulations/results/programs`: the compact program is faster on the
    /// smallest rounds, the configuration program proves or bounds every larger one better).
    #[default]
    Auto,
    /// The compact program of `formulations/README.md` (per-job, per-switch integer columns).
    Compact,
    /// The configuration program: a column per server configuration, generated at the root
    /// against the relaxation's duals (its bound closes packing gaps), then the master over the
    /// columns as an integer program.
    Config,
}

impl SolveProgram {
    /// The size (servers × jobs) from which [`SolveProgram::Auto`] takes the configuration
    /// program: above the shipped 4 × 8 rounds, which the compact program proves in seconds.
    pub const AUTO_CONFIG_SIZE: usize = 40;
}

/// A solved round: the schedule (empty if infeasible) and the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Solved {
    /// Best schedule found.
    pub schedule: Schedule,
    /// Report.
    pub report: SolveReport,
    /// What the first phase of a fix-and-solve did ([`crate::ilp::SolveRequest::fix_then_free`]); `None`
    /// for any other solve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<FixReport>,
}

/// What [`crate::ilp::SolveRequest::fix_then_free`] did, phase by phase.
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

/// `(bound − objective)⁺ / max(|objective|, 1e-9)`: how far a bound is above a schedule's
/// objective, relative to it, as MIP solvers report their gap (the gap of every solve report,
/// and the root gap of `bench-solve`); NaN when either is (a bound never proved stays unknown,
/// not 0). The one relative gap of the crate; a policy scored against a labelled round's
/// optimum is [`crate::learn::RoundLabel::gap_to`] it, relative to that optimum.
pub fn relative_gap(bound: f64, objective: f64) -> f64 {
    let above = bound - objective;
    if above.is_nan() {
        return f64::NAN;
    }
    above.max(0.0) / objective.abs().max(1e-9)
}
