//! Level 1's CPU/memory tier: once level 1 has chosen a job's option, which of the job's tiers
//! ([`crate::model::Job::tiers`], tier 0 = its demand) its workers get. A small MLP scores one
//! row per tier; the job's tier is the best-scoring row. It is trained by imitation of the exact
//! program on rounds with tiers (`coda train tiers`), the expert's allocation given (teacher
//! forcing), and stored in the policy's weights file beside levels 1 and 2 (`tier.*` tensors and
//! the `tier_features` metadata), so a file without it decides as before: at the demand, tiers
//! handed out after placement ([`crate::policies::cpumem`]).
//!
//! What a tier is worth depends on the others: the cores and memory every chosen job needs at
//! its demand leave a spare the tiers compete for. The rows therefore carry the round's context
//! ([`TierContext`], computed from level 1's first choices) besides the job's own sensitivity.

use std::collections::HashMap;

use nalgebra::{DMatrix, DVector};

use super::layers::{Dense, Scratch, mlp, normalise};
use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, Job, JobPos};
use crate::objective::{JobOption, RoundPricing};
use crate::perf::{self, PerfModel};

/// Features of one (job, tier) row, the job's option fixed.
pub const TIER_FEATURES: [&str; 17] = [
    "is_demand",
    "tier_speed",
    "cores_over_demand",
    "mem_over_demand",
    "cores_per_gpu_over_cluster",
    "mem_per_gpu_over_cluster",
    "spare_cores_frac",
    "spare_mem_frac",
    "extra_cores_over_spare",
    "extra_mem_over_spare",
    "allocated_gpus_frac",
    "sensitive_gpus_frac",
    "value_gain_over_mean",
    "value_gain_per_core_share",
    "value_rank",
    "is_current_tier",
    "log_gpus",
];

/// The round as the tiers see it: what the jobs level 1 chose leave of the cluster's cores and
/// memory at their demands, and how the chosen jobs' values compare.
#[derive(Debug, Clone, PartialEq)]
pub struct TierContext {
    cores: f64,
    mem: f64,
    gpus: f64,
    spare_cores: f64,
    spare_mem: f64,
    allocated_gpus: f64,
    sensitive_gpus: f64,
    mean_value: f64,
    /// Per job (snapshot order), its rank among the chosen jobs by option value (0 = highest;
    /// 1 for jobs not chosen).
    rank: Vec<f64>,
}

impl TierContext {
    /// The context of `chosen` (per job, an option index in `demand`'s pricing, or `None`):
    /// `demand` prices the round without tiers (every job at its demand, its tiers dropped),
    /// `snapshot` is the same round with them.
    pub fn new(
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        demand: &RoundPricing,
        chosen: &[Option<usize>],
    ) -> Self {
        let cluster = &snapshot.cluster;
        let cores: f64 = cluster.servers.iter().map(|s| s.cpu_cores).sum();
        let mem: f64 = cluster.servers.iter().map(|s| s.memory_gib).sum();
        let gpus = cluster.num_gpus() as f64;
        let (mut used_c, mut used_m, mut alloc, mut sensitive) = (0.0, 0.0, 0.0, 0.0);
        let mut values: Vec<(usize, f64)> = Vec::new();
        for (j, k) in chosen.iter().enumerate() {
            let Some(o) = k.and_then(|k| demand.options(JobPos(j)).get(k)) else {
                continue;
            };
            let job = &snapshot.jobs[j];
            let (c, m) = job.cores_mem_at(0, f64::from(o.workers), f64::from(o.ps));
            used_c += c;
            used_m += m;
            let g = f64::from(o.workers * job.demand.gpus_per_worker);
            alloc += g;
            if (1..=job.tiers.len() as u8).any(|t| perf::tier_speed(perf, job, t) > 1.0) {
                sensitive += g;
            }
            values.push((j, o.terms.base));
        }
        let mean_value = if values.is_empty() {
            0.0
        } else {
            values.iter().map(|v| v.1).sum::<f64>() / values.len() as f64
        };
        values.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut rank = vec![1.0; snapshot.jobs.len()];
        let n = values.len().max(1) as f64;
        for (r, &(j, _)) in values.iter().enumerate() {
            rank[j] = r as f64 / n;
        }
        TierContext {
            cores,
            mem,
            gpus,
            spare_cores: cores - used_c,
            spare_mem: mem - used_m,
            allocated_gpus: alloc,
            sensitive_gpus: sensitive,
            mean_value,
            rank,
        }
    }
}

