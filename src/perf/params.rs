//! The calibrated parameter file (`models/perf_params.json`) and the named estimates.
//!
//! Everything here is either fitted by `coda calibrate` from a file in `datasets/` (the file is
//! named next to each value) or an [`Estimates`] field: a named parameter with no measurement
//! behind it, whose reasoning is written on the field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Parameter-server model, Optimus form (Peng et al., EuroSys'18), fitted to
/// `datasets/dl2_ps_worker_speed.csv`:
/// `job_speed(w, p) = 1 / (θ0·B/w + θ1 + θ2·w/p + θ3·w + θ4·p)` steps/s summed over workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PsModelParams {
    /// θ0…θ4, all ≥ 0.
    pub theta: [f64; 5],
    /// Total batch size `B` the rows were measured with.
    pub batch: f64,
    /// Largest worker count measured (queries beyond it are refused, not extrapolated).
    pub max_workers: u32,
    /// Largest PS count measured.
    pub max_ps: u32,
    /// DL2 testbed constants (`datasets/dl2_model_constants.json`) used to split a step into
    /// computation and communication and to price worker–PS locality.
    pub local_comp_time_s: f64,
    /// Model size, MB.
    pub model_size_mb: f64,
    /// Worker–PS bandwidth across servers, MB/s.
    pub inter_server_bw_mbps: f64,
    /// Worker–PS bandwidth inside a server, MB/s.
    pub intra_server_bw_mbps: f64,
    /// Gavel job type whose measured pair slowdowns stand for this model (see `interference`).
    pub interference_proxy: Option<String>,
}

/// All-reduce step-time parameters for one model on one GPU type, in Pollux's form (OSDI'21)
/// with the synchronisation charged where its traffic flows:
/// `step = compute_base + compute_per_sample·m + intra(g) + inter(N, K)` with `m` the per-GPU
/// batch, `K` the GPUs, `N` the servers and `g` the most GPUs the job has on one server:
/// `intra = local_base + local_per_gpu·(g−2)` for `g ≥ 2` (every server all-reduces among its
/// own GPUs; the fullest one sets the pace), `inter = net_base + net_per_gpu·(K−2)` for `N > 1`.
/// A job spread over servers pays both; on one server (`g = K`) only the first.
///
/// A spread placement's step time is further kept within the measured envelope
/// `[spread_min, spread_max]` of spread ÷ packed step times of the profile the fit comes from
/// (see [`super::PerfModel::speed`]): the fitted terms never price a spread the measurements
/// did not see.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ArStepParams {
    /// Seconds per step independent of batch.
    pub compute_base_s: f64,
    /// Seconds per sample of per-GPU batch.
    pub compute_per_sample_s: f64,
    /// Gradient synchronisation inside one server, seconds.
    pub local_base_s: f64,
    /// Added per GPU beyond two on that server.
    pub local_per_gpu_s: f64,
    /// Gradient synchronisation across servers, seconds.
    pub net_base_s: f64,
    /// Added per GPU of the job beyond two, across servers.
    pub net_per_gpu_s: f64,
    /// Lowest measured ratio of a spread placement's step time to the packed one (≤ 1; 1 where
    /// no spread was measured).
    #[serde(default = "one")]
    pub spread_min: f64,
    /// Highest measured ratio of a spread placement's step time to the packed one (≥ 1).
    #[serde(default = "one")]
    pub spread_max: f64,
}

fn one() -> f64 {
    1.0
}

impl ArStepParams {
    /// Parameters from the fitted coefficients in feature order, with no envelope yet.
    pub(crate) fn from_vec(v: &[f64]) -> Self {
        ArStepParams {
            compute_base_s: v[0],
            compute_per_sample_s: v[1],
            local_base_s: v[2],
            local_per_gpu_s: v[3],
            net_base_s: v[4],
            net_per_gpu_s: v[5],
            spread_min: 1.0,
            spread_max: 1.0,
        }
    }

