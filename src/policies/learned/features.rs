//! What the learned policy sees: one row per (job, option) for level 1 and one row per
//! (job, candidate server) for level 2, computed from the round as the objective prices it
//! ([`RoundPricing`]) and from the free resources while the schedule is built ([`Packer`]).
//!
//! The same functions feed inference and training (the trainer reads labelled rounds through
//! them), so a feature cannot mean one thing in training and another at decision time. The
//! names below are written into the weights file and checked when it is loaded.

use crate::model::JobPos;
use crate::model::ServerIdx;
use crate::model::{Architecture, ClusterSnapshot, Job};
use crate::objective::{Mode, RoundPricing};
use crate::policies::Packer;

/// Job features: the deep-set input of level 1 and the first part of every level-1 row. The
/// last seven are what a decision that looks past the round depends on (the job's history, the
/// queue, how the free GPUs lie); weights trained before them read the first fourteen only
/// ([`PolicyNet`](super::PolicyNet) reads the features its file names).
pub const JOB_FEATURES: [&str; 21] = [
    "alone_value",
    "log_rounds_left",
    "running",
    "current_workers_over_requested",
    "done_fraction",
    "log_age_rounds",
    "all_reduce",
    "gpus_per_worker",
    "requested_gpus_over_cluster",
    "priority_rank",
    "gpus_ahead_over_cluster",
    "restart_cost",
    "cluster_demand_ratio",
    "log_jobs_per_server",
    "log_restarts",
    "log_attained_gpu_rounds",
    "waited_share",
    "queue_share",
    "log_waiting_gpus_over_free",
    "free_gpus_over_cluster",
    "free_gpus_fragmented",
];

/// Option features, after the job's in a level-1 row.
pub const OPTION_FEATURES: [&str; 16] = [
    "wait",
    "base",
    "base_over_alone",
    "gpus_over_type_gpus",
    "workers_over_requested",
    "ps",
    "mode_single",
    "mode_cross_socket",
    "mode_multi",
    "local_pair_gain",
    "coloc_coef",
    "pcie_coef",
    "nic_coef",
    "is_current",
    "marginal_base_per_gpu",
    "is_requested_size",
];

/// Level-2 features of one candidate server for one job's next workers.
pub const PLACE_FEATURES: [&str; 24] = [
    "fits_rest",
    "takes_over_rest",
    "free_gpus_frac",
    "free_after_frac",
    "switch_room_over_need",
    "socket_room_over_need",
    "corunners",
    "coloc_suffered",
    "coloc_caused",
    "coloc_suffered_max",
    "current_gpus_free",
    "current_share",
    "step",
    "rest_over_workers",
    "mode_single",
    "mode_cross_socket",
    "mode_multi",
    "all_reduce",
    "cpu_free_after_frac",
    "distributed_corunners",
    "log_candidates",
    "log_workers",
    "coloc_marginal_loss",
    "free_switch_gpus_over_need",
];

/// Width of a level-1 row (job then option features).
pub const L1_WIDTH: usize = JOB_FEATURES.len() + OPTION_FEATURES.len();

/// Level-1 inputs of one round: per job, its features and one row per candidate (the job's
/// options in [`RoundPricing::options`] order, then wait).
#[derive(Debug, Clone, PartialEq)]
pub struct Level1Rows {
    /// Per job (snapshot order), [`JOB_FEATURES`].
    pub jobs: Vec<Vec<f32>>,
    /// Per job, its candidate rows ([`L1_WIDTH`] each): options, then wait last.
    pub candidates: Vec<Vec<Vec<f32>>>,
}

fn mode_hot(m: Mode) -> [f32; 3] {
    match m {
        Mode::Single => [1.0, 0.0, 0.0],
        Mode::CrossSocket => [0.0, 1.0, 0.0],
        Mode::Multi => [0.0, 0.0, 1.0],
    }
}

/// The level-1 rows of a round.
pub fn level1(pricing: &RoundPricing) -> Level1Rows {
    let flat = level1_flat(pricing);
    let nj = JOB_FEATURES.len();
    let mut rows = flat.rows.chunks(L1_WIDTH);
    Level1Rows {
        jobs: flat.jobs.chunks(nj).map(<[f32]>::to_vec).collect(),
        candidates: flat
            .counts
            .iter()
            .map(|&c| rows.by_ref().take(c).map(<[f32]>::to_vec).collect())
            .collect(),
    }
}

