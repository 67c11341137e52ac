//! The exact scheduler: the round program solved by HiGHS behind the [`Scheduler`] trait.

use super::{SolveReport, SolveSettings, SolveStatus, solve};
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
    /// Rounds solved, and rounds a limit stopped before any schedule.
    rounds: (u64, u64),
}

impl<'a> ExactScheduler<'a> {
    /// An exact scheduler with these settings.
    pub fn new(perf: &'a dyn PerfModel, objective: Objective, settings: SolveSettings) -> Self {
        ExactScheduler {
            perf,
            objective,
            settings,
            last: None,
            rounds: (0, 0),
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

    /// The solver's schedule; when a limit stopped it before any schedule
    /// ([`SolveStatus::NoSolution`]) — no decision — the running jobs keep their placements (a
    /// valid schedule by the snapshot's own check), and [`Scheduler::notes`] counts the round.
    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule> {
        let s = solve(snapshot, self.perf, &self.objective, &self.settings, None)?;
        self.rounds.0 += 1;
        let schedule = if s.report.status == SolveStatus::NoSolution {
            self.rounds.1 += 1;
            Schedule {
                assignments: snapshot
                    .jobs
                    .iter()
                    .filter_map(|j| j.current.clone())
                    .collect(),
            }
        } else {
            s.schedule
        };
        self.last = Some(s.report);
        Ok(schedule)
    }

    fn notes(&self) -> Vec<String> {
        let (all, none) = self.rounds;
        if none == 0 {
            return Vec::new();
        }
        vec![format!(
            "{none} of {all} round(s) stopped at the solver's limit (time {} s, nodes {}) before \
             any schedule; the running jobs kept their placements and no waiting job started",
            self.settings.time_limit_s,
            self.settings
                .node_limit
                .map_or("none".to_string(), |n| n.to_string())
        )]
    }
}
