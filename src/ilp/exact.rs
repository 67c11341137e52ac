//! The exact scheduler: the round program solved by HiGHS behind the [`Scheduler`] trait.

use super::{CheckedSettings, SolveReport, SolveRequest};
use crate::error::Result;
use crate::model::{ClusterSnapshot, JobId, Schedule};
use crate::objective::Objective;
use crate::perf::PerfModel;
use crate::scheduler::{RoundEvent, RoundSolve, Scheduler};

/// The contention-aware integer program solved by HiGHS, started from the best of keeping the
/// running jobs where they are and a heuristic's schedule ([`ExactScheduler::with_start`]), and
/// never returning less than that start.
///
/// ```
/// use coda::{CalibratedPerf, ClusterSnapshot, Objective, Scheduler};
/// use coda::ilp::{ExactScheduler, SolveSettings};
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let settings = SolveSettings { time_limit_s: 10.0, ..SolveSettings::default() }.checked()?;
/// let mut exact = ExactScheduler::new(CalibratedPerf::shipped(), Objective::default(), settings);
/// let schedule = exact.schedule(&snapshot)?;
/// assert!(schedule.validate(&snapshot).is_empty());
/// let report = exact.last_report().unwrap();
/// // A small round: proven optimal, with its bound and gap.
/// assert_eq!(report.status, coda::ilp::SolveStatus::Optimal);
/// assert!(report.gap <= 1e-6);
/// # Ok::<(), coda::Error>(())
/// ```
pub struct ExactScheduler<'a> {
    perf: &'a dyn PerfModel,
    objective: Objective,
    settings: CheckedSettings,
    /// Heuristics (or a learned policy) whose schedules are candidate starts every round.
    start: Vec<Box<dyn Scheduler + 'a>>,
    last: Option<SolveReport>,
    /// The last round's solve, until taken ([`Scheduler::take_events`]).
    events: Vec<RoundEvent>,
}

impl<'a> ExactScheduler<'a> {
    /// An exact scheduler with these settings.
    pub fn new(perf: &'a dyn PerfModel, objective: Objective, settings: CheckedSettings) -> Self {
        ExactScheduler {
            perf,
            objective,
            settings,
            start: Vec::new(),
            last: None,
            events: Vec::new(),
        }
    }

    /// Also offers `heuristic`'s schedule of each round as a start (a MIP start, and the
    /// fallback if the solver does no better); called again, adds another (the best start is
    /// used). A heuristic that fails or returns an invalid schedule is passed over for that
    /// round.
    pub fn with_start(mut self, heuristic: Box<dyn Scheduler + 'a>) -> Self {
        self.start.push(heuristic);
        self
    }

    /// Prices the rounds to come with `objective` (the `ilp` policy's window solves a part of
    /// a round under the whole round's [`Objective::for_round`]).
    pub(crate) fn set_objective(&mut self, objective: Objective) {
        self.objective = objective;
    }

    /// The report of the last solve.
    pub fn last_report(&self) -> Option<&SolveReport> {
        self.last.as_ref()
    }

    /// [`Scheduler::schedule`] with the running jobs `held` kept where they are: they stay in
    /// the program (their co-location still prices the others) but their columns are fixed, so
    /// only the other jobs are decided. Every start is first made to agree with them (a
    /// heuristic's assignment that collides with a held job is dropped, that job waits), so the
    /// MIP start is feasible for the restricted program. With nothing held this is the plain
    /// solve. The bound and gap reported are the restricted program's.
    pub fn schedule_holding(
        &mut self,
        snapshot: &ClusterSnapshot,
        held: &[JobId],
    ) -> Result<Schedule> {
        self.events.clear();
        let candidates: Vec<Schedule> = self
            .start
            .iter_mut()
            .filter_map(|h| h.schedule(snapshot).ok())
            .map(|s| {
                if held.is_empty() {
                    s
                } else {
                    holding(snapshot, &s, held)
                }
            })
            .collect();
        // Keeping every running job is valid and holds the held jobs, so it is what they are
        // fixed to.
        let keep = (!held.is_empty()).then(|| snapshot.current_schedule());
        let mut request = SolveRequest::new(snapshot, self.perf, self.objective)?
            .settings(self.settings.clone())
            .candidates(candidates)
            .hold(held);
        if let Some(keep) = &keep {
            request = request.warm_start(keep);
        }
        let s = request.solve()?;
        let solve = RoundSolve::of(snapshot, held.len(), &s.report);
        self.events = vec![RoundEvent::Solved {
            solve,
            time_limit_s: self.settings.time_limit_s,
            node_limit: self.settings.node_limit,
        }];
        self.last = Some(s.report);
        Ok(s.schedule)
    }
}

/// `schedule` made to agree with the running jobs `held`: they keep their current placement,
/// and `schedule`'s other assignments are added one at a time, in its order, where the result
/// stays valid (one that collides with a held job, or with an earlier addition, is dropped:
/// that job waits).
fn holding(snapshot: &ClusterSnapshot, schedule: &Schedule, held: &[JobId]) -> Schedule {
    let mut out = Schedule {
        assignments: snapshot
            .jobs
            .iter()
            .filter(|j| held.contains(&j.id))
            .filter_map(|j| j.run.current.clone())
            .collect(),
    };
    for a in &schedule.assignments {
        if held.contains(&a.job) {
            continue;
        }
        out.assignments.push(a.clone());
        if !out.validate(snapshot).is_empty() {
            out.assignments.pop();
        }
    }
    out
}

impl Scheduler for ExactScheduler<'_> {
    fn name(&self) -> &str {
        "ilp"
    }

    /// The solver's schedule if it beats the start, else the start; its event
    /// ([`RoundEvent::Solved`]) says which.
    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule> {
        self.schedule_holding(snapshot, &[])
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        std::mem::take(&mut self.events)
    }
}
