//! What a solve returns: the schedule and an honest report (status, objective, bound, gap,
//! times, sizes), shared by both programs (`solve` the compact one, `config` the configuration
//! program).

use std::time::{Duration, Instant};

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
    /// The best objective found so far, each time it improved: the start when it was scored,
    /// then every better schedule the solver found (HiGHS' improving solutions, each master of
    /// the configuration program), in seconds since the solve began. The anytime quality of
    /// a deadline-bound solve ([`primal_integral`]).
    pub incumbents: Vec<Incumbent>,
    /// The configuration program only: columns generated (the seed's included), and whether
    /// column generation converged (then `best_bound` is its relaxation, a bound on the round).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<ColumnStats>,
}

/// One point of a solve's incumbent over time ([`SolveReport::incumbents`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Incumbent {
    /// Seconds since the solve began.
    pub time_s: f64,
    /// The best objective found by then.
    pub objective: f64,
}

/// A solve's incumbents as they are found: improvements only, times from the solve's start.
pub(crate) struct Trail {
    t0: Instant,
    points: Vec<Incumbent>,
}

impl Trail {
    /// An empty trail for a solve that began at `t0`.
    pub(crate) fn new(t0: Instant) -> Self {
        Trail {
            t0,
            points: Vec::new(),
        }
    }

    /// `objective` found at `at`, kept if it beats every earlier one by more than rounding
    /// (a master's value of the start's schedule is the start's up to the last bits); non-finite
    /// ones are not.
    pub(crate) fn record_at(&mut self, at: Instant, objective: f64) {
        let better = self
            .points
            .last()
            .is_none_or(|p| objective > p.objective + 1e-9 * p.objective.abs().max(1.0));
        if objective.is_finite() && better {
            self.points.push(Incumbent {
                time_s: at.saturating_duration_since(self.t0).as_secs_f64(),
                objective,
            });
        }
    }

    /// `objective` found now.
    pub(crate) fn record(&mut self, objective: f64) {
        self.record_at(Instant::now(), objective);
    }

    /// A solver run's improving solutions, each shifted by the program's `constant`.
    pub(crate) fn record_run(&mut self, improvements: &[(Instant, f64)], constant: f64) {
        for &(at, v) in improvements {
            self.record_at(at, v + constant);
        }
    }

    /// Another solve's incumbents, that solve having begun at `origin`.
    pub(crate) fn record_from(&mut self, origin: Instant, points: &[Incumbent]) {
        for p in points {
            self.record_at(
                origin + Duration::from_secs_f64(p.time_s.max(0.0)),
                p.objective,
            );
        }
    }

    /// The points, in time order.
    pub(crate) fn into_points(self) -> Vec<Incumbent> {
        self.points
    }
}

/// The primal integral of an incumbent trail over `[0, horizon_s]` seconds (Berthold, "Measuring
/// the impact of primal heuristics", 2013): the integral of the primal gap `|best − z(t)| /
/// max(|best|, |z(t)|)` of the incumbent `z(t)` against `best` (the best objective known for
/// the round), which is 1 before the first incumbent or when the two differ in sign, 0 when both
/// are 0. In seconds: 0 for a solver holding the best schedule from the first instant,
/// `horizon_s` for one that never finds any. The trail need not be sorted.
pub fn primal_integral(trail: &[Incumbent], best: f64, horizon_s: f64) -> f64 {
    let gap = |z: f64| {
        if z == 0.0 && best == 0.0 {
            0.0
        } else if z * best < 0.0 {
            1.0
        } else {
            ((best - z).abs() / best.abs().max(z.abs())).min(1.0)
        }
    };
    let mut points: Vec<Incumbent> = trail.to_vec();
    points.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    let (mut area, mut t, mut g) = (0.0, 0.0, 1.0);
    for p in points {
        let at = p.time_s.clamp(0.0, horizon_s);
        area += g * (at - t);
        t = at;
        g = gap(p.objective);
    }
    area + g * (horizon_s - t).max(0.0)
}

/// The incumbent's objective at `time_s` seconds (NaN before the first).
pub fn incumbent_at(trail: &[Incumbent], time_s: f64) -> f64 {
    trail
        .iter()
        .filter(|p| p.time_s <= time_s)
        .map(|p| p.objective)
        .fold(f64::NAN, f64::max)
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
