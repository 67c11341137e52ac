//! The one `Scheduler` trait every policy implements, and the exact scheduler.
//!
//! A scheduler proposes; [`crate::Schedule::validate`] decides whether the proposal can run.
//! Heuristics may change how good a schedule is, never whether it is feasible.

use crate::error::Result;
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::Objective;
use crate::perf::{CalibratedPerf, PerfModel};
use crate::solver::{self, SolveReport, SolveSettings};

/// Snapshot in, schedule out.
pub trait Scheduler {
    /// A short name for reports (`ilp`, `fifo`, ...).
    fn name(&self) -> &str;

    /// The decision for one round.
    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule>;
}

/// The contention-aware integer program solved by HiGHS, optionally warm-started.
pub struct ExactScheduler<'a> {
    perf: &'a dyn PerfModel,
    objective: Objective,
    settings: SolveSettings,
    last: Option<SolveReport>,
}

impl<'a> ExactScheduler<'a> {
    /// An exact scheduler with these settings.
    pub fn new(perf: &'a dyn PerfModel, objective: Objective, settings: SolveSettings) -> Self {
        ExactScheduler {
            perf,
            objective,
            settings,
            last: None,
        }
    }

    /// The report of the last solve.
    pub fn last_report(&self) -> Option<&SolveReport> {
        self.last.as_ref()
    }

    /// Solves from a MIP start (for example a learned policy's schedule).
    pub fn schedule_from(
        &mut self,
        snapshot: &ClusterSnapshot,
        start: &Schedule,
    ) -> Result<Schedule> {
        let s = solver::solve(
            snapshot,
            self.perf,
            &self.objective,
            &self.settings,
            Some(start),
        )?;
        self.last = Some(s.report);
        Ok(s.schedule)
    }
}

impl Scheduler for ExactScheduler<'_> {
    fn name(&self) -> &str {
        "ilp"
    }

    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule> {
        let s = solver::solve(snapshot, self.perf, &self.objective, &self.settings, None)?;
        self.last = Some(s.report);
        Ok(s.schedule)
    }
}

/// Schedules one round with the shipped performance model, the default objective and the
/// default solver settings (60 s limit, optimality).
pub fn schedule(snapshot: &ClusterSnapshot) -> Result<Schedule> {
    ExactScheduler::new(
        CalibratedPerf::shipped(),
        Objective::default(),
        SolveSettings::default(),
    )
    .schedule(snapshot)
}
