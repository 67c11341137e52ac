//! The performance model: how fast a job trains for an allocation, a placement, and the
//! company it keeps on its servers.
//!
//! One trait, [`PerfModel`], and one calibrated implementation, [`CalibratedPerf`], read by the
//! validator, the objective, the schedulers and the simulator alike. A job's step splits into
//! computation, intra-server communication and inter-server communication; each contention
//! effect stretches the part it physically acts on, by a factor `>= 1`, so no co-runner ever
//! speeds a job up:
//!
//! | effect | acts on | source |
//! |---|---|---|
//! | workers and PS count (PS jobs) | whole step | Optimus form fitted to `dl2_ps_worker_speed.csv` |
//! | GPU count, servers spanned (all-reduce) | sync | Pollux form fitted to `pollux_sia_placement_step_times.csv`, `gavel_isolated_throughputs.csv` |
//! | PS on its workers' server | PS traffic | DL2 intra/inter-server bandwidth, `dl2_model_constants.json` |
//! | GPUs per server, servers spanned (all-reduce) | sync, inside each server and across | hierarchical Pollux form (see [`ArStepParams`]), bounded by the measured spread ÷ packed envelope of its profile |
//! | co-runners on the same server | compute | Gavel pair throughputs, compounded over one server's co-runners, × [`Estimates::colocation_coupling`] (saturating at `1 / (1 − κ)`); a job on several servers runs at the pace of its worst server |
//! | GPUs on different sockets of a PCIe server | intra sync | [`Estimates::cross_socket_comm_factor`] (none on NVLink servers) |
//! | other jobs under the same PCIe switch | all communication | [`Estimates::pcie_share_comm_penalty`] |
//! | distributed jobs sharing a NIC | inter-server traffic | fair share while phases overlap: each sharer's own communication share (from this model), [`Estimates::nic_phase_alignment`], [`Estimates::nic_bandwidth_fraction`] |
//! | global batch and training progress (`--goodput on`) | progress per sample | gradient noise ratio fitted to `pollux_statistical_efficiency.csv`, relative to the job's requested allocation ([`goodput`]) |
//!
//! Work is counted in per-task steps at the job's fixed per-task batch, so progress is
//! proportional to samples processed whatever the allocation: a PS job's iteration is one worker
//! step (DL2's `job_speed` sums steps/s over workers); an all-reduce job's iteration is one GPU's
//! share of a synchronous step, so a step on `k` GPUs does `k` iterations of work
//! ([`Speed::iterations_per_s`] = `k / step_time_s`).

pub mod calibrate;
mod calibrated;
mod context;
pub mod cpumem;
mod demand;
pub mod goodput;
mod nnls;
mod params;

use std::path::Path;
use std::sync::OnceLock;

pub use calibrated::CalibratedPerf;
pub(crate) use context::placement_efficiencies;
pub use context::{
    Occupancy, PlacementShape, ServerSize, packed, placement_shapes, probe_job, speed_alone,
    speeds, tier_speed,
};
pub use demand::{SYNERGY_PROXY, TaskDemandFit};
pub use params::{
    ArModelParams, ArStepParams, Estimates, FitQuality, GpuMemBandwidth, InterferenceParams,
    PerfParams, PsModelParams,
};

use crate::error::{Error, Result};
use crate::model::{Architecture, ClusterSnapshot, Job};

/// What the model needs to know about a job, independent of where it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobQuery<'a> {
    /// Model name.
    pub model: &'a str,
    /// Architecture the job was submitted with.
    pub arch: Architecture,
    /// GPUs per worker.
    pub gpus_per_worker: u32,
    /// Per-GPU batch (all-reduce); the model's default when `None`.
    pub local_batch: Option<f64>,
    /// Where the job is in its training, for a model that prices statistical efficiency
    /// ([`goodput`]); `None` prices throughput alone.
    pub goodput: Option<GoodputQuery>,
}

/// What statistical efficiency needs to know of a job (see [`goodput`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoodputQuery {
    /// Fraction of its work done (0 to 1).
    pub progress: f64,
    /// GPUs at which its work is counted: its requested allocation (else its fewest workers),
    /// where its efficiency factor is 1.
    pub reference_gpus: u32,
}

impl<'a> JobQuery<'a> {
    /// The query for a job.
    pub fn of(job: &'a Job) -> Self {
        JobQuery {
            model: &job.model,
            arch: job.arch,
            gpus_per_worker: job.demand.gpus_per_worker,
            local_batch: job.local_batch.map(f64::from),
            goodput: Some(GoodputQuery {
                progress: if job.total_iterations > 0.0 {
                    (job.run.done_iterations / job.total_iterations).clamp(0.0, 1.0)
                } else {
                    0.0
                },
                reference_gpus: job.requested.map_or(job.workers.min, |r| r.workers).max(1)
                    * job.demand.gpus_per_worker.max(1),
            }),
        }
    }
}

