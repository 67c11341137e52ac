//! Job traces: readers for the shipped formats, and the seeded rule that turns trace rows (which
//! carry no model) into [`Job`]s the performance model can price.
//!
//! # Formats
//! * `philly` — `datasets/philly_2017_pollux_window_4d.csv` (`submit_offset_s`, `duration`,
//!   `num_gpus`, `cluster`).
//! * `itp` — `datasets/msr_itp_2021_clusters02_06.csv` (`cluster`, `job_id`, `submission_time`,
//!   `duration`, `num_gpu`); [`TraceFilter`] can keep one of its clusters.
//! * `alibaba` — `datasets/alibaba_2023_openb_pods.csv` (K8s pods). Pods that are not
//!   whole-GPU training tasks are *skipped and counted*, not rejected: CPU-only pods
//!   (`num_gpu = 0`), GPU-sharing pods (`gpu_milli < 1000`), pods never scheduled (empty
//!   `scheduled_time`) and pods with no run time (`deletion_time <= scheduled_time`). Pods still running at the trace end keep the trace end
//!   as their end (the trace is censored there).
//!
//! In Philly and ITP, a zero, negative or unparsable duration or GPU count is an error naming the
//! file, line and column.
//!
//! # Model assignment (seeded)
//! Traces carry no model. [`to_jobs`] draws one per row from a `ChaCha8` stream seeded with
//! [`TraceOptions::seed`], row by row in file order:
//! 1. with probability [`TraceOptions::ps_fraction`] the job is a parameter-server job and its
//!    model is uniform over the DL2 models (as DL2 drew models uniformly);
//! 2. otherwise it is an all-reduce job whose model is uniform within its GPU-time class, in the
//!    spirit of Pollux's assignment by GPU-time: under 1 GPU-hour `cifar10`/`ncf`, 1–10
//!    `deepspeech2`/`yolov3`, 10 and more `imagenet`/`bert`.
//!
//! The job's requested allocation ([`Job::requested`]) is the trace's GPU count as workers (PS
//! models: capped at their measured range, with as many PS as workers, as far as measured).
//! Per-task CPU and memory come from the trace where it records them (Alibaba pod requests),
//! else from the performance model's measured task demands ([`PerfModel::task_demand`]: DL2's
//! CPU usage for PS models, Synergy's profiles for all-reduce models).
//!
//! **Trace durations and contention.** A trace duration is read as the job's duration *alone*
//! with its trace allocation, placed the way coda's shared packer places it (consolidated, PS
//! round-robin on the worker servers) on [`TraceOptions::server`]: the job's work is that
//! duration times the speed the performance model predicts there. So a job replayed alone on a
//! cluster of such servers takes exactly its trace duration (tested for PS and all-reduce jobs
//! of every shipped trace). The trace's own era had contention too: the simulator does not
//! charge it twice, through its measured contention allowance
//! ([`crate::sim::SimConfig::contention_allowance`]).

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{Architecture, Cluster, Job, JobId, Request, Server, TaskDemand, TaskRange};
use crate::perf::{JobQuery, PerfModel, PlacementShape};
use crate::util::csvio::CsvFile;

/// One row of a trace, before a model is assigned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceJob {
    /// Identifier in the source (`line N`, a UUID, a pod name).
    pub name: String,
    /// Arrival, seconds from the first arrival of the trace.
    pub arrival_s: f64,
    /// Measured run time, seconds.
    pub duration_s: f64,
    /// GPUs the job ran with.
    pub num_gpus: u32,
    /// Sub-cluster / virtual cluster it came from.
    pub group: String,
    /// CPU cores requested per GPU, when the trace records it (Alibaba).
    pub cpu_per_gpu: Option<f64>,
    /// Memory requested per GPU, GiB, when the trace records it (Alibaba).
    pub mem_per_gpu_gib: Option<f64>,
}

/// A loaded trace plus what was skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    /// The format's name.
    pub format: TraceFormat,
    /// Rows kept, sorted by arrival (stable on file order).
    pub jobs: Vec<TraceJob>,
    /// `(reason, count)` of rows skipped by rule (see the module docs).
    pub skipped: Vec<(String, usize)>,
}

/// Which reader to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Philly 2017 window (Pollux's processing).
    Philly,
    /// Microsoft ITP 2021.
    Itp,
    /// Alibaba GPU cluster 2023 (openb pods).
    Alibaba,
}

