//! The baseline schedulers the simulator compares: every one is a [`Scheduler`] (snapshot in,
//! schedule out), reads speeds only through the [`PerfModel`], and builds its placements with
//! one shared [`Packer`], which never over-commits a resource. A policy decides *who runs, how
//! big and where*; it cannot change what is feasible — the simulator validates every schedule.
//!
//! | name | follows | allocation | placement | preempts |
//! |---|---|---|---|---|
//! | `fifo` | Blox's FIFO | requested, arrival order, skip what does not fit | consolidated | no |
//! | `srtf` | shortest remaining time first | requested, by remaining time | consolidated | yes |
//! | `drf` | Ghodsi et al., NSDI'11 | progressive filling of GPUs/CPU/memory by dominant share | consolidated | yes |
//! | `tiresias` | Gu et al., NSDI'19 (2D-LAS) | requested, by discretised attained GPU-time; running before pending within a queue; starvation promotion | consolidated | yes |
//! | `optimus` | Peng et al., EuroSys'18 | greedy marginal gain in remaining time per dominant share | consolidated | yes |
//! | `sjf-bco` | Yu, Ji, Rajan and Liu, MobiHoc'22 (arXiv 2207.07817) | requested, smallest GPU-time first | balanced contention vs spread | no |
//! | `pollux` | Qiao et al., OSDI'21 | greedy on the harmonic mean of speed-ups (p = −1), 10 % restart penalty | consolidated, one multi-server job per server | yes |
//! | `random` | — | requested, arrival order | random servers and GPUs | no |
//! | `ilp` | coda's integer program | exact per round on a window of jobs | exact | yes |
//!
//! Differences from the papers, said once here:
//! * Sizes are decided against cluster-wide totals (GPUs, cores, memory), and a size the packer
//!   cannot place this round waits (elastic policies first try it smaller, down to the job's
//!   minimum). Every preemptive policy keeps a job whose size did not change where it is, so a
//!   restart is paid only for a real change.
//! * **Oracle knowledge.** `srtf`, `sjf-bco` and `optimus` read each job's true remaining work
//!   and the performance model's true isolated speeds; the real systems estimate them (Optimus
//!   fits a speed model online and predicts the remaining epochs from the loss curve; SJF-BCO
//!   assumes known job sizes; SRTF is an oracle policy by definition). `pollux` reads the true
//!   isolated speeds too (Pollux fits throughput online and also adapts the batch size and models
//!   statistical efficiency, which coda's model does not have). `tiresias` needs no size, as in
//!   the paper; `fifo`, `drf` and `random` need none.
//! * Tiresias' queue thresholds and `PromoteKnob` are settings ([`PolicyOptions`]); the paper
//!   tunes them per cluster.
//! * Pollux's genetic placement search is replaced by consolidated placement under its own
//!   repair rule (one multi-server job per server); its restart penalty (0.1 on the speed-up of a
//!   job whose allocation changes) and the p = −1 mean follow its code and paper.
//! * SJF-BCO's analytic contention model is replaced by the performance model's in-context price.
//! * **What favours elastic policies** (`drf`, `optimus`, `pollux`): a PS job's speed is DL2's
//!   measured curve, and several DL2 models barely speed up past a few workers, so elastic
//!   policies learn to keep them small; an all-reduce job's work is counted in GPU-steps, so its
//!   scale-up is as efficient as the measured step time says — no statistical-efficiency loss at
//!   larger global batch (Pollux's goodput would add one). Scale-up is bounded to
//!   [`crate::trace::TraceOptions::max_scale_up`] × the submitted size (2×) and to the largest
//!   measured configuration.

mod packer;

use std::collections::{BinaryHeap, HashMap};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use packer::{Packer, Placement};

use crate::error::{Error, Result};
use crate::model::{Architecture, ClusterSnapshot, Job, Schedule};
use crate::objective::Objective;
use crate::perf::{JobQuery, PerfModel, PlacementShape};
use crate::scheduler::{ExactScheduler, Scheduler};
use crate::solver::SolveSettings;
use crate::total::TotalF64;

