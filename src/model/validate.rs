//! The checker that says whether a schedule can run: every [`Violation`], not just the first.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::schedule::Schedule;
use super::snapshot::ClusterSnapshot;
use crate::id::JobId;

/// One reason a schedule cannot run. `validate` returns all of them, not just the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Violation {
    /// The schedule names a job the snapshot does not have.
    UnknownJob {
        /// The job id.
        job: JobId,
    },
    /// A job appears in two assignments.
    DuplicateJob {
        /// The job id.
        job: JobId,
    },
    /// A task is placed on a server index outside the cluster.
    UnknownServer {
        /// The job.
        job: JobId,
        /// The server index.
        server: usize,
    },
    /// A worker names a GPU index the server does not have.
    UnknownGpu {
        /// The job.
        job: JobId,
        /// The server.
        server: usize,
        /// The GPU index.
        gpu: u32,
    },
    /// One GPU is given to two tasks (of the same or different jobs).
    GpuDoubleBooked {
        /// The server.
        server: usize,
        /// The GPU.
        gpu: u32,
        /// The job that holds it first.
        first_job: JobId,
        /// The job that is given it again.
        second_job: JobId,
    },
    /// A worker does not have exactly the job's GPUs-per-worker.
    WrongGpusPerWorker {
        /// The job.
        job: JobId,
        /// Worker index in the assignment.
        worker: usize,
        /// GPUs the job needs per worker.
        expected: u32,
        /// GPUs given.
        got: u32,
    },
    /// The number of workers is outside the job's range.
    WorkersOutOfRange {
        /// The job.
        job: JobId,
        /// Workers given.
        workers: u32,
        /// Allowed minimum.
        min: u32,
        /// Allowed maximum.
        max: u32,
    },
    /// The number of parameter servers is outside the job's range.
    PsOutOfRange {
        /// The job.
        job: JobId,
        /// PS given.
        ps: u32,
        /// Allowed minimum.
        min: u32,
        /// Allowed maximum.
        max: u32,
    },
    /// A task sits on a server whose GPU type the job cannot use.
    IncompatibleGpuType {
        /// The job.
        job: JobId,
        /// The server.
        server: usize,
        /// The server's GPU type.
        gpu_type: String,
    },
    /// A job's workers sit on servers of different GPU types (data-parallel training would run at
    /// the slowest type's pace; coda keeps each job on one type).
    MixedGpuTypes {
        /// The job.
        job: JobId,
        /// The GPU types used, sorted.
        gpu_types: Vec<String>,
    },
    /// Tasks on a server ask for more CPU cores than it has.
    CpuOverCapacity {
        /// The server.
        server: usize,
        /// Cores asked for.
        used: f64,
        /// Cores available.
        capacity: f64,
    },
    /// Tasks on a server ask for more memory than it has.
    MemoryOverCapacity {
        /// The server.
        server: usize,
        /// GiB asked for.
        used_gib: f64,
        /// GiB available.
        capacity_gib: f64,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Violation::*;
        match self {
            UnknownJob { job } => write!(f, "job {job}: not in the snapshot"),
            DuplicateJob { job } => write!(f, "job {job}: assigned twice"),
            UnknownServer { job, server } => write!(f, "job {job}: server {server} does not exist"),
            UnknownGpu { job, server, gpu } => {
                write!(f, "job {job}: server {server} has no GPU {gpu}")
            }
            GpuDoubleBooked {
                server,
                gpu,
                first_job,
                second_job,
            } => write!(
                f,
                "server {server} GPU {gpu}: given to job {first_job} and again to job {second_job}"
            ),
            WrongGpusPerWorker {
                job,
                worker,
                expected,
                got,
            } => {
                write!(
                    f,
                    "job {job} worker {worker}: {got} GPUs, the job needs {expected}"
                )
            }
            WorkersOutOfRange {
                job,
                workers,
                min,
                max,
            } => {
                write!(f, "job {job}: {workers} workers, allowed {min}..={max}")
            }
            PsOutOfRange { job, ps, min, max } => {
                write!(
                    f,
                    "job {job}: {ps} parameter servers, allowed {min}..={max}"
                )
            }
            IncompatibleGpuType {
                job,
                server,
                gpu_type,
            } => {
                write!(
                    f,
                    "job {job}: server {server} has {gpu_type} GPUs, which it cannot use"
                )
            }
            MixedGpuTypes { job, gpu_types } => {
                write!(f, "job {job}: workers on several GPU types {gpu_types:?}")
            }
            CpuOverCapacity {
                server,
                used,
                capacity,
            } => {
                write!(
                    f,
                    "server {server}: {used} CPU cores asked, {capacity} available"
                )
            }
            MemoryOverCapacity {
                server,
                used_gib,
                capacity_gib,
            } => {
                write!(
                    f,
                    "server {server}: {used_gib} GiB asked, {capacity_gib} GiB available"
                )
            }
        }
    }
}