impl TraceFormat {
    /// The shipped file of this format, relative to `datasets/`.
    pub fn shipped_file(self) -> &'static str {
        match self {
            TraceFormat::Philly => "philly_2017_pollux_window_4d.csv",
            TraceFormat::Itp => "msr_itp_2021_clusters02_06.csv",
            TraceFormat::Alibaba => "alibaba_2023_openb_pods.csv",
        }
    }

    /// Parses `philly`, `itp` or `alibaba`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "philly" => Some(TraceFormat::Philly),
            "itp" => Some(TraceFormat::Itp),
            "alibaba" => Some(TraceFormat::Alibaba),
            _ => None,
        }
    }

    /// Recognises a file's format from its header.
    pub fn detect(path: &Path) -> Result<Self> {
        let f = CsvFile::open(path, &[])?;
        if f.has_column("submit_offset_s") && f.has_column("num_gpus") {
            Ok(TraceFormat::Philly)
        } else if f.has_column("submission_time") && f.has_column("num_gpu") {
            Ok(TraceFormat::Itp)
        } else if f.has_column("gpu_milli") && f.has_column("creation_time") {
            Ok(TraceFormat::Alibaba)
        } else {
            Err(Error::MissingColumn {
                file: path.display().to_string(),
                column:
                    "submit_offset_s (philly), submission_time (itp) or creation_time (alibaba)"
                        .into(),
            })
        }
    }
}

/// Longest job a trace row may describe: one year, 13 times the longest in the shipped traces
/// (Philly: 27 days). A run's length, and so its rounds, stays bounded by the rows.
pub(crate) const MAX_DURATION_S: f64 = 365.0 * 86_400.0;

/// Latest arrival a trace row may have: ten years after the trace's time origin.
pub(crate) const MAX_ARRIVAL_S: f64 = 10.0 * 365.0 * 86_400.0;

/// Which rows of a trace to keep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceFilter {
    /// Keep only this group (`cluster02`, a Philly VC hash...).
    pub group: Option<String>,
}

/// Reads a trace file of a known format.
pub fn load(path: &Path, format: TraceFormat, filter: &TraceFilter) -> Result<Trace> {
    let (mut jobs, skipped) = match format {
        TraceFormat::Philly => (read_philly(path)?, Vec::new()),
        TraceFormat::Itp => (read_itp(path)?, Vec::new()),
        TraceFormat::Alibaba => read_alibaba(path)?,
    };
    if let Some(g) = &filter.group {
        let before = jobs.len();
        jobs.retain(|j| &j.group == g);
        if jobs.is_empty() && before > 0 {
            // A misspelt group is an error, not an empty replay.
            let mut known: Vec<&str> = Vec::new();
            let all = match format {
                TraceFormat::Philly => read_philly(path)?,
                TraceFormat::Itp => read_itp(path)?,
                TraceFormat::Alibaba => read_alibaba(path)?.0,
            };
            for j in &all {
                if !known.contains(&j.group.as_str()) {
                    known.push(&j.group);
                }
            }
            known.sort_unstable();
            let shown = known.len().min(20);
            return Err(Error::UnknownName {
                what: "group".into(),
                name: g.clone(),
                reason: format!(
                    "{} has no row of that group (known: {}{})",
                    path.display(),
                    known[..shown].join(", "),
                    if known.len() > shown { ", ..." } else { "" }
                ),
            });
        }
    }
    jobs.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
    if let Some(t0) = jobs.first().map(|j| j.arrival_s) {
        for j in &mut jobs {
            j.arrival_s -= t0;
        }
    }
    Ok(Trace {
        format,
        jobs,
        skipped,
    })
}

fn read_philly(path: &Path) -> Result<Vec<TraceJob>> {
    let f = CsvFile::open(
        path,
        &["submit_offset_s", "duration", "num_gpus", "cluster"],
    )?;
    f.rows()
        .map(|r| {
            Ok(TraceJob {
                name: format!("line {}", r.line),
                arrival_s: r.seconds("submit_offset_s", false, MAX_ARRIVAL_S)?,
                duration_s: r.seconds("duration", true, MAX_DURATION_S)?,
                num_gpus: r.positive_count("num_gpus")?,
                group: r.str("cluster").to_string(),
                cpu_per_gpu: None,
                mem_per_gpu_gib: None,
            })
        })
        .collect()
}

