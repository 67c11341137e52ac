//! Training jobs: what they are, what each task needs, how far they may be scaled.

use serde::{Deserialize, Serialize};

use super::schedule::Assignment;
use crate::error::{Error, Expected, Result};
pub use crate::id::{GpuType, JobId, JobPos, ServerIdx};

/// How a job synchronises its workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Architecture {
    /// Workers push gradients to and pull parameters from parameter-server (PS) tasks.
    ParameterServer,
    /// Workers exchange gradients by ring all-reduce; there are no PS tasks.
    AllReduce,
}

/// An inclusive range of task counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRange {
    /// Smallest count the job can run with.
    pub min: u32,
    /// Largest count the job can use.
    pub max: u32,
}

impl TaskRange {
    /// `[min, max]`.
    pub const fn new(min: u32, max: u32) -> Self {
        TaskRange { min, max }
    }

    /// Whether `n` is in the range.
    pub fn contains(&self, n: u32) -> bool {
        self.min <= n && n <= self.max
    }
}

/// What one task of a job needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDemand {
    /// GPUs per worker (all on one server).
    pub gpus_per_worker: u32,
    /// CPU cores per worker.
    pub cpu_per_worker: f64,
    /// Memory per worker, GiB.
    pub mem_per_worker_gib: f64,
    /// CPU cores per parameter server.
    pub cpu_per_ps: f64,
    /// Memory per parameter server, GiB.
    pub mem_per_ps_gib: f64,
}

impl TaskDemand {
    /// Cores and GiB that `workers` workers and `ps` parameter servers ask for.
    pub fn cores_mem(&self, workers: f64, ps: f64) -> (f64, f64) {
        (
            workers * self.cpu_per_worker + ps * self.cpu_per_ps,
            workers * self.mem_per_worker_gib + ps * self.mem_per_ps_gib,
        )
    }
}

/// Cores and memory one worker may be given instead of its demand's (see
/// [`crate::perf::cpumem`]); its speed follows [`crate::PerfModel::cpu_mem_speed`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerTier {
    /// CPU cores per worker.
    pub cpu_per_worker: f64,
    /// Memory per worker, GiB.
    pub mem_per_worker_gib: f64,
}

/// The allocation a job was submitted with (what FIFO-style schedulers give it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Workers asked for.
    pub workers: u32,
    /// Parameter servers asked for (0 for all-reduce jobs).
    pub ps: u32,
}

/// One training job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "JobFields", into = "JobFields")]
pub struct Job {
    /// Unique id within a snapshot.
    pub id: JobId,
    /// Arrival time, seconds since the start of the trace.
    pub arrival_s: f64,
    /// Model name; must be known to the performance model (`coda perf --list`).
    pub model: String,
    /// PS or all-reduce.
    pub arch: Architecture,
    /// Total work, in the iteration unit of the performance model (see [`crate::perf`]).
    pub total_iterations: f64,
    /// Per-task demands.
    pub demand: TaskDemand,
    /// Other cores and memory per worker a scheduler may grant (an assignment's `tier` ≥ 1
    /// picks one); empty: the demand is fixed.
    pub tiers: Vec<WorkerTier>,
    /// Allowed number of workers.
    pub workers: TaskRange,
    /// Allowed number of parameter servers (`{min: 0, max: 0}` for all-reduce jobs).
    pub ps: TaskRange,
    /// GPU types the job may run on; empty = any.
    #[serde(default)]
    pub gpu_types: Vec<GpuType>,
    /// Per-GPU batch size for all-reduce models (the model's profiled default when absent).
    #[serde(default)]
    pub local_batch: Option<u32>,
    /// The allocation it was submitted with; `None` = the smallest allowed.
    pub requested: Option<Request>,
    /// Where the job stands now: work done, current placement. Everything else is what was
    /// submitted; a job not yet started has the default state.
    pub run: RunState,
}

/// What changes while a job runs: the work it has done, where it runs now, and its history so
/// far. A simulator starts every job from [`RunState::default`] (nothing done, nowhere, no
/// history) and writes this alone. A caller that does not track the history (a resource
/// manager's view, an instance file) leaves it at 0: a job that never restarted, held nothing
/// and never waited.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunState {
    /// Work already done.
    pub done_iterations: f64,
    /// Where the job runs now, if it is running.
    pub current: Option<Assignment>,
    /// Restarts so far: moves, resizes and resumptions after a preemption.
    pub restarts: u32,
    /// GPU-seconds held so far, restarts included (its attained service).
    pub attained_gpu_s: f64,
    /// Seconds spent arrived and without GPUs so far (the first queueing and every wait after a
    /// preemption).
    pub waited_s: f64,
}

