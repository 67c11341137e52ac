//! The eight heuristic baselines (the table in [`super`]): each a sizing rule from
//! [`super::sizing`] and a placement rule of the [`super::Packer`].

use std::collections::{BinaryHeap, HashMap};

use rand_chacha::ChaCha8Rng;

use super::Placement;
use super::sizing::*;
use crate::error::Result;
use crate::model::{Architecture, ClusterSnapshot, Job, JobId, Schedule};
use crate::scheduler::Scheduler;
use crate::util::total::TotalF64;

/// First in, first out (as Blox's FIFO: jobs that do not fit are skipped, not blocking).
pub(super) struct Fifo<'a>(pub(super) Base<'a>);
impl Scheduler for Fifo<'_> {
    fn name(&self) -> &str {
        "fifo"
    }
    /// No job waiting, nothing to place or preempt for: running jobs stay where they are.
    fn keeps_when_none_wait(&self) -> bool {
        true
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let d = non_preemptive(snap, waiting_by_arrival(snap));
        Ok(self
            .0
            .realize(snap, &d, Placement::Consolidated, false, None))
    }
}

/// Shortest remaining time first, preemptive, at the requested size.
pub(super) struct Srtf<'a>(pub(super) Base<'a>);
impl Scheduler for Srtf<'_> {
    fn name(&self) -> &str {
        "srtf"
    }
    /// No job waiting, nothing to place or preempt for: running jobs stay where they are.
    fn keeps_when_none_wait(&self) -> bool {
        true
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut keyed: Vec<(f64, usize)> = snap
            .by_arrival()
            .into_iter()
            .map(|i| (self.0.remaining_time(snap, &snap.jobs[i]), i))
            .collect();
        // Stable: equal remaining times keep arrival order.
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        let d: Vec<Decision> = keyed.into_iter().map(|(_, i)| requested(snap, i)).collect();
        Ok(self
            .0
            .realize(snap, &d, Placement::Consolidated, false, None))
    }
}

/// Tiresias' two-dimensional least-attained-service (Gu et al., NSDI'19): priority queues by
/// attained GPU-seconds (GPUs × time held, which is what "2D" means); inside a queue, running
/// jobs keep their GPUs ahead of pending ones (only a higher queue preempts), then arrival
/// order; starvation promotion — a job pending for at least `promote_knob` × its executed time
/// since its last promotion returns to the highest queue with its counters reset, as Tiresias'
/// `PromoteKnob`.
pub(super) struct Tiresias<'a> {
    pub(super) base: Base<'a>,
    pub(super) thresholds: Vec<f64>,
    pub(super) promote_knob: f64,
    /// Per job: attained GPU-seconds, executed seconds and pending seconds since its last
    /// promotion.
    pub(super) attained: HashMap<JobId, TiresiasCounters>,
    pub(super) last_time: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TiresiasCounters {
    pub(super) gpu_s: f64,
    pub(super) executed_s: f64,
    pub(super) pending_s: f64,
}
impl Scheduler for Tiresias<'_> {
    fn name(&self) -> &str {
        "tiresias"
    }
    /// No job waiting, nothing to place or preempt for: running jobs stay where they are.
    fn keeps_when_none_wait(&self) -> bool {
        true
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        // Service since the last round, read from the placements the jobs held meanwhile.
        let dt = self.last_time.map_or(0.0, |t| (snap.time_s - t).max(0.0));
        self.last_time = Some(snap.time_s);
        let live: std::collections::HashSet<JobId> = snap.jobs.iter().map(|j| j.id).collect();
        self.attained.retain(|id, _| live.contains(id));
        for j in &snap.jobs {
            let gpus = j
                .run
                .current
                .as_ref()
                .map_or(0, |a| a.workers.iter().map(|w| w.gpus.len()).sum::<usize>());
            let c = self.attained.entry(j.id).or_default();
            if gpus > 0 {
                c.gpu_s += gpus as f64 * dt;
                c.executed_s += dt;
            } else {
                c.pending_s += dt;
                if self.promote_knob > 0.0
                    && c.executed_s > 0.0
                    && c.pending_s >= self.promote_knob * c.executed_s
                {
                    *c = TiresiasCounters::default();
                }
            }
        }
        let queue = |id: JobId| {
            let a = self.attained.get(&id).map_or(0.0, |c| c.gpu_s);
            self.thresholds.iter().filter(|&&t| a >= t).count()
        };
        let mut order = snap.by_arrival();
        // Stable: arrival order within (queue, running first).
        order.sort_by_key(|&i| (queue(snap.jobs[i].id), snap.jobs[i].run.current.is_none()));
        let d: Vec<Decision> = order.into_iter().map(|i| requested(snap, i)).collect();
        Ok(self
            .base
            .realize(snap, &d, Placement::Consolidated, false, None))
    }
}

/// SJF-BCO: smallest job (requested GPUs × remaining time) first, non-preemptive, placed to
/// balance co-location contention against spreading overhead.
pub(super) struct SjfBco<'a>(pub(super) Base<'a>);
impl Scheduler for SjfBco<'_> {
    fn name(&self) -> &str {
        "sjf-bco"
    }
    /// No job waiting, nothing to place or preempt for: running jobs stay where they are.
    fn keeps_when_none_wait(&self) -> bool {
        true
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut keyed: Vec<(f64, usize)> = waiting_by_arrival(snap)
            .into_iter()
            .map(|i| {
                let j = &snap.jobs[i];
                let gpus = f64::from(j.requested_gpus());
                (gpus * self.0.remaining_time(snap, j), i)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        let d = non_preemptive(snap, keyed.into_iter().map(|(_, i)| i).collect());
        Ok(self.0.realize(snap, &d, Placement::Balanced, false, None))
    }
}

/// Requested sizes in arrival order on random servers and GPUs; non-preemptive.
pub(super) struct RandomPlacement<'a> {
    pub(super) base: Base<'a>,
    pub(super) rng: ChaCha8Rng,
}
impl Scheduler for RandomPlacement<'_> {
    fn name(&self) -> &str {
        "random"
    }
    /// No job waiting, nothing to place or preempt for: running jobs stay where they are.
    fn keeps_when_none_wait(&self) -> bool {
        true
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let d = non_preemptive(snap, waiting_by_arrival(snap));
        Ok(self
            .base
            .realize(snap, &d, Placement::Random, false, Some(&mut self.rng)))
    }
}