    /// `(compute, intra-server sync, inter-server sync)` seconds for `k` GPUs on `n` servers,
    /// at most `largest` of them on one server.
    pub fn parts(&self, local_batch: f64, k: u32, largest: u32, n: u32) -> (f64, f64, f64) {
        let compute = self.compute_base_s + self.compute_per_sample_s * local_batch;
        let g = largest.min(k);
        let intra = if g >= 2 {
            self.local_base_s + self.local_per_gpu_s * f64::from(g - 2)
        } else {
            0.0
        };
        let inter = if n > 1 && k > 1 {
            self.net_base_s + self.net_per_gpu_s * f64::from(k.saturating_sub(2))
        } else {
            0.0
        };
        (compute, intra, inter)
    }

    /// `(compute, intra, inter)` of a spread placement kept within
    /// `[spread_min, spread_max] × packed_s` (the packed step time). The time the fitted terms
    /// miss is added to the intra-server part; time beyond the highest measured ratio is taken
    /// from the intra-server part first, then the inter-server one. Compute is never touched
    /// (`spread_max >= 1` and `compute <= packed_s` make the upper bound reachable), and a
    /// larger intra-server time in (the cross-socket term) never gives a smaller total once the
    /// contention factors that stretch the inter-server part are applied.
    pub fn within_envelope(&self, parts: (f64, f64, f64), packed_s: f64) -> (f64, f64, f64) {
        let (c, i, o) = parts;
        let (lo, hi) = (self.spread_min * packed_s, self.spread_max * packed_s);
        let t = c + i + o;
        // Bounded parts are written from the bound alone, not as a correction of `i`: every
        // placement held at a bound prices exactly alike.
        if t < lo {
            (c, lo - c - o, o)
        } else if t > hi {
            let room = (hi - c).max(0.0);
            if o <= room {
                (c, room - o, o)
            } else {
                (c, 0.0, room)
            }
        } else {
            (c, i, o)
        }
    }
}

/// An all-reduce model: per-GPU-type fits plus what is needed for GPU types never measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArModelParams {
    /// `pollux` (`datasets/pollux_sia_placement_step_times.csv`) or `gavel`
    /// (`datasets/gavel_isolated_throughputs.csv`).
    pub source: String,
    /// Per-GPU batch used when a job gives none (median of the measured rows).
    pub default_local_batch: f64,
    /// Largest GPU count measured on any GPU type.
    pub max_gpus_measured: u32,
    /// Fits per GPU type.
    pub per_gpu: BTreeMap<String, ArStepParams>,
    /// For unmeasured GPU types: compute terms at 1 GB/s (scaled by `bandwidth^-exponent`) and
    /// the median synchronisation terms over the measured GPU types.
    pub unmeasured_gpu: ArStepParams,
    /// Gavel job type whose measured pair slowdowns stand for this model.
    pub interference_proxy: Option<String>,
}

/// Pairwise co-location data: normalised throughput of a job while sharing one GPU with
/// another (Gavel, `datasets/gavel_colocated_throughputs.csv` ÷ isolated 1-GPU throughput).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterferenceParams {
    /// `[gpu_type][job_type][other_job_type]` → normalised throughput in (0, 1].
    pub pairs: BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>>,
    /// `[gpu_type][job_type]` → median over its partners (for a partner with no proxy).
    pub row_median: BTreeMap<String, BTreeMap<String, f64>>,
    /// `[gpu_type][job_type]` → median over jobs slowed by it (for a victim with no proxy).
    pub col_median: BTreeMap<String, BTreeMap<String, f64>>,
    /// `[gpu_type]` → median over all runnable pairs (neither side has a proxy).
    pub all_median: BTreeMap<String, f64>,
    /// GPU type whose table is used for GPU types Gavel did not measure.
    pub fallback_gpu: String,
}