/// The rows of job `j` (of `snapshot`, with its tiers) run with `option` (an option of the
/// round at the demand): one per tier, tier 0 first.
pub fn tier_rows(
    perf: &dyn PerfModel,
    snapshot: &ClusterSnapshot,
    ctx: &TierContext,
    j: usize,
    option: &JobOption,
) -> Vec<Vec<f32>> {
    let job: &Job = &snapshot.jobs[j];
    let g = f64::from(job.demand.gpus_per_worker.max(1));
    let w = f64::from(option.workers);
    let (c0, m0) = job.worker_hold(0);
    let cores_per_gpu = ctx.cores / ctx.gpus.max(1.0);
    let mem_per_gpu = ctx.mem / ctx.gpus.max(1.0);
    let current = job
        .run
        .current
        .as_ref()
        .filter(|a| !a.workers.is_empty())
        .map(|a| a.tier);
    (0..=job.tiers.len() as u8)
        .map(|t| {
            let (c, m) = job.worker_hold(t);
            let s = perf::tier_speed(perf, job, t);
            let extra_c = w * (c - c0);
            let gain = (s - 1.0) * option.terms.base / ctx.mean_value.max(1e-9);
            let per_core = if extra_c.abs() > 1e-9 {
                gain / (extra_c / cores_per_gpu.max(1e-9))
            } else {
                0.0
            };
            let f: [f64; 17] = [
                f64::from(u8::from(t == 0)),
                s,
                c / c0.max(1e-9),
                m / m0.max(1e-9),
                c / g / cores_per_gpu.max(1e-9),
                m / g / mem_per_gpu.max(1e-9),
                ctx.spare_cores / ctx.cores.max(1e-9),
                ctx.spare_mem / ctx.mem.max(1e-9),
                (extra_c / ctx.spare_cores.max(1.0)).clamp(-10.0, 10.0),
                (w * (m - m0) / ctx.spare_mem.max(1.0)).clamp(-10.0, 10.0),
                ctx.allocated_gpus / ctx.gpus.max(1.0),
                ctx.sensitive_gpus / ctx.allocated_gpus.max(1.0),
                gain,
                per_core,
                ctx.rank[j],
                f64::from(u8::from(current == Some(t))),
                (w * g).ln_1p(),
            ];
            f.iter().map(|&x| super::features::finite(x)).collect()
        })
        .collect()
}

/// The tier head's weights: row normalisation and an MLP `row → hidden → hidden → 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct TierHead {
    /// Row normalisation: mean per feature.
    pub mean: DVector<f32>,
    /// Standard deviation per feature.
    pub std: DVector<f32>,
    /// The MLP.
    pub layers: [Dense; 3],
}

impl TierHead {
    /// A head of the default width with seeded random weights and identity normalisation (as
    /// [`super::PolicyNet::untrained`]): what the property tests decode with.
    pub fn untrained(seed: u64) -> Self {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut dense = |inputs: usize, outputs: usize| Dense::random(inputs, outputs, &mut rng);
        let w = TIER_FEATURES.len();
        let h = super::layers::HIDDEN;
        TierHead {
            mean: DVector::zeros(w),
            std: DVector::from_element(w, 1.0),
            layers: [dense(w, h), dense(h, h), dense(h, 1)],
        }
    }

    /// Not learned: a head whose score is the tier's speed, so every job gets its fastest tier
    /// (the lowest on ties), TUNE's first wish — the rule the learned head is measured against
    /// (`coda gap`, `learned-fastest-tier+tiers`).
    pub fn fastest() -> Self {
        let w = TIER_FEATURES.len();
        let speed = TIER_FEATURES
            .iter()
            .position(|&f| f == "tier_speed")
            .expect("a tier feature");
        let unit = |rows: usize, cols: usize, at: (usize, usize)| {
            Dense::new(
                DMatrix::from_fn(rows, cols, |i, k| if (i, k) == at { 1.0 } else { 0.0 }),
                vec![0.0; rows],
            )
        };
        // Speeds are positive, so the ReLUs pass them through unchanged.
        TierHead {
            mean: DVector::zeros(w),
            std: DVector::from_element(w, 1.0),
            layers: [
                unit(1, w, (0, speed)),
                unit(1, 1, (0, 0)),
                unit(1, 1, (0, 0)),
            ],
        }
    }

    /// One score per row of the tier features (`TIER_FEATURES`).
    pub fn scores(&self, rows: &[Vec<f32>]) -> Vec<f32> {
        if rows.is_empty() {
            return Vec::new();
        }
        let w = TIER_FEATURES.len();
        let mut s = Scratch::default();
        s.input
            .extend(rows.iter().flat_map(|r| r[..w].iter().copied()));
        normalise(&mut s.input, self.mean.as_slice(), self.std.as_slice());
        let mut out = Vec::new();
        mlp(&self.layers, rows.len(), &mut s, &mut out);
        out
    }

    /// The tiers of `rows` (one per tier, tier 0 first), best first (ties: the lower tier).
    pub fn ranked(&self, rows: &[Vec<f32>]) -> Vec<u8> {
        let s = self.scores(rows);
        let mut order: Vec<u8> = (0..s.len() as u8).collect();
        order.sort_by(|&a, &b| {
            s[usize::from(b)]
                .total_cmp(&s[usize::from(a)])
                .then(a.cmp(&b))
        });
        order
    }