impl Job {
    /// The submitted allocation `(workers, ps)`, or the smallest allowed when none was recorded.
    pub fn requested_or_min(&self) -> (u32, u32) {
        self.requested
            .map_or((self.workers.min, self.ps.min), |r| (r.workers, r.ps))
    }

    /// GPUs the submitted allocation asks for ([`Job::requested_or_min`]'s workers × GPUs per
    /// worker).
    pub fn requested_gpus(&self) -> u32 {
        self.requested_or_min().0 * self.demand.gpus_per_worker
    }

    /// Whether the job may use GPUs of this type.
    pub fn allows_gpu(&self, gpu_type: &str) -> bool {
        self.gpu_types.is_empty() || self.gpu_types.iter().any(|t| t == gpu_type)
    }

    /// Cores and memory per worker at `tier` (0: the demand), or `None` if the job has no such
    /// tier.
    pub fn worker_share(&self, tier: u8) -> Option<(f64, f64)> {
        match tier {
            0 => Some((self.demand.cpu_per_worker, self.demand.mem_per_worker_gib)),
            k => self
                .tiers
                .get(usize::from(k) - 1)
                .map(|t| (t.cpu_per_worker, t.mem_per_worker_gib)),
        }
    }

    /// Cores and memory a worker at `tier` holds: [`Job::worker_share`], or the demand for a
    /// tier the job lacks (which validation reports).
    pub fn worker_hold(&self, tier: u8) -> (f64, f64) {
        self.worker_share(tier)
            .unwrap_or((self.demand.cpu_per_worker, self.demand.mem_per_worker_gib))
    }

    /// The tier whose worker holds least ([`Job::worker_hold`]: fewest cores, then least
    /// memory), 0 (the demand) for a job without tiers: what a worker can be cut to in place.
    pub fn least_tier(&self) -> u8 {
        (0..=self.tiers.len().min(usize::from(u8::MAX)) as u8)
            .min_by(|&x, &y| {
                let (cx, mx) = self.worker_hold(x);
                let (cy, my) = self.worker_hold(y);
                cx.total_cmp(&cy).then(mx.total_cmp(&my))
            })
            .unwrap_or(0)
    }

    /// Cores and GiB that `workers` workers at `tier` ([`Job::worker_hold`]) and `ps`
    /// parameter servers hold.
    pub fn cores_mem_at(&self, tier: u8, workers: f64, ps: f64) -> (f64, f64) {
        let (c, m) = self.worker_hold(tier);
        let (pc, pm) = self.demand.cores_mem(0.0, ps);
        (workers * c + pc, workers * m + pm)
    }

    /// Work left.
    pub fn remaining_iterations(&self) -> f64 {
        (self.total_iterations - self.run.done_iterations).max(0.0)
    }

