//! The all-reduce models from both sources: per model and GPU type, the step-time fit with its
//! measured spread envelope, the bandwidth extrapolation to GPU types never measured, and the
//! leave-one-GPU-type-out score.

use std::collections::BTreeMap;

use super::{Obs, ape, fit_with_cv, mean, median, predict};
use crate::error::{Error, Result};
use crate::perf::params::{ArModelParams, ArStepParams, Estimates, FitQuality};

/// Features of an all-reduce configuration (time = θ·x), matching [`ArStepParams::parts`]:
/// `k` GPUs on `n` servers, at most `largest` on one.
pub(super) fn ar_features(m: f64, k: u32, largest: u32, n: u32) -> Vec<f64> {
    let g = largest.min(k);
    let local = f64::from(u8::from(g >= 2));
    let net = f64::from(u8::from(k > 1 && n > 1));
    vec![
        1.0,
        m,
        local,
        local * f64::from(g.saturating_sub(2)),
        net,
        net * f64::from(k.saturating_sub(2)),
    ]
}

/// Measured all-reduce rows of one model, keyed by GPU type.
pub(super) struct ArData {
    pub(super) source: &'static str,
    pub(super) proxy: Option<String>,
    pub(super) default_batch: f64,
    pub(super) max_gpus: u32,
    pub(super) rows: BTreeMap<String, Vec<Obs>>,
}

/// The all-reduce fits per model and GPU type, each with its measured spread envelope
/// (`envelopes`, keyed by (model, GPU type); `[1, 1]` where none was measured).
pub(super) fn fit_ar(
    data: BTreeMap<String, ArData>,
    envelopes: &BTreeMap<(String, String), (f64, f64)>,
    est: &Estimates,
    seed: u64,
) -> Result<(BTreeMap<String, ArModelParams>, f64, Vec<FitQuality>)> {
    let mut quality = Vec::new();
    let mut fits: BTreeMap<String, BTreeMap<String, ArStepParams>> = BTreeMap::new();
    for (model, d) in &data {
        for (gpu, rows) in &d.rows {
            let (th, q) = fit_with_cv(model, gpu, rows, false, seed)?;
            let (spread_min, spread_max) = envelopes
                .get(&(model.clone(), gpu.clone()))
                .copied()
                .unwrap_or((1.0, 1.0));
            fits.entry(model.clone()).or_default().insert(
                gpu.clone(),
                ArStepParams {
                    spread_min,
                    spread_max,
                    ..ArStepParams::from_vec(&th)
                },
            );
            quality.push(q);
        }
    }
    let exponent = bandwidth_exponent(&fits, &data, est, None);
    // Leave-one-GPU-type-out: predict every row of one GPU type from the other types only.
    for (model, d) in &data {
        if d.rows.len() < 2 {
            continue;
        }
        for (gpu, rows) in &d.rows {
            let Some(tf) = est.gpu_mem_bandwidth.get(gpu) else {
                continue;
            };
            let b = bandwidth_exponent(&fits, &data, est, Some(gpu));
            let others: BTreeMap<String, ArStepParams> = fits[model]
                .iter()
                .filter(|(g, _)| *g != gpu)
                .map(|(g, p)| (g.clone(), *p))
                .collect();
            let Some(u) = unmeasured(&others, est, b) else {
                continue;
            };
            let p = scale_compute(&u, tf, b);
            let errs: Vec<f64> = rows
                .iter()
                .map(|o| ape(priced(&p, o), o.time, false))
                .collect();
            quality.push(FitQuality {
                model: model.clone(),
                gpu: gpu.clone(),
                split: "gpu-out".into(),
                rows: rows.len(),
                mape: mean(&errs),
                median_ape: (!errs.is_empty()).then(|| median(&errs)),
                train_mape: None,
            });
        }
    }
    let mut out = BTreeMap::new();
    for (model, d) in data {
        let per_gpu = fits.remove(&model).unwrap_or_default();
        let unmeasured_gpu =
            unmeasured(&per_gpu, est, exponent).ok_or_else(|| Error::Calibration {
                model: model.clone(),
                reason: "no GPU type with a known memory-bandwidth estimate to extrapolate from"
                    .into(),
            })?;
        out.insert(
            model.clone(),
            ArModelParams {
                source: d.source.into(),
                default_local_batch: d.default_batch,
                max_gpus_measured: d.max_gpus,
                per_gpu,
                unmeasured_gpu,
                interference_proxy: d.proxy,
            },
        );
    }
    Ok((out, exponent, quality))
}