/// Every baseline's name, in the order reports list them.
pub const POLICIES: [&str; 9] = [
    "fifo", "srtf", "drf", "tiresias", "optimus", "sjf-bco", "pollux", "random", "ilp",
];

/// Settings shared by the baselines.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyOptions {
    /// Seed of every random choice (only `random` draws).
    pub seed: u64,
    /// Tiresias queue thresholds in attained GPU-seconds, ascending (default 1 and 10 GPU-hours,
    /// the bounds of the trace's model classes; Tiresias tunes these per cluster).
    pub tiresias_thresholds_gpu_s: Vec<f64>,
    /// Tiresias' `PromoteKnob`: a job pending for at least this many times its executed time
    /// (since its last promotion) is promoted to the highest queue; 0 disables promotion. The
    /// paper leaves it a knob; 4 is coda's setting, not a published value.
    pub tiresias_promote_knob: f64,
    /// The objective the `ilp` policy maximises each round.
    pub objective: Objective,
    /// Solver settings of the `ilp` policy (set a time or node limit for simulations).
    pub ilp: SolveSettings,
    /// The `ilp` policy decides for the running jobs plus the earliest waiting ones up to this
    /// many jobs; later arrivals wait (the program grows with jobs × servers).
    pub ilp_max_jobs: usize,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            seed: 0,
            tiresias_thresholds_gpu_s: vec![3_600.0, 36_000.0],
            tiresias_promote_knob: 4.0,
            objective: Objective::default(),
            ilp: SolveSettings {
                time_limit_s: 10.0,
                ..SolveSettings::default()
            },
            ilp_max_jobs: 12,
        }
    }
}

/// The baseline called `name` (one of [`POLICIES`]).
pub fn by_name<'a>(
    name: &str,
    perf: &'a dyn PerfModel,
    opts: &PolicyOptions,
) -> Result<Box<dyn Scheduler + 'a>> {
    let base = Base::new(perf);
    Ok(match name {
        "fifo" => Box::new(Fifo(base)),
        "srtf" => Box::new(Srtf(base)),
        "drf" => Box::new(Drf(base)),
        "tiresias" => {
            let t = &opts.tiresias_thresholds_gpu_s;
            if t.iter().any(|x| !x.is_finite() || *x <= 0.0) || t.windows(2).any(|w| w[0] >= w[1]) {
                return Err(Error::invalid(
                    "policy options",
                    0,
                    "tiresias_thresholds_gpu_s",
                    format!("{t:?}"),
                    "must be positive, finite and ascending",
                ));
            }
            if !(opts.tiresias_promote_knob.is_finite() && opts.tiresias_promote_knob >= 0.0) {
                return Err(Error::invalid(
                    "policy options",
                    0,
                    "tiresias_promote_knob",
                    opts.tiresias_promote_knob,
                    "must be >= 0 (0 disables promotion)",
                ));
            }
            Box::new(Tiresias {
                base,
                thresholds: t.clone(),
                promote_knob: opts.tiresias_promote_knob,
                attained: HashMap::new(),
                last_time: None,
            })
        }
        "optimus" => Box::new(Optimus(base)),
        "sjf-bco" => Box::new(SjfBco(base)),
        "pollux" => {
            let mut base = base;
            base.one_distributed_per_server = true;
            Box::new(Pollux(base))
        }
        "random" => Box::new(RandomPlacement {
            base,
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
        }),
        "ilp" => {
            if opts.ilp_max_jobs == 0 {
                return Err(Error::invalid(
                    "policy options",
                    0,
                    "ilp_max_jobs",
                    0,
                    "must be >= 1",
                ));
            }
            Box::new(WindowedIlp {
                exact: ExactScheduler::new(perf, opts.objective, opts.ilp.clone()),
                max_jobs: opts.ilp_max_jobs,
                last_jobs: Vec::new(),
            })
        }
        other => {
            return Err(Error::invalid(
                "command line",
                0,
                "policy",
                other,
                format!("unknown policy; known: {}", POLICIES.join(", ")),
            ));
        }
    })
}