/// [`Level1Rows`] end to end in two buffers (what a decision reads: one allocation per round,
/// not one per row).
pub(crate) struct Level1Flat {
    /// Every job's [`JOB_FEATURES`], in snapshot order.
    pub jobs: Vec<f32>,
    /// Every candidate row ([`L1_WIDTH`] each), job after job.
    pub rows: Vec<f32>,
    /// Per job, its number of rows (options, then wait).
    pub counts: Vec<usize>,
}

/// The level-1 rows of a round, flat.
pub(crate) fn level1_flat(pricing: &RoundPricing) -> Level1Flat {
    let snap = pricing.snapshot();
    let n = snap.jobs.len();
    let total_gpus = snap.cluster.num_gpus().max(1) as f64;
    let round_s = pricing.objective().round_s;
    let alone: Vec<f64> = (0..n).map(|j| pricing.alone_value(JobPos(j))).collect();
    let requested_gpus: Vec<f64> = snap
        .jobs
        .iter()
        .map(|j| f64::from(j.requested_gpus()))
        .collect();
    // Priority by the objective's own index (highest alone value first, ties by index): the
    // rank and the GPUs the jobs ahead would take at their requested size.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| alone[b].total_cmp(&alone[a]).then(a.cmp(&b)));
    let mut rank = vec![0.0; n];
    let mut ahead = vec![0.0; n];
    let mut acc = 0.0;
    for (r, &j) in order.iter().enumerate() {
        rank[j] = r as f64 / n.max(1) as f64;
        ahead[j] = acc / total_gpus;
        acc += requested_gpus[j];
    }
    let demand_ratio = acc / total_gpus;
    let jobs_per_server = (n as f64 / snap.cluster.servers.len().max(1) as f64).ln_1p();
    let queue = Queue::of(snap);
    let mut type_gpus: Vec<(crate::model::GpuType, f64)> = Vec::new();
    for s in &snap.cluster.servers {
        match type_gpus.iter_mut().find(|(t, _)| *t == s.gpu_type) {
            Some((_, g)) => *g += f64::from(s.num_gpus()),
            None => type_gpus.push((s.gpu_type, f64::from(s.num_gpus()))),
        }
    }

    let mut jobs = Vec::with_capacity(n * JOB_FEATURES.len());
    let mut rows = Vec::new();
    let mut counts = Vec::with_capacity(n);
    for (j, job) in snap.jobs.iter().enumerate() {
        let (req_w, req_ps) = job.requested_or_min();
        let running = job
            .run
            .current
            .as_ref()
            .is_some_and(|a| !a.workers.is_empty());
        let cur_workers = job.run.current.as_ref().map_or(0, |a| a.workers.len()) as f64;
        let current_k = pricing.current_option(JobPos(j));
        let total = job.total_iterations.max(1e-9);
        let age_s = (snap.time_s - job.arrival_s).max(0.0);
        let jf: [f64; JOB_FEATURES.len()] = [
            alone[j],
            (1.0 / alone[j].max(1e-6)).ln(),
            f64::from(u8::from(running)),
            cur_workers / f64::from(req_w.max(1)),
            (job.run.done_iterations / total).clamp(0.0, 1.0),
            (age_s / round_s).ln_1p(),
            f64::from(u8::from(job.arch == Architecture::AllReduce)),
            f64::from(job.demand.gpus_per_worker),
            requested_gpus[j] / total_gpus,
            rank[j],
            ahead[j],
            pricing.restart_cost(JobPos(j)).unwrap_or(0.0),
            demand_ratio,
            jobs_per_server,
            f64::from(job.run.restarts).ln_1p(),
            (job.run.attained_gpu_s / round_s).ln_1p(),
            (job.run.waited_s / age_s.max(round_s)).clamp(0.0, 1.0),
            queue.waiting_share,
            (queue.waiting_gpus / queue.free_gpus.max(1.0)).ln_1p(),
            queue.free_gpus / total_gpus,
            queue.fragmented,
        ];
        let options = pricing.options(JobPos(j));
        let type_gpus_of: Vec<(usize, f64)> = options
            .iter()
            .map(|o| {
                let t = type_gpus.iter().position(|(x, _)| *x == o.gpu_type);
                (
                    t.unwrap_or(usize::MAX),
                    t.map_or(1.0, |t| type_gpus[t].1.max(1.0)),
                )
            })
            .collect();
        // Per (GPU type, mode, workers), the best base value among the options: what "the best
        // option of the same type and mode one worker smaller" below looks up (a sorted table,
        // not a scan of every option per option).
        let mut best: Vec<((usize, Mode, u32), f64)> = options
            .iter()
            .zip(&type_gpus_of)
            .map(|(o, t)| ((t.0, o.mode, o.workers), o.terms.base))
            .collect();
        best.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        best.dedup_by(|later, kept| {
            // Sorted by base within a key: the last of a key is its best.
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        rows.reserve((options.len() + 1) * L1_WIDTH);
        for (k, o) in options.iter().enumerate() {
            let gpus = f64::from(o.workers * job.demand.gpus_per_worker);
            // The best option of the same type and mode one worker smaller: what the last
            // worker adds, per GPU.
            let key = (type_gpus_of[k].0, o.mode);
            let below = best.partition_point(|e| e.0 < (key.0, key.1, o.workers));
            let smaller = below
                .checked_sub(1)
                .map(|i| best[i])
                .filter(|e| (e.0.0, e.0.1) == key)
                .map(|e| (e.0.2, e.1));
            let marginal = match smaller {
                Some((w, b)) => {
                    (o.terms.base - b) / f64::from((o.workers - w) * job.demand.gpus_per_worker)
                }
                None => o.terms.base / gpus.max(1.0),
            };
            let m = mode_hot(o.mode);
            let of: [f64; OPTION_FEATURES.len()] = [
                0.0,
                o.terms.base,
                o.terms.base / alone[j].max(1e-9),
                gpus / type_gpus_of[k].1,
                f64::from(o.workers) / f64::from(req_w.max(1)),
                f64::from(o.ps),
                f64::from(m[0]),
                f64::from(m[1]),
                f64::from(m[2]),
                o.terms.local_pair_slope * f64::from(o.ps.min(o.workers)),
                o.terms.coloc_coef,
                o.terms.pcie_coef,
                o.terms.nic_coef,
                f64::from(u8::from(current_k == Some(k))),
                marginal,
                f64::from(u8::from(o.workers == req_w && o.ps == req_ps)),
            ];
            rows.extend(jf.iter().chain(&of).map(|&x| finite(x)));
        }
        let mut wait = [0.0; OPTION_FEATURES.len()];
        wait[0] = 1.0;
        rows.extend(jf.iter().chain(&wait).map(|&x| finite(x)));
        jobs.extend(jf.iter().map(|&x| finite(x)));
        counts.push(options.len() + 1);
    }
    Level1Flat { jobs, rows, counts }
}

/// What level 1 reads of the queue and the free GPUs, the same for every job of a round.
struct Queue {
    /// Jobs without GPUs over jobs present.
    waiting_share: f64,
    /// GPUs the waiting jobs ask for.
    waiting_gpus: f64,
    /// GPUs no running job holds.
    free_gpus: f64,
    /// The share of the free GPUs on servers where some job runs (0 when every free GPU is on
    /// an idle server, or none is free): free room a large job cannot use whole.
    fragmented: f64,
}

impl Queue {
    fn of(snap: &ClusterSnapshot) -> Self {
        let mut used = vec![0u32; snap.cluster.servers.len()];
        for a in snap.jobs.iter().filter_map(|j| j.run.current.as_ref()) {
            for w in &a.workers {
                used[w.server.0] += w.gpus.len() as u32;
            }
        }
        let (waiting, waiting_gpus) = snap.waiting();
        let (mut free, mut scattered) = (0u32, 0u32);
        for (s, &u) in snap.cluster.servers.iter().zip(&used) {
            let f = s.num_gpus().saturating_sub(u);
            free += f;
            if u > 0 {
                scattered += f;
            }
        }
        Queue {
            waiting_share: waiting as f64 / snap.jobs.len().max(1) as f64,
            waiting_gpus: waiting_gpus as f64,
            free_gpus: f64::from(free),
            fragmented: if free == 0 {
                0.0
            } else {
                f64::from(scattered) / f64::from(free)
            },
        }
    }
}

/// Features are clamped to a finite range so that one odd coefficient cannot poison a forward
/// pass (NaN from an unpriced term, infinity from a division by a zero speed).
pub(super) fn finite(x: f64) -> f32 {
    if x.is_finite() {
        x.clamp(-1e6, 1e6) as f32
    } else {
        0.0
    }
}

/// Who holds workers where while a schedule is built: what level 2 reads besides the free
/// resources.
#[derive(Debug, Clone)]
pub(crate) struct Occupants {
    /// Per server, the snapshot indices of the jobs with workers there.
    pub on: Vec<Vec<usize>>,
    /// Per server, jobs there whose workers span several servers (NIC sharers).
    pub distributed: Vec<u32>,
    /// Per job, the co-location coefficient of the option it was placed with (0 if not).
    pub coloc_coef: Vec<f64>,
}

impl Occupants {
    /// An empty cluster of `servers` servers, for a round of `jobs` jobs.
    pub fn new(servers: usize, jobs: usize) -> Self {
        Occupants {
            on: vec![Vec::new(); servers],
            distributed: vec![0; servers],
            coloc_coef: vec![0.0; jobs],
        }
    }

    /// Records job `j`, placed with an option of co-location coefficient `coloc_coef`, on the
    /// servers of `plan`.
    pub fn add(&mut self, j: usize, plan: &[(usize, u32)], coloc_coef: f64) {
        self.coloc_coef[j] = coloc_coef;
        for &(s, _) in plan {
            if !self.on[s].contains(&j) {
                self.on[s].push(j);
            }
            if plan.len() > 1 {
                self.distributed[s] += 1;
            }
        }
    }
}

/// What level 2 is placing: job `j` with `workers` workers (and `ps` PS) in `mode`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlaceTask {
    /// Snapshot index of the job.
    pub job: usize,
    /// Workers of the chosen option.
    pub workers: u32,
    /// The chosen option's mode.
    pub mode: Mode,
    /// The chosen option's co-location coefficient (utility lost per unit of pressure).
    pub coloc_coef: f64,
}

/// What a level-2 row reads of the round: its prices, the packer's ledger of what is free, and
/// who runs where so far.
#[derive(Clone, Copy)]
pub(crate) struct PlaceView<'v, 'a> {
    /// The round, priced.
    pub pricing: &'v RoundPricing<'a>,
    /// What is free.
    pub packer: &'v Packer<'a>,
    /// Who runs where.
    pub occupants: &'v Occupants,
}

/// One candidate of a placement step: server `server` as the next home of `rest` more workers,
/// at step `step` of the job's placement, among `candidates` candidate servers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offer {
    /// The candidate server.
    pub server: usize,
    /// Workers left to place.
    pub rest: u32,
    /// Servers the job took so far.
    pub step: usize,
    /// Candidates offered at this step.
    pub candidates: usize,
}

