//! Gavel's throughputs: consolidated against unconsolidated runs of each job type and size
//! (the `gavel-*` all-reduce models) and pairs sharing one GPU (co-location interference).

use std::collections::BTreeMap;
use std::path::Path;

use super::allreduce::{ArData, ar_features};
use super::{Obs, median};
use crate::error::Result;
use crate::perf::params::InterferenceParams;
use crate::util::csvio::CsvFile;

/// Name under which a Gavel job type is offered as an all-reduce model:
/// `ResNet-50 (batch size 64)` → `gavel-resnet-50-b64`.
pub(crate) fn gavel_model_name(job_type: &str) -> String {
    let lower = job_type.to_lowercase();
    let (base, batch) = match lower.split_once(" (batch size ") {
        Some((b, rest)) => (b.to_string(), Some(rest.trim_end_matches(')').to_string())),
        None => (lower.clone(), None),
    };
    let base: String = base
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    match batch {
        Some(b) => format!("gavel-{base}-b{b}"),
        None => format!("gavel-{base}"),
    }
}

/// GPUs per server of a Gavel unconsolidated run of `k` GPUs, as coda reads them: the source
/// records no split, and coda reads it as the job halved over two servers (largest half first),
/// the spread its schedulers make most — so a two-server split of a `gavel-*` model is priced
/// as measured, and wider ones from the same fitted terms, within the envelope.
pub(crate) fn gavel_spread(k: u32) -> Vec<u32> {
    vec![k.div_ceil(2), k / 2]
}

/// Isolated 1-GPU throughput per `(gpu_type, job_type)`, the denominator of pair slowdowns.
pub(super) type SingleGpuThroughput = BTreeMap<(String, String), f64>;

/// `gavel_isolated_throughputs.csv` with the columns the fits read.
pub(crate) fn open_gavel(dir: &Path) -> Result<CsvFile> {
    CsvFile::open(
        &dir.join("gavel_isolated_throughputs.csv"),
        &[
            "gpu_type",
            "job_type",
            "scale_factor",
            "sim_consolidated",
            "sim_unconsolidated",
        ],
    )
}

pub(super) fn read_gavel_isolated(
    dir: &Path,
) -> Result<(BTreeMap<String, ArData>, SingleGpuThroughput)> {
    let f = open_gavel(dir)?;
    let mut out: BTreeMap<String, ArData> = BTreeMap::new();
    let mut single: BTreeMap<(String, String), f64> = BTreeMap::new();
    for r in f.rows() {
        let gpu = r.str("gpu_type").to_lowercase();
        let job_type = r.str("job_type").to_string();
        let k = r.positive_count("scale_factor")?;
        let name = gavel_model_name(&job_type);
        let d = out.entry(name).or_insert(ArData {
            source: "gavel",
            proxy: Some(job_type.clone()),
            default_batch: 0.0,
            max_gpus: 0,
            rows: BTreeMap::new(),
        });
        d.max_gpus = d.max_gpus.max(k);
        // Throughput is steps/s summed over the job's K workers, so one synchronous step of the
        // job takes K / throughput seconds.
        // 0 marks a configuration that could not run in Gavel's source (k80, ResNet-50 at batch
        // 128 on 2–8 GPUs), and blank unconsolidated cells were never measured: both skipped.
        let cons = r.nonneg("sim_consolidated")?;
        let rows = d.rows.entry(gpu.clone()).or_default();
        if cons > 0.0 {
            if k == 1 {
                single.insert((gpu, job_type.clone()), cons);
            }
            rows.push(Obs {
                x: ar_features(0.0, k, k, 1),
                time: f64::from(k) / cons,
                packed: None,
            });
        }
        if k > 1 && !r.str("sim_unconsolidated").is_empty() {
            let spread = r.nonneg("sim_unconsolidated")?;
            if spread > 0.0 {
                rows.push(Obs {
                    x: ar_features(0.0, k, gavel_spread(k)[0], 2),
                    time: f64::from(k) / spread,
                    packed: Some(ar_features(0.0, k, k, 1)),
                });
            }
        }
    }
    Ok((out, single))
}

pub(super) fn fit_interference(
    dir: &Path,
    single: &SingleGpuThroughput,
) -> Result<InterferenceParams> {
    let f = CsvFile::open(
        &dir.join("gavel_colocated_throughputs.csv"),
        &["gpu_type", "job_type", "other_job_type", "throughput"],
    )?;
    let mut pairs: BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>> = BTreeMap::new();
    for r in f.rows() {
        let gpu = r.str("gpu_type").to_lowercase();
        let job = r.str("job_type").to_string();
        let other = r.str("other_job_type").to_string();
        let t = r.nonneg("throughput")?;
        // 0 = the pair cannot share a GPU (memory) in Gavel's source: no measurement, skipped.
        if t == 0.0 {
            continue;
        }
        let iso = single
            .get(&(gpu.clone(), job.clone()))
            .ok_or_else(|| r.bad("job_type", "no isolated 1-GPU throughput for this job type"))?;
        // Normalised throughput; clamped to 1 because sharing cannot speed a job up (values a
        // hair above 1 are measurement noise).
        let norm = (t / iso).min(1.0);
        pairs
            .entry(gpu)
            .or_default()
            .entry(job)
            .or_default()
            .insert(other, norm);
    }
    let mut row_median = BTreeMap::new();
    let mut col_median = BTreeMap::new();
    let mut all_median = BTreeMap::new();
    for (gpu, jobs) in &pairs {
        let mut rows = BTreeMap::new();
        let mut cols: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut all = Vec::new();
        for (job, others) in jobs {
            let v: Vec<f64> = others.values().copied().collect();
            rows.insert(job.clone(), median(&v));
            for (o, &x) in others {
                cols.entry(o.clone()).or_default().push(x);
                all.push(x);
            }
        }
        row_median.insert(gpu.clone(), rows);
        col_median.insert(
            gpu.clone(),
            cols.into_iter().map(|(k, v)| (k, median(&v))).collect(),
        );
        all_median.insert(gpu.clone(), median(&all));
    }
    Ok(InterferenceParams {
        pairs,
        row_median,
        col_median,
        all_median,
        fallback_gpu: "v100".into(),
    })
}