/// Named parameters with no measurement in `datasets/`. Each is an estimate; its reasoning is
/// on the field. Change them in `models/perf_params.json` or with [`Estimates`] in code.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimates {
    /// ESTIMATE. Fraction of the slowdown Gavel measured for two jobs sharing *one GPU* that a job
    /// feels from its co-runners on the *same server but other GPUs*. Such jobs share the host
    /// side only (PCIe root complex, CPU, DRAM bandwidth, input pipeline), not SMs or GPU memory,
    /// so the GPU-sharing slowdown is an upper bound; 0.25 keeps the measured ranking of pairs
    /// while giving 5–15 % slowdowns for typical pairs. Several co-runners compound their pair
    /// throughputs before the share is taken, so the host side never takes more than this
    /// share of a job's pace (at most `1/(1 − κ)`, 1.33× at 0.25).
    pub colocation_coupling: f64,
    /// ESTIMATE. Factor on a job's intra-server gradient traffic when its GPUs on one PCIe server
    /// sit under different CPU sockets: GPU peer-to-peer does not cross the socket link (QPI/UPI)
    /// there, so transfers are staged through host memory, roughly halving bandwidth. Never
    /// applied on NVLink servers, whose GPUs reach each other directly (and whose one-server
    /// step times, measured on Sia's NVLink V100 and A100 servers, already are what they are).
    pub cross_socket_comm_factor: f64,
    /// ESTIMATE. Added fraction of a job's communication time for each other job with a GPU under
    /// a PCIe switch this job also uses: the switch's uplink is shared.
    pub pcie_share_comm_penalty: f64,
    /// ESTIMATE. Fraction of inter-server communication time that is bandwidth-bound, and so
    /// stretches when other distributed jobs send through the same NIC at the same moment; the rest
    /// is latency. 1.0 reads the fitted inter-server time as all bandwidth (DL2's own model of PS
    /// traffic, `2·size/(p·bandwidth)`, is); range studied 0.5–1.
    pub nic_bandwidth_fraction: f64,
    /// ESTIMATE. How aligned the communication phases of jobs sharing a NIC are, in [0, 1]. A
    /// sharer `o` that spends a fraction `d_o` of its step in inter-server communication competes
    /// with this job's transfers for a fraction `q_o = d_o + a·(1 − d_o)` of the time, and a
    /// competing flow halves the bandwidth while it lasts (fair share), so the bandwidth-bound part
    /// stretches by `1 + Σ q_o` on the busiest NIC the job uses. `a = 0`: phases independent (no
    /// coordination: overlap by chance, probability `d_o`); `a = 1`: fully aligned, every sharer
    /// always competes — the fixed fair share of SJF-BCO's model, the worst case CASSINI (NSDI'24)
    /// measured and removes by shifting phases apart. Shipped 0; studied 0–1.
    #[serde(default)]
    pub nic_phase_alignment: f64,
    /// ESTIMATE. Share of the throughput change Synergy measured for other cores and memory per
    /// GPU (`synergy_cpu_mem_sensitivity.csv`, V100s in a 24-core server) that carries over to
    /// coda's GPUs and servers: a tier's speed is `1 + t·(measured ratio − 1)`. A faster GPU
    /// needs its input pipeline faster still (the ratio could grow), a faster CPU core less so
    /// (it could shrink); no measurement pairs the two. Shipped 1 (as measured); studied 0
    /// (cores and memory never matter) and 0.5.
    #[serde(default = "one")]
    pub cpu_mem_transfer: f64,
    /// ESTIMATE. Peak memory bandwidth (GB/s, vendor data sheets) used only to extrapolate
    /// compute time to GPU types with no step-time measurement; the exponent is fitted. Memory
    /// bandwidth predicted held-out GPU types better than FP32 TFLOP/s in leave-one-GPU-type-out
    /// tests on the Pollux/Sia models (39 % vs 50 % MAPE), training being largely memory-bound.
    pub gpu_mem_bandwidth: GpuMemBandwidth,
}

