//! What makes a schedule unable to run: a leaf module (it names jobs by id and servers and GPUs
//! by index, nothing else of the crate), so that the error type can carry every violation
//! typed. [`crate::Schedule::validate`] finds them.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::id::{GpuType, JobId, ServerIdx};

/// One reason a schedule cannot run. `validate` returns all of them, not just the first.
///
/// ```
/// use coda::{ClusterSnapshot, Schedule};
/// use coda::model::Violation;
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let mut schedule = coda::workload::current_schedule(&snapshot);
/// // The same job assigned twice is one violation among however many there are.
/// if let Some(a) = schedule.assignments.first().cloned() {
///     schedule.assignments.push(a);
///     let v = schedule.validate(&snapshot);
///     assert!(v.iter().any(|v| matches!(v, Violation::DuplicateJob { .. })));
/// }
/// # Ok::<(), coda::Error>(())
/// ```
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
        server: ServerIdx,
    },
    /// A worker names a GPU index the server does not have.
    UnknownGpu {
        /// The job.
        job: JobId,
        /// The server.
        server: ServerIdx,
        /// The GPU index.
        gpu: u32,
    },
    /// One GPU is given to two tasks (of the same or different jobs).
    GpuDoubleBooked {
        /// The server.
        server: ServerIdx,
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
        server: ServerIdx,
        /// The server's GPU type.
        gpu_type: GpuType,
    },
    /// A job's workers sit on servers of different GPU types (data-parallel training would run at
    /// the slowest type's pace; coda keeps each job on one type).
    MixedGpuTypes {
        /// The job.
        job: JobId,
        /// The GPU types used, sorted.
        gpu_types: Vec<GpuType>,
    },
    /// An assignment names a CPU/memory tier its job does not offer.
    UnknownTier {
        /// The job.
        job: JobId,
        /// The tier named.
        tier: u8,
        /// Tiers the job offers besides its demand (tier 0).
        offered: usize,
    },
    /// Tasks on a server ask for more CPU cores than it has.
    CpuOverCapacity {
        /// The server.
        server: ServerIdx,
        /// Cores asked for.
        used: f64,
        /// Cores available.
        capacity: f64,
    },
    /// Tasks on a server ask for more memory than it has.
    MemoryOverCapacity {
        /// The server.
        server: ServerIdx,
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
            UnknownTier { job, tier, offered } => write!(
                f,
                "job {job}: CPU/memory tier {tier} does not exist (tier 0 is the demand; the job offers {offered} more)"
            ),
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