/// A predicted speed and where its time goes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Speed {
    /// Iterations per second in the model's unit (see the module docs).
    pub iterations_per_s: f64,
    /// Seconds per step (per worker step for PS jobs, per synchronous step for all-reduce).
    pub step_time_s: f64,
    /// Computation part of a step, seconds.
    pub compute_s: f64,
    /// Intra-server communication part, seconds.
    pub intra_comm_s: f64,
    /// Inter-server communication part, seconds.
    pub inter_comm_s: f64,
}

impl Speed {
    /// The same step run `f` times as fast (a CPU/memory grant other than the demand stretches or
    /// shortens the whole step: Synergy measured throughput, not where the time goes).
    pub fn scaled(self, f: f64) -> Speed {
        if f == 1.0 || f.is_nan() || f <= 0.0 {
            return self;
        }
        Speed {
            iterations_per_s: self.iterations_per_s * f,
            step_time_s: self.step_time_s / f,
            compute_s: self.compute_s / f,
            intra_comm_s: self.intra_comm_s / f,
            inter_comm_s: self.inter_comm_s / f,
        }
    }
}

/// A performance model: the speed of a job for a placement shape on one GPU type.
///
/// ```
/// use coda::PerfModel;
/// use coda::model::Architecture;
/// use coda::perf::{JobQuery, PlacementShape};
/// let perf = coda::CalibratedPerf::shipped();
/// let q = JobQuery { model: "yolov3", arch: Architecture::AllReduce, gpus_per_worker: 1, local_batch: None, goodput: None };
/// let one_server = perf.speed(&q, "v100", &PlacementShape::isolated(8, 0, vec![8]))?;
/// assert!(one_server.step_time_s > 0.0);
/// # Ok::<(), coda::Error>(())
/// ```
pub trait PerfModel: Send + Sync {
    /// The architecture a model name is calibrated for, or `None` if unknown.
    fn architecture(&self, model: &str) -> Option<Architecture>;

    /// Every known model, sorted by name.
    fn models(&self) -> Vec<(String, Architecture)>;

