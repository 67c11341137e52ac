//! Per-task CPU and memory demands, from measurements (`coda calibrate`).
//!
//! What a job's task *reserves* on its server decides how many GPUs CPU and memory strand, so it
//! comes from data, not from a GPU-proportional share:
//!
//! * **Parameter-server models** — `dl2_ps_worker_speed.csv` records the CPU cores each worker
//!   and each PS used in every measured configuration (`worker_cpu_usages`, `ps_cpu_usages`); a
//!   task reserves the **median** over all rows of its model. Memory is not recorded there.
//! * **All-reduce models** — `synergy_cpu_mem_sensitivity.csv` gives each model's throughput per
//!   GPU for 1–24 cores and 21–250 GB, normalised to Synergy's fair share (3 cores, 62.5 GB per
//!   GPU). A GPU reserves the **fewest cores** (at 62.5 GB) and the **least memory** (at 3 cores)
//!   that reach the fair-share throughput (≥ 0.99): a language model needs 1 core and 20.83 GB, an
//!   image model 3 cores and 62.5 GB. coda's models map to Synergy's by network family
//!   ([`SYNERGY_PROXY`]); a model with no family there takes the median over Synergy's models.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cpumem::{ALL_MODELS, CpuMemSurface, GIB_PER_GB, tiers};
use crate::error::{Error, Result};
use crate::util::csvio::CsvFile;

/// What one task of a model reserves on its server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskDemandFit {
    /// CPU cores per worker (per GPU for all-reduce jobs).
    pub cpu_per_worker: f64,
    /// Memory per worker, GiB; `None` when the source does not record it.
    pub mem_per_worker_gib: Option<f64>,
    /// CPU cores per parameter server (PS models only).
    pub cpu_per_ps: Option<f64>,
    /// Where the numbers come from (file and rule, or the Synergy proxy used).
    pub source: String,
    /// Key of the model's CPU/memory throughput surface in
    /// [`super::PerfParams::cpu_mem_surfaces`] (all-reduce models only; see [`super::cpumem`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
    /// Alternatives to the default per-GPU cores and memory a scheduler may give (cheapest
    /// first; empty: the demand is fixed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<super::cpumem::CpuMemTier>,
}

/// Synergy profile standing in for a coda model (same network family). Gavel job types map by
/// their family name; models absent here use the median over Synergy's models.
pub const SYNERGY_PROXY: [(&str, &str); 9] = [
    ("imagenet", "res50"),
    ("cifar10", "res18"),
    ("bert", "bert"),
    ("deepspeech2", "deepspeech"),
    // ESTIMATE: YOLOv3's Darknet-53 backbone is a ResNet-like image model with the same input
    // pipeline (JPEG decode + augmentation); Synergy has no detector.
    ("yolov3", "res50"),
    ("gavel-resnet-18", "res18"),
    ("gavel-resnet-50", "res50"),
    ("gavel-transformer", "transformer"),
    ("gavel-lm", "lstm"),
];

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    })
}

/// Medians of DL2's per-task CPU usage per PS model.
fn dl2(dir: &Path) -> Result<BTreeMap<String, TaskDemandFit>> {
    let path = dir.join("dl2_ps_worker_speed.csv");
    let f = CsvFile::open(&path, &["model", "worker_cpu_usages", "ps_cpu_usages"])?;
    let mut acc: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for r in f.rows() {
        let list = |col: &str| -> Result<Vec<f64>> {
            r.str(col)
                .split(';')
                .filter(|s| !s.trim().is_empty())
                .map(|s| {
                    s.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v >= 0.0)
                        .ok_or_else(|| r.bad(col, format!("`{s}` is not a CPU usage >= 0")))
                })
                .collect()
        };
        let e = acc.entry(r.str("model").to_string()).or_default();
        e.0.extend(list("worker_cpu_usages")?);
        e.1.extend(list("ps_cpu_usages")?);
    }
    acc.into_iter()
        .map(|(m, (w, p))| {
            let missing = |what: &str| {
                Error::invalid(
                    &path.display().to_string(),
                    0,
                    what,
                    &m,
                    "no usage recorded",
                )
            };
            Ok((
                m.clone(),
                TaskDemandFit {
                    cpu_per_worker: median(w).ok_or_else(|| missing("worker_cpu_usages"))?,
                    mem_per_worker_gib: None,
                    cpu_per_ps: Some(median(p).ok_or_else(|| missing("ps_cpu_usages"))?),
                    source: "dl2_ps_worker_speed.csv: median worker / PS CPU usage".into(),
                    // DL2 records the cores a task used, not how its speed answers to them.
                    surface: None,
                    tiers: Vec::new(),
                },
            ))
        })
        .collect()
}