/// One job's size for this round, in the order the policy wants them placed.
#[derive(Debug, Clone, Copy)]
struct Decision {
    /// Index into the snapshot's jobs.
    job: usize,
    workers: u32,
    ps: u32,
}

/// What every baseline shares: the performance model, a cache of isolated speeds and the
/// placement step.
struct Base<'a> {
    perf: &'a dyn PerfModel,
    /// Isolated, packed speed by (job, workers, ps); jobs never change, so entries stay valid.
    speeds: HashMap<(u64, u32, u32), f64>,
    /// A job's reference GPU type and that type's largest server, by job id.
    reference: HashMap<u64, (String, u32)>,
    rng: ChaCha8Rng,
    /// Pollux's placement rule: at most one multi-server job per server.
    one_distributed_per_server: bool,
}

impl<'a> Base<'a> {
    fn new(perf: &'a dyn PerfModel) -> Self {
        Base {
            perf,
            speeds: HashMap::new(),
            reference: HashMap::new(),
            // Only the Random placement rule draws; the other policies pass this fixed stream.
            rng: ChaCha8Rng::seed_from_u64(0),
            one_distributed_per_server: false,
        }
    }

    /// Speed of `job` alone with `w` workers and `p` PS packed on its reference GPU type (the
    /// allowed type with the most GPUs in the cluster); 0 where the model refuses the size.
    fn speed(&mut self, snap: &ClusterSnapshot, job: &Job, w: u32, p: u32) -> f64 {
        if w == 0 {
            return 0.0;
        }
        if let Some(&s) = self.speeds.get(&(job.id, w, p)) {
            return s;
        }
        let (gpu, per_server) = self
            .reference
            .entry(job.id)
            .or_insert_with(|| reference_gpu(snap, job))
            .clone();
        let shape = PlacementShape::packed(w, p, job.demand.gpus_per_worker, per_server);
        let s = self
            .perf
            .speed(&JobQuery::of(job), &gpu, &shape)
            .map_or(0.0, |s| s.iterations_per_s);
        self.speeds.insert((job.id, w, p), s);
        s
    }

    /// Seconds left at the requested size, alone.
    fn remaining_time(&mut self, snap: &ClusterSnapshot, job: &Job) -> f64 {
        let (w, p) = job.requested_or_min();
        let s = self.speed(snap, job, w, p);
        if s > 0.0 {
            job.remaining_iterations() / s
        } else {
            f64::INFINITY
        }
    }

