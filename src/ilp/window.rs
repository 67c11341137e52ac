//! The exact scheduler bounded to a window of jobs, for simulations where the whole queue would
//! make the program too large.

use super::ExactScheduler;
use crate::error::Result;
use crate::model::{ClusterSnapshot, JobId, Schedule};
use crate::scheduler::Scheduler;

/// coda's integer program over the running jobs and the earliest waiting ones up to a job budget
/// (later arrivals wait). It is re-solved when the set of jobs changes (an arrival or a
/// completion); in between, the running placements stand — re-solving an unchanged set only
/// moves the remaining-work terms, and a solve costs up to its time limit per round.
pub struct WindowedIlp<'a> {
    exact: ExactScheduler<'a>,
    max_jobs: usize,
    /// Sorted ids of the jobs of the last solved snapshot.
    last_jobs: Vec<JobId>,
}
impl<'a> WindowedIlp<'a> {
    /// Solves with `exact` for the running jobs plus the earliest waiting ones, up to
    /// `max_jobs` jobs.
    pub fn new(exact: ExactScheduler<'a>, max_jobs: usize) -> Self {
        WindowedIlp {
            exact,
            max_jobs,
            last_jobs: Vec::new(),
        }
    }
}

impl Scheduler for WindowedIlp<'_> {
    fn name(&self) -> &str {
        "ilp"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut ids: Vec<JobId> = snap.jobs.iter().map(|j| j.id).collect();
        ids.sort_unstable();
        if ids == self.last_jobs {
            return Ok(Schedule {
                assignments: snap.jobs.iter().filter_map(|j| j.current.clone()).collect(),
            });
        }
        self.last_jobs = ids;
        let order = snap.by_arrival();
        let running = order.iter().filter(|&&i| snap.jobs[i].current.is_some());
        let waiting = order.iter().filter(|&&i| snap.jobs[i].current.is_none());
        let n_running = running.clone().count();
        let mut keep: Vec<usize> = running.copied().collect();
        keep.extend(waiting.take(self.max_jobs.saturating_sub(n_running)));
        keep.sort_unstable();
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
}
