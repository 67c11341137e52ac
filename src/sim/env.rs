//! The simulator as an environment: the caller owns the loop. [`Simulator::next_round`]
//! processes events until a round is due and hands out what a scheduler sees;
//! [`Simulator::apply`] applies a decision and runs the simulation until the next round is due,
//! reporting what the decision led to — the material of a reward, a DAgger label or a Gym step.
//! [`Simulator::run`] and [`Simulator::step`] are this loop with a [`crate::Scheduler`] as the
//! agent.

use serde::Serialize;

use super::{Next, Simulator};
use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, JobId, Schedule};

/// Work one job did between a decision and the next round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobProgress {
    /// The job.
    pub job: JobId,
    /// Iterations done in the interval.
    pub iterations: f64,
    /// The same, as a fraction of the job's total work.
    pub fraction: f64,
}

/// What one round's decision led to, from the decision to the next round (or the end).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundOutcome {
    /// When the decision was applied, seconds.
    pub start_s: f64,
    /// When the next round is due, or when the run ended.
    pub end_s: f64,
    /// Per job of the round's snapshot, the work done in the interval (jobs that did none
    /// included, with zeros).
    pub progress: Vec<JobProgress>,
    /// Jobs that finished in the interval, with their finish times.
    pub completed: Vec<(JobId, f64)>,
    /// Jobs whose change (move, resize, resume after preemption) cost a restart.
    pub restarted: Vec<JobId>,
    /// GPU-seconds held in the interval, restarts included.
    pub gpu_seconds: f64,
    /// Useful GPU-seconds in the interval (held, weighted by in-context ÷ alone speed).
    pub useful_gpu_seconds: f64,
    /// Whether the run is over: every job finished, or the horizon reached.
    pub done: bool,
}

impl RoundOutcome {
    /// Job-hours the jobs of the round's `snapshot` spent in the system from the decision to
    /// the next round (to their finish, if sooner): what reinforcement learning's level-1
    /// reward and the environment's `jct` reward charge (minus this), so that an episode's
    /// return is minus its jobs' total time in system.
    pub fn hours_in_system(&self, snapshot: &ClusterSnapshot) -> f64 {
        let mut in_system = 0.0;
        for j in &snapshot.jobs {
            let end = self
                .completed
                .iter()
                .find(|c| c.0 == j.id)
                .map_or(self.end_s, |c| c.1.min(self.end_s));
            in_system += (end - self.start_s).max(0.0);
        }
        in_system / 3600.0
    }
}

impl Simulator<'_> {
    /// Processes events until a round is due and returns what the scheduler sees then; `None`
    /// when the run is over. Calling it again before [`Simulator::apply`] returns the same
    /// round.
    pub fn next_round(&mut self) -> Result<Option<&ClusterSnapshot>> {
        if self.pending.is_none() {
            loop {
                match self.next_event()? {
                    Next::Event => {}
                    Next::End => return Ok(None),
                    Next::Round => {
                        self.pending = Some(self.snapshot());
                        break;
                    }
                }
            }
        }
        Ok(self.pending.as_ref())
    }

    /// Applies `schedule` to the round [`Simulator::next_round`] returned, then simulates until
    /// the next round is due, and reports what happened. An invalid schedule is an error and
    /// changes nothing (the round stays pending).
    pub fn apply(&mut self, schedule: &Schedule) -> Result<RoundOutcome> {
        // An outside agent's rounds are all handed out: none is skipped as idle.
        self.keeps = false;
        self.apply_as(schedule, "env")
    }

    /// Decides the pending round with `schedule`. An invalid schedule changes nothing and
    /// leaves the round pending (validation is the first thing `decide` does). Returns the round's
    /// snapshot and the jobs whose change costs a restart.
    pub(crate) fn decide_pending(
        &mut self,
        schedule: &Schedule,
        who: &str,
    ) -> Result<(ClusterSnapshot, Vec<JobId>)> {
        let snapshot = self.pending.take().ok_or_else(no_pending_round)?;
        match self.decide(&snapshot, schedule, who) {
            Ok(restarted) => Ok((snapshot, restarted)),
            Err(e) => {
                self.pending = Some(snapshot);
                Err(e)
            }
        }
    }

    /// [`Simulator::apply`], naming the decider `who` in errors.
    pub(crate) fn apply_as(&mut self, schedule: &Schedule, who: &str) -> Result<RoundOutcome> {
        let snapshot = self.pending.as_ref().ok_or_else(no_pending_round)?;
        let start_s = self.now;
        let jobs: Vec<usize> = snapshot.jobs.iter().map(|j| self.index_of[&j.id]).collect();
        let done_before: Vec<f64> = jobs.iter().map(|&i| self.state[i].done).collect();
        let held_before: f64 = self.records.iter().map(|r| r.gpu_seconds).sum();
        let useful_before: f64 = self.records.iter().map(|r| r.useful_gpu_seconds).sum();
        let (_, restarted) = self.decide_pending(schedule, who)?;
        // Run the round: every event before the next round is due.
        let mut over = false;
        while self.round_due().is_none() {
            if self.next_event()? == Next::End {
                over = true;
                break;
            }
        }
        // Between the last event and the next round nothing changes speed, so the interval's
        // tail is projected exactly rather than advanced (advancing would split the
        // simulator's own accounting and change its floating-point sums).
        let end_s = self.round_due().unwrap_or(self.now).max(self.now);
        let tail = end_s - self.last_advance;
        let mut progress = Vec::with_capacity(jobs.len());
        let mut completed = Vec::new();
        for (k, &i) in jobs.iter().enumerate() {
            let st = &self.state[i];
            let done = st.done + st.accrue(tail).work;
            let total = self.jobs[i].total_iterations;
            let iterations = (done.min(total) - done_before[k]).max(0.0);
            progress.push(JobProgress {
                job: self.jobs[i].id,
                iterations,
                fraction: iterations / total,
            });
            // Every job of the snapshot was unfinished when the round began.
            if let Some(f) = self.records[i].finish_s {
                completed.push((self.jobs[i].id, f));
            }
        }
        let (mut gpu_tail, mut useful_tail) = (0.0, 0.0);
        for st in &self.state {
            let acc = st.accrue(tail);
            gpu_tail += acc.held;
            useful_tail += acc.useful;
        }
        let held: f64 = self.records.iter().map(|r| r.gpu_seconds).sum();
        let useful: f64 = self.records.iter().map(|r| r.useful_gpu_seconds).sum();
        Ok(RoundOutcome {
            start_s,
            end_s,
            progress,
            completed,
            restarted,
            gpu_seconds: held - held_before + gpu_tail,
            useful_gpu_seconds: useful - useful_before + useful_tail,
            done: over || self.done(),
        })
    }
}

fn no_pending_round() -> Error {
    Error::setting(
        "simulator",
        "apply",
        "no pending round",
        "call next_round first",
    )
}