fn read_itp(path: &Path) -> Result<Vec<TraceJob>> {
    let f = CsvFile::open(
        path,
        &[
            "cluster",
            "job_id",
            "submission_time",
            "duration",
            "num_gpu",
        ],
    )?;
    f.rows()
        .map(|r| {
            Ok(TraceJob {
                name: r.str("job_id").to_string(),
                arrival_s: r.seconds("submission_time", false, MAX_ARRIVAL_S)?,
                duration_s: r.seconds("duration", true, MAX_DURATION_S)?,
                num_gpus: r.positive_count("num_gpu")?,
                group: r.str("cluster").to_string(),
                cpu_per_gpu: None,
                mem_per_gpu_gib: None,
            })
        })
        .collect()
}

/// Rows kept, and `(reason, count)` of rows skipped.
type KeptAndSkipped = (Vec<TraceJob>, Vec<(String, usize)>);

fn read_alibaba(path: &Path) -> Result<KeptAndSkipped> {
    let f = CsvFile::open(
        path,
        &[
            "name",
            "cpu_milli",
            "memory_mib",
            "num_gpu",
            "gpu_milli",
            "creation_time",
            "deletion_time",
            "scheduled_time",
        ],
    )?;
    let (mut cpu_only, mut sharing, mut never, mut no_run) = (0, 0, 0, 0);
    let mut jobs = Vec::new();
    for r in f.rows() {
        let gpus = r.count("num_gpu")?;
        let milli = r.nonneg("gpu_milli")?;
        let cpu = r.nonneg("cpu_milli")?;
        let mem = r.nonneg("memory_mib")?;
        let created = r.seconds("creation_time", false, MAX_ARRIVAL_S)?;
        let deleted = r.seconds("deletion_time", false, MAX_ARRIVAL_S + MAX_DURATION_S)?;
        if gpus == 0 {
            cpu_only += 1;
            continue;
        }
        if gpus == 1 && milli < 1000.0 {
            sharing += 1;
            continue;
        }
        // Pending pods have an empty scheduled_time: they never ran.
        if r.str("scheduled_time").is_empty() {
            never += 1;
            continue;
        }
        let scheduled = r.seconds("scheduled_time", false, MAX_ARRIVAL_S + MAX_DURATION_S)?;
        if deleted <= scheduled || scheduled < created {
            no_run += 1;
            continue;
        }
        if deleted - scheduled > MAX_DURATION_S {
            return Err(r.bad(
                "deletion_time",
                format!(
                    "runs {:e} s after scheduled_time; at most {MAX_DURATION_S:e}",
                    deleted - scheduled
                ),
            ));
        }
        jobs.push(TraceJob {
            name: r.str("name").to_string(),
            arrival_s: created,
            duration_s: deleted - scheduled,
            num_gpus: gpus,
            group: "openb".into(),
            cpu_per_gpu: Some(cpu / 1000.0 / f64::from(gpus)),
            mem_per_gpu_gib: Some(mem / 1024.0 / f64::from(gpus)),
        });
    }
    let skipped = vec![
        ("cpu-only pod (num_gpu = 0)".to_string(), cpu_only),
        ("GPU-sharing pod (gpu_milli < 1000)".to_string(), sharing),
        ("never scheduled (empty scheduled_time)".to_string(), never),
        (
            "no run time (deletion_time <= scheduled_time)".to_string(),
            no_run,
        ),
    ];
    Ok((jobs, skipped))
}

/// Reads `alibaba_2023_openb_gpu_nodes.csv` into a cluster. The file records GPUs, CPU and
/// memory per node but no topology or NIC: GPUs are laid out as 2 per PCIe switch, 2 switches
/// per socket (1- and 2-GPU nodes: one socket, one switch), and NICs are given
/// [`ASSUMED_NIC_GBPS`] — both assumptions, not measurements.
pub(crate) fn load_alibaba_nodes(path: &Path) -> Result<Cluster> {
    let f = CsvFile::open(path, &["sn", "cpu_milli", "memory_mib", "gpu", "model"])?;
    let mut servers = Vec::new();
    for r in f.rows() {
        let gpus = r.count("gpu")?;
        let gpu_type = match r.str("model") {
            "V100M16" | "V100M32" => "v100".to_string(),
            other => other.to_lowercase(),
        };
        let topology = match gpus {
            0 => vec![vec![0]],
            1 | 2 => vec![vec![gpus]],
            n => {
                let per_socket = n / 2;
                let sockets = [per_socket, n - per_socket];
                sockets
                    .iter()
                    .map(|&g| {
                        if g >= 4 {
                            vec![g / 2, g - g / 2]
                        } else {
                            vec![g]
                        }
                    })
                    .collect()
            }
        };
        servers.push(Server {
            name: r.str("sn").to_string(),
            gpu_type: gpu_type.into(),
            topology,
            cpu_cores: r.nonneg("cpu_milli")? / 1000.0,
            memory_gib: r.nonneg("memory_mib")? / 1024.0,
            nic_gbps: ASSUMED_NIC_GBPS,
            // The trace records no GPU fabric: PCIe, the weaker assumption.
            nvlink: false,
        });
    }
    Ok(Cluster { servers })
}

