//! The exact scheduler: the round program solved by HiGHS behind the [`Scheduler`] trait.

use super::{SolveReport, SolveSettings, solve};
use crate::error::Result;
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::Objective;
use crate::perf::PerfModel;
use crate::scheduler::Scheduler;

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
        let s = solve(
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
        let s = solve(snapshot, self.perf, &self.objective, &self.settings, None)?;
        self.last = Some(s.report);
        Ok(s.schedule)
    }
}