/// Appends to `out` the level-2 row of `offer` for `task`.
pub(crate) fn place_row(
    view: PlaceView<'_, '_>,
    task: PlaceTask,
    offer: Offer,
    out: &mut Vec<f32>,
) {
    let PlaceView {
        pricing,
        packer,
        occupants,
    } = view;
    let Offer {
        server: s,
        rest,
        step,
        candidates,
    } = offer;
    let snap: &ClusterSnapshot = pricing.snapshot();
    let job: &Job = &snap.jobs[task.job];
    let server = &snap.cluster.servers[s];
    let gpus_here = f64::from(server.num_gpus().max(1));
    let g = job.demand.gpus_per_worker;
    let cap = packer.capacity(job, s);
    let take = cap.min(rest);
    let free = packer.free_gpus_on(s);
    let free_n = free.iter().filter(|&&f| f).count() as f64;
    let slots = &pricing.topology().slots()[s];
    let mut per_switch = Tally::default();
    let mut per_socket = Tally::default();
    for (i, &f) in free.iter().enumerate() {
        if f {
            per_switch.bump(slots[i].switch);
            per_socket.bump(slots[i].socket);
        }
    }
    let need = f64::from((take * g).max(1));
    let best_switch = per_switch.max();
    let best_socket = per_socket.max();
    let (mut suffered, mut caused, mut worst, mut caused_loss) = (0.0, 0.0, 0.0f64, 0.0);
    for &o in &occupants.on[s] {
        if o == task.job {
            continue;
        }
        let a = pricing.colocation_excess(JobPos(task.job), JobPos(o), s);
        suffered += a;
        worst = worst.max(a);
        let b = pricing.colocation_excess(JobPos(o), JobPos(task.job), s);
        caused += b;
        caused_loss += occupants.coloc_coef[o] * b;
    }
    // What the objective loses to co-location if the job joins this server: its own pressure
    // times its coefficient, and each co-runner's (exactly the objective's co-location terms).
    let coloc_marginal = task.coloc_coef * suffered + caused_loss;
    // GPUs under switches no one uses yet: room that shares no PCIe switch.
    let mut sizes = Tally::default();
    for x in slots {
        sizes.bump(x.switch);
    }
    let whole_switch_gpus: u32 = per_switch
        .small
        .iter()
        .zip(&sizes.small)
        .filter(|(free, size)| **free > 0 && free == size)
        .map(|(free, _)| *free)
        .sum();
    let corunners = occupants.on[s].iter().filter(|&&o| o != task.job).count();
    let cur = job.run.current.as_ref().filter(|a| !a.workers.is_empty());
    // The job runs here now and every GPU it holds here is still free: it can stay.
    let current_free = cur.is_some_and(|a| {
        let mine: Vec<&crate::model::WorkerTask> = a
            .workers
            .iter()
            .filter(|w| w.server == ServerIdx(s))
            .collect();
        !mine.is_empty()
            && mine.iter().all(|w| {
                w.gpus
                    .iter()
                    .all(|&i| free.get(i as usize).copied().unwrap_or(false))
            })
    });
    let current_share = cur.map_or(0.0, |a| {
        a.workers
            .iter()
            .filter(|w| w.server == ServerIdx(s))
            .count() as f64
            / a.workers.len() as f64
    });
    let (cpu, _) = packer.free_cpu_mem(s);
    let cpu_after = (cpu - f64::from(take) * job.demand.cpu_per_worker) / server.cpu_cores.max(1.0);
    let m = mode_hot(task.mode);
    let f: [f64; 24] = [
        f64::from(u8::from(cap >= rest)),
        f64::from(take) / f64::from(rest.max(1)),
        free_n / gpus_here,
        (free_n - f64::from(take * g)) / gpus_here,
        (f64::from(best_switch) / need).min(2.0),
        (f64::from(best_socket) / need).min(2.0),
        corunners as f64,
        suffered,
        caused,
        worst,
        f64::from(u8::from(current_free)),
        current_share,
        step as f64,
        f64::from(rest) / f64::from(task.workers.max(1)),
        f64::from(m[0]),
        f64::from(m[1]),
        f64::from(m[2]),
        f64::from(u8::from(job.arch == Architecture::AllReduce)),
        cpu_after,
        f64::from(occupants.distributed[s]),
        (candidates as f64).ln_1p(),
        f64::from(task.workers).ln_1p(),
        coloc_marginal,
        (f64::from(whole_switch_gpus) / need).min(2.0),
    ];
    out.extend(f.iter().map(|&x| finite(x)));
}

/// Counts per small key (a switch or socket of one server) without allocating for the usual
/// few keys.
#[derive(Default)]
struct Tally {
    small: [u32; 32],
    large: Vec<(u32, u32)>,
}

impl Tally {
    fn bump(&mut self, key: u32) {
        match self.small.get_mut(key as usize) {
            Some(c) => *c += 1,
            None => match self.large.iter_mut().find(|(k, _)| *k == key) {
                Some((_, c)) => *c += 1,
                None => self.large.push((key, 1)),
            },
        }
    }

    fn max(&self) -> u32 {
        let small = self.small.iter().copied().max().unwrap_or(0);
        self.large.iter().map(|x| x.1).fold(small, u32::max)
    }
}