    /// Checks every field for values no job can have: [`Error::InvalidJob`] naming the field,
    /// its value and what it must be.
    pub fn check(&self) -> Result<()> {
        let bad = |field: &str, value: String, expected: Expected| {
            Err(Error::InvalidJob {
                job: self.id,
                field: field.to_string(),
                value,
                expected,
            })
        };
        if !self.arrival_s.is_finite() || self.arrival_s < 0.0 {
            return bad(
                "arrival_s",
                self.arrival_s.to_string(),
                Expected::NonNegative,
            );
        }
        if !self.total_iterations.is_finite() || self.total_iterations <= 0.0 {
            return bad(
                "total_iterations",
                self.total_iterations.to_string(),
                Expected::Positive,
            );
        }
        if !self.run.done_iterations.is_finite() || self.run.done_iterations < 0.0 {
            return bad(
                "done_iterations",
                self.run.done_iterations.to_string(),
                Expected::NonNegative,
            );
        }
        for (field, v) in [
            ("attained_gpu_s", self.run.attained_gpu_s),
            ("waited_s", self.run.waited_s),
        ] {
            if !v.is_finite() || v < 0.0 {
                return bad(field, v.to_string(), Expected::NonNegative);
            }
        }
        if self.run.done_iterations >= self.total_iterations {
            return bad(
                "done_iterations",
                self.run.done_iterations.to_string(),
                "must be below total_iterations (a finished job is not part of a snapshot)".into(),
            );
        }
        if self.model.trim().is_empty() {
            return bad("model", self.model.clone(), "must not be empty".into());
        }
        let d = &self.demand;
        if d.gpus_per_worker == 0 {
            return bad(
                "demand.gpus_per_worker",
                "0".into(),
                "every worker needs at least one GPU".into(),
            );
        }
        for (field, v) in [
            ("demand.cpu_per_worker", d.cpu_per_worker),
            ("demand.mem_per_worker_gib", d.mem_per_worker_gib),
            ("demand.cpu_per_ps", d.cpu_per_ps),
            ("demand.mem_per_ps_gib", d.mem_per_ps_gib),
        ] {
            if !v.is_finite() || v < 0.0 {
                return bad(field, v.to_string(), Expected::NonNegative);
            }
        }
        if self.tiers.len() > usize::from(u8::MAX) {
            return bad(
                "tiers",
                self.tiers.len().to_string(),
                "at most 255 tiers".into(),
            );
        }
        for (k, t) in self.tiers.iter().enumerate() {
            for (field, v) in [
                ("cpu_per_worker", t.cpu_per_worker),
                ("mem_per_worker_gib", t.mem_per_worker_gib),
            ] {
                if !v.is_finite() || v < 0.0 {
                    return bad(
                        &format!("tiers[{k}].{field}"),
                        v.to_string(),
                        Expected::NonNegative,
                    );
                }
            }
        }
        if self.workers.min == 0 || self.workers.min > self.workers.max {
            return bad(
                "workers",
                format!("{}..={}", self.workers.min, self.workers.max),
                "need 1 <= min <= max".into(),
            );
        }
        if self.ps.min > self.ps.max {
            return bad(
                "ps",
                format!("{}..={}", self.ps.min, self.ps.max),
                "need min <= max".into(),
            );
        }
        if let Some(r) = self.requested
            && (!self.workers.contains(r.workers) || !self.ps.contains(r.ps))
        {
            return bad(
                "requested",
                format!("{} workers, {} ps", r.workers, r.ps),
                "must lie within the workers and ps ranges".into(),
            );
        }
        match self.arch {
            Architecture::AllReduce if self.ps.max != 0 => bad(
                "ps",
                format!("{}..={}", self.ps.min, self.ps.max),
                "all-reduce jobs have no PS".into(),
            ),
            Architecture::ParameterServer if self.ps.min == 0 => bad(
                "ps.min",
                "0".into(),
                "a PS job needs at least one parameter server".into(),
            ),
            _ => Ok(()),
        }
    }
}

/// The serialized form of [`Job`], its run state inline (the instance format); checked field by
/// field when read, so that a bad value in a JSON instance is reported with its line, column and
/// path.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobFields {
    id: JobId,
    arrival_s: f64,
    model: String,
    arch: Architecture,
    total_iterations: f64,
    #[serde(default)]
    done_iterations: f64,
    demand: TaskDemand,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tiers: Vec<WorkerTier>,
    workers: TaskRange,
    ps: TaskRange,
    #[serde(default)]
    gpu_types: Vec<GpuType>,
    #[serde(default)]
    local_batch: Option<u32>,
    #[serde(default)]
    current: Option<Assignment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requested: Option<Request>,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    restarts: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    attained_gpu_s: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    waited_s: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

impl From<Job> for JobFields {
    fn from(j: Job) -> Self {
        JobFields {
            id: j.id,
            arrival_s: j.arrival_s,
            model: j.model,
            arch: j.arch,
            total_iterations: j.total_iterations,
            done_iterations: j.run.done_iterations,
            demand: j.demand,
            tiers: j.tiers,
            workers: j.workers,
            ps: j.ps,
            gpu_types: j.gpu_types,
            local_batch: j.local_batch,
            current: j.run.current,
            requested: j.requested,
            restarts: j.run.restarts,
            attained_gpu_s: j.run.attained_gpu_s,
            waited_s: j.run.waited_s,
        }
    }
}

impl TryFrom<JobFields> for Job {
    type Error = String;
    fn try_from(f: JobFields) -> Result<Self, String> {
        let job = Job {
            id: f.id,
            arrival_s: f.arrival_s,
            model: f.model,
            arch: f.arch,
            total_iterations: f.total_iterations,
            demand: f.demand,
            tiers: f.tiers,
            workers: f.workers,
            ps: f.ps,
            gpu_types: f.gpu_types,
            local_batch: f.local_batch,
            requested: f.requested,
            run: RunState {
                done_iterations: f.done_iterations,
                current: f.current,
                restarts: f.restarts,
                attained_gpu_s: f.attained_gpu_s,
                waited_s: f.waited_s,
            },
        };
        job.check().map_err(|e| e.to_string())?;
        if job.local_batch == Some(0) {
            return Err(format!(
                "job {}: field `local_batch` = 0: must be >= 1",
                job.id
            ));
        }
        Ok(job)
    }
}