/// Vendor peak memory bandwidth per GPU type, GB/s (see [`Estimates::gpu_mem_bandwidth`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GpuMemBandwidth {
    /// NVIDIA K80 (one of the board's two GPUs).
    pub k80: f64,
    /// NVIDIA P100 (PCIe, 16 GB).
    pub p100: f64,
    /// NVIDIA T4.
    pub t4: f64,
    /// NVIDIA V100 (SXM2).
    pub v100: f64,
    /// NVIDIA A100 (40 GB).
    pub a100: f64,
    /// NVIDIA Quadro RTX 6000.
    pub rtx6000: f64,
    /// NVIDIA GeForce RTX 2080 Ti.
    pub rtx2080ti: f64,
}

impl GpuMemBandwidth {
    /// The GPU type names of the table.
    pub const NAMES: [&'static str; 7] =
        ["k80", "p100", "t4", "v100", "a100", "rtx6000", "rtx2080ti"];

    /// The peak for a GPU type name, if listed.
    pub fn get(&self, gpu: &str) -> Option<f64> {
        Some(match gpu {
            "k80" => self.k80,
            "p100" => self.p100,
            "t4" => self.t4,
            "v100" => self.v100,
            "a100" => self.a100,
            "rtx6000" => self.rtx6000,
            "rtx2080ti" => self.rtx2080ti,
            _ => return None,
        })
    }
}

impl Default for Estimates {
    fn default() -> Self {
        Estimates {
            colocation_coupling: 0.25,
            cross_socket_comm_factor: 1.5,
            pcie_share_comm_penalty: 0.25,
            nic_bandwidth_fraction: 1.0,
            nic_phase_alignment: 0.0,
            cpu_mem_transfer: 1.0,
            gpu_mem_bandwidth: GpuMemBandwidth {
                k80: 240.0,
                p100: 732.0,
                t4: 320.0,
                v100: 900.0,
                a100: 1555.0,
                rtx6000: 672.0,
                rtx2080ti: 616.0,
            },
        }
    }
}

/// One row of the fit-quality report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitQuality {
    /// Model name.
    pub model: String,
    /// GPU type or profile (`-` for PS models, whose GPU was not recorded).
    pub gpu: String,
    /// What was held out: `kfold5` (rows of the same model and GPU) or `gpu-out` (every row of
    /// this GPU type, predicted from the other types only).
    pub split: String,
    /// Rows used.
    pub rows: usize,
    /// Mean absolute percentage error on held-out rows (`None`: too few rows to hold any out).
    pub mape: Option<f64>,
    /// Median absolute percentage error on held-out rows.
    pub median_ape: Option<f64>,
    /// Mean absolute percentage error when fitting and testing on all rows (in-sample; `None`
    /// for `gpu-out`, which has no in-sample fit).
    pub train_mape: Option<f64>,
}

/// Everything `coda calibrate` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfParams {
    /// Provenance line: which files, which seed.
    pub provenance: String,
    /// PS models by name.
    pub ps_models: BTreeMap<String, PsModelParams>,
    /// All-reduce models by name.
    pub ar_models: BTreeMap<String, ArModelParams>,
    /// Fitted exponent `b` in `compute ∝ bandwidth^-b` across measured GPU types.
    pub compute_bandwidth_exponent: f64,
    /// Pairwise co-location data.
    pub interference: InterferenceParams,
    /// What one task of each model reserves on its server (CPU cores, memory), from
    /// measurements; see [`super::TaskDemandFit`].
    #[serde(default)]
    pub task_demands: BTreeMap<String, super::demand::TaskDemandFit>,
    /// Throughput per GPU as a function of its cores and memory, per Synergy model, family
    /// (`family-…`) and over all models (see [`super::cpumem`]).
    #[serde(default)]
    pub cpu_mem_surfaces: BTreeMap<String, super::cpumem::CpuMemSurface>,
    /// Gradient noise ratio per all-reduce model with measured gradient statistics (statistical
    /// efficiency, see [`super::goodput`]).
    #[serde(default)]
    pub goodput: BTreeMap<String, super::goodput::GoodputParams>,
    /// Named estimates.
    pub estimates: Estimates,
    /// Held-out fit quality of every fitted model.
    pub fit_quality: Vec<FitQuality>,
}

