//! Statistical efficiency: how much training progress a sample is worth at a global batch size,
//! and so a job's *goodput* (throughput × efficiency, Pollux's term) on an allocation.
//!
//! Data-parallel SGD at global batch `M` makes progress per sample `E(M) = (r + 1) / (r + M/M₀)`
//! of what it makes at the smallest measured batch `M₀`, where `r` is the gradient noise ratio
//! (`grad_var / grad_sqr` of Pollux's measurements: the gradient noise scale in units of `M₀`).
//! A large `r` (a noisy gradient, late in training) makes a large batch almost as good per
//! sample as a small one; a small `r` (early on) makes the extra samples of a large batch
//! nearly worthless. `r` is fitted per model (`coda calibrate`, [`GoodputParams`]) as a
//! piecewise-linear function of the fraction of training done, plus a slope in the log batch.
//!
//! **How coda uses it** (`--goodput on`): a job's work stays counted as today (the trace's
//! duration at its requested allocation), and its progress rate on `k` GPUs is its throughput
//! times `E(k·b) / E(k_ref·b)`, `b` its per-GPU batch and `k_ref` its requested GPUs — so a job
//! at its requested size runs exactly as with goodput off, more GPUs help less than their
//! throughput says (less early in training), fewer help more. The batch stays the job's fixed
//! per-GPU batch times its GPUs (coda does not retune the batch per allocation as Pollux and
//! Sia do). A model without measurements keeps efficiency 1.

use serde::{Deserialize, Serialize};

/// The `gpu` column of the noise-ratio fits in the fit-quality table (they have no GPU type).
pub const GOODPUT_PROFILE: &str = "grad-noise";

/// One model's fitted gradient noise ratio (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoodputParams {
    /// `M₀`: the smallest global batch measured (efficiency 1 there by definition).
    pub init_batch: f64,
    /// The largest global batch measured; the batch term is not extrapolated beyond
    /// `[init_batch, max_batch]`.
    pub max_batch: f64,
    /// Fractions of training (0 to 1, ascending) where `ln r` is given.
    pub knots: Vec<f64>,
    /// `ln r` at each knot, at batch `init_batch`; linear in between.
    pub log_ratio: Vec<f64>,
    /// `d ln r / d ln(M / M₀)`.
    pub batch_slope: f64,
}

impl GoodputParams {
    /// The gradient noise ratio `r` after the fraction `progress` of training at global batch
    /// `batch`.
    pub fn noise_ratio(&self, progress: f64, batch: f64) -> f64 {
        let f = progress.clamp(0.0, 1.0);
        let k = &self.knots;
        let v = &self.log_ratio;
        let at = k.partition_point(|&x| x <= f).clamp(1, k.len().max(2) - 1);
        let base = match (k.get(at - 1), k.get(at), v.get(at - 1), v.get(at)) {
            (Some(&k0), Some(&k1), Some(&v0), Some(&v1)) if k1 > k0 => {
                let t = ((f - k0) / (k1 - k0)).clamp(0.0, 1.0);
                v0 + t * (v1 - v0)
            }
            _ => v.first().copied().unwrap_or(0.0),
        };
        let m = batch.clamp(self.init_batch, self.max_batch.max(self.init_batch));
        (base + self.batch_slope * (m / self.init_batch).ln()).exp()
    }

    /// `E(M)`: progress per sample at global batch `batch` relative to batch `init_batch`, after
    /// the fraction `progress` of training.
    pub fn efficiency(&self, progress: f64, batch: f64) -> f64 {
        let r = self.noise_ratio(progress, batch);
        (r + 1.0) / (r + batch / self.init_batch)
    }

    /// The progress-rate factor of training on `gpus` GPUs instead of `reference_gpus`, each with
    /// per-GPU batch `local_batch` (see the [module docs](self)): `E(gpus·b) / E(ref·b)`.
    pub fn relative(&self, progress: f64, local_batch: f64, gpus: u32, reference_gpus: u32) -> f64 {
        let e = |k: u32| self.efficiency(progress, f64::from(k.max(1)) * local_batch);
        let f = e(gpus) / e(reference_gpus);
        if f.is_finite() && f > 0.0 { f } else { 1.0 }
    }

    /// An upper bound on [`GoodputParams::relative`] from `progress` to the end of training:
    /// the largest `E(gpus·b)` times the largest `1 / E(ref·b)` over that stretch. Each is
    /// monotone in its `r` (`E = (r + 1) / (r + s)`), and `ln r` is piecewise linear in the
    /// progress, so each extreme lies at `progress`, a knot after it, or the end. A bound on a
    /// job's remaining time divides by it.
    pub fn max_relative(
        &self,
        progress: f64,
        local_batch: f64,
        gpus: u32,
        reference_gpus: u32,
    ) -> f64 {
        let from = progress.clamp(0.0, 1.0);
        let at: Vec<f64> = self
            .knots
            .iter()
            .copied()
            .filter(|&k| k > from)
            .chain([from, 1.0])
            .collect();
        let e = |f: f64, k: u32| self.efficiency(f, f64::from(k.max(1)) * local_batch);
        let top = at.iter().map(|&f| e(f, gpus)).fold(0.0, f64::max);
        let low = at
            .iter()
            .map(|&f| e(f, reference_gpus))
            .fold(f64::INFINITY, f64::min);
        let bound = top / low;
        if bound.is_finite() && bound > 0.0 {
            bound
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> GoodputParams {
        GoodputParams {
            init_batch: 128.0,
            max_batch: 4096.0,
            knots: vec![0.0, 0.5, 1.0],
            log_ratio: vec![0.0, 3.0_f64.ln(), 100.0_f64.ln()],
            batch_slope: 0.0,
        }
    }

    #[test]
    fn efficiency_is_one_at_the_initial_batch_and_falls_with_the_batch() {
        let p = params();
        assert!((p.efficiency(0.3, 128.0) - 1.0).abs() < 1e-12);
        // r = 1 at the start: E(4·M₀) = 2 / 5.
        assert!((p.efficiency(0.0, 512.0) - 0.4).abs() < 1e-12);
        // r = 3 half-way: E(4·M₀) = 4 / 7.
        assert!((p.efficiency(0.5, 512.0) - 4.0 / 7.0).abs() < 1e-12);
        assert!(p.efficiency(1.0, 512.0) > p.efficiency(0.5, 512.0));
    }

    #[test]
    fn max_relative_bounds_the_factor_over_the_rest_of_training() {
        let p = GoodputParams {
            batch_slope: 0.4,
            ..params()
        };
        for (from, gpus) in [(0.0, 2), (0.2, 2), (0.3, 8), (0.7, 8)] {
            let top = p.max_relative(from, 128.0, gpus, 4);
            for i in 0..=100 {
                let f = from + (1.0 - from) * f64::from(i) / 100.0;
                assert!(p.relative(f, 128.0, gpus, 4) <= top + 1e-12);
            }
        }
    }

    #[test]
    fn relative_factor_is_one_at_the_reference_and_ordered_around_it() {
        let p = params();
        for f in [0.0, 0.4, 0.9] {
            assert!((p.relative(f, 128.0, 4, 4) - 1.0).abs() < 1e-12);
            assert!(p.relative(f, 128.0, 8, 4) < 1.0);
            assert!(p.relative(f, 128.0, 2, 4) > 1.0);
        }
    }
}