/// NIC bandwidth given to servers whose source records none (Gbit/s). Informational: the
/// performance model prices NIC sharing from the sharers' communication shares (profiled at
/// their calibration clusters' NICs), not from this number.
pub const ASSUMED_NIC_GBPS: f64 = 25.0;

/// How trace rows become jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceOptions {
    /// Seed of the model-assignment stream.
    pub seed: u64,
    /// Probability that a job is a parameter-server job.
    pub ps_fraction: f64,
    /// The server a trace duration is converted on: the job is placed alone on empty copies of
    /// it by the packer the baselines share (consolidated, PS round-robin on the worker servers)
    /// and priced there, so replayed alone on a cluster of such servers it takes its duration.
    pub server: Server,
    /// If set, durations are converted on this cluster itself instead (the job placed alone on
    /// it, empty), which is what "replayed alone takes its duration" means on a heterogeneous
    /// cluster such as Alibaba's nodes; a job that does not fit it falls back to `server`.
    #[serde(default)]
    pub cluster: Option<Cluster>,
    /// A job may scale up to this multiple of its trace GPU count.
    pub max_scale_up: u32,
    /// CPU cores per worker when neither the trace nor the performance model's measured task
    /// demands give one: Synergy's GPU-proportional fair share (3 cores per GPU).
    pub cpu_per_gpu: f64,
    /// Memory per worker when neither the trace nor the measured demands give one, GiB. ESTIMATE:
    /// Synergy's fair share (62.5 GB per GPU); DL2 recorded no memory for PS jobs' workers.
    pub mem_per_gpu_gib: f64,
    /// CPU cores per PS task when the measured demands give none (DL2's PS median is 1.9–2.0
    /// cores for most models).
    pub cpu_per_ps: f64,
    /// Memory per PS task, GiB. ESTIMATE: the largest DL2 model (vgg-16, 553 MB) fits many times.
    pub mem_per_ps_gib: f64,
    /// Whether jobs offer the CPU/memory tiers their model's measured surface gives
    /// ([`CpuMemMode::Fungible`]) or only their demand ([`CpuMemMode::Fixed`]).
    #[serde(default)]
    pub cpu_mem: CpuMemMode,
    /// Cores per GPU every server of the cluster is given instead of its own (a CPU-poor
    /// cluster: Synergy's testbed has 3); `None` keeps the servers' cores.
    #[serde(default)]
    pub server_cpu_per_gpu: Option<f64>,
}

/// Whether a job's cores and memory are a scheduling decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuMemMode {
    /// Every task gets its demand (GPU-proportional, as Synergy calls it).
    Fixed,
    /// A job also offers its model's tiers ([`crate::perf::cpumem`]); schedulers that decide
    /// cores and memory pick one per round.
    #[default]
    Fungible,
}

impl std::str::FromStr for CpuMemMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "fixed" => Ok(CpuMemMode::Fixed),
            "fungible" => Ok(CpuMemMode::Fungible),
            _ => Err(format!("`{s}`: expected `fixed` or `fungible`")),
        }
    }
}

impl std::fmt::Display for CpuMemMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CpuMemMode::Fixed => "fixed",
            CpuMemMode::Fungible => "fungible",
        })
    }
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            seed: 0,
            ps_fraction: 0.25,
            server: default_server(),
            cluster: None,
            max_scale_up: 2,
            cpu_per_gpu: 3.0,
            mem_per_gpu_gib: 62.5,
            cpu_per_ps: 2.0,
            mem_per_ps_gib: 8.0,
            cpu_mem: CpuMemMode::default(),
            server_cpu_per_gpu: None,
        }
    }
}