    /// Places `decisions` in order. Decisions are admitted while their GPUs fit the cluster
    /// total; admitted jobs whose size is unchanged keep their placement, the other admitted
    /// ones are placed by `rule`; then the rest are tried on what is left (work conservation).
    /// With `shrink` (elastic policies), a size that cannot be placed is retried one worker
    /// smaller, down to the job's minimum.
    fn realize(
        &mut self,
        snap: &ClusterSnapshot,
        decisions: &[Decision],
        rule: Placement,
        shrink: bool,
        rng: Option<&mut ChaCha8Rng>,
    ) -> Schedule {
        let rng = match rng {
            Some(r) => r,
            None => &mut self.rng,
        };
        let mut packer = Packer::new(snap, self.perf);
        if self.one_distributed_per_server {
            packer.one_distributed_job_per_server();
        }
        let mut budget = snap.cluster.num_gpus();
        let admitted: Vec<bool> = decisions
            .iter()
            .map(|d| {
                let g = u64::from(d.workers * snap.jobs[d.job].demand.gpus_per_worker);
                let ok = g <= budget;
                if ok {
                    budget -= g;
                }
                ok
            })
            .collect();
        let unchanged = |d: &Decision| {
            snap.jobs[d.job]
                .current
                .as_ref()
                .filter(|a| a.workers.len() as u32 == d.workers && a.ps.len() as u32 == d.ps)
        };
        let mut placed = vec![false; decisions.len()];
        for (k, d) in decisions.iter().enumerate() {
            if admitted[k]
                && let Some(a) = unchanged(d)
            {
                placed[k] = packer.keep(&snap.jobs[d.job], a);
            }
        }
        for pass in [true, false] {
            for (k, d) in decisions.iter().enumerate() {
                let job = &snap.jobs[d.job];
                let gpus = |w: u32| u64::from(w * job.demand.gpus_per_worker);
                // An elastic policy would rather run a job smaller than leave it and the
                // fragments it could use idle.
                let smallest = if shrink { job.workers.min } else { d.workers };
                if placed[k] || admitted[k] != pass || gpus(smallest) > packer.free_gpus() {
                    continue;
                }
                if !pass && let Some(a) = unchanged(d) {
                    placed[k] = packer.keep(job, a);
                }
                let mut w = d.workers;
                while !placed[k] {
                    let p = if w == d.workers {
                        d.ps
                    } else {
                        d.ps.min(w).max(job.ps.min)
                    };
                    if gpus(w) <= packer.free_gpus() {
                        placed[k] = packer.place(job, w, p, rule, rng);
                    }
                    if w <= smallest {
                        break;
                    }
                    w -= 1;
                }
            }
        }
        Schedule {
            assignments: packer.into_assignments(),
        }
    }
}

/// The allowed GPU type with the most GPUs in the cluster, and its largest server.
fn reference_gpu(snap: &ClusterSnapshot, job: &Job) -> (String, u32) {
    let mut by_type: Vec<(String, u64, u32)> = Vec::new();
    for s in &snap.cluster.servers {
        if !job.allows_gpu(&s.gpu_type) {
            continue;
        }
        match by_type.iter_mut().find(|(t, _, _)| *t == s.gpu_type) {
            Some((_, total, most)) => {
                *total += u64::from(s.num_gpus());
                *most = (*most).max(s.num_gpus());
            }
            None => by_type.push((s.gpu_type.clone(), u64::from(s.num_gpus()), s.num_gpus())),
        }
    }
    by_type
        .into_iter()
        .max_by_key(|&(_, total, _)| total)
        .map_or((String::new(), 1), |(t, _, most)| (t, most))
}

/// Running jobs at their current size (arrival order), then waiting jobs at their requested
/// size in `waiting` order: the decision list of a non-preemptive policy.
fn non_preemptive(snap: &ClusterSnapshot, waiting: Vec<usize>) -> Vec<Decision> {
    let mut out: Vec<Decision> = by_arrival(snap)
        .into_iter()
        .filter_map(|i| {
            snap.jobs[i].current.as_ref().map(|a| Decision {
                job: i,
                workers: a.workers.len() as u32,
                ps: a.ps.len() as u32,
            })
        })
        .collect();
    out.extend(waiting.into_iter().map(|i| requested(snap, i)));
    out
}

fn requested(snap: &ClusterSnapshot, i: usize) -> Decision {
    let (workers, ps) = snap.jobs[i].requested_or_min();
    Decision {
        job: i,
        workers,
        ps,
    }
}

/// Job indices by (arrival, id).
fn by_arrival(snap: &ClusterSnapshot) -> Vec<usize> {
    let mut v: Vec<usize> = (0..snap.jobs.len()).collect();
    v.sort_by(|&a, &b| {
        let (x, y) = (&snap.jobs[a], &snap.jobs[b]);
        x.arrival_s.total_cmp(&y.arrival_s).then(x.id.cmp(&y.id))
    });
    v
}

fn waiting_by_arrival(snap: &ClusterSnapshot) -> Vec<usize> {
    by_arrival(snap)
        .into_iter()
        .filter(|&i| snap.jobs[i].current.is_none())
        .collect()
}

