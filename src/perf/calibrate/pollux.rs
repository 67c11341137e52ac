//! Pollux/Sia's step times by placement (`pollux_sia_placement_step_times.csv`): its cluster
//! profiles and how a row's placement is read.

use std::collections::BTreeMap;
use std::path::Path;

use super::allreduce::{ArData, ar_features};
use super::{Obs, median, proxy_for};
use crate::error::Result;
use crate::util::csvio::CsvFile;

/// GPU type of each Pollux/Sia cluster profile (Sia's `simulator_config.py`, Pollux's `main.tf`;
/// see `datasets/README.md`). `rtx` is not shipped; it is listed so that its rows load if given.
pub(crate) const CLUSTER_GPU: [(&str, &str); 6] = [
    ("aws", "t4"),
    ("azure", "v100"),
    ("dgx", "a100"),
    ("dgx-ext", "a100"),
    ("quad", "rtx6000"),
    ("rtx", "rtx2080ti"),
];

/// GPUs per server of each Pollux/Sia cluster profile (same sources as [`CLUSTER_GPU`]): what
/// "packed" means for its rows.
pub(crate) const CLUSTER_SERVER_GPUS: [(&str, u32); 6] = [
    ("aws", 4),
    ("azure", 8),
    ("dgx", 8),
    ("dgx-ext", 8),
    ("quad", 4),
    ("rtx", 8),
];

/// GPU type and GPUs per server of a Pollux/Sia profile.
pub(crate) fn cluster_profile(cluster: &str) -> Option<(&'static str, u32)> {
    let gpu = CLUSTER_GPU.iter().find(|(c, _)| *c == cluster)?.1;
    let per = CLUSTER_SERVER_GPUS.iter().find(|(c, _)| *c == cluster)?.1;
    Some((gpu, per))
}

/// GPUs per server of one Pollux/Sia row: its `placement` digits (one per server, e.g. `44.0`)
/// when given, else (the `scalability` rows) `num_replicas` spread evenly over `num_nodes`.
pub(crate) fn row_placement(r: &crate::util::csvio::Row<'_>, k: u32, n: u32) -> Result<Vec<u32>> {
    let text = r.str("placement");
    let mut per: Vec<u32> = if text.is_empty() {
        (0..n).map(|i| k / n + u32::from(i < k % n)).collect()
    } else {
        text.trim_end_matches(".0")
            .chars()
            .map(|c| c.to_digit(10).filter(|&d| d > 0))
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| r.bad("placement", "expected one non-zero digit per server"))?
    };
    if per.len() != n as usize || per.iter().sum::<u32>() != k {
        return Err(r.bad(
            "placement",
            "must have num_nodes servers holding num_replicas GPUs",
        ));
    }
    per.sort_unstable_by(|a, b| b.cmp(a));
    Ok(per)
}

/// `pollux_sia_placement_step_times.csv` with the columns the fits read.
pub(crate) fn open_pollux(dir: &Path) -> Result<CsvFile> {
    CsvFile::open(
        &dir.join("pollux_sia_placement_step_times.csv"),
        &[
            "cluster",
            "model",
            "num_nodes",
            "num_replicas",
            "placement",
            "local_bsz",
            "step_time",
        ],
    )
}

pub(super) fn read_pollux(dir: &Path) -> Result<BTreeMap<String, ArData>> {
    let f = open_pollux(dir)?;
    let mut out: BTreeMap<String, ArData> = BTreeMap::new();
    let mut batches: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in f.rows() {
        let cluster = r.str("cluster");
        let (gpu, per) = cluster_profile(cluster)
            .ok_or_else(|| r.bad("cluster", "unknown cluster profile (add it to CLUSTER_GPU)"))?;
        let n = r.positive_count("num_nodes")?;
        let k = r.positive_count("num_replicas")?;
        if n > k {
            return Err(r.bad("num_nodes", "more servers than GPUs"));
        }
        let largest = row_placement(&r, k, n)?[0];
        let m = r.positive("local_bsz")?;
        let t = r.positive("step_time")?;
        let model = r.str("model").to_string();
        batches.entry(model.clone()).or_default().push(m);
        let d = out.entry(model.clone()).or_insert(ArData {
            source: "pollux",
            proxy: proxy_for(&model),
            default_batch: 0.0,
            max_gpus: 0,
            rows: BTreeMap::new(),
        });
        d.max_gpus = d.max_gpus.max(k);
        d.rows.entry(gpu.to_string()).or_default().push(Obs {
            x: ar_features(m, k, largest, n),
            time: t,
            packed: (n > 1).then(|| ar_features(m, k, k.min(per), k.div_ceil(per))),
        });
    }
    for (model, b) in batches {
        if let Some(d) = out.get_mut(&model) {
            d.default_batch = median(&b).round();
        }
    }
    Ok(out)
}
