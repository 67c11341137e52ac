//! The parameter-server models: DL2's measured PS/worker speeds, Optimus form.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Obs, fit_with_cv, proxy_for};
use crate::error::{Error, Result};
use crate::perf::params::{FitQuality, PsModelParams};
use crate::util::csvio::CsvFile;

/// Optimus features of a PS configuration (time = θ·x).
pub(crate) fn ps_features(batch: f64, w: f64, p: f64) -> [f64; 5] {
    [batch / w, 1.0, w / p, w, p]
}

pub(super) fn fit_ps(
    dir: &Path,
    seed: u64,
) -> Result<(BTreeMap<String, PsModelParams>, Vec<FitQuality>)> {
    let f = CsvFile::open(
        &dir.join("dl2_ps_worker_speed.csv"),
        &[
            "model",
            "tot_batch_size",
            "num_ps",
            "num_worker",
            "job_speed",
        ],
    )?;
    let consts_path = dir.join("dl2_model_constants.json");
    let text = std::fs::read_to_string(&consts_path).map_err(|e| Error::io(&consts_path, e))?;
    let consts: serde_json::Value =
        crate::util::json::parse_json(&text, &consts_path.display().to_string())?;
    let mut by_model: BTreeMap<String, (f64, Vec<Obs>, u32, u32)> = BTreeMap::new();
    for r in f.rows() {
        let model = r.str("model").to_string();
        let batch = r.positive("tot_batch_size")?;
        let p = r.positive_count("num_ps")?;
        let w = r.positive_count("num_worker")?;
        let speed = r.nonneg("job_speed")?;
        // A 0 speed (8 rows) is a run that recorded no step (every worker speed is 0 too):
        // a failed measurement, not a configuration that trains at speed 0. Left out of the fit.
        if speed == 0.0 {
            continue;
        }
        let e = by_model.entry(model).or_insert((batch, Vec::new(), 0, 0));
        if e.0 != batch {
            return Err(r.bad("tot_batch_size", "one model must have one batch size"));
        }
        e.1.push(Obs {
            x: ps_features(batch, f64::from(w), f64::from(p)).to_vec(),
            time: 1.0 / speed,
            packed: None,
        });
        e.2 = e.2.max(w);
        e.3 = e.3.max(p);
    }
    let mut out = BTreeMap::new();
    let mut quality = Vec::new();
    for (model, (batch, rows, max_w, max_p)) in by_model {
        let (th, q) = fit_with_cv(&model, "-", &rows, true, seed)?;
        let c = consts
            .get("models")
            .and_then(|m| m.get(&model))
            .ok_or_else(|| Error::Calibration {
                model: model.clone(),
                reason: format!("no entry in {}", consts_path.display()),
            })?;
        let num = |k: &str| -> Result<f64> {
            c.get(k)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| *v > 0.0)
                .ok_or_else(|| {
                    Error::invalid(
                        &consts_path.display().to_string(),
                        0,
                        &format!("models.{model}.{k}"),
                        "",
                        "missing or not > 0",
                    )
                })
        };
        out.insert(
            model.clone(),
            PsModelParams {
                theta: [th[0], th[1], th[2], th[3], th[4]],
                batch,
                max_workers: max_w,
                max_ps: max_p,
                local_comp_time_s: num("local_comp_time_s")?,
                model_size_mb: num("model_size_MB")?,
                inter_server_bw_mbps: num("inter_server_bw_MBps")?,
                intra_server_bw_mbps: num("intra_server_bw_MBps")?,
                interference_proxy: proxy_for(&model),
            },
        );
        quality.push(q);
    }
    Ok((out, quality))
}