/// First in, first out (as Blox's FIFO: jobs that do not fit are skipped, not blocking).
struct Fifo<'a>(Base<'a>);
impl Scheduler for Fifo<'_> {
    fn name(&self) -> &str {
        "fifo"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let d = non_preemptive(snap, waiting_by_arrival(snap));
        Ok(self
            .0
            .realize(snap, &d, Placement::Consolidated, false, None))
    }
}

/// Shortest remaining time first, preemptive, at the requested size.
struct Srtf<'a>(Base<'a>);
impl Scheduler for Srtf<'_> {
    fn name(&self) -> &str {
        "srtf"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut keyed: Vec<(f64, usize)> = by_arrival(snap)
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
struct Tiresias<'a> {
    base: Base<'a>,
    thresholds: Vec<f64>,
    promote_knob: f64,
    /// Per job: attained GPU-seconds, executed seconds and pending seconds since its last
    /// promotion.
    attained: HashMap<u64, TiresiasCounters>,
    last_time: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default)]
struct TiresiasCounters {
    gpu_s: f64,
    executed_s: f64,
    pending_s: f64,
}
impl Scheduler for Tiresias<'_> {
    fn name(&self) -> &str {
        "tiresias"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        // Service since the last round, read from the placements the jobs held meanwhile.
        let dt = self.last_time.map_or(0.0, |t| (snap.time_s - t).max(0.0));
        self.last_time = Some(snap.time_s);
        let live: std::collections::HashSet<u64> = snap.jobs.iter().map(|j| j.id).collect();
        self.attained.retain(|id, _| live.contains(id));
        for j in &snap.jobs {
            let gpus = j
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
        let queue = |id: u64| {
            let a = self.attained.get(&id).map_or(0.0, |c| c.gpu_s);
            self.thresholds.iter().filter(|&&t| a >= t).count()
        };
        let mut order = by_arrival(snap);
        // Stable: arrival order within (queue, running first).
        order.sort_by_key(|&i| (queue(snap.jobs[i].id), snap.jobs[i].current.is_none()));
        let d: Vec<Decision> = order.into_iter().map(|i| requested(snap, i)).collect();
        Ok(self
            .base
            .realize(snap, &d, Placement::Consolidated, false, None))
    }
}

/// SJF-BCO: smallest job (requested GPUs × remaining time) first, non-preemptive, placed to
/// balance co-location contention against spreading overhead.
struct SjfBco<'a>(Base<'a>);
impl Scheduler for SjfBco<'_> {
    fn name(&self) -> &str {
        "sjf-bco"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut keyed: Vec<(f64, usize)> = waiting_by_arrival(snap)
            .into_iter()
            .map(|i| {
                let j = &snap.jobs[i];
                let gpus = f64::from(j.requested_or_min().0 * j.demand.gpus_per_worker);
                (gpus * self.0.remaining_time(snap, j), i)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        let d = non_preemptive(snap, keyed.into_iter().map(|(_, i)| i).collect());
        Ok(self.0.realize(snap, &d, Placement::Balanced, false, None))
    }
}

/// Requested sizes in arrival order on random servers and GPUs; non-preemptive.
struct RandomPlacement<'a> {
    base: Base<'a>,
    rng: ChaCha8Rng,
}
impl Scheduler for RandomPlacement<'_> {
    fn name(&self) -> &str {
        "random"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let d = non_preemptive(snap, waiting_by_arrival(snap));
        Ok(self
            .base
            .realize(snap, &d, Placement::Random, false, Some(&mut self.rng)))
    }
}

/// Cluster-wide totals the elastic policies size against.
struct Totals {
    gpus: f64,
    cpu: f64,
    mem: f64,
}