/// GPU-time classes (upper bound in GPU-hours) and the all-reduce models drawn in each.
pub(crate) const AR_CLASSES: [(f64, [&str; 2]); 3] = [
    (1.0, ["cifar10", "ncf"]),
    (10.0, ["deepspeech2", "yolov3"]),
    (f64::INFINITY, ["imagenet", "bert"]),
];

/// Turns trace rows into jobs with the seeded rule of the module docs.
pub fn to_jobs(rows: &[TraceJob], opts: &TraceOptions, perf: &dyn PerfModel) -> Result<Vec<Job>> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let ps_models: Vec<String> = perf
        .models()
        .into_iter()
        .filter(|(_, a)| *a == Architecture::ParameterServer)
        .map(|(m, _)| m)
        .collect();
    let mut jobs = Vec::with_capacity(rows.len());
    // Speed alone per (model, workers, PS, CPU and memory per worker): a few dozen keys.
    let mut alone: std::collections::HashMap<(String, u32, u32, u64, u64), f64> =
        std::collections::HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        let n = row.num_gpus;
        let is_ps = !ps_models.is_empty() && rng.random::<f64>() < opts.ps_fraction;
        let (model, arch) = if is_ps {
            (
                ps_models[rng.random_range(0..ps_models.len())].clone(),
                Architecture::ParameterServer,
            )
        } else {
            let gpu_hours = row.duration_s * f64::from(n) / 3600.0;
            let class = AR_CLASSES
                .iter()
                .find(|(ub, _)| gpu_hours < *ub)
                .map_or(AR_CLASSES[2].1, |c| c.1);
            (
                class[rng.random_range(0..class.len())].to_string(),
                Architecture::AllReduce,
            )
        };
        let mut job = make_job(
            JobId(i as u64),
            row.arrival_s,
            &model,
            arch,
            n,
            (row.cpu_per_gpu, row.mem_per_gpu_gib),
            opts,
            perf,
        )?;
        let (w, p) = job.requested_or_min();
        let key = (
            job.model.clone(),
            w,
            p,
            job.demand.cpu_per_worker.to_bits(),
            job.demand.mem_per_worker_gib.to_bits(),
        );
        let ips = match alone.get(&key) {
            Some(&v) => v,
            None => {
                let v = rate_alone(&job, w, p, opts, perf)?;
                alone.insert(key, v);
                v
            }
        };
        job.total_iterations = row.duration_s * ips;
        jobs.push(job);
    }
    Ok(jobs)
}

/// The job the trace rule makes of a row: `model` (of architecture `arch`) submitted with
/// `n` GPUs, arriving at `arrival_s`, with the row's own CPU and memory per GPU where it
/// records them (see the module docs); its work is left at 1 iteration for the caller to set.
/// `coda slurm` builds its jobs with the same rule, so a job submitted to Slurm and the same
/// trace row replayed by the simulator are the same job.
#[allow(clippy::too_many_arguments)]
pub(crate) fn make_job(
    id: JobId,
    arrival_s: f64,
    model: &str,
    arch: Architecture,
    n: u32,
    (row_cpu, row_mem): (Option<f64>, Option<f64>),
    opts: &TraceOptions,
    perf: &dyn PerfModel,
) -> Result<Job> {
    let (max_w, max_p) = perf
        .max_tasks(model)
        .ok_or_else(|| Error::UnsupportedConfiguration {
            model: model.to_string(),
            reason: "no measured worker/PS limits".into(),
        })?;
    // Workers that reproduce the trace allocation (PS models: within their measured range),
    // and PS = workers as far as measured.
    let w = n.min(max_w).max(1);
    let p = match arch {
        Architecture::AllReduce => 0,
        Architecture::ParameterServer => w.min(max_p),
    };
    let measured = perf.task_demand(model);
    let demand = TaskDemand {
        gpus_per_worker: 1,
        cpu_per_worker: row_cpu.unwrap_or_else(|| {
            measured
                .as_ref()
                .map_or(opts.cpu_per_gpu, |d| d.cpu_per_worker)
        }),
        mem_per_worker_gib: row_mem.unwrap_or_else(|| {
            measured
                .as_ref()
                .and_then(|d| d.mem_per_worker_gib)
                .unwrap_or(opts.mem_per_gpu_gib)
        }),
        cpu_per_ps: measured
            .as_ref()
            .and_then(|d| d.cpu_per_ps)
            .unwrap_or(opts.cpu_per_ps),
        mem_per_ps_gib: opts.mem_per_ps_gib,
    };
    let wmax = n.saturating_mul(opts.max_scale_up).clamp(1, max_w);
    let (workers, ps) = match arch {
        Architecture::AllReduce => (TaskRange::new(1, wmax), TaskRange::new(0, 0)),
        Architecture::ParameterServer => (TaskRange::new(1, wmax), TaskRange::new(1, max_p)),
    };
    let tiers = match opts.cpu_mem {
        CpuMemMode::Fixed => Vec::new(),
        CpuMemMode::Fungible => super::tiers::worker_tiers(measured.as_ref(), &demand),
    };
    Ok(Job {
        tiers,
        id,
        arrival_s,
        model: model.to_string(),
        arch,
        total_iterations: 1.0,
        demand,
        workers,
        ps,
        gpu_types: Vec::new(),
        local_batch: None,
        run: crate::model::RunState::default(),
        requested: Some(Request { workers: w, ps: p }),
    })
}

