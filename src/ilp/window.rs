//! The exact scheduler bounded to a window of jobs, for simulations where the whole queue would
//! make the program too large.

use super::ExactScheduler;
use crate::error::Result;
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;
use crate::scheduler::{RoundSolve, Scheduler};

/// coda's integer program over a window of jobs, re-solved every round: every running job
/// (dropping one from the program would preempt it) plus the waiting jobs the objective values
/// most ([`RoundPricing::alone_value`]: nearest to finishing first), up to `max_jobs` in all —
/// and at least `max_jobs / 4` (at least one) waiting jobs even when running jobs fill the
/// window, so the queue is always considered. Jobs outside the window wait this round.
pub struct WindowedIlp<'a> {
    exact: ExactScheduler<'a>,
    perf: &'a dyn PerfModel,
    objective: Objective,
    max_jobs: usize,
}

impl<'a> WindowedIlp<'a> {
    /// Solves with `exact` (pricing the window by `perf` and `objective`, which should be the
    /// exact scheduler's own) for a window of `max_jobs` jobs.
    pub fn new(
        exact: ExactScheduler<'a>,
        perf: &'a dyn PerfModel,
        objective: Objective,
        max_jobs: usize,
    ) -> Self {
        WindowedIlp {
            exact,
            perf,
            objective,
            max_jobs,
        }
    }

    /// The jobs (indices in `snap.jobs`, sorted) of this round's window.
    pub fn window(&self, snap: &ClusterSnapshot) -> Vec<usize> {
        if snap.jobs.len() <= self.max_jobs {
            return (0..snap.jobs.len()).collect();
        }
        let pricing = RoundPricing::new(self.perf, snap, self.objective);
        let order = snap.by_arrival();
        let (mut keep, mut waiting): (Vec<usize>, Vec<usize>) = order
            .into_iter()
            .partition(|&i| snap.jobs[i].current.is_some());
        let value: Vec<f64> = (0..snap.jobs.len())
            .map(|j| {
                if snap.jobs[j].current.is_some() {
                    0.0
                } else {
                    pricing.alone_value(j)
                }
            })
            .collect();
        // Highest value first; arrival order on ties (the sort is stable).
        waiting.sort_by(|&a, &b| value[b].total_cmp(&value[a]));
        let reserve = (self.max_jobs / 4).max(1);
        let room = self.max_jobs.saturating_sub(keep.len()).max(reserve);
        keep.extend(waiting.into_iter().take(room));
        keep.sort_unstable();
        keep
    }
}

impl Scheduler for WindowedIlp<'_> {
    fn name(&self) -> &str {
        "ilp"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let keep = self.window(snap);
        if keep.len() == snap.jobs.len() {
            return self.exact.schedule(snap);
        }
        let sub = ClusterSnapshot::from_parts(
            snap.time_s,
            snap.cluster.clone(),
            keep.iter().map(|&i| snap.jobs[i].clone()).collect(),
        );
        self.exact.schedule(&sub)
    }

    fn notes(&self) -> Vec<String> {
        self.exact.notes()
    }

    fn solves(&self) -> &[RoundSolve] {
        self.exact.solves()
    }
}
