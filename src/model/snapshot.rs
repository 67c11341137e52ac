//! `ClusterSnapshot`: the single input of every scheduler, and its JSON instance files.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{Cluster, Job, JobId};
use crate::error::{Error, Result};
use crate::util::json::{parse_json, write_json_atomic};

/// The most GPUs one server may hold. Real servers hold 8–16 (NVIDIA HGX: 8; the largest
/// single-chassis systems 16); the bound is far above them and keeps per-GPU tables and `u32`
/// GPU counts safe from absurd inputs.
pub const MAX_GPUS_PER_SERVER: u32 = 4096;

/// Everything a scheduler sees in one round: the cluster, the jobs that have arrived and not
/// finished (running or waiting), and the time.
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

    /// Parses and checks an instance given as text; `origin` names it in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self> {
        let s: ClusterSnapshot = parse_json(text, origin)?;
        s.check(origin)?;
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
                "must be finite and >= 0",
            ));
        }
        // Sizes first, before anything sums or allocates by them: a topology's GPU count must
        // stay far inside the integer types and tables built per GPU.
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
            for (field, v, strictly) in [
                ("cpu_cores", s.cpu_cores, false),
                ("memory_gib", s.memory_gib, false),
                ("nic_gbps", s.nic_gbps, true),
            ] {
                if !v.is_finite() || v < 0.0 || (strictly && v == 0.0) {
                    return Err(Error::invalid(
                        origin,
                        0,
                        &format!("cluster.servers[{i}].{field}"),
                        v,
                        if strictly {
                            "must be finite and > 0"
                        } else {
                            "must be finite and >= 0"
                        },
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
        let mut ids = HashSet::with_capacity(self.jobs.len());
        for (k, job) in self.jobs.iter().enumerate() {
            if !ids.insert(job.id) {
                return Err(Error::InvalidInstance {
                    context: origin.into(),
                    reason: format!("jobs[{k}]: duplicate job id {}", job.id),
                });
            }
            job.check().map_err(|(field, value, reason)| {
                Error::invalid(origin, 0, &format!("jobs[{k}].{field}"), value, reason)
            })?;
            self.check_fits(job, origin)?;
            if let Some(cur) = &job.current {
                if cur.job != job.id {
                    return Err(Error::InvalidInstance {
                        context: origin.into(),
                        reason: format!(
                            "jobs[{k}].current names job {} instead of {}",
                            cur.job, job.id
                        ),
                    });
                }
                let servers = self.cluster.servers.len();
                if let Some(s) = cur.servers().into_iter().find(|&s| s >= servers) {
                    return Err(Error::InvalidInstance {
                        context: origin.into(),
                        reason: format!(
                            "jobs[{k}].current uses server {s}; the cluster has {servers}"
                        ),
                    });
                }
            }
        }
        // Running jobs must be running somewhere they can: their current placements together form
        // a valid schedule (a scheduler that keeps everyone in place must be able to).
        let current = crate::Schedule {
            assignments: self.jobs.iter().filter_map(|j| j.current.clone()).collect(),
        };
        if let Some(v) = current.validate(self).first() {
            return Err(Error::InvalidInstance {
                context: origin.into(),
                reason: format!("current placements conflict: {v}"),
            });
        }
        Ok(())
    }

    fn check_fits(&self, job: &Job, origin: &str) -> Result<()> {
        let d = &job.demand;
        let too_large = |reason: String| Error::JobTooLarge {
            context: origin.into(),
            job: job.id,
            reason,
        };
        let hosts_worker = |s: &super::Server| {
            job.allows_gpu(&s.gpu_type)
                && s.num_gpus() >= d.gpus_per_worker
                && s.cpu_cores >= d.cpu_per_worker
                && s.memory_gib >= d.mem_per_worker_gib
        };
        if !self.cluster.servers.iter().any(hosts_worker) {
            return Err(too_large(format!(
                "no server of an allowed GPU type has {} GPUs, {} cores and {} GiB for one worker",
                d.gpus_per_worker, d.cpu_per_worker, d.mem_per_worker_gib
            )));
        }
        let gpus_allowed: u64 = self
            .cluster
            .servers
            .iter()
            .filter(|s| hosts_worker(s))
            .map(|s| u64::from(s.num_gpus() / d.gpus_per_worker * d.gpus_per_worker))
            .sum();
        let need = u64::from(job.workers.min) * u64::from(d.gpus_per_worker);
        if need > gpus_allowed {
            return Err(too_large(format!(
                "its smallest allocation needs {need} GPUs; the cluster has {gpus_allowed} usable"
            )));
        }
        if job.ps.min > 0
            && !self
                .cluster
                .servers
                .iter()
                .any(|s| s.cpu_cores >= d.cpu_per_ps && s.memory_gib >= d.mem_per_ps_gib)
        {
            return Err(too_large(format!(
                "no server has {} cores and {} GiB for one parameter server",
                d.cpu_per_ps, d.mem_per_ps_gib
            )));
        }
        // Its smallest allocation as a whole (workers and PS together) against the cluster's
        // cores and memory: each task may fit a server alone and the job still never run.
        let (w, p) = (f64::from(job.workers.min), f64::from(job.ps.min));
        let cores: f64 = self.cluster.servers.iter().map(|s| s.cpu_cores).sum();
        let mem: f64 = self.cluster.servers.iter().map(|s| s.memory_gib).sum();
        let (need_cores, need_mem) = (
            w * d.cpu_per_worker + p * d.cpu_per_ps,
            w * d.mem_per_worker_gib + p * d.mem_per_ps_gib,
        );
        if need_cores > cores + 1e-9 || need_mem > mem + 1e-9 {
            return Err(too_large(format!(
                "its smallest allocation ({} workers, {} PS) needs {need_cores} cores and \
                 {need_mem} GiB; the cluster has {cores} and {mem}",
                job.workers.min, job.ps.min
            )));
        }
        Ok(())
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
