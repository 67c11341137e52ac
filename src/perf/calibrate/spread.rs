//! Spread against packed: every measured pair of the same all-reduce job packed (on as few
//! servers as its size allows) and spread over more, the envelope of their step-time ratios that
//! bounds the model's price of a spread placement, and the check of the fitted model against
//! every pair (`coda calibrate --placement-csv`).
//!
//! Pairs come from two sources. Pollux/Sia (`pollux_sia_placement_step_times.csv`): rows of one
//! profile, model and per-GPU batch whose placements differ, the packed one being `K` GPUs on
//! `ceil(K / S)` servers of the profile's `S` GPUs; a placement measured several times counts by
//! its median. Gavel (`gavel_isolated_throughputs.csv`): consolidated against unconsolidated
//! throughput of one job type and size (read as the job halved over two servers).
//!
//! The **envelope** of a model on a GPU type is the range of its measured spread ÷ packed ratios,
//! each the median over the batches and splits of one (profile, GPU count, server count), with
//! the packed placement itself (ratio 1) included: a median smooths the single noisy batch that
//! would otherwise set a bound (Sia's `azure` imagenet has pairs from 0.35 to 7.2), and with 1
//! included a spread can always be priced as packed. Where no spread was measured it is `[1, 1]`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::{
    cluster_profile, gavel_model_name, gavel_spread, median, open_gavel, open_pollux, row_placement,
};
use crate::error::Result;
use crate::perf::context::packed;
use crate::perf::params::{ArStepParams, PerfParams};

/// One measured pair of placements of the same job.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpreadPair {
    /// `pollux/<cluster>` (Pollux/Sia profiles) or `gavel`.
    pub source: String,
    /// GPU type.
    pub gpu: String,
    /// Model.
    pub model: String,
    /// GPUs per server of the spread placement, largest first.
    pub placement: Vec<u32>,
    /// GPUs per server of the packed placement, largest first.
    pub packed: Vec<u32>,
    /// Per-GPU batch (Gavel's rows have their job type's fixed batch: 0).
    pub batch: f64,
    /// Measured step time spread ÷ packed.
    pub measured_ratio: f64,
}

impl SpreadPair {
    fn gpus(&self) -> u32 {
        self.placement.iter().sum()
    }
}

/// Every measured spread/packed pair of the files in `dir`.
pub(crate) fn spread_pairs(dir: &Path) -> Result<Vec<SpreadPair>> {
    let mut out = Vec::new();
    let f = open_pollux(dir)?;
    // (cluster, model, placement, batch) → step times
    type Key = (String, String, Vec<u32>, u64);
    let mut groups: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    let mut server_gpus: BTreeMap<String, (String, u32)> = BTreeMap::new();
    for r in f.rows() {
        let cluster = r.str("cluster").to_string();
        let Some((gpu, per)) = cluster_profile(&cluster) else {
            return Err(r.bad("cluster", "unknown cluster profile (add it to CLUSTER_GPU)"));
        };
        server_gpus.insert(cluster.clone(), (gpu.to_string(), per));
        let k = r.positive_count("num_replicas")?;
        let n = r.positive_count("num_nodes")?;
        let key = (
            cluster,
            r.str("model").to_string(),
            row_placement(&r, k, n)?,
            r.positive("local_bsz")?.to_bits(),
        );
        groups
            .entry(key)
            .or_default()
            .push(r.positive("step_time")?);
    }
    for ((cluster, model, placement, batch), times) in &groups {
        let (gpu, per) = &server_gpus[cluster];
        let k: u32 = placement.iter().sum();
        let packed = packed(k, *per);
        if *placement == packed {
            continue;
        }
        let Some(one) = groups.get(&(cluster.clone(), model.clone(), packed.clone(), *batch))
        else {
            continue;
        };
        out.push(SpreadPair {
            source: format!("pollux/{cluster}"),
            gpu: gpu.clone(),
            model: model.clone(),
            placement: placement.clone(),
            packed,
            batch: f64::from_bits(*batch),
            measured_ratio: median(times) / median(one),
        });
    }
    let g = open_gavel(dir)?;
    for r in g.rows() {
        let k = r.positive_count("scale_factor")?;
        if k < 2 || r.str("sim_unconsolidated").is_empty() {
            continue;
        }
        let (cons, spread) = (
            r.nonneg("sim_consolidated")?,
            r.nonneg("sim_unconsolidated")?,
        );
        if cons <= 0.0 || spread <= 0.0 {
            continue;
        }
        out.push(SpreadPair {
            source: "gavel".into(),
            gpu: r.str("gpu_type").to_lowercase(),
            model: gavel_model_name(r.str("job_type")),
            placement: gavel_spread(k),
            packed: vec![k],
            batch: 0.0,
            // Throughputs: step time spread ÷ packed is packed ÷ spread throughput.
            measured_ratio: cons / spread,
        });
    }
    Ok(out)
}