/// Dominant Resource Fairness over GPUs, cores and memory, each job a user: progressive
/// filling — the job with the lowest dominant share gets its next task bundle (its minimum
/// allocation first, then one worker, plus one PS while PS < workers) until nothing fits.
pub(super) struct Drf<'a>(pub(super) Base<'a>);
impl Scheduler for Drf<'_> {
    fn name(&self) -> &str {
        "drf"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let totals = Totals::of(snap);
        let mut budget = Budget::new(&totals);
        let order = snap.by_arrival();
        let mut size: Vec<(u32, u32)> = vec![(0, 0); snap.jobs.len()];
        // Min-heap on (dominant share, arrival rank) via Reverse ordering of a sortable key.
        let mut heap: BinaryHeap<std::cmp::Reverse<(TotalF64, usize, usize)>> = order
            .iter()
            .enumerate()
            .map(|(rank, &i)| std::cmp::Reverse((TotalF64(0.0), rank, i)))
            .collect();
        while let Some(std::cmp::Reverse((_, rank, i))) = heap.pop() {
            let j = &snap.jobs[i];
            let (w, p) = size[i];
            let next = if w == 0 {
                (j.workers.min, j.ps.min)
            } else if w < j.workers.max {
                let p2 = if j.arch == Architecture::ParameterServer && p < j.ps.max && p <= w {
                    p + 1
                } else {
                    p
                };
                (w + 1, p2)
            } else {
                continue;
            };
            let need = diff(
                Totals::of_tasks(j, next.0, next.1),
                Totals::of_tasks(j, w, p),
            );
            if !budget.take(need) {
                continue;
            }
            size[i] = next;
            let share = totals.dominant_share(Totals::of_tasks(j, next.0, next.1));
            heap.push(std::cmp::Reverse((TotalF64(share), rank, i)));
        }
        let d = sized_decisions(&order, &size);
        Ok(self
            .0
            .realize(snap, &d, Placement::Consolidated, true, None))
    }
}

/// Optimus: minimise the sum of remaining times — each task goes where it cuts a job's
/// remaining time the most per dominant share; placement packs a job on the fewest servers
/// with PS spread over them.
pub(super) struct Optimus<'a>(pub(super) Base<'a>);
impl Scheduler for Optimus<'_> {
    fn name(&self) -> &str {
        "optimus"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let value = |b: &mut Base<'_>, j: &Job, w: u32, p: u32| {
            let s = b.speed(snap, j, w, p);
            // Negative remaining time, so that more is better; a refused size is worthless.
            if s > 0.0 {
                -j.remaining_iterations() / s
            } else {
                f64::NEG_INFINITY
            }
        };
        let d = greedy_sizes(&mut self.0, snap, &value);
        Ok(self
            .0
            .realize(snap, &d, Placement::Consolidated, true, None))
    }
}

/// Pollux's penalty on the speed-up of a job whose allocation changes (`_restart_penalty` of
/// Pollux's `PolluxPolicy`, adaptdl `sched/adaptdl_sched/policy/pollux.py`).
pub const POLLUX_RESTART_PENALTY: f64 = 0.1;

/// Pollux-style: maximise the harmonic mean (generalised mean, p = −1, as in Pollux's
/// simulator) of the jobs' speed-ups over their minimum allocation — greedy, so each task goes
/// where `1/s` drops the most. Pollux cuts the speed-up of a job whose allocation changes by
/// [`POLLUX_RESTART_PENALTY`]; its genetic search weighs that against a whole new allocation,
/// which a one-task-at-a-time greedy cannot (a single added worker rarely pays 10 %), so the
/// penalty is applied to the greedy's result instead: a running job the greedy would grow keeps
/// its current size unless the new size is more than the penalty faster. (Shrinks are what
/// contention forces and are kept.) Placement keeps at most one multi-server job per server.
pub(super) struct Pollux<'a>(pub(super) Base<'a>);
impl Scheduler for Pollux<'_> {
    fn name(&self) -> &str {
        "pollux"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let value = |b: &mut Base<'_>, j: &Job, w: u32, p: u32| {
            let s0 = b.speed(snap, j, j.workers.min, j.ps.min);
            let s = b.speed(snap, j, w, p);
            if s > 0.0 && s0 > 0.0 {
                -s0 / s
            } else {
                f64::NEG_INFINITY
            }
        };
        let mut d = greedy_sizes(&mut self.0, snap, &value);
        for dec in &mut d {
            let j = &snap.jobs[dec.job];
            let Some(cur) = &j.run.current else { continue };
            let (cw, cp) = (cur.workers.len() as u32, cur.ps.len() as u32);
            if dec.workers < cw || (dec.workers, dec.ps) == (cw, cp) {
                continue;
            }
            let now = self.0.speed(snap, j, cw, cp);
            let new = self.0.speed(snap, j, dec.workers, dec.ps);
            if new * (1.0 - POLLUX_RESTART_PENALTY) <= now {
                dec.workers = cw;
                dec.ps = cp;
            }
        }
        Ok(self
            .0
            .realize(snap, &d, Placement::Consolidated, true, None))
    }
}
