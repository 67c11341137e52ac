//! The exact scheduler bounded to a window of jobs, for simulations where the whole queue would
//! make the program too large.

use super::ExactScheduler;
use crate::error::Result;
use crate::model::JobPos;
use crate::model::{ClusterSnapshot, JobId, Schedule};
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;
use crate::scheduler::Scheduler;

/// How many windows' size a round's program may reach when its waiting part grows to ask for
/// every free GPU (a bound on the program's size, not a tuned value).
const WINDOW_GROWTH: usize = 4;

/// coda's integer program over a window of `max_jobs` jobs, re-solved every round. When
/// more jobs than that are present, the window holds the waiting jobs the objective values most
/// ([`RoundPricing::alone_value`]: nearest to finishing first) — at least half the window when
/// that many wait — and fills the rest with the running jobs it values least (those the
/// objective would preempt or shrink first, so an exchange with the waiting jobs is in reach).
/// The other running jobs are **held**: they stay in the program, so their co-location still
/// prices the window's jobs, but they keep their placement
/// ([`ExactScheduler::schedule_holding`]); the other waiting jobs wait this round. Bounding
/// the running jobs too keeps a busy round's program the window's size (without it, every
/// running job was in the program, up to 29 jobs in a 10-job window on the Philly slice, and
/// ITP slices did not finish). The window's waiting part grows past its share, up to
/// four windows in all, until its jobs ask for every GPU no running job holds, so
/// the program never hands out room the rest of the queue needs.
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

    /// This round's window: the jobs (indices in `snap.jobs`, sorted) of the program, and
    /// those of them held where they run (a subset, sorted).
    pub fn window(&self, snap: &ClusterSnapshot) -> (Vec<usize>, Vec<usize>) {
        if snap.jobs.len() <= self.max_jobs {
            return ((0..snap.jobs.len()).collect(), Vec::new());
        }
        let pricing = RoundPricing::new(self.perf, snap, self.objective);
        let (mut running, waiting) = ranked(&pricing);
        let reserve = self.max_jobs.div_ceil(2);
        let base = waiting
            .len()
            .min(self.max_jobs.saturating_sub(running.len()).max(reserve));
        let take_running = running.len().min(self.max_jobs - base);
        // Enough waiting jobs to ask for every free GPU: a window whose waiting jobs ask for
        // fewer sees room that is not there, grows its jobs into GPUs the waiting jobs outside
        // it need, and they wait for those jobs to end (Philly 300: 37 of 54 jobs waiting after
        // the first busy round, against 22 for `synergy-tune`). Bounded so a round's program
        // stays within a few windows' size.
        let free = snap.free_gpus();
        // The fewest of the first waiting jobs whose asks reach `free`.
        let mut fill = 0;
        let mut asked = 0u64;
        while fill < waiting.len() && asked < free {
            asked += u64::from(snap.jobs[waiting[fill]].requested_gpus());
            fill += 1;
        }
        let cap = (WINDOW_GROWTH * self.max_jobs).saturating_sub(take_running);
        let take_waiting = base.max(fill.min(cap)).min(waiting.len());
        let mut held: Vec<usize> = running.split_off(take_running);
        let mut keep: Vec<usize> = running;
        keep.extend(waiting.into_iter().take(take_waiting));
        keep.extend(held.iter().copied());
        keep.sort_unstable();
        held.sort_unstable();
        (keep, held)
    }
}

/// The round's running jobs (indices in the snapshot) by the objective's own priority
/// ([`RoundPricing::alone_value`]) lowest first, and its waiting jobs highest first; arrival
/// order on ties. What both the `ilp` policy's window and the label rounds are cut by.
pub(crate) fn ranked(pricing: &RoundPricing<'_>) -> (Vec<usize>, Vec<usize>) {
    let snap = pricing.snapshot();
    let value: Vec<f64> = (0..snap.jobs.len())
        .map(|j| pricing.alone_value(JobPos(j)))
        .collect();
    let (mut running, mut waiting): (Vec<usize>, Vec<usize>) = snap
        .by_arrival()
        .into_iter()
        .partition(|&i| snap.jobs[i].run.current.is_some());
    // The sorts are stable: arrival order on ties.
    running.sort_by(|&a, &b| value[a].total_cmp(&value[b]));
    waiting.sort_by(|&a, &b| value[b].total_cmp(&value[a]));
    (running, waiting)
}

impl Scheduler for WindowedIlp<'_> {
    fn name(&self) -> &str {
        "ilp"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        // Whether the in-service credit applies is the whole queue's question, not the
        // window's: the window may hold fewer waiting jobs than the free GPUs take.
        self.exact.set_objective(self.objective.for_round(snap));
        let (keep, held) = self.window(snap);
        if keep.len() == snap.jobs.len() && held.is_empty() {
            return self.exact.schedule(snap);
        }
        let held: Vec<JobId> = held.iter().map(|&i| snap.jobs[i].id).collect();
        let sub = ClusterSnapshot::from_parts(
            snap.time_s,
            snap.cluster.clone(),
            keep.iter().map(|&i| snap.jobs[i].clone()).collect(),
        );
        self.exact.schedule_holding(&sub, &held)
    }

    fn take_events(&mut self) -> Vec<crate::scheduler::RoundEvent> {
        self.exact.take_events()
    }
}