/// The step time `p` prices row `o` at, as [`super::PerfModel::speed`] would: a spread row
/// bounded by the envelope against the same job packed.
pub(super) fn priced(p: &ArStepParams, o: &Obs) -> f64 {
    let th = to_vec(p);
    let parts = |x: &[f64]| {
        (
            th[0] * x[0] + th[1] * x[1],
            th[2] * x[2] + th[3] * x[3],
            th[4] * x[4] + th[5] * x[5],
        )
    };
    match &o.packed {
        Some(px) => {
            let (c, i, n) = parts(px);
            let (c, i, n) = p.within_envelope(parts(&o.x), c + i + n);
            c + i + n
        }
        None => predict(&th, &o.x),
    }
}

pub(super) fn to_vec(p: &ArStepParams) -> Vec<f64> {
    vec![
        p.compute_base_s,
        p.compute_per_sample_s,
        p.local_base_s,
        p.local_per_gpu_s,
        p.net_base_s,
        p.net_per_gpu_s,
    ]
}

/// Compute terms at 1 GB/s scaled to a GPU of `bandwidth` GB/s.
pub(crate) fn scale_compute(u: &ArStepParams, bandwidth: f64, exponent: f64) -> ArStepParams {
    let f = bandwidth.powf(-exponent);
    ArStepParams {
        compute_base_s: u.compute_base_s * f,
        compute_per_sample_s: u.compute_per_sample_s * f,
        ..*u
    }
}

/// Parameters for a GPU type never measured: compute terms brought to 1 GB/s with the fitted
/// exponent (median over the measured types), synchronisation terms and the spread envelope's
/// bounds the median over them.
/// Medians beat the nearest measured GPU type (by FP32 TFLOP/s) in leave-one-GPU-type-out tests on
/// the Pollux/Sia models (50 % vs 146 % MAPE): one outlying profile cannot drag them.
pub(super) fn unmeasured(
    per_gpu: &BTreeMap<String, ArStepParams>,
    est: &Estimates,
    b: f64,
) -> Option<ArStepParams> {
    let known: Vec<(f64, &ArStepParams)> = per_gpu
        .iter()
        .filter_map(|(g, p)| est.gpu_mem_bandwidth.get(g).map(|t| (t, p)))
        .collect();
    if known.is_empty() {
        return None;
    }
    let med = |f: &dyn Fn(f64, &ArStepParams) -> f64| {
        median(&known.iter().map(|(t, p)| f(*t, p)).collect::<Vec<_>>())
    };
    Some(ArStepParams {
        compute_base_s: med(&|t, p| p.compute_base_s * t.powf(b)),
        compute_per_sample_s: med(&|t, p| p.compute_per_sample_s * t.powf(b)),
        local_base_s: med(&|_, p| p.local_base_s),
        local_per_gpu_s: med(&|_, p| p.local_per_gpu_s),
        net_base_s: med(&|_, p| p.net_base_s),
        net_per_gpu_s: med(&|_, p| p.net_per_gpu_s),
        spread_min: med(&|_, p| p.spread_min),
        spread_max: med(&|_, p| p.spread_max),
    })
}

/// Slope `b` of `log compute = a_model − b·log bandwidth`, fitted across models and GPU types
/// (each model's mean removed), optionally leaving one GPU type out.
pub(super) fn bandwidth_exponent(
    fits: &BTreeMap<String, BTreeMap<String, ArStepParams>>,
    data: &BTreeMap<String, ArData>,
    est: &Estimates,
    leave_out: Option<&str>,
) -> f64 {
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (model, per_gpu) in fits {
        let m = data[model].default_batch;
        let pts: Vec<(f64, f64)> = per_gpu
            .iter()
            .filter(|(g, _)| Some(g.as_str()) != leave_out)
            .filter_map(|(g, p)| {
                let c = p.compute_base_s + p.compute_per_sample_s * m;
                est.gpu_mem_bandwidth
                    .get(g)
                    .filter(|_| c > 0.0)
                    .map(|t| (t.ln(), c.ln()))
            })
            .collect();
        if pts.len() < 2 {
            continue;
        }
        let mx = pts.iter().map(|p| p.0).sum::<f64>() / pts.len() as f64;
        let my = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
        for (x, y) in pts {
            sxy += (x - mx) * (y - my);
            sxx += (x - mx) * (x - mx);
        }
    }
    if sxx > 0.0 {
        (-sxy / sxx).max(0.0)
    } else {
        1.0
    }
}