impl Totals {
    fn of(snap: &ClusterSnapshot) -> Self {
        let s = &snap.cluster.servers;
        Totals {
            gpus: snap.cluster.num_gpus() as f64,
            cpu: s.iter().map(|s| s.cpu_cores).sum(),
            mem: s.iter().map(|s| s.memory_gib).sum(),
        }
    }

    /// Resources of `w` workers and `p` PS of `job`: (GPUs, cores, GiB).
    fn of_tasks(job: &Job, w: u32, p: u32) -> [f64; 3] {
        let d = &job.demand;
        let (w, p) = (f64::from(w), f64::from(p));
        [
            w * f64::from(d.gpus_per_worker),
            w * d.cpu_per_worker + p * d.cpu_per_ps,
            w * d.mem_per_worker_gib + p * d.mem_per_ps_gib,
        ]
    }

    fn dominant_share(&self, r: [f64; 3]) -> f64 {
        let share = |x: f64, t: f64| if t > 0.0 { x / t } else { 0.0 };
        share(r[0], self.gpus)
            .max(share(r[1], self.cpu))
            .max(share(r[2], self.mem))
    }
}

/// Left-over cluster totals while sizes are handed out.
struct Budget {
    left: [f64; 3],
}

impl Budget {
    fn new(t: &Totals) -> Self {
        Budget {
            left: [t.gpus, t.cpu, t.mem],
        }
    }
    fn take(&mut self, r: [f64; 3]) -> bool {
        if r.iter()
            .zip(&self.left)
            .all(|(need, left)| *need <= left + 1e-9)
        {
            for (left, need) in self.left.iter_mut().zip(r) {
                *left -= need;
            }
            true
        } else {
            false
        }
    }
}

fn diff(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Dominant Resource Fairness over GPUs, cores and memory, each job a user: progressive
/// filling — the job with the lowest dominant share gets its next task bundle (its minimum
/// allocation first, then one worker, plus one PS while PS < workers) until nothing fits.
struct Drf<'a>(Base<'a>);
impl Scheduler for Drf<'_> {
    fn name(&self) -> &str {
        "drf"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let totals = Totals::of(snap);
        let mut budget = Budget::new(&totals);
        let order = by_arrival(snap);
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

fn sized_decisions(order: &[usize], size: &[(u32, u32)]) -> Vec<Decision> {
    order
        .iter()
        .filter(|&&i| size[i].0 > 0)
        .map(|&i| Decision {
            job: i,
            workers: size[i].0,
            ps: size[i].1,
        })
        .collect()
}

/// Greedy marginal-gain sizing shared by Optimus and Pollux: every job gets its minimum
/// allocation in arrival order while the cluster has room, then one task at a time goes to the
/// job whose `value` improves most per dominant share of the added task.
fn greedy_sizes(
    base: &mut Base<'_>,
    snap: &ClusterSnapshot,
    value: &dyn Fn(&mut Base<'_>, &Job, u32, u32) -> f64,
) -> Vec<Decision> {
    let totals = Totals::of(snap);
    let mut budget = Budget::new(&totals);
    let order = by_arrival(snap);
    let mut size: Vec<(u32, u32)> = vec![(0, 0); snap.jobs.len()];
    for &i in &order {
        let j = &snap.jobs[i];
        if budget.take(Totals::of_tasks(j, j.workers.min, j.ps.min)) {
            size[i] = (j.workers.min, j.ps.min);
        }
    }
    // Best next step of job i: (gain per share, new size).
    let best_step = |base: &mut Base<'_>, i: usize, size: (u32, u32)| {
        let j = &snap.jobs[i];
        let (w, p) = size;
        let now = value(base, j, w, p);
        let mut best: Option<(f64, (u32, u32))> = None;
        let mut steps = Vec::with_capacity(2);
        if w < j.workers.max {
            steps.push((w + 1, p));
        }
        if j.arch == Architecture::ParameterServer && p < j.ps.max {
            steps.push((w, p + 1));
        }
        for next in steps {
            let gain = value(base, j, next.0, next.1) - now;
            let share = totals.dominant_share(diff(
                Totals::of_tasks(j, next.0, next.1),
                Totals::of_tasks(j, w, p),
            ));
            let g = gain / share.max(1e-12);
            if gain > 1e-12 && best.is_none_or(|(b, _)| g > b) {
                best = Some((g, next));
            }
        }
        best
    };
    let mut heap: BinaryHeap<(TotalF64, std::cmp::Reverse<usize>, usize, u32, u32)> =
        BinaryHeap::new();
    for (rank, &i) in order.iter().enumerate() {
        if size[i].0 > 0
            && let Some((g, (w, p))) = best_step(base, i, size[i])
        {
            heap.push((TotalF64(g), std::cmp::Reverse(rank), i, w, p));
        }
    }
    while let Some((_, rank, i, w, p)) = heap.pop() {
        let j = &snap.jobs[i];
        let need = diff(
            Totals::of_tasks(j, w, p),
            Totals::of_tasks(j, size[i].0, size[i].1),
        );
        if !budget.take(need) {
            // This step does not fit; a cheaper step of the same job (a PS instead of a
            // worker) still might, so only that job's worker growth is given up.
            if w > size[i].0 && j.arch == Architecture::ParameterServer && size[i].1 < j.ps.max {
                let (cw, cp) = size[i];
                let now = value(base, j, cw, cp);
                let gain = value(base, j, cw, cp + 1) - now;
                if gain > 1e-12 {
                    let share = totals.dominant_share(diff(
                        Totals::of_tasks(j, cw, cp + 1),
                        Totals::of_tasks(j, cw, cp),
                    ));
                    heap.push((TotalF64(gain / share.max(1e-12)), rank, i, cw, cp + 1));
                }
            }
            continue;
        }
        size[i] = (w, p);
        if let Some((g, (w2, p2))) = best_step(base, i, size[i]) {
            heap.push((TotalF64(g), rank, i, w2, p2));
        }
    }
    sized_decisions(&order, &size)
}

/// Optimus: minimise the sum of remaining times — each task goes where it cuts a job's
/// remaining time the most per dominant share; placement packs a job on the fewest servers
/// with PS spread over them.
struct Optimus<'a>(Base<'a>);
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
struct Pollux<'a>(Base<'a>);
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
            let Some(cur) = &j.current else { continue };
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