/// Speed of `job` with `w` workers and `p` PS placed alone by the shared packer (consolidated)
/// on [`TraceOptions::cluster`] if it holds the job, else on empty copies of
/// [`TraceOptions::server`]; if the packer cannot place it there either (cores or memory too
/// short for even one task per server), the contention-free speed of its tightest packing.
fn rate_alone(job: &Job, w: u32, p: u32, opts: &TraceOptions, perf: &dyn PerfModel) -> Result<f64> {
    let server = &opts.server;
    let per = server.num_gpus().max(1);
    let copies = || {
        // Enough servers for the workers packed, plus one per PS elsewhere.
        Cluster::homogeneous(w.div_ceil(per) as usize + p as usize + 1, server)
    };
    if let Some(c) = &opts.cluster
        && let Some(v) = place_alone(job, w, p, c.clone(), perf)?
    {
        return Ok(v);
    }
    if let Some(v) = place_alone(job, w, p, copies(), perf)? {
        return Ok(v);
    }
    let q = JobQuery::of(job);
    Ok(perf
        .speed(&q, &server.gpu_type, &PlacementShape::packed(w, p, 1, per))?
        .iterations_per_s)
}

/// The speed of `job` placed alone on the empty `cluster` by FIFO's packer, if it fits.
fn place_alone(
    job: &Job,
    w: u32,
    p: u32,
    cluster: Cluster,
    perf: &dyn PerfModel,
) -> Result<Option<f64>> {
    use crate::policies::{Packer, Placement};
    let mut alone = job.clone();
    alone.arrival_s = 0.0;
    let snapshot = crate::model::ClusterSnapshot::from_parts(0.0, cluster, vec![alone.clone()]);
    let mut packer = Packer::new(&snapshot, perf);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    if !packer.place(&alone, w, p, Placement::Consolidated, &mut rng) {
        return Ok(None);
    }
    let schedule = crate::model::Schedule {
        assignments: packer.into_assignments(),
    };
    Ok(crate::perf::speeds(perf, &snapshot, &schedule)?
        .first()
        .map(|(_, s)| s.iterations_per_s))
}

/// The server the Philly defaults assume, row `dgx-1-v100` of `datasets/servers.csv` (NVIDIA's
/// DGX-1 data sheet): 8 V100 GPUs joined by NVLink (2 sockets × 2 PCIe switches × 2 GPUs), 40
/// cores, 512 GiB, 4 × 100 Gb/s InfiniBand. The Philly trace records no server hardware coda can
/// price (its GPUs were not V100); like Pollux and Blox, coda replays it on 8-GPU V100 servers.
pub fn default_server() -> Server {
    Server::uniform(
        "node",
        "v100",
        [2, 2, 2],
        crate::model::HostResources::new(40.0, 512.0, 400.0),
    )
    .with_nvlink()
}

/// One scheduling round cut from a trace: jobs `skip .. skip + take` (arrival order), all
/// waiting, on `servers` copies of [`default_server`], at the arrival time of the last of them.
pub fn round_snapshot(
    jobs: &[Job],
    skip: usize,
    take: usize,
    servers: usize,
) -> Result<crate::model::ClusterSnapshot> {
    let picked: Vec<Job> = jobs.iter().skip(skip).take(take).cloned().collect();
    let time = picked.iter().map(|j| j.arrival_s).fold(0.0, f64::max);
    crate::model::ClusterSnapshot::new(
        time,
        Cluster::homogeneous(servers, &default_server()),
        picked,
    )
}
