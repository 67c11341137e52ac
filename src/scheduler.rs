//! The one `Scheduler` trait every policy implements: exact ([`crate::ilp::ExactScheduler`]),
//! heuristic ([`crate::policies`]) or learned.
//!
//! A scheduler proposes; [`crate::Schedule::validate`] decides whether the proposal can run.
//! Heuristics may change how good a schedule is, never whether it is feasible.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::{ClusterSnapshot, Schedule};

/// How a solve ended (written `optimal`, `gap_limit`, `time_limit`, `node_limit`, `infeasible`,
/// `no_solution`). Here, below every solver, so that a scheduler's round log is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolveStatus {
    /// Proven optimal (within `mip_rel_gap` of 1e-6 or better).
    Optimal,
    /// Stopped with a feasible schedule within the requested gap, which is looser than the
    /// 1e-6 of [`SolveStatus::Optimal`].
    GapLimit,
    /// Stopped at the time limit with a feasible schedule.
    TimeLimit,
    /// Stopped at the node limit with a feasible schedule.
    NodeLimit,
    /// The model has no solution.
    Infeasible,
    /// A limit (time, nodes) stopped the solver before it found any feasible schedule: nothing
    /// is known about the round, and the empty schedule returned is not a decision.
    NoSolution,
}

impl std::fmt::Display for SolveStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SolveStatus::Optimal => "optimal",
            SolveStatus::GapLimit => "gap_limit",
            SolveStatus::TimeLimit => "time_limit",
            SolveStatus::NodeLimit => "node_limit",
            SolveStatus::Infeasible => "infeasible",
            SolveStatus::NoSolution => "no_solution",
        })
    }
}

/// What an optimising scheduler records of one round's solve (see [`Scheduler::solves`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundSolve {
    /// The round's time (the snapshot's), seconds.
    pub time_s: f64,
    /// Jobs in the program.
    pub jobs: usize,
    /// Of those, running jobs held where they are (outside the decision window).
    pub held: usize,
    /// How the solve ended.
    pub status: SolveStatus,
    /// Objective of the schedule returned.
    pub objective: f64,
    /// Objective of the best start.
    pub start_objective: f64,
    /// Whether the start was returned (the solver did not beat it).
    pub returned_start: bool,
    /// Best proven bound (NaN if none).
    pub best_bound: f64,
    /// Relative gap of the returned schedule to the bound.
    pub gap: f64,
    /// Seconds building the program, and in the solver.
    pub build_s: f64,
    /// Seconds in the solver.
    pub solve_s: f64,
    /// Branch-and-bound nodes, if known.
    pub nodes: Option<u64>,
}

/// Snapshot in, schedule out.
///
/// ```
/// use coda::{ClusterSnapshot, Schedule, Scheduler};
/// /// Everyone waits: valid, and useless.
/// struct Idle;
/// impl Scheduler for Idle {
///     fn name(&self) -> &str { "idle" }
///     fn schedule(&mut self, _: &ClusterSnapshot) -> coda::Result<Schedule> { Ok(Schedule::default()) }
/// }
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// assert!(coda::schedule_with(&snapshot, &mut Idle)?.assignments.is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
pub trait Scheduler {
    /// A short name for reports (`ilp`, `fifo`, ...).
    fn name(&self) -> &str;

    /// The decision for one round.
    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule>;

    /// Whether, in a round where no job waits (every job of the snapshot already holds GPUs),
    /// this policy keeps every assignment as it is — so that a simulator may skip such rounds
    /// ([`crate::sim::SimConfig::skip_idle_rounds`]). False by default: only a policy that never
    /// moves, grows or shrinks a running job unless another job waits may say true.
    fn keeps_when_none_wait(&self) -> bool {
        false
    }

    /// What the policy has to report about the rounds it decided (fallbacks taken, rounds a
    /// limit stopped), for run summaries; none by default.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Every solve so far, one per round, for optimising schedulers; empty for the others.
    fn solves(&self) -> &[RoundSolve] {
        &[]
    }
}