/// A parameter out of its range: `(JSON path, value, required range)`.
pub(crate) type BadParam = (String, f64, &'static str);

impl PerfParams {
    /// The CPU/memory surface `model`'s speed follows, if it has one.
    pub(crate) fn cpu_mem_surface(&self, model: &str) -> Option<&super::cpumem::CpuMemSurface> {
        let key = self.task_demands.get(model)?.surface.as_ref()?;
        self.cpu_mem_surfaces.get(key)
    }

    /// Checks every fitted number a speed is computed from, so that a hand-edited or corrupted
    /// file fails at load, naming the field, instead of pricing jobs at infinite or negative
    /// speed later: all finite and >= 0; batches, bandwidths and a PS model's step time > 0;
    /// co-location throughputs in (0, 1]. (The named estimates are checked by
    /// [`super::CalibratedPerf::new`].)
    pub(crate) fn check(&self) -> std::result::Result<(), BadParam> {
        const NN: &str = "[0, inf)";
        const POS: &str = "(0, inf)";
        let nn = |p: String, v: f64| (v.is_finite() && v >= 0.0).then_some(()).ok_or((p, v, NN));
        let pos = |p: String, v: f64| (v.is_finite() && v > 0.0).then_some(()).ok_or((p, v, POS));
        for (m, ps) in &self.ps_models {
            let at = |f: &str| format!("ps_models.{m}.{f}");
            for (i, &t) in ps.theta.iter().enumerate() {
                nn(at(&format!("theta[{i}]")), t)?;
            }
            // Every term of the step time is >= 0; their sum must not vanish at any (w, p).
            pos(at("theta"), ps.theta.iter().sum())?;
            pos(at("batch"), ps.batch)?;
            pos(at("max_workers"), f64::from(ps.max_workers))?;
            pos(at("max_ps"), f64::from(ps.max_ps))?;
            nn(at("local_comp_time_s"), ps.local_comp_time_s)?;
            nn(at("model_size_mb"), ps.model_size_mb)?;
            pos(at("inter_server_bw_mbps"), ps.inter_server_bw_mbps)?;
            pos(at("intra_server_bw_mbps"), ps.intra_server_bw_mbps)?;
        }
        for (m, g) in &self.goodput {
            let at = |f: &str| format!("goodput.{m}.{f}");
            pos(at("init_batch"), g.init_batch)?;
            pos(at("max_batch"), g.max_batch)?;
            let ordered = g.knots.len() >= 2
                && g.knots.len() == g.log_ratio.len()
                && g.knots.windows(2).all(|w| w[0] < w[1])
                && g.knots.iter().chain(&g.log_ratio).all(|v| v.is_finite());
            ordered.then_some(()).ok_or((
                at("knots"),
                g.knots.len() as f64,
                "ascending, finite, one log_ratio each",
            ))?;
            g.batch_slope.is_finite().then_some(()).ok_or((
                at("batch_slope"),
                g.batch_slope,
                "finite",
            ))?;
        }
        for (m, ar) in &self.ar_models {
            let at = |f: &str| format!("ar_models.{m}.{f}");
            nn(at("default_local_batch"), ar.default_local_batch)?;
            pos(at("max_gpus_measured"), f64::from(ar.max_gpus_measured))?;
            let fits = ar
                .per_gpu
                .iter()
                .map(|(g, p)| (format!("per_gpu.{g}"), p))
                .chain([("unmeasured_gpu".to_string(), &ar.unmeasured_gpu)]);
            for (name, p) in fits {
                let f = |x: &str| at(&format!("{name}.{x}"));
                // A step always computes something: a zero base would give infinite speed at
                // batch 0.
                pos(f("compute_base_s"), p.compute_base_s)?;
                nn(f("compute_per_sample_s"), p.compute_per_sample_s)?;
                nn(f("local_base_s"), p.local_base_s)?;
                nn(f("local_per_gpu_s"), p.local_per_gpu_s)?;
                nn(f("net_base_s"), p.net_base_s)?;
                nn(f("net_per_gpu_s"), p.net_per_gpu_s)?;
                (p.spread_min > 0.0 && p.spread_min <= 1.0)
                    .then_some(())
                    .ok_or((f("spread_min"), p.spread_min, "(0, 1]"))?;
                (p.spread_max >= 1.0 && p.spread_max.is_finite())
                    .then_some(())
                    .ok_or((f("spread_max"), p.spread_max, "[1, inf)"))?;
            }
        }
        nn(
            "compute_bandwidth_exponent".into(),
            self.compute_bandwidth_exponent,
        )?;
        let share = |p: String, v: f64| (v > 0.0 && v <= 1.0).then_some(()).ok_or((p, v, "(0, 1]"));
        let i = &self.interference;
        for (g, rows) in &i.pairs {
            for (a, row) in rows {
                for (b, &v) in row {
                    share(format!("interference.pairs.{g}.{a}.{b}"), v)?;
                }
            }
        }
        for (name, table) in [("row_median", &i.row_median), ("col_median", &i.col_median)] {
            for (g, row) in table {
                for (a, &v) in row {
                    share(format!("interference.{name}.{g}.{a}"), v)?;
                }
            }
        }
        for (g, &v) in &i.all_median {
            share(format!("interference.all_median.{g}"), v)?;
        }
        for (m, d) in &self.task_demands {
            nn(format!("task_demands.{m}.cpu_per_worker"), d.cpu_per_worker)?;
            if let Some(v) = d.mem_per_worker_gib {
                nn(format!("task_demands.{m}.mem_per_worker_gib"), v)?;
            }
            if let Some(v) = d.cpu_per_ps {
                nn(format!("task_demands.{m}.cpu_per_ps"), v)?;
            }
            for (k, t) in d.tiers.iter().enumerate() {
                pos(
                    format!("task_demands.{m}.tiers[{k}].cpu_per_gpu"),
                    t.cpu_per_gpu,
                )?;
                pos(
                    format!("task_demands.{m}.tiers[{k}].mem_gib_per_gpu"),
                    t.mem_gib_per_gpu,
                )?;
                pos(format!("task_demands.{m}.tiers[{k}].speed"), t.speed)?;
            }
            if let Some(k) = d
                .surface
                .as_ref()
                .filter(|k| !self.cpu_mem_surfaces.contains_key(*k))
            {
                return Err((
                    format!("task_demands.{m}.surface (`{k}`: no such surface)"),
                    f64::NAN,
                    "a key of cpu_mem_surfaces",
                ));
            }
        }
        for (k, s) in &self.cpu_mem_surfaces {
            let levels =
                |xs: &[f64]| !xs.is_empty() && xs.windows(2).all(|w| w[0] < w[1]) && xs[0] > 0.0;
            if !levels(&s.cores) || s.by_cores.len() != s.cores.len() {
                return Err((
                    format!("cpu_mem_surfaces.{k}.cores"),
                    f64::NAN,
                    "ascending, > 0, one throughput each",
                ));
            }
            if !levels(&s.mem_gb) || s.by_mem.len() != s.mem_gb.len() {
                return Err((
                    format!("cpu_mem_surfaces.{k}.mem_gb"),
                    f64::NAN,
                    "ascending, > 0, one throughput each",
                ));
            }
            for (name, v) in [("by_cores", &s.by_cores), ("by_mem", &s.by_mem)] {
                for (i, &x) in v.iter().enumerate() {
                    pos(format!("cpu_mem_surfaces.{k}.{name}[{i}]"), x)?;
                }
            }
        }
        let b = &self.estimates.gpu_mem_bandwidth;
        for (g, v) in [
            ("k80", b.k80),
            ("p100", b.p100),
            ("t4", b.t4),
            ("v100", b.v100),
            ("a100", b.a100),
            ("rtx6000", b.rtx6000),
            ("rtx2080ti", b.rtx2080ti),
        ] {
            pos(format!("estimates.gpu_mem_bandwidth.{g}"), v)?;
        }
        Ok(())
    }
}