/// Slack on CPU and memory sums, so that demands that add up to the capacity exactly in decimal
/// are not rejected for a rounding error in binary.
const CAPACITY_TOLERANCE: f64 = 1e-9;

impl Schedule {
    /// Every violation of the snapshot's constraints, in a deterministic order; empty = valid.
    pub fn validate(&self, snapshot: &ClusterSnapshot) -> Vec<Violation> {
        let cluster = &snapshot.cluster;
        let mut out = Vec::new();
        let mut seen: HashMap<JobId, ()> = HashMap::with_capacity(self.assignments.len());
        // GPU owner per server, allocated lazily: most servers of a large cluster are untouched
        // by most schedules' violations, but all are touched by a full schedule, so a flat table
        // indexed by server is the cheapest.
        let mut owner: Vec<Vec<Option<JobId>>> = cluster
            .servers
            .iter()
            .map(|s| vec![None; s.num_gpus() as usize])
            .collect();
        let mut cpu = vec![0.0f64; cluster.servers.len()];
        let mut mem = vec![0.0f64; cluster.servers.len()];

        for a in &self.assignments {
            let Some(job) = snapshot.job(a.job) else {
                out.push(Violation::UnknownJob { job: a.job });
                continue;
            };
            if seen.insert(a.job, ()).is_some() {
                out.push(Violation::DuplicateJob { job: a.job });
            }
            let nw = a.workers.len() as u32;
            if !job.workers.contains(nw) {
                out.push(Violation::WorkersOutOfRange {
                    job: job.id,
                    workers: nw,
                    min: job.workers.min,
                    max: job.workers.max,
                });
            }
            let np = a.ps.len() as u32;
            if !job.ps.contains(np) {
                out.push(Violation::PsOutOfRange {
                    job: job.id,
                    ps: np,
                    min: job.ps.min,
                    max: job.ps.max,
                });
            }
            let mut bad_type_servers: Vec<usize> = Vec::new();
            let mut types: Vec<&str> = Vec::new();
            for (wi, w) in a.workers.iter().enumerate() {
                let Some(server) = cluster.servers.get(w.server) else {
                    out.push(Violation::UnknownServer {
                        job: job.id,
                        server: w.server,
                    });
                    continue;
                };
                if w.gpus.len() as u32 != job.demand.gpus_per_worker {
                    out.push(Violation::WrongGpusPerWorker {
                        job: job.id,
                        worker: wi,
                        expected: job.demand.gpus_per_worker,
                        got: w.gpus.len() as u32,
                    });
                }
                if !types.contains(&server.gpu_type.as_str()) {
                    types.push(&server.gpu_type);
                }
                if !job.allows_gpu(&server.gpu_type) && !bad_type_servers.contains(&w.server) {
                    bad_type_servers.push(w.server);
                    out.push(Violation::IncompatibleGpuType {
                        job: job.id,
                        server: w.server,
                        gpu_type: server.gpu_type.clone(),
                    });
                }
                for &g in &w.gpus {
                    match owner[w.server].get_mut(g as usize) {
                        None => out.push(Violation::UnknownGpu {
                            job: job.id,
                            server: w.server,
                            gpu: g,
                        }),
                        Some(slot @ None) => *slot = Some(job.id),
                        Some(Some(first)) => out.push(Violation::GpuDoubleBooked {
                            server: w.server,
                            gpu: g,
                            first_job: *first,
                            second_job: job.id,
                        }),
                    }
                }
                cpu[w.server] += job.demand.cpu_per_worker;
                mem[w.server] += job.demand.mem_per_worker_gib;
            }
            if types.len() > 1 {
                let mut gpu_types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
                gpu_types.sort();
                out.push(Violation::MixedGpuTypes {
                    job: job.id,
                    gpu_types,
                });
            }
            for p in &a.ps {
                if p.server >= cluster.servers.len() {
                    out.push(Violation::UnknownServer {
                        job: job.id,
                        server: p.server,
                    });
                    continue;
                }
                cpu[p.server] += job.demand.cpu_per_ps;
                mem[p.server] += job.demand.mem_per_ps_gib;
            }
        }
        for (i, s) in cluster.servers.iter().enumerate() {
            if cpu[i] > s.cpu_cores + CAPACITY_TOLERANCE {
                out.push(Violation::CpuOverCapacity {
                    server: i,
                    used: cpu[i],
                    capacity: s.cpu_cores,
                });
            }
            if mem[i] > s.memory_gib + CAPACITY_TOLERANCE {
                out.push(Violation::MemoryOverCapacity {
                    server: i,
                    used_gib: mem[i],
                    capacity_gib: s.memory_gib,
                });
            }
        }
        out
    }
}