    /// Its tensors by file name (`tier.mean`, `tier.std`, `tier.fc1`, `tier.fc2`, `tier.out`).
    pub fn tensors(&self) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        let mut out = vec![
            (
                "tier.mean".into(),
                vec![self.mean.len()],
                self.mean.iter().copied().collect(),
            ),
            (
                "tier.std".into(),
                vec![self.std.len()],
                self.std.iter().copied().collect(),
            ),
        ];
        for (d, n) in self.layers.iter().zip(["tier.fc1", "tier.fc2", "tier.out"]) {
            out.extend(d.named(n));
        }
        out
    }

    /// The head from named tensors, `None` when the file has none; shapes checked.
    pub fn from_tensors(
        tensors: &HashMap<String, (Vec<usize>, Vec<f32>)>,
        origin: &str,
    ) -> Result<Option<Self>> {
        if !tensors.keys().any(|k| k.starts_with("tier.")) {
            return Ok(None);
        }
        let bad = |reason: String| Error::ModelFile {
            path: origin.to_string(),
            reason,
        };
        let w = TIER_FEATURES.len();
        let vector = |name: &str| -> Result<DVector<f32>> {
            match tensors.get(name) {
                Some((shape, data)) if shape == &[w] => Ok(DVector::from_vec(data.clone())),
                Some((shape, _)) => Err(bad(format!(
                    "tensor `{name}` has shape {shape:?}, expected [{w}]"
                ))),
                None => Err(bad(format!("missing tensor `{name}`"))),
            }
        };
        let mean = vector("tier.mean")?;
        let std = vector("tier.std")?;
        if !std.iter().all(|x| x.is_finite() && *x > 0.0) {
            return Err(bad("tensor `tier.std` must be finite and positive".into()));
        }
        let fc1 = Dense::from_named(tensors, "tier.fc1", w, origin)?;
        let fc2 = Dense::from_named(tensors, "tier.fc2", fc1.outputs(), origin)?;
        let out = Dense::from_named(tensors, "tier.out", fc2.outputs(), origin)?;
        if out.outputs() != 1 {
            return Err(bad(format!(
                "`tier.out` must have one output, has {}",
                out.outputs()
            )));
        }
        Ok(Some(TierHead {
            mean,
            std,
            layers: [fc1, fc2, out],
        }))
    }
}

impl super::LearnedScheduler<'_> {
    /// A round whose jobs offer tiers: the decoding at the demand (every job at tier 0, as a
    /// policy without a tier head decides), and with a tier head also the decoding at the
    /// tiers it chooses for level 1's first choices — every job's demand set to its tier's
    /// cores and memory, so that level 2's masks and the packer's ledger hold exactly what the
    /// tiers take; the one the objective scores higher (at the tiers) is returned.
    pub(super) fn decide_tiered(&self, snapshot: &ClusterSnapshot) -> crate::model::Schedule {
        let demand = snapshot.at_demand();
        let pd = RoundPricing::keeping(self.perf, &demand, self.objective, &self.kept);
        let logits = self.logits(&pd);
        let at_demand = self.decode(&pd, &logits);
        let Some(head) = &self.net.tier else {
            return at_demand;
        };
        // Level 1's first choices only: ranked, not every job's list sorted.
        let mut ranked = super::Ranked::new(&logits);
        let chosen: Vec<Option<usize>> = (0..logits.len()).map(|j| ranked.get(j, 0)).collect();
        let ctx = TierContext::new(self.perf, snapshot, &pd, &chosen);
        let tiers: Vec<u8> = chosen
            .iter()
            .enumerate()
            .map(|(j, k)| match k {
                Some(k) if !snapshot.jobs[j].tiers.is_empty() => {
                    let o = &pd.options(JobPos(j))[*k];
                    head.ranked(&tier_rows(self.perf, snapshot, &ctx, j, o))[0]
                }
                _ => 0,
            })
            .collect();
        if tiers.iter().all(|&t| t == 0) {
            return at_demand;
        }
        let mut placed = demand.clone();
        for ((job, orig), &t) in placed.jobs.iter_mut().zip(&snapshot.jobs).zip(&tiers) {
            let (c, m) = orig.worker_hold(t);
            job.demand.cpu_per_worker = c;
            job.demand.mem_per_worker_gib = m;
        }
        // Level 1 reads no worker's cores or memory (nor do the options), so its logits at the
        // tiers are those at the demand: only the placement sees the tiers' cores.
        let pp = RoundPricing::keeping(self.perf, &placed, self.objective, &self.kept);
        let mut at_tiers = self.decode(&pp, &logits);
        for a in &mut at_tiers.assignments {
            if let Some(j) = snapshot.job_index(a.job) {
                a.tier = tiers[j];
            }
        }
        let pt = RoundPricing::keeping(self.perf, snapshot, self.objective, &self.kept);
        let score = |s: &crate::model::Schedule| pt.score(s).map_or(f64::NEG_INFINITY, |x| x.total);
        if score(&at_tiers) > score(&at_demand) {
            at_tiers
        } else {
            at_demand
        }
    }
}