/// coda's integer program over the running jobs and the earliest waiting ones up to a job budget
/// (later arrivals wait). It is re-solved when the set of jobs changes (an arrival or a
/// completion); in between, the running placements stand — re-solving an unchanged set only
/// moves the remaining-work terms, and a solve costs up to its time limit per round.
struct WindowedIlp<'a> {
    exact: ExactScheduler<'a>,
    max_jobs: usize,
    /// Sorted ids of the jobs of the last solved snapshot.
    last_jobs: Vec<u64>,
}
impl Scheduler for WindowedIlp<'_> {
    fn name(&self) -> &str {
        "ilp"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut ids: Vec<u64> = snap.jobs.iter().map(|j| j.id).collect();
        ids.sort_unstable();
        if ids == self.last_jobs {
            return Ok(Schedule {
                assignments: snap.jobs.iter().filter_map(|j| j.current.clone()).collect(),
            });
        }
        self.last_jobs = ids;
        let order = by_arrival(snap);
        let running = order.iter().filter(|&&i| snap.jobs[i].current.is_some());
        let waiting = order.iter().filter(|&&i| snap.jobs[i].current.is_none());
        let n_running = running.clone().count();
        let mut keep: Vec<usize> = running.copied().collect();
        keep.extend(waiting.take(self.max_jobs.saturating_sub(n_running)));
        keep.sort_unstable();
        let sub = ClusterSnapshot {
            time_s: snap.time_s,
            cluster: snap.cluster.clone(),
            jobs: keep.iter().map(|&i| snap.jobs[i].clone()).collect(),
        };
        self.exact.schedule(&sub)
    }
}
