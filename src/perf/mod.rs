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
//!
//! Work is counted in per-task steps at the job's fixed per-task batch, so progress is
//! proportional to samples processed whatever the allocation: a PS job's iteration is one worker
//! step (DL2's `job_speed` sums steps/s over workers); an all-reduce job's iteration is one GPU's
//! share of a synchronous step, so a step on `k` GPUs does `k` iterations of work
//! ([`Speed::iterations_per_s`] = `k / step_time_s`).

pub mod calibrate;
mod context;
pub mod cpumem;
mod demand;
mod nnls;
mod params;

use std::path::Path;
use std::sync::OnceLock;

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
}

impl<'a> JobQuery<'a> {
    /// The query for a job.
    pub fn of(job: &'a Job) -> Self {
        JobQuery {
            model: &job.model,
            arch: job.arch,
            gpus_per_worker: job.demand.gpus_per_worker,
            local_batch: job.local_batch.map(f64::from),
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
/// let q = JobQuery { model: "yolov3", arch: Architecture::AllReduce, gpus_per_worker: 1, local_batch: None };
/// let one_server = perf.speed(&q, "v100", &PlacementShape::isolated(8, 0, vec![8]))?;
/// assert!(one_server.step_time_s > 0.0);
/// # Ok::<(), coda::Error>(())
/// ```
pub trait PerfModel: Send + Sync {
    /// The architecture a model name is calibrated for, or `None` if unknown.
    fn architecture(&self, model: &str) -> Option<Architecture>;

    /// Every known model, sorted by name.
    fn models(&self) -> Vec<(String, Architecture)>;

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

    /// Speed of `job` running with `shape` on GPUs of type `gpu_type`.
    fn speed(&self, job: &JobQuery<'_>, gpu_type: &str, shape: &PlacementShape) -> Result<Speed>;

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
        match self.architecture(&job.model) {
            None => Err(Error::UnknownModel {
                context: format!("{context}: job {}", job.id),
                model: job.model.clone(),
                known: self
                    .models()
                    .into_iter()
                    .map(|(m, _)| m)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            Some(a) if a != job.arch => Err(Error::UnsupportedConfiguration {
                model: job.model.clone(),
                reason: format!(
                    "{context}: job {} is {:?} but the model is calibrated as {a:?}",
                    job.id, job.arch
                ),
            }),
            Some(_) => {
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

/// The performance model calibrated on `datasets/` (`coda calibrate`, [`crate::perf::calibrate`]).
///
/// ```
/// // The shipped model, fitted on datasets/ (`coda calibrate` rebuilds it byte for byte).
/// let perf = coda::CalibratedPerf::shipped();
/// let again = coda::CalibratedPerf::from_file(std::path::Path::new("models/perf_params.json"))?;
/// assert_eq!(perf.params(), again.params());
/// # Ok::<(), coda::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CalibratedPerf {
    params: PerfParams,
}

/// The parameter file shipped in `models/`, rebuilt by `coda calibrate`.
const SHIPPED_PARAMS: &str = include_str!("../../models/perf_params.json");

impl CalibratedPerf {
    /// Wraps parameters, checking the estimates are in their documented ranges.
    pub fn new(params: PerfParams) -> Result<Self> {
        let e = &params.estimates;
        let bad = |name: &str, v: f64, range: &str| Error::InvalidField {
            file: "perf params".into(),
            line: 0,
            field: if name.contains('.') {
                name.to_string()
            } else {
                format!("estimates.{name}")
            },
            value: v.to_string(),
            expected: format!("must be in {range}").into(),
        };
        if !(0.0..1.0).contains(&e.colocation_coupling) {
            return Err(bad("colocation_coupling", e.colocation_coupling, "[0, 1)"));
        }
        if !(e.cross_socket_comm_factor >= 1.0 && e.cross_socket_comm_factor.is_finite()) {
            return Err(bad(
                "cross_socket_comm_factor",
                e.cross_socket_comm_factor,
                "[1, inf)",
            ));
        }
        if !(e.pcie_share_comm_penalty >= 0.0 && e.pcie_share_comm_penalty.is_finite()) {
            return Err(bad(
                "pcie_share_comm_penalty",
                e.pcie_share_comm_penalty,
                "[0, inf)",
            ));
        }
        if !(0.0..=1.0).contains(&e.nic_phase_alignment) {
            return Err(bad("nic_phase_alignment", e.nic_phase_alignment, "[0, 1]"));
        }
        if !(e.cpu_mem_transfer.is_finite() && e.cpu_mem_transfer >= 0.0) {
            return Err(bad("cpu_mem_transfer", e.cpu_mem_transfer, "[0, inf)"));
        }
        if !(0.0..=1.0).contains(&e.nic_bandwidth_fraction) {
            return Err(bad(
                "nic_bandwidth_fraction",
                e.nic_bandwidth_fraction,
                "[0, 1]",
            ));
        }
        params
            .check()
            .map_err(|(field, v, range)| bad(&field, v, range))?;
        Ok(CalibratedPerf { params })
    }

    /// The model calibrated on the shipped data (parsed once per process).
    pub fn shipped() -> &'static CalibratedPerf {
        static SHIPPED: OnceLock<CalibratedPerf> = OnceLock::new();
        SHIPPED.get_or_init(|| {
            let params: PerfParams = serde_json::from_str(SHIPPED_PARAMS).expect(
                "models/perf_params.json is generated by `coda calibrate` and checked by tests",
            );
            CalibratedPerf::new(params).expect("shipped estimates are in range")
        })
    }

    /// Loads a parameter file written by `coda calibrate`.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let origin = path.display().to_string();
        let params = crate::util::json::parse_json(&text, &origin)?;
        Self::new(params).map_err(|e| match e {
            // Checks run on the parsed value: name the file and point at the field's line.
            Error::InvalidField {
                field,
                value,
                expected,
                ..
            } => crate::util::json::with_line(
                Error::invalid(&origin, 0, &field, value, expected),
                &text,
            ),
            other => other,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &PerfParams {
        &self.params
    }

    fn ar_step(&self, m: &ArModelParams, model: &str, gpu_type: &str) -> Result<ArStepParams> {
        if let Some(p) = m.per_gpu.get(gpu_type) {
            return Ok(*p);
        }
        let tf = self.params.estimates.gpu_mem_bandwidth.get(gpu_type).ok_or_else(|| {
            Error::UnsupportedConfiguration {
                model: model.into(),
                reason: format!(
                    "GPU type `{gpu_type}` is neither measured for it nor in the memory-bandwidth estimate table"
                ),
            }
        })?;
        Ok(calibrate::scale_compute(
            &m.unmeasured_gpu,
            tf,
            self.params.compute_bandwidth_exponent,
        ))
    }

    /// Normalised throughput (0, 1] of a job with proxy `victim` sharing a GPU with `other`.
    fn pair_throughput(&self, gpu_type: &str, victim: Option<&str>, other: Option<&str>) -> f64 {
        let i = &self.params.interference;
        let gpu = if i.pairs.contains_key(gpu_type) {
            gpu_type
        } else {
            i.fallback_gpu.as_str()
        };
        let measured = match (victim, other) {
            (Some(v), Some(o)) => i
                .pairs
                .get(gpu)
                .and_then(|t| t.get(v))
                .and_then(|r| r.get(o))
                .copied(),
            _ => None,
        };
        measured
            .or_else(|| victim.and_then(|v| i.row_median.get(gpu)?.get(v).copied()))
            .or_else(|| other.and_then(|o| i.col_median.get(gpu)?.get(o).copied()))
            .or_else(|| i.all_median.get(gpu).copied())
            .unwrap_or(1.0)
    }

    fn proxy(&self, model: &str) -> Option<&str> {
        if let Some(p) = self.params.ps_models.get(model) {
            return p.interference_proxy.as_deref();
        }
        self.params
            .ar_models
            .get(model)
            .and_then(|m| m.interference_proxy.as_deref())
    }

    /// Factor `>= 1` on compute time from the co-runners on the job's servers. On one server the
    /// co-runners' measured pair throughputs compound (`Π s_o`, as if all of them shared the
    /// job's GPU — the most any set of co-runners can take), and the job feels the coupling
    /// share of that loss: `1 / (1 − κ·(1 − Π s_o))`. One co-runner gives exactly the pair
    /// slowdown ([`PerfModel::colocation_slowdown`]); many saturate at `1 / (1 − κ)`, since a
    /// server's host side can take at most the share `κ` of a job's pace — compounding the
    /// slowdowns themselves priced a 1-GPU job next to seven others at up to 2.4 × (median pair:
    /// 1.8 ×). The worst server sets the pace of a synchronous job (its other servers wait for
    /// it), so servers do not multiply.
    fn colocation_factor(&self, model: &str, gpu_type: &str, co_runners: &[Vec<String>]) -> f64 {
        let kappa = self.params.estimates.colocation_coupling;
        let victim = self.proxy(model);
        co_runners
            .iter()
            .filter(|on_server| !on_server.is_empty())
            .map(|on_server| {
                let shared: f64 = on_server
                    .iter()
                    .map(|o| {
                        self.pair_throughput(gpu_type, victim, self.proxy(o))
                            .clamp(1e-3, 1.0)
                    })
                    .product();
                1.0 / (1.0 - kappa * (1.0 - shared))
            })
            .fold(1.0, f64::max)
    }
}

impl PerfModel for CalibratedPerf {
    /// PS models price any GPU type; an all-reduce model needs its own fit for the type or the
    /// type's memory bandwidth (to extrapolate), so a type is known when every all-reduce model
    /// has one of them.
    fn knows_gpu(&self, gpu_type: &str) -> bool {
        self.params
            .estimates
            .gpu_mem_bandwidth
            .get(gpu_type)
            .is_some()
            || self
                .params
                .ar_models
                .values()
                .all(|m| m.per_gpu.contains_key(gpu_type))
    }

    fn gpu_types(&self) -> Vec<String> {
        let mut all: Vec<String> = GpuMemBandwidth::NAMES
            .iter()
            .map(|s| s.to_string())
            .collect();
        for m in self.params.ar_models.values() {
            all.extend(m.per_gpu.keys().cloned());
        }
        all.sort();
        all.dedup();
        all.retain(|g| self.knows_gpu(g));
        all
    }

    fn architecture(&self, model: &str) -> Option<Architecture> {
        if self.params.ps_models.contains_key(model) {
            Some(Architecture::ParameterServer)
        } else if self.params.ar_models.contains_key(model) {
            Some(Architecture::AllReduce)
        } else {
            None
        }
    }

    fn models(&self) -> Vec<(String, Architecture)> {
        let mut v: Vec<(String, Architecture)> = self
            .params
            .ps_models
            .keys()
            .map(|k| (k.clone(), Architecture::ParameterServer))
            .chain(
                self.params
                    .ar_models
                    .keys()
                    .map(|k| (k.clone(), Architecture::AllReduce)),
            )
            .collect();
        v.sort();
        v
    }

    fn colocation_slowdown(&self, victim: &str, other: &str, gpu_type: &str) -> f64 {
        let kappa = self.params.estimates.colocation_coupling;
        let s = self.pair_throughput(gpu_type, self.proxy(victim), self.proxy(other));
        1.0 / (1.0 - kappa * (1.0 - s.clamp(1e-3, 1.0)))
    }

    fn task_demand(&self, model: &str) -> Option<TaskDemandFit> {
        self.params.task_demands.get(model).cloned()
    }

    fn cpu_mem_speed(&self, model: &str, base: (f64, f64), given: (f64, f64)) -> f64 {
        let p = &self.params;
        p.cpu_mem_surface(model).map_or(1.0, |s| {
            s.relative_speed(p.estimates.cpu_mem_transfer, base, given)
        })
    }

    /// Co-location, PCIe sharing and NIC sharing are the only effects of neighbours; the
    /// cross-socket factor depends on the job's own placement.
    fn contention_free(&self) -> bool {
        let e = &self.params.estimates;
        e.colocation_coupling == 0.0
            && e.pcie_share_comm_penalty == 0.0
            && e.nic_bandwidth_fraction == 0.0
    }

    fn spread_envelope(&self, model: &str, gpu_type: &str) -> Option<(f64, f64)> {
        let m = self.params.ar_models.get(model)?;
        let p = self.ar_step(m, model, gpu_type).ok()?;
        Some((p.spread_min, p.spread_max))
    }

    fn nic_competition(&self, comm_share: f64) -> f64 {
        let d = comm_share.clamp(0.0, 1.0);
        let a = self.params.estimates.nic_phase_alignment;
        d + a * (1.0 - d)
    }

    fn max_tasks(&self, model: &str) -> Option<(u32, u32)> {
        if let Some(m) = self.params.ps_models.get(model) {
            return Some((m.max_workers, m.max_ps));
        }
        self.params
            .ar_models
            .get(model)
            .map(|m| (m.max_gpus_measured, 0))
    }

    fn speed(&self, job: &JobQuery<'_>, gpu_type: &str, shape: &PlacementShape) -> Result<Speed> {
        let est = &self.params.estimates;
        let unsupported = |reason: String| Error::UnsupportedConfiguration {
            model: job.model.into(),
            reason,
        };
        if shape.workers == 0 {
            return Err(unsupported("no workers".into()));
        }
        let pcie = 1.0 + est.pcie_share_comm_penalty * f64::from(shape.pcie_sharing_jobs);
        let nic = 1.0 + est.nic_bandwidth_fraction * shape.nic_competing_flows.max(0.0);
        let coloc = self.colocation_factor(job.model, gpu_type, &shape.co_runners);
        let (compute, intra, inter, per_worker) = match job.arch {
            Architecture::ParameterServer => {
                let m =
                    self.params.ps_models.get(job.model).ok_or_else(|| {
                        unsupported("not a calibrated parameter-server model".into())
                    })?;
                let (w, p) = (shape.workers, shape.ps);
                if p == 0 || w > m.max_workers || p > m.max_ps {
                    return Err(unsupported(format!(
                        "{w} workers / {p} PS outside the measured 1..={} workers, 1..={} PS",
                        m.max_workers, m.max_ps
                    )));
                }
                let x = calibrate::ps_features(m.batch, f64::from(w), f64::from(p));
                let t_summed: f64 = m.theta.iter().zip(x).map(|(a, b)| a * b).sum();
                // Per-worker step time; DL2 measured with PS away from workers, so the measured
                // time is split with DL2's own testbed ratio of communication to computation.
                let step = f64::from(w) * t_summed;
                let comm_alone = 2.0 * (m.model_size_mb / f64::from(p)) / m.inter_server_bw_mbps;
                let phi = comm_alone / (comm_alone + m.local_comp_time_s);
                let comm = phi * step;
                let f = shape.ps_colocated_fraction.clamp(0.0, 1.0);
                // A measured intra-server bandwidth below the inter-server one (dssm) is read as
                // "no faster", never as "locality hurts".
                let local_bw = m.intra_server_bw_mbps.max(m.inter_server_bw_mbps);
                let local = comm * f * (m.inter_server_bw_mbps / local_bw);
                let remote = comm * (1.0 - f);
                ((1.0 - phi) * step, local * pcie, remote * nic * pcie, true)
            }
            Architecture::AllReduce => {
                let m = self
                    .params
                    .ar_models
                    .get(job.model)
                    .ok_or_else(|| unsupported("not a calibrated all-reduce model".into()))?;
                if shape.ps != 0 {
                    return Err(unsupported(
                        "all-reduce jobs have no parameter servers".into(),
                    ));
                }
                let p = self.ar_step(m, job.model, gpu_type)?;
                let k = shape.workers * job.gpus_per_worker.max(1);
                if k > m.max_gpus_measured {
                    return Err(unsupported(format!(
                        "{k} GPUs is beyond the largest measured configuration ({} GPUs)",
                        m.max_gpus_measured
                    )));
                }
                let n = shape.servers().max(1);
                let largest = shape.gpus_per_server.iter().copied().max().unwrap_or(k);
                let batch = job.local_batch.unwrap_or(m.default_local_batch);
                let socket = |crosses: bool| {
                    if crosses {
                        est.cross_socket_comm_factor
                    } else {
                        1.0
                    }
                };
                let (c, i, o) = p.parts(batch, k, largest, n);
                let i = i * socket(shape.cross_socket_servers > 0);
                // A spread placement stays within the measured envelope of spread ÷ packed step
                // times, packed on the same servers and priced the same way (its own socket
                // term where packing must cross one).
                let (c, i, o) = if n > 1 {
                    let size = shape.server.unwrap_or(ServerSize {
                        gpus: k.max(largest),
                        socket_gpus: k.max(largest),
                    });
                    let (g, servers, crosses) = size.packed(k);
                    let (pc, pi, po) = p.parts(batch, k, g, servers);
                    p.within_envelope((c, i, o), pc + pi * socket(crosses) + po)
                } else {
                    (c, i, o)
                };
                (c, i * pcie, o * nic * pcie, false)
            }
        };
        let compute = compute * coloc;
        let step = compute + intra + inter;
        if !(step.is_finite() && step > 0.0) {
            return Err(unsupported(format!(
                "non-positive predicted step time {step}"
            )));
        }
        // Work is counted per GPU (PS: per worker) step at the job's fixed per-GPU batch, so
        // that progress is proportional to samples processed: a synchronous all-reduce step on
        // k GPUs does k GPU-steps of work, as a PS job's k workers do k worker steps.
        let ips = if per_worker {
            f64::from(shape.workers) / step
        } else {
            f64::from(shape.workers * job.gpus_per_worker.max(1)) / step
        };
        Ok(Speed {
            iterations_per_s: ips,
            step_time_s: step,
            compute_s: compute,
            intra_comm_s: intra,
            inter_comm_s: inter,
        })
    }
}