    /// [`PerfModel::architecture`], or [`Error::UnknownModel`] naming `context` and every known
    /// model.
    fn known_architecture(&self, model: &str, context: &str) -> Result<Architecture> {
        self.architecture(model).ok_or_else(|| Error::UnknownModel {
            context: context.to_string(),
            model: model.to_string(),
            known: self
                .models()
                .into_iter()
                .map(|(m, _)| m)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// Largest `(workers, ps)` the model prices for a model name (measured range), if known.
    /// For all-reduce models the first number counts GPUs (see [`PerfModel::task_limits`]).
    fn max_tasks(&self, model: &str) -> Option<(u32, u32)>;

    /// Largest `(workers, ps)` the model prices for `job`, in the job's own task units: an
    /// all-reduce job of `g` GPUs per worker gets `max GPUs / g` workers. `None` when the model
    /// states no limit. Every allocation a scheduler offers must stay within it.
    fn task_limits(&self, job: &Job) -> Option<(u32, u32)> {
        let (w, p) = self.max_tasks(&job.model)?;
        Some(match job.arch {
            Architecture::AllReduce => (w / job.demand.gpus_per_worker.max(1), 0),
            Architecture::ParameterServer => (w, p),
        })
    }

    /// Factor (>= 1) on the compute time of a `victim` model from one co-runner of model `other`
    /// on the same server with GPUs of type `gpu_type`.
    fn colocation_slowdown(&self, victim: &str, other: &str, gpu_type: &str) -> f64;

    /// Factor (>= 1) on the compute time of a `victim` model from `n` co-runners of model
    /// `other` on its server: what the model compounds when a server holds many. The default
    /// adds the pair's excess `n` times (a model that states no saturation).
    fn colocation_slowdown_among(&self, victim: &str, other: &str, gpu_type: &str, n: u32) -> f64 {
        1.0 + f64::from(n) * (self.colocation_slowdown(victim, other, gpu_type) - 1.0)
    }

    /// Speed of `job` running with `shape` on GPUs of type `gpu_type`.
    fn speed(&self, job: &JobQuery<'_>, gpu_type: &str, shape: &PlacementShape) -> Result<Speed>;

    /// Whether a job's speed depends on how far its training is ([`JobQuery::goodput`]): then
    /// a simulator prices its running jobs again every round, not only when their company
    /// changes.
    fn progress_dependent(&self) -> bool {
        false
    }

    /// The largest factor the rest of `job`'s training can put on its throughput on `gpus`
    /// GPUs (statistical efficiency, see [`goodput`]; 1 where speeds are throughputs alone):
    /// what a lower bound on its remaining time must assume.
    fn goodput_ceiling(&self, _job: &JobQuery<'_>, _gpus: u32) -> f64 {
        1.0
    }

    /// What one task of `model` reserves on its server, when measured (see
    /// [`TaskDemandFit`]); `None` leaves the caller's default.
    fn task_demand(&self, _model: &str) -> Option<TaskDemandFit> {
        None
    }

    /// Throughput of a GPU of `model` given `cores` cores and `mem_gib` GiB, relative to the
    /// same GPU given `base` (cores, GiB): 1 where the model states no sensitivity (see
    /// [`cpumem`]). A job runs at its measured or traced speed at its default demand; this
    /// factor scales it for any other grant.
    fn cpu_mem_speed(&self, _model: &str, _base: (f64, f64), _given: (f64, f64)) -> f64 {
        1.0
    }

    /// How often a sharer that spends `comm_share` of its step in inter-server communication
    /// competes with another job's transfers on a shared NIC (`q` in
    /// [`Estimates::nic_phase_alignment`]); `comm_share` itself when phases are independent.
    fn nic_competition(&self, comm_share: f64) -> f64 {
        comm_share.clamp(0.0, 1.0)
    }

    /// The measured range `(min, max)` of spread ÷ packed step times a spread placement of
    /// `model` on `gpu_type` is priced within (see [`ArStepParams`]); `None` when the model
    /// states none (PS models: their placement is priced from DL2's bandwidths).
    fn spread_envelope(&self, _model: &str, _gpu_type: &str) -> Option<(f64, f64)> {
        None
    }

    /// Whether no neighbour can ever change a job's speed (every contention effect off), so a
    /// job runs at its speed alone in its placement whatever else runs: what a replay that
    /// measures contention can skip. Default: `false` (assume it can).
    fn contention_free(&self) -> bool {
        false
    }

    /// Whether every model can be priced on GPUs of `gpu_type` (default: any type).
    fn knows_gpu(&self, _gpu_type: &str) -> bool {
        true
    }

    /// The GPU types [`PerfModel::knows_gpu`] accepts, for error messages (empty: any).
    fn gpu_types(&self) -> Vec<String> {
        Vec::new()
    }

    /// Checks that a whole snapshot can be priced: every server's GPU type and every type a
    /// job allows is known, and every job's model (see [`PerfModel::check_job`]). Errors name
    /// the field (`cluster.servers[3].gpu_type`), with `origin` as the file.
    fn check_snapshot(&self, snapshot: &ClusterSnapshot, origin: &str) -> Result<()> {
        let unknown = |field: String, g: &str| {
            Error::invalid(
                origin,
                0,
                &field,
                g,
                format!(
                    "unknown GPU type (known: {}; names are case-sensitive)",
                    self.gpu_types().join(", ")
                ),
            )
        };
        for (i, s) in snapshot.cluster.servers.iter().enumerate() {
            if !self.knows_gpu(&s.gpu_type) {
                return Err(unknown(
                    format!("cluster.servers[{i}].gpu_type"),
                    &s.gpu_type,
                ));
            }
        }
        for (k, j) in snapshot.jobs.iter().enumerate() {
            if let Some((t, g)) = j
                .gpu_types
                .iter()
                .enumerate()
                .find(|(_, g)| !self.knows_gpu(g))
            {
                return Err(unknown(format!("jobs[{k}].gpu_types[{t}]"), g));
            }
            self.check_job(j, origin)?;
        }
        Ok(())
    }

    /// Checks that a job can be priced at all (known model, matching architecture).
    fn check_job(&self, job: &Job, context: &str) -> Result<()> {
        match self.known_architecture(&job.model, &format!("{context}: job {}", job.id))? {
            a if a != job.arch => Err(Error::UnsupportedConfiguration {
                model: job.model.clone(),
                reason: format!(
                    "{context}: job {} is {:?} but the model is calibrated as {a:?}",
                    job.id, job.arch
                ),
            }),
            _ => {
                // Its smallest and its requested allocation must be within what the model
                // prices: a job no allocation of which can be priced can never run.
                let Some((w_max, p_max)) = self.task_limits(job) else {
                    return Ok(());
                };
                let (min, asked) = (
                    (job.workers.min, job.ps.min),
                    job.requested.map(|r| (r.workers, r.ps)),
                );
                for (what, (w, p)) in [("smallest", Some(min)), ("requested", asked)]
                    .into_iter()
                    .filter_map(|(what, a)| a.map(|a| (what, a)))
                {
                    if w > w_max || (p > p_max && p > 0) {
                        let g = u64::from(job.demand.gpus_per_worker);
                        let (size, most, unit) = match job.arch {
                            Architecture::AllReduce => {
                                (u64::from(w) * g, u64::from(w_max) * g, "GPUs")
                            }
                            Architecture::ParameterServer => {
                                (u64::from(w), u64::from(w_max), "workers")
                            }
                        };
                        return Err(Error::UnsupportedConfiguration {
                            model: job.model.clone(),
                            reason: format!(
                                "{context}: job {}: its {what} allocation ({size} {unit}, {p} PS) \
                                 is beyond the measured range ({most} {unit}, {p_max} PS)",
                                job.id
                            ),
                        });
                    }
                }
                Ok(())
            }
        }
    }
}