/// The envelope `(min, max)` of every (model, GPU type) with a measured pair (see the module
/// docs).
pub(crate) fn envelopes(pairs: &[SpreadPair]) -> BTreeMap<(String, String), (f64, f64)> {
    type Group = (String, String, String, u32, usize);
    let mut groups: BTreeMap<Group, Vec<f64>> = BTreeMap::new();
    for p in pairs {
        groups
            .entry((
                p.model.clone(),
                p.gpu.clone(),
                p.source.clone(),
                p.gpus(),
                p.placement.len(),
            ))
            .or_default()
            .push(p.measured_ratio);
    }
    let mut out: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for ((model, gpu, ..), ratios) in groups {
        let r = median(&ratios);
        let e = out.entry((model, gpu)).or_insert((1.0, 1.0));
        *e = (e.0.min(r), e.1.max(r));
    }
    out
}

/// One row of the placement check: a measured spread ÷ packed step-time ratio next to what the
/// fitted model predicts for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlacementCheck {
    /// `pollux/<cluster>` (Pollux/Sia profiles) or `gavel`.
    pub source: String,
    /// GPU type.
    pub gpu: String,
    /// Model.
    pub model: String,
    /// GPUs of the job.
    pub gpus: u32,
    /// Servers of the spread placement.
    pub servers: u32,
    /// GPUs per server of the spread placement, largest first (`4+4`).
    pub placement: String,
    /// Per-GPU batch (Pollux/Sia rows; Gavel rows have their own fixed batch: 0).
    pub local_batch: f64,
    /// Measured step time spread ÷ packed (> 1: consolidation wins).
    pub measured_ratio: f64,
    /// The same ratio from the fitted step-time model, envelope included.
    pub predicted_ratio: f64,
}

/// The step-time ratio `p` predicts for a pair (a spread never crosses sockets in either
/// source's measurements).
fn predicted_ratio(p: &ArStepParams, pair: &SpreadPair) -> f64 {
    let k = pair.gpus();
    let at = |per: &[u32]| p.parts(pair.batch, k, per[0], per.len() as u32);
    let (pc, pi, po) = at(&pair.packed);
    let packed_s = pc + pi + po;
    let (c, i, o) = p.within_envelope(at(&pair.placement), packed_s);
    (c + i + o) / packed_s
}

/// Every measured pair of the files in `dir` with the ratio `params` predict for it: how well
/// the model's intra- and inter-server synchronisation, and its envelope, reproduce what each
/// source measured.
pub fn placement_check(dir: &Path, params: &PerfParams) -> Result<Vec<PlacementCheck>> {
    Ok(spread_pairs(dir)?
        .into_iter()
        .filter_map(|pair| {
            let p = params.ar_models.get(&pair.model)?.per_gpu.get(&pair.gpu)?;
            Some(PlacementCheck {
                predicted_ratio: predicted_ratio(p, &pair),
                gpus: pair.gpus(),
                servers: pair.placement.len() as u32,
                placement: pair
                    .placement
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join("+"),
                local_batch: pair.batch,
                measured_ratio: pair.measured_ratio,
                source: pair.source,
                gpu: pair.gpu,
                model: pair.model,
            })
        })
        .collect())
}

/// The placement check in brief: per source, GPU type and GPU count, the number of pairs, the
/// median measured and predicted spread ÷ packed ratio, and the median relative error of the
/// prediction, as a Markdown table.
pub fn placement_summary(rows: &[PlacementCheck]) -> String {
    let mut keys: Vec<(String, String, u32)> = rows
        .iter()
        .map(|r| (r.source.clone(), r.gpu.clone(), r.gpus))
        .collect();
    keys.sort();
    keys.dedup();
    let mut s = String::from(
        "placement check: step time spread over servers / packed (median over models, splits and batches)\n\
         | source | GPU | GPUs | pairs | measured | predicted | median abs. error |\n|---|---|---|---|---|---|---|\n",
    );
    for (src, gpu, k) in keys {
        let sel: Vec<&PlacementCheck> = rows
            .iter()
            .filter(|r| r.source == src && r.gpu == gpu && r.gpus == k)
            .collect();
        let col = |f: &dyn Fn(&PlacementCheck) -> f64| {
            median(&sel.iter().map(|r| f(r)).collect::<Vec<_>>())
        };
        s += &format!(
            "| {src} | {gpu} | {k} | {} | {:.2} | {:.2} | {:.1} % |\n",
            sel.len(),
            col(&|r| r.measured_ratio),
            col(&|r| r.predicted_ratio),
            100.0 * col(&|r| (r.predicted_ratio / r.measured_ratio - 1.0).abs()),
        );
    }
    s
}