/// Per Synergy model: fewest cores (at 62.5 GB) and least memory (at 3 cores) reaching the
/// fair-share throughput.
fn synergy(dir: &Path) -> Result<BTreeMap<String, (f64, f64)>> {
    let path = dir.join("synergy_cpu_mem_sensitivity.csv");
    let f = CsvFile::open(&path, &["model", "cpus", "mem_gb", "norm_throughput"])?;
    let mut acc: BTreeMap<String, (Option<f64>, Option<f64>)> = BTreeMap::new();
    for r in f.rows() {
        let (cpus, mem, tput) = (
            r.nonneg("cpus")?,
            r.nonneg("mem_gb")?,
            r.nonneg("norm_throughput")?,
        );
        let e = acc.entry(r.str("model").to_string()).or_default();
        if tput >= 0.99 {
            if (mem - 62.5).abs() < 1e-9 {
                e.0 = Some(e.0.map_or(cpus, |c: f64| c.min(cpus)));
            }
            if (cpus - 3.0).abs() < 1e-9 {
                e.1 = Some(e.1.map_or(mem, |m: f64| m.min(mem)));
            }
        }
    }
    acc.into_iter()
        .map(|(m, (c, g))| match (c, g) {
            (Some(c), Some(g)) => Ok((m, (c, g))),
            _ => Err(Error::invalid(
                &path.display().to_string(),
                0,
                "norm_throughput",
                &m,
                "never reaches the fair-share throughput at 62.5 GB or at 3 cores",
            )),
        })
        .collect()
}

/// The demand of every model: PS models from DL2, all-reduce models (`ar_models`) from Synergy,
/// with their tiers on `surfaces` (see [`super::cpumem`]).
pub(crate) fn fit_demands(
    dir: &Path,
    ar_models: &[String],
    surfaces: &BTreeMap<String, CpuMemSurface>,
) -> Result<BTreeMap<String, TaskDemandFit>> {
    let mut out = dl2(dir)?;
    let syn = synergy(dir)?;
    let med_cpu = median(syn.values().map(|v| v.0).collect()).unwrap_or(3.0);
    let med_mem = median(syn.values().map(|v| v.1).collect()).unwrap_or(62.5);
    for m in ar_models {
        let proxy = SYNERGY_PROXY
            .iter()
            .find(|(k, _)| m == k || m.starts_with(&format!("{k}-b")))
            .and_then(|(_, p)| syn.get(*p).map(|v| (*p, *v)));
        let (cpu, mem, source, key) = match proxy {
            Some((p, (c, g))) => (
                c,
                g,
                format!("synergy_cpu_mem_sensitivity.csv: `{p}` profile"),
                p.to_string(),
            ),
            None => (
                med_cpu,
                med_mem,
                "synergy_cpu_mem_sensitivity.csv: median over models (no profile of this family)"
                    .into(),
                ALL_MODELS.to_string(),
            ),
        };
        let surface = surfaces.get(&key);
        out.insert(
            m.clone(),
            TaskDemandFit {
                cpu_per_worker: cpu,
                mem_per_worker_gib: Some(mem * GIB_PER_GB),
                cpu_per_ps: None,
                source,
                tiers: surface.map_or_else(Vec::new, |s| tiers(s, cpu, mem)),
                surface: surface.map(|_| key),
            },
        );
    }
    Ok(out)
}
