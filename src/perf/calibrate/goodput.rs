//! The gradient noise ratio per model from Pollux's validation runs
//! (`pollux_statistical_efficiency.csv`): `ln(grad_var / grad_sqr)` as a piecewise-linear
//! function of the fraction of training done plus a slope in the log batch, fitted by
//! least squares with Huber weights (a few epochs' statistics are wild: one deepspeech2 epoch
//! has a ratio of 10²⁵), and scored on the efficiency it predicts for a whole held-out batch
//! size (each measured batch size but the smallest, predicted from the others).

use std::collections::BTreeMap;
use std::path::Path;

use nalgebra::{DMatrix, DVector};

use super::{mean, median};
use crate::error::{Error, Result};
use crate::perf::goodput::GoodputParams;
use crate::perf::params::FitQuality;
use crate::util::csvio::CsvFile;

/// Knots of the piecewise-linear progress term (fractions of training): dense early, where
/// the ratio moves most.
const KNOTS: [f64; 7] = [0.0, 0.05, 0.15, 0.3, 0.5, 0.75, 1.0];

/// Residuals (in `ln r`) beyond this are down-weighted (Huber).
const HUBER: f64 = 1.0;

/// A small ridge on every coefficient: knots without rows stay near their neighbours' scale.
const RIDGE: f64 = 1e-3;

/// One epoch's measurement: `(batch, fraction of training, ln r)`.
type Row = (f64, f64, f64);

/// Fits every model of the file in `dir`; the fit table has one `batch-out` row per model.
pub(super) fn fit_goodput(
    dir: &Path,
) -> Result<(BTreeMap<String, GoodputParams>, Vec<FitQuality>)> {
    let f = CsvFile::open(
        &dir.join("pollux_statistical_efficiency.csv"),
        &["model", "batch_size", "grad_sqr", "grad_var"],
    )?;
    // Per model and batch, its epochs in file order.
    let mut runs: BTreeMap<String, BTreeMap<u64, Vec<(f64, f64)>>> = BTreeMap::new();
    for r in f.rows() {
        let b = r.positive("batch_size")?;
        let sqr = r.f64("grad_sqr")?;
        let var = r.f64("grad_var")?;
        runs.entry(r.str("model").to_string())
            .or_default()
            .entry(b as u64)
            .or_default()
            .push((sqr, var));
    }
    let mut params = BTreeMap::new();
    let mut quality = Vec::new();
    for (model, by_batch) in runs {
        let rows = model_rows(&by_batch);
        let init = *by_batch.keys().next().expect("a model has a batch") as f64;
        let max = *by_batch.keys().last().expect("a model has a batch") as f64;
        let fit = |rows: &[&Row]| -> Option<GoodputParams> {
            let th = fit_rows(rows, init)?;
            Some(GoodputParams {
                init_batch: init,
                max_batch: max,
                knots: KNOTS.to_vec(),
                log_ratio: th[..KNOTS.len()].to_vec(),
                batch_slope: th[KNOTS.len()],
            })
        };
        let all: Vec<&Row> = rows.iter().collect();
        let p = fit(&all).ok_or_else(|| Error::Calibration {
            model: model.clone(),
            reason: format!("no usable noise-ratio fit from {} rows", rows.len()),
        })?;
        let err = |p: &GoodputParams, r: &Row| {
            let truth = (r.2.exp() + 1.0) / (r.2.exp() + r.0 / init);
            (p.efficiency(r.1, r.0) - truth).abs() / truth
        };
        let train: Vec<f64> = all.iter().map(|r| err(&p, r)).collect();
        let mut held = Vec::new();
        for &b in by_batch.keys().skip(1) {
            let rest: Vec<&Row> = rows.iter().filter(|r| r.0 as u64 != b).collect();
            if let Some(q) = fit(&rest) {
                held.extend(rows.iter().filter(|r| r.0 as u64 == b).map(|r| err(&q, r)));
            }
        }
        quality.push(FitQuality {
            model: model.clone(),
            gpu: crate::perf::goodput::GOODPUT_PROFILE.into(),
            split: "batch-out".into(),
            rows: rows.len(),
            mape: mean(&held),
            median_ape: (!held.is_empty()).then(|| median(&held)),
            train_mape: mean(&train),
        });
        params.insert(model, p);
    }
    Ok((params, quality))
}

/// A model's usable rows: epochs with positive statistics, each at the middle of its share of
/// its run (epoch `i` of `n` at `(i + 0.5) / n`).
fn model_rows(by_batch: &BTreeMap<u64, Vec<(f64, f64)>>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (&b, epochs) in by_batch {
        let n = epochs.len() as f64;
        for (i, &(sqr, var)) in epochs.iter().enumerate() {
            if sqr > 0.0 && var > 0.0 && (var / sqr).is_finite() {
                rows.push((b as f64, (i as f64 + 0.5) / n, (var / sqr).ln()));
            }
        }
    }
    rows
}

/// The hat-function weights of `f` on [`KNOTS`], then `ln(batch / init)`.
fn features(f: f64, batch: f64, init: f64) -> Vec<f64> {
    let mut x = vec![0.0; KNOTS.len() + 1];
    let at = KNOTS.partition_point(|&k| k <= f).clamp(1, KNOTS.len() - 1);
    let t = ((f - KNOTS[at - 1]) / (KNOTS[at] - KNOTS[at - 1])).clamp(0.0, 1.0);
    x[at - 1] = 1.0 - t;
    x[at] = t;
    x[KNOTS.len()] = (batch / init).ln();
    x
}

/// Huber-weighted ridge least squares of `ln r` on [`features`] (20 reweightings).
fn fit_rows(rows: &[&Row], init: f64) -> Option<Vec<f64>> {
    if rows.is_empty() {
        return None;
    }
    let p = KNOTS.len() + 1;
    let x: Vec<Vec<f64>> = rows.iter().map(|r| features(r.1, r.0, init)).collect();
    let mut w: Vec<f64> = vec![1.0; rows.len()];
    let mut th = DVector::zeros(p);
    for _ in 0..20 {
        let a = DMatrix::from_fn(rows.len(), p, |i, j| x[i][j] * w[i].sqrt());
        let b = DVector::from_fn(rows.len(), |i, _| rows[i].2 * w[i].sqrt());
        let lhs = a.transpose() * &a + DMatrix::identity(p, p) * RIDGE;
        th = lhs.cholesky()?.solve(&(a.transpose() * b));
        for (i, r) in rows.iter().enumerate() {
            let res = (r.2 - x[i].iter().zip(th.iter()).map(|(a, b)| a * b).sum::<f64>()).abs();
            w[i] = if res <= HUBER { 1.0 } else { HUBER / res };
        }
    }
    th.iter()
        .all(|v| v.is_finite())
        .then(|| th.iter().copied().collect())
}
