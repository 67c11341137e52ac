//! Fitting the performance model to the measured tables in `datasets/` (`coda calibrate`).
//!
//! Every fit minimises *relative* squared error with non-negative coefficients, and every fit is
//! scored on rows it did not see: 5-fold cross-validation within a model and GPU type, and, for
//! all-reduce models, a leave-one-GPU-type-out prediction that measures how well the model
//! extrapolates to hardware it was never calibrated on. One file per source: `dl2` (PS models),
//! `pollux` (Pollux/Sia placement step times), `gavel` (Gavel's throughputs and pair
//! interference), `allreduce` (the all-reduce fits over both all-reduce sources); this file holds
//! the fitting machinery they share and the whole calibration.

mod allreduce;
mod dl2;
mod gavel;
mod goodput;
mod pollux;
mod spread;
mod synergy;

use std::path::Path;

use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::nnls::nnls;
use super::params::*;
use crate::error::{Error, Result};

pub(crate) use allreduce::scale_compute;
pub(crate) use dl2::ps_features;
pub(crate) use gavel::gavel_model_name;
pub(crate) use gavel::{gavel_spread, open_gavel};
pub(crate) use pollux::{cluster_profile, open_pollux, row_placement};
pub use spread::{PlacementCheck, placement_check, placement_summary};

use allreduce::fit_ar;
use dl2::fit_ps;
use gavel::{fit_interference, read_gavel_isolated};
use pollux::read_pollux;

/// Gavel job type standing in for a model in the pair-interference table. Only models of the
/// same network family are mapped; the rest use medians (see `InterferenceParams`).
pub(crate) const INTERFERENCE_PROXY: [(&str, &str); 7] = [
    ("imagenet", "ResNet-50 (batch size 64)"),
    ("cifar10", "ResNet-18 (batch size 128)"),
    ("ncf", "Recommendation (batch size 2048)"),
    ("bert", "Transformer (batch size 64)"),
    ("resnet-50", "ResNet-50 (batch size 32)"),
    ("wlm", "LM (batch size 20)"),
    ("seq2seq", "LM (batch size 80)"),
];

/// Seed of the cross-validation folds.
pub(crate) const CALIBRATION_SEED: u64 = 2024;

pub(super) fn proxy_for(model: &str) -> Option<String> {
    INTERFERENCE_PROXY
        .iter()
        .find(|(m, _)| *m == model)
        .map(|(_, p)| p.to_string())
}

/// One measured row: features of the linear time model and the measured time (seconds).
#[derive(Clone)]
pub(super) struct Obs {
    pub(super) x: Vec<f64>,
    pub(super) time: f64,
    /// All-reduce rows spread over servers: the features of the same job packed on the
    /// profile's servers, against which the model bounds the spread's price.
    pub(super) packed: Option<Vec<f64>>,
}

/// Relative-error NNLS: each row scaled by 1/time, target 1.
pub(super) fn fit_relative(rows: &[&Obs]) -> Option<Vec<f64>> {
    if rows.is_empty() {
        return None;
    }
    let p = rows[0].x.len();
    let a = DMatrix::from_fn(rows.len(), p, |i, j| rows[i].x[j] / rows[i].time);
    let b = DVector::from_element(rows.len(), 1.0);
    let th = nnls(&a, &b);
    th.iter()
        .all(|v| v.is_finite())
        .then(|| th.iter().copied().collect())
}

pub(super) fn predict(th: &[f64], x: &[f64]) -> f64 {
    th.iter().zip(x).map(|(a, b)| a * b).sum()
}

/// Absolute percentage error in the unit of the data: time (`as_speed = false`) or its inverse.
pub(super) fn ape(pred_time: f64, obs_time: f64, as_speed: bool) -> f64 {
    if as_speed {
        ((1.0 / pred_time) - (1.0 / obs_time)).abs() / (1.0 / obs_time)
    } else {
        (pred_time - obs_time).abs() / obs_time
    }
}

pub(super) fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

pub(crate) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// Full fit plus k-fold held-out errors.
pub(super) fn fit_with_cv(
    name: &str,
    gpu: &str,
    rows: &[Obs],
    as_speed: bool,
    seed: u64,
) -> Result<(Vec<f64>, FitQuality)> {
    let all: Vec<&Obs> = rows.iter().collect();
    let th = fit_relative(&all).ok_or_else(|| Error::Calibration {
        model: format!("{name} on {gpu}"),
        reason: format!("no usable fit from {} rows", rows.len()),
    })?;
    let train: Vec<f64> = rows
        .iter()
        .map(|o| ape(predict(&th, &o.x), o.time, as_speed))
        .collect();
    let k = rows.len().min(5);
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    idx.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let mut held = Vec::with_capacity(rows.len());
    if k >= 2 {
        for f in 0..k {
            let tr: Vec<&Obs> = idx
                .iter()
                .enumerate()
                .filter(|(i, _)| i % k != f)
                .map(|(_, &j)| &rows[j])
                .collect();
            let Some(t) = fit_relative(&tr) else { continue };
            for (_, &j) in idx.iter().enumerate().filter(|(i, _)| i % k == f) {
                held.push(ape(predict(&t, &rows[j].x), rows[j].time, as_speed));
            }
        }
    }
    let q = FitQuality {
        model: name.to_string(),
        gpu: gpu.to_string(),
        split: "kfold5".into(),
        rows: rows.len(),
        mape: mean(&held),
        median_ape: (!held.is_empty()).then(|| median(&held)),
        train_mape: mean(&train),
    };
    Ok((th, q))
}

/// Fits every model from the files in `dir` (a copy of `datasets/`).
pub fn calibrate(dir: &Path, estimates: Estimates) -> Result<PerfParams> {
    let seed = CALIBRATION_SEED;
    let (ps_models, mut quality) = fit_ps(dir, seed)?;
    let mut ar_data = read_pollux(dir)?;
    let (gavel, single) = read_gavel_isolated(dir)?;
    ar_data.extend(gavel);
    let envelopes = spread::envelopes(&spread::spread_pairs(dir)?);
    let (ar_models, exponent, q2) = fit_ar(ar_data, &envelopes, &estimates, seed)?;
    quality.extend(q2);
    let interference = fit_interference(dir, &single)?;
    let ar_names: Vec<String> = ar_models.keys().cloned().collect();
    let (cpu_mem_surfaces, q3) = synergy::fit_surfaces(dir)?;
    quality.extend(q3);
    let task_demands = super::demand::fit_demands(dir, &ar_names, &cpu_mem_surfaces)?;
    let (goodput, q4) = goodput::fit_goodput(dir)?;
    quality.extend(q4);
    Ok(PerfParams {
        provenance: format!(
            "coda calibrate {}: dl2_ps_worker_speed.csv + dl2_model_constants.json (PS), \
             pollux_sia_placement_step_times.csv + gavel_isolated_throughputs.csv (all-reduce), \
             gavel_colocated_throughputs.csv (interference), dl2_ps_worker_speed.csv + \
             synergy_cpu_mem_sensitivity.csv (task demands, CPU/memory surfaces), \
             pollux_statistical_efficiency.csv (gradient noise ratio); folds seeded {seed}",
            env!("CARGO_PKG_VERSION")
        ),
        ps_models,
        ar_models,
        compute_bandwidth_exponent: exponent,
        interference,
        task_demands,
        cpu_mem_surfaces,
        goodput,
        estimates,
        fit_quality: quality,
    })
}
