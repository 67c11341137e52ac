//! Level 1 of every baseline: how big each job runs this round. The decisions a policy makes
//! (who, at what size, in what order) and the step that turns them into placements through the
//! shared [`Packer`] (level 2), plus the sizing rules the elastic policies share.

use std::collections::{BinaryHeap, HashMap};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{Packer, Placement};
use crate::model::{Architecture, ClusterSnapshot, Job, JobId, Schedule};
use crate::perf::{JobQuery, PerfModel, PlacementShape};
use crate::util::total::TotalF64;

/// One job's size for this round, in the order the policy wants them placed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Decision {
    /// Index into the snapshot's jobs.
    pub(super) job: usize,
    pub(super) workers: u32,
    pub(super) ps: u32,
}

/// What every baseline shares: the performance model, a cache of isolated speeds and the
/// placement step.
pub(super) struct Base<'a> {
    pub(super) perf: &'a dyn PerfModel,
    /// Isolated, packed speed by (job, workers, ps); jobs never change, so entries stay valid
    /// — unless speeds move with progress (goodput), when they hold for one round only.
    pub(super) speeds: HashMap<(JobId, u32, u32), f64>,
    /// The round the cached speeds were priced at, when they hold for one round only.
    pub(super) speeds_at: f64,
    /// A job's reference GPU type and that type's largest server, by job id.
    pub(super) reference: HashMap<JobId, (String, u32)>,
    pub(super) rng: ChaCha8Rng,
    /// Pollux's placement rule: at most one multi-server job per server.
    pub(super) one_distributed_per_server: bool,
}

impl<'a> Base<'a> {
    pub(super) fn new(perf: &'a dyn PerfModel) -> Self {
        Base {
            perf,
            speeds: HashMap::new(),
            speeds_at: f64::NAN,
            reference: HashMap::new(),
            // Only the Random placement rule draws; the other policies pass this fixed stream.
            rng: ChaCha8Rng::seed_from_u64(0),
            one_distributed_per_server: false,
        }
    }

    /// Speed of `job` alone with `w` workers and `p` PS packed on its reference GPU type (the
    /// allowed type with the most GPUs in the cluster); 0 where the model refuses the size.
    pub(super) fn speed(&mut self, snap: &ClusterSnapshot, job: &Job, w: u32, p: u32) -> f64 {
        if w == 0 {
            return 0.0;
        }
        if self.perf.progress_dependent() && snap.time_s != self.speeds_at {
            self.speeds.clear();
            self.speeds_at = snap.time_s;
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
    pub(super) fn remaining_time(&mut self, snap: &ClusterSnapshot, job: &Job) -> f64 {
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
    pub(super) fn realize(
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
                .run
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
pub(super) fn reference_gpu(snap: &ClusterSnapshot, job: &Job) -> (String, u32) {
    let mut by_type: Vec<(crate::model::GpuType, u64, u32)> = Vec::new();
    for s in &snap.cluster.servers {
        if !job.allows_gpu(&s.gpu_type) {
            continue;
        }
        match by_type.iter_mut().find(|(t, _, _)| *t == s.gpu_type) {
            Some((_, total, most)) => {
                *total += u64::from(s.num_gpus());
                *most = (*most).max(s.num_gpus());
            }
            None => by_type.push((s.gpu_type, u64::from(s.num_gpus()), s.num_gpus())),
        }
    }
    by_type
        .into_iter()
        .max_by_key(|&(_, total, _)| total)
        .map_or((String::new(), 1), |(t, _, most)| (t.to_string(), most))
}

/// Running jobs at their current size (arrival order), then waiting jobs at their requested
/// size in `waiting` order: the decision list of a non-preemptive policy.
pub(super) fn non_preemptive(snap: &ClusterSnapshot, waiting: Vec<usize>) -> Vec<Decision> {
    let mut out: Vec<Decision> = snap
        .by_arrival()
        .into_iter()
        .filter_map(|i| {
            snap.jobs[i].run.current.as_ref().map(|a| Decision {
                job: i,
                workers: a.workers.len() as u32,
                ps: a.ps.len() as u32,
            })
        })
        .collect();
    out.extend(waiting.into_iter().map(|i| requested(snap, i)));
    out
}

pub(super) fn requested(snap: &ClusterSnapshot, i: usize) -> Decision {
    let (workers, ps) = snap.jobs[i].requested_or_min();
    Decision {
        job: i,
        workers,
        ps,
    }
}

pub(super) fn waiting_by_arrival(snap: &ClusterSnapshot) -> Vec<usize> {
    snap.by_arrival()
        .into_iter()
        .filter(|&i| snap.jobs[i].run.current.is_none())
        .collect()
}

/// Cluster-wide totals the elastic policies size against.
pub(super) struct Totals {
    pub(super) gpus: f64,
    pub(super) cpu: f64,
    pub(super) mem: f64,
}

impl Totals {
    pub(super) fn of(snap: &ClusterSnapshot) -> Self {
        let s = &snap.cluster.servers;
        Totals {
            gpus: snap.cluster.num_gpus() as f64,
            cpu: s.iter().map(|s| s.cpu_cores).sum(),
            mem: s.iter().map(|s| s.memory_gib).sum(),
        }
    }

    /// Resources of `w` workers and `p` PS of `job`: (GPUs, cores, GiB).
    pub(super) fn of_tasks(job: &Job, w: u32, p: u32) -> [f64; 3] {
        let d = &job.demand;
        let (w, p) = (f64::from(w), f64::from(p));
        let (cores, mem) = d.cores_mem(w, p);
        [w * f64::from(d.gpus_per_worker), cores, mem]
    }

    pub(super) fn dominant_share(&self, r: [f64; 3]) -> f64 {
        let share = |x: f64, t: f64| if t > 0.0 { x / t } else { 0.0 };
        share(r[0], self.gpus)
            .max(share(r[1], self.cpu))
            .max(share(r[2], self.mem))
    }
}

/// Left-over cluster totals while sizes are handed out.
pub(super) struct Budget {
    pub(super) left: [f64; 3],
}

impl Budget {
    pub(super) fn new(t: &Totals) -> Self {
        Budget {
            left: [t.gpus, t.cpu, t.mem],
        }
    }
    pub(super) fn take(&mut self, r: [f64; 3]) -> bool {
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

pub(super) fn diff(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(super) fn sized_decisions(order: &[usize], size: &[(u32, u32)]) -> Vec<Decision> {
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
pub(super) fn greedy_sizes(
    base: &mut Base<'_>,
    snap: &ClusterSnapshot,
    value: &dyn Fn(&mut Base<'_>, &Job, u32, u32) -> f64,
) -> Vec<Decision> {
    let totals = Totals::of(snap);
    let mut budget = Budget::new(&totals);
    let order = snap.by_arrival();
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
