//! `ClusterSnapshot`: the single input of every scheduler, and its JSON instance files.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{Cluster, Job, JobId};
use crate::error::{Error, Expected, Result};
use crate::util::json::{parse_json, with_line, write_json_atomic};

/// The most GPUs one server may hold. Real servers hold 8–16 (NVIDIA HGX: 8; the largest
/// single-chassis systems 16); the bound is far above them and keeps per-GPU tables and `u32`
/// GPU counts safe from absurd inputs.
pub const MAX_GPUS_PER_SERVER: u32 = 4096;

/// The most servers one cluster may hold: four times the largest GPU clusters described in
/// public traces, and a bound that keeps server indexes and per-server tables small.
pub const MAX_SERVERS: usize = 1_000_000;

/// Everything a scheduler sees in one round: the cluster, the jobs that have arrived and not
/// finished (running or waiting), and the time.
///
/// ```
/// let snapshot = coda::ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// assert!(snapshot.cluster.num_gpus() > 0);
/// // Keeping every running job where it is, is a valid schedule.
/// let keep = coda::workload::current_schedule(&snapshot);
/// assert!(keep.validate(&snapshot).is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSnapshot {
    /// Seconds since the start of the trace.
    pub time_s: f64,
    /// The machines.
    pub cluster: Cluster,
    /// The jobs to decide for. (Changed in place? Call [`ClusterSnapshot::reindex`].)
    pub jobs: Vec<Job>,
    /// Job id → index in `jobs`, built on first lookup.
    #[serde(skip)]
    index: JobIndex,
}

/// Job id → index in `jobs`, built on first use and kept with the snapshot. Every lookup checks
/// the slot it finds still holds that id and falls back to a search otherwise, so an index left
/// stale by an in-place change of `jobs` is slow, never wrong.
#[derive(Debug, Clone, Default)]
struct JobIndex(OnceLock<HashMap<JobId, usize>>);

impl PartialEq for JobIndex {
    /// A cache: two snapshots with the same jobs are equal whatever their index holds.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A worker's demand as a cache key: GPUs, cores and memory (as bits), allowed GPU types.
type WorkerKind = (u32, u64, u64, Vec<super::GpuType>);

/// What [`ClusterSnapshot::check`] learned about the cluster, per kind of task demand.
#[derive(Default)]
struct FitCache {
    /// Worker kind → (some server hosts one, most workers the servers of one GPU type hold).
    workers: HashMap<WorkerKind, (bool, u64)>,
    /// (cores, memory per PS) → some server hosts one.
    ps: HashMap<(u64, u64), bool>,
    /// The cluster's cores and memory.
    totals: Option<(f64, f64)>,
}

impl ClusterSnapshot {
    /// Builds a snapshot and checks it (see [`ClusterSnapshot::check`]).
    pub fn new(time_s: f64, cluster: Cluster, jobs: Vec<Job>) -> Result<Self> {
        let s = Self::from_parts(time_s, cluster, jobs);
        s.check("<input>")?;
        Ok(s)
    }

    /// A snapshot of parts already known to be consistent (no check).
    pub(crate) fn from_parts(time_s: f64, cluster: Cluster, jobs: Vec<Job>) -> Self {
        ClusterSnapshot {
            time_s,
            cluster,
            jobs,
            index: JobIndex::default(),
        }
    }

    /// Reads and checks an instance file. Type errors carry the line, column and JSON path of the
    /// field; semantic errors (a job larger than any server, an empty cluster) the file.
    pub fn from_json_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_json_str(&text, &path.display().to_string())
    }

    /// [`ClusterSnapshot::from_json_file`] plus a check of the caller's, given the snapshot and
    /// the file's name (such as [`crate::PerfModel::check_snapshot`]: GPU types and models the
    /// performance model knows); its field errors point at the file's line too.
    pub fn from_json_file_with(
        path: impl AsRef<Path>,
        extra: impl FnOnce(&Self, &str) -> Result<()>,
    ) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let origin = path.display().to_string();
        let s = Self::from_json_str(&text, &origin)?;
        extra(&s, &origin).map_err(|e| with_line(e, &text))?;
        Ok(s)
    }

    /// Parses and checks an instance given as text; `origin` names it in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self> {
        let s: ClusterSnapshot = parse_json(text, origin)?;
        s.check(origin).map_err(|e| with_line(e, text))?;
        Ok(s)
    }

    /// Writes the instance as pretty JSON, atomically (a temporary file renamed over the target),
    /// so that an interrupted write never leaves a truncated instance behind.
    pub fn to_json_file(&self, path: impl AsRef<Path>) -> Result<()> {
        write_json_atomic(path.as_ref(), self)
    }

    /// Checks what no scheduler can repair: an empty cluster, bad server capacities, duplicate
    /// job ids, jobs whose smallest task or smallest allocation no server or cluster can host,
    /// and current placements that point outside the cluster.
    pub fn check(&self, origin: &str) -> Result<()> {
        if !self.time_s.is_finite() || self.time_s < 0.0 {
            return Err(Error::invalid(
                origin,
                0,
                "time_s",
                self.time_s,
                Expected::NonNegative,
            ));
        }
        self.check_cluster(origin)?;
        self.check_jobs(origin)?;
        // Running jobs must be running somewhere they can: their current placements together form
        // a valid schedule (a scheduler that keeps everyone in place must be able to).
        if let Some(v) = self.current_schedule().validate(self).first() {
            return Err(Error::InvalidInstance {
                context: origin.into(),
                reason: format!("current placements conflict: {v}"),
            });
        }
        Ok(())
    }

    /// The cluster's sizes (first, before anything sums or allocates by them: a topology's GPU
    /// count must stay far inside the integer types and tables built per GPU), that it has
    /// servers and GPUs, and every server's capacities and GPU type.
    fn check_cluster(&self, origin: &str) -> Result<()> {
        if self.cluster.servers.len() > MAX_SERVERS {
            return Err(Error::invalid(
                origin,
                0,
                "cluster.servers",
                self.cluster.servers.len(),
                format!("a cluster may hold at most {MAX_SERVERS} servers"),
            ));
        }
        for (i, srv) in self.cluster.servers.iter().enumerate() {
            let gpus: u64 = srv.topology.iter().flatten().map(|&g| u64::from(g)).sum();
            if gpus > u64::from(MAX_GPUS_PER_SERVER) {
                return Err(Error::invalid(
                    origin,
                    0,
                    &format!("cluster.servers[{i}].topology"),
                    gpus,
                    format!("a server may hold at most {MAX_GPUS_PER_SERVER} GPUs"),
                ));
            }
        }
        if self.cluster.servers.is_empty() {
            return Err(Error::EmptyCluster {
                context: origin.into(),
                what: "servers".into(),
            });
        }
        if self.cluster.num_gpus() == 0 {
            return Err(Error::EmptyCluster {
                context: origin.into(),
                what: "GPUs".into(),
            });
        }
        for (i, s) in self.cluster.servers.iter().enumerate() {
            for (field, v, expected) in [
                ("cpu_cores", s.cpu_cores, Expected::NonNegative),
                ("memory_gib", s.memory_gib, Expected::NonNegative),
                ("nic_gbps", s.nic_gbps, Expected::Positive),
            ] {
                if !expected.admits(v) {
                    return Err(Error::invalid(
                        origin,
                        0,
                        &format!("cluster.servers[{i}].{field}"),
                        v,
                        expected,
                    ));
                }
            }
            if s.gpu_type.trim().is_empty() {
                return Err(Error::invalid(
                    origin,
                    0,
                    &format!("cluster.servers[{i}].gpu_type"),
                    "",
                    "must not be empty",
                ));
            }
        }
        Ok(())
    }

    /// Every job: a unique id, fields no job can have, a size the cluster can host, a current
    /// placement of its own on the cluster's servers.
    fn check_jobs(&self, origin: &str) -> Result<()> {
        let mut ids = HashSet::with_capacity(self.jobs.len());
        let mut fits = FitCache::default();
        for (k, job) in self.jobs.iter().enumerate() {
            if !ids.insert(job.id) {
                return Err(Error::InvalidInstance {
                    context: origin.into(),
                    reason: format!("jobs[{k}]: duplicate job id {}", job.id),
                });
            }
            job.check().map_err(|e| match e {
                Error::InvalidJob {
                    field,
                    value,
                    expected,
                    ..
                } => Error::invalid(origin, 0, &format!("jobs[{k}].{field}"), value, expected),
                other => other,
            })?;
            self.check_fits(job, origin, &mut fits)?;
            if let Some(cur) = &job.run.current {
                if cur.job != job.id {
                    return Err(Error::InvalidInstance {
                        context: origin.into(),
                        reason: format!(
                            "jobs[{k}].run.current names job {} instead of {}",
                            cur.job, job.id
                        ),
                    });
                }
                let servers = self.cluster.servers.len();
                if let Some(s) = cur.servers().into_iter().find(|&s| s >= servers) {
                    return Err(Error::InvalidInstance {
                        context: origin.into(),
                        reason: format!(
                            "jobs[{k}].run.current uses server {s}; the cluster has {servers}"
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The jobs the cluster can never run, each with why: its smallest allocation, or the
    /// allocation it requested (what fixed-size policies give it), needs more GPUs of an
    /// allowed type, cores or memory than the cluster has. Unlike [`ClusterSnapshot::check`],
    /// which stops at the first, this lists every one (in `jobs` order), so that a caller can
    /// reject them all at once or leave them out and report them.
    pub fn unplaceable(&self) -> Vec<(JobId, String)> {
        let mut cache = FitCache::default();
        let mut out = Vec::new();
        for job in &self.jobs {
            let why = match self.check_fits(job, "", &mut cache) {
                Err(Error::JobTooLarge { reason, .. }) => Some(reason),
                _ => job.requested.and_then(|r| {
                    let mut at = job.clone();
                    at.workers.min = r.workers.max(1);
                    at.ps.min = r.ps;
                    match self.check_fits(&at, "", &mut cache) {
                        Err(Error::JobTooLarge { reason, .. }) => Some(format!(
                            "it requests {} workers and {} PS: {reason}",
                            r.workers, r.ps
                        )),
                        _ => None,
                    }
                }),
            };
            if let Some(why) = why {
                out.push((job.id, why));
            }
        }
        out
    }

    fn check_fits(&self, job: &Job, origin: &str, cache: &mut FitCache) -> Result<()> {
        let d = &job.demand;
        let too_large = |reason: String| Error::JobTooLarge {
            context: origin.into(),
            job: job.id,
            reason,
        };
        // What the cluster offers one kind of worker depends on the demand and the allowed GPU
        // types only; jobs share a few of them, so each is summed over the servers once (the
        // check stays linear in jobs + servers on large instances).
        let key = (
            d.gpus_per_worker,
            d.cpu_per_worker.to_bits(),
            d.mem_per_worker_gib.to_bits(),
            job.gpu_types.clone(),
        );
        let servers = &self.cluster.servers;
        let (hosts, slots) = *cache.workers.entry(key).or_insert_with(|| {
            let hosts_worker = |s: &super::Server| {
                job.allows_gpu(&s.gpu_type)
                    && s.num_gpus() >= d.gpus_per_worker
                    && s.cpu_cores >= d.cpu_per_worker
                    && s.memory_gib >= d.mem_per_worker_gib
            };
            // Workers one server holds: by its GPUs, cores and memory (a hair of tolerance
            // on the divisions, as the packers subtract). All of a job's workers use one GPU
            // type, so the slots are summed per type and the best type counts.
            let fit = |have: f64, need: f64| {
                if need > 0.0 {
                    ((have / need) + 1e-9)
                        .floor()
                        .min(f64::from(MAX_GPUS_PER_SERVER)) as u64
                } else {
                    u64::from(MAX_GPUS_PER_SERVER)
                }
            };
            let mut any = false;
            let mut by_type: HashMap<&str, u64> = HashMap::new();
            for s in servers.iter().filter(|s| hosts_worker(s)) {
                any = true;
                let slots = u64::from(s.num_gpus() / d.gpus_per_worker)
                    .min(fit(s.cpu_cores, d.cpu_per_worker))
                    .min(fit(s.memory_gib, d.mem_per_worker_gib));
                *by_type.entry(s.gpu_type.as_str()).or_default() += slots;
            }
            (any, by_type.into_values().max().unwrap_or(0))
        });
        if !hosts {
            return Err(too_large(format!(
                "no server of an allowed GPU type has {} GPUs, {} cores and {} GiB for one worker",
                d.gpus_per_worker, d.cpu_per_worker, d.mem_per_worker_gib
            )));
        }
        if u64::from(job.workers.min) > slots {
            return Err(too_large(format!(
                "{} workers (each {} GPUs, {} cores, {} GiB) do not fit: the servers of one GPU \
                 type hold at most {slots}",
                job.workers.min, d.gpus_per_worker, d.cpu_per_worker, d.mem_per_worker_gib
            )));
        }
        if job.ps.min > 0 {
            let key = (d.cpu_per_ps.to_bits(), d.mem_per_ps_gib.to_bits());
            let hosts_ps = *cache.ps.entry(key).or_insert_with(|| {
                servers
                    .iter()
                    .any(|s| s.cpu_cores >= d.cpu_per_ps && s.memory_gib >= d.mem_per_ps_gib)
            });
            if !hosts_ps {
                return Err(too_large(format!(
                    "no server has {} cores and {} GiB for one parameter server",
                    d.cpu_per_ps, d.mem_per_ps_gib
                )));
            }
        }
        // Its smallest allocation as a whole (workers and PS together) against the cluster's
        // cores and memory: each task may fit a server alone and the job still never run.
        let (w, p) = (f64::from(job.workers.min), f64::from(job.ps.min));
        let (cores, mem) = *cache.totals.get_or_insert_with(|| {
            (
                servers.iter().map(|s| s.cpu_cores).sum(),
                servers.iter().map(|s| s.memory_gib).sum(),
            )
        });
        let (need_cores, need_mem) = d.cores_mem(w, p);
        if need_cores > cores + super::capacity::TOLERANCE
            || need_mem > mem + super::capacity::TOLERANCE
        {
            return Err(too_large(format!(
                "{} workers and {} PS need {need_cores} cores and {need_mem} GiB; the cluster \
                 has {cores} and {mem}",
                job.workers.min, job.ps.min
            )));
        }
        Ok(())
    }

    /// The same round with every CPU/memory tier removed ([`crate::Job::tiers`] empty, running
    /// jobs at their demand): what a scheduler that places at the demand sees.
    pub(crate) fn at_demand(&self) -> ClusterSnapshot {
        let mut out = self.clone();
        for j in &mut out.jobs {
            j.tiers.clear();
            if let Some(a) = &mut j.run.current {
                a.tier = 0;
            }
        }
        out
    }

    /// The schedule that keeps every running job where it is (valid for a checked snapshot).
    pub fn current_schedule(&self) -> super::schedule::Schedule {
        super::schedule::Schedule {
            assignments: self
                .jobs
                .iter()
                .filter_map(|j| j.run.current.clone())
                .collect(),
        }
    }

    /// GPUs the running jobs hold ([`crate::Schedule::gpus_used`] of the schedule that keeps
    /// them, without building it).
    pub fn gpus_in_use(&self) -> u64 {
        self.jobs
            .iter()
            .filter_map(|j| j.run.current.as_ref())
            .flat_map(|a| &a.workers)
            .map(|w| w.gpus.len() as u64)
            .sum()
    }

    /// Jobs present without GPUs, and the GPUs they ask for at their requested size (the
    /// queue that the learned policy's and the distilled gate's features read).
    pub fn waiting(&self) -> (usize, u64) {
        self.jobs
            .iter()
            .filter(|j| j.run.current.as_ref().is_none_or(|a| a.workers.is_empty()))
            .fold((0, 0), |(n, g), j| {
                (n + 1, g + u64::from(j.requested_gpus()))
            })
    }

    /// GPUs no running job holds.
    pub fn free_gpus(&self) -> u64 {
        self.cluster.num_gpus().saturating_sub(self.gpus_in_use())
    }

    /// Job indices by (arrival, id): the order first-come policies and job windows read.
    pub fn by_arrival(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.jobs.len()).collect();
        v.sort_by(|&a, &b| {
            let (x, y) = (&self.jobs[a], &self.jobs[b]);
            x.arrival_s.total_cmp(&y.arrival_s).then(x.id.cmp(&y.id))
        });
        v
    }

    /// The job with this id.
    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.job_index(id).map(|i| &self.jobs[i])
    }

    /// Index in `jobs` of the job with this id, in O(1) (see [`ClusterSnapshot::reindex`]).
    pub fn job_index(&self, id: JobId) -> Option<usize> {
        let index = self.index.0.get_or_init(|| {
            self.jobs
                .iter()
                .enumerate()
                .map(|(i, j)| (j.id, i))
                .collect()
        });
        match index.get(&id) {
            Some(&i) if self.jobs.get(i).is_some_and(|j| j.id == id) => Some(i),
            // Absent, or stale (jobs changed in place since the index was built): search, so
            // the answer is right either way; only an unknown id pays for it.
            _ => self.jobs.iter().position(|j| j.id == id),
        }
    }

    /// Forgets the id index after `jobs` was changed in place (the next lookup rebuilds it).
    pub fn reindex(&mut self) {
        self.index = JobIndex::default();
    }
}
