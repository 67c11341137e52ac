//! The layers both networks are made of (levels 1 and 2 in [`super::PolicyNet`], the tier head
//! in [`super::TierHead`]): affine layers, ReLU, a three-layer MLP, row normalisation, and the
//! tensors a layer is stored as.
//!
//! **Inference sums exactly as the matrices did.** A forward pass runs on flat row-major
//! buffers (no matrix is allocated per call: level 2 scores a few dozen rows per placement
//! step, thousands of steps per round), yet every output is the same `f32` the earlier
//! `nalgebra` product gave, bit for bit: `x · Wᵀ` for a batch of more than five rows with more
//! than five inputs and outputs was a blocked GEMM (`matrixmultiply`), whose every output is one
//! chain over the inputs in order from zero — fused multiply-adds where that kernel fuses them
//! (probed once, [`gemm_fuses`]); any smaller product was a column-by-column GEMV, one chain of
//! separate multiplies and adds starting at the first product. The bias is added after the sum.
//! A schedule therefore never depends on how fast it was computed (`identical_to_nalgebra`
//! tests it on every batch size and layer shape the networks use).

use std::collections::HashMap;
use std::sync::OnceLock;

use nalgebra::DMatrix;
#[cfg(test)]
use nalgebra::DVector;

use crate::error::{Error, Result};

/// Width of the job embedding `φ` a new network is built with.
pub const EMBED: usize = 16;
/// Hidden width of the MLPs of a new network (both levels and the tier head).
pub const HIDDEN: usize = 32;

/// One affine layer, `y = W x + b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    /// `[out, in]`.
    weight: DMatrix<f32>,
    /// `[out]`.
    bias: Vec<f32>,
    /// The weights transposed, row-major `[in][out]`: what a forward pass reads (one input
    /// updates every output in turn, a loop the compiler vectorises).
    wt: Vec<f32>,
}

impl Dense {
    /// The layer of these weights (`[out, in]`) and biases (`[out]`).
    pub(super) fn new(weight: DMatrix<f32>, bias: Vec<f32>) -> Self {
        debug_assert_eq!(weight.nrows(), bias.len());
        let (outputs, inputs) = weight.shape();
        let wt = (0..inputs)
            .flat_map(|k| (0..outputs).map(move |j| (j, k)))
            .map(|ix| weight[ix])
            .collect();
        Dense { weight, bias, wt }
    }

    /// `[out, in]`.
    pub fn weight(&self) -> &DMatrix<f32> {
        &self.weight
    }

    /// `[out]`.
    pub fn bias(&self) -> &[f32] {
        &self.bias
    }

    /// A layer with weights and biases uniform in ±1/√`inputs` (as libtorch initialises linear
    /// layers), drawn from `rng`.
    pub(super) fn random(inputs: usize, outputs: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Self {
        use rand::Rng;
        let bound = 1.0 / (inputs as f32).sqrt();
        let weight = DMatrix::from_fn(outputs, inputs, |_, _| rng.random_range(-bound..=bound));
        let bias = (0..outputs)
            .map(|_| rng.random_range(-bound..=bound))
            .collect();
        Dense::new(weight, bias)
    }

    /// Its two tensors, `{name}.weight` (row-major) and `{name}.bias`.
    pub(super) fn named(&self, name: &str) -> [(String, Vec<usize>, Vec<f32>); 2] {
        let (r, c) = self.weight.shape();
        let data: Vec<f32> = (0..r)
            .flat_map(|i| (0..c).map(move |k| (i, k)))
            .map(|ix| self.weight[ix])
            .collect();
        [
            (format!("{name}.weight"), vec![r, c], data),
            (
                format!("{name}.bias"),
                vec![self.bias.len()],
                self.bias.clone(),
            ),
        ]
    }

    /// The layer `name` of `inputs` inputs from named tensors; `origin` names the file in errors.
    pub(super) fn from_named(
        tensors: &HashMap<String, (Vec<usize>, Vec<f32>)>,
        name: &str,
        inputs: usize,
        origin: &str,
    ) -> Result<Self> {
        let bad = |reason: String| Error::ModelFile {
            path: origin.to_string(),
            reason,
        };
        let get = |n: &str| {
            tensors
                .get(n)
                .ok_or_else(|| bad(format!("missing tensor `{n}`")))
        };
        let (shape, data) = get(&format!("{name}.weight"))?;
        if shape.len() != 2 || shape[1] != inputs || shape[0] == 0 {
            return Err(bad(format!(
                "tensor `{name}.weight` has shape {shape:?}, expected [_, {inputs}]"
            )));
        }
        let weight = DMatrix::from_row_slice(shape[0], shape[1], data);
        let (bshape, bias) = get(&format!("{name}.bias"))?;
        if bshape != &[shape[0]] {
            return Err(bad(format!(
                "tensor `{name}.bias` has shape {bshape:?}, expected [{}]",
                shape[0]
            )));
        }
        Ok(Dense::new(weight, bias.clone()))
    }

    pub(super) fn inputs(&self) -> usize {
        self.weight.ncols()
    }

    pub(super) fn outputs(&self) -> usize {
        self.weight.nrows()
    }

    /// `n` rows of `x` (row-major, [`Dense::inputs`] each) through the layer: `y` becomes `n`
    /// rows of [`Dense::outputs`], summed as the module docs say.
    pub(super) fn forward_rows(&self, x: &[f32], n: usize, y: &mut Vec<f32>) {
        let (inputs, outputs) = (self.inputs(), self.outputs());
        debug_assert_eq!(x.len(), n * inputs);
        y.clear();
        y.resize(n * outputs, 0.0);
        if n == 0 || outputs == 0 {
            return;
        }
        // An empty sum (no inputs) stays zero, as in the GEMV path.
        let gemm = n > 5 && inputs > 5 && outputs > 5;
        match (gemm, gemm_fuses()) {
            _ if inputs == 0 => {}
            (true, true) => sum_fused(x, &self.wt, inputs, outputs, y),
            (true, false) => sum_separate(x, &self.wt, inputs, outputs, y),
            (false, _) => sum_gemv(x, &self.wt, inputs, outputs, y),
        }
        if let [b] = self.bias[..] {
            y.iter_mut().for_each(|v| *v += b);
            return;
        }
        for row in y.chunks_exact_mut(outputs) {
            for (v, b) in row.iter_mut().zip(&self.bias) {
                *v += b;
            }
        }
    }
}

/// Whether the blocked GEMM `nalgebra` hands products of more than five rows, inputs and outputs
/// to fuses its multiply-adds (its kernel is chosen by the CPU): probed once on a product whose
/// result tells the two apart.
pub(super) fn gemm_fuses() -> bool {
    static FUSES: OnceLock<bool> = OnceLock::new();
    *FUSES.get_or_init(|| {
        // x0·w0 + x1·w1 with x1·w1 = 1 + 2⁻¹¹ + 2⁻²⁴ exactly: fused, the 2⁻²⁴ survives;
        // rounded first, it is a tie that rounds away, and the sum is 0.
        let p = 1.0 + f32::powi(2.0, -12);
        let mut x = DMatrix::<f32>::zeros(6, 6);
        x[(0, 0)] = -(1.0 + f32::powi(2.0, -11));
        x[(0, 1)] = p;
        let mut w = DMatrix::<f32>::zeros(6, 6);
        w[(0, 0)] = 1.0;
        w[(1, 0)] = p;
        (&x * &w)[(0, 0)] != 0.0
    })
}

/// GEMM, fused: every output one chain of fused multiply-adds over the inputs from zero.
/// `mul_add` is one instruction only where the compiler may use the CPU's FMA unit, so the loop
/// is compiled a second time for CPUs that have one and chosen at run time.
#[allow(unsafe_code)]
fn sum_fused(x: &[f32], wt: &[f32], inputs: usize, outputs: usize, y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has the features the function is compiled for (checked above).
        unsafe { sum_fused_avx2(x, wt, inputs, outputs, y) };
        return;
    }
    sum_fused_body(x, wt, inputs, outputs, y);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sum_fused_avx2(x: &[f32], wt: &[f32], inputs: usize, outputs: usize, y: &mut [f32]) {
    sum_fused_body(x, wt, inputs, outputs, y);
}

/// Outputs taken together by the fused kernel (two AVX registers of `f32`).
const LANES: usize = 16;

#[inline(always)]
fn sum_fused_body(x: &[f32], wt: &[f32], inputs: usize, outputs: usize, y: &mut [f32]) {
    // Accumulators held in registers, four rows × `LANES` outputs at a time (each weight loaded
    // once serves four rows); every output is still one chain over the inputs in order from
    // zero, so the result is bit for bit the naive loop's. Zipped iterators, not indices: no
    // bounds check in the inner loop.
    let blocks = outputs / LANES;
    let w_rows = || wt.chunks_exact(outputs).take(inputs);
    let mut xs = x.chunks_exact(inputs * 4);
    let mut ys = y.chunks_exact_mut(outputs * 4);
    for (xr, yr) in (&mut xs).zip(&mut ys) {
        let (x0, rest) = xr.split_at(inputs);
        let (x1, rest) = rest.split_at(inputs);
        let (x2, x3) = rest.split_at(inputs);
        for b in 0..blocks {
            let mut acc = [[0.0f32; LANES]; 4];
            for ((((wk, &a0), &a1), &a2), &a3) in w_rows().zip(x0).zip(x1).zip(x2).zip(x3) {
                let w: &[f32; LANES] = wk[b * LANES..][..LANES].try_into().expect("a block");
                for l in 0..LANES {
                    acc[0][l] = a0.mul_add(w[l], acc[0][l]);
                    acc[1][l] = a1.mul_add(w[l], acc[1][l]);
                    acc[2][l] = a2.mul_add(w[l], acc[2][l]);
                    acc[3][l] = a3.mul_add(w[l], acc[3][l]);
                }
            }
            for (r, a) in acc.iter().enumerate() {
                yr[r * outputs + b * LANES..][..LANES].copy_from_slice(a);
            }
        }
        fused_tail(xr, wt, inputs, outputs, blocks * LANES, yr);
    }
    let (xr, yr) = (xs.remainder(), ys.into_remainder());
    for (xi, yi) in xr.chunks_exact(inputs).zip(yr.chunks_exact_mut(outputs)) {
        for b in 0..blocks {
            let mut a = [0.0f32; LANES];
            for (wk, &xk) in w_rows().zip(xi) {
                let w: &[f32; LANES] = wk[b * LANES..][..LANES].try_into().expect("a block");
                for l in 0..LANES {
                    a[l] = xk.mul_add(w[l], a[l]);
                }
            }
            yi[b * LANES..][..LANES].copy_from_slice(&a);
        }
        fused_tail(xi, wt, inputs, outputs, blocks * LANES, yi);
    }
}

/// The outputs from `from` on (fewer than a block) of the rows in `x`, one chain each.
#[inline(always)]
fn fused_tail(x: &[f32], wt: &[f32], inputs: usize, outputs: usize, from: usize, y: &mut [f32]) {
    if from == outputs {
        return;
    }
    for (xi, yi) in x.chunks_exact(inputs).zip(y.chunks_exact_mut(outputs)) {
        for o in from..outputs {
            let mut a = 0.0f32;
            for (k, &xk) in xi.iter().enumerate() {
                a = xk.mul_add(wt[k * outputs + o], a);
            }
            yi[o] = a;
        }
    }
}

/// GEMM, not fused: every output one chain of multiplies and adds over the inputs from zero.
fn sum_separate(x: &[f32], wt: &[f32], inputs: usize, outputs: usize, y: &mut [f32]) {
    for (xi, yi) in x.chunks_exact(inputs).zip(y.chunks_exact_mut(outputs)) {
        yi.fill(0.0);
        for (&xk, wk) in xi.iter().zip(wt.chunks_exact(outputs)) {
            for (a, &w) in yi.iter_mut().zip(wk) {
                *a += xk * w;
            }
        }
    }
}

/// GEMV, column by column: every output the first product, then each later product added.
fn sum_gemv(x: &[f32], wt: &[f32], inputs: usize, outputs: usize, y: &mut [f32]) {
    if outputs == 1 {
        // One output (a score head): a plain dot product per row, in the same order.
        for (xi, yi) in x.chunks_exact(inputs).zip(y.iter_mut()) {
            let mut a = xi[0] * wt[0];
            for (&xk, &w) in xi[1..].iter().zip(&wt[1..inputs]) {
                a += xk * w;
            }
            *yi = a;
        }
        return;
    }
    for (xi, yi) in x.chunks_exact(inputs).zip(y.chunks_exact_mut(outputs)) {
        for (a, &w) in yi.iter_mut().zip(&wt[..outputs]) {
            *a = xi[0] * w;
        }
        for (&xk, wk) in xi[1..].iter().zip(wt[outputs..].chunks_exact(outputs)) {
            for (a, &w) in yi.iter_mut().zip(wk) {
                *a += xk * w;
            }
        }
    }
}

/// ReLU in place.
pub(super) fn relu(v: &mut [f32]) {
    for x in v {
        *x = x.max(0.0);
    }
}

/// Rows of `width` values normalised in place, `(x − mean) / std` per feature.
pub(super) fn normalise(x: &mut [f32], mean: &[f32], std: &[f32]) {
    let width = mean.len();
    for row in x.chunks_exact_mut(width) {
        for ((v, m), s) in row.iter_mut().zip(mean).zip(std) {
            *v = (*v - m) / s;
        }
    }
}

/// The buffers of an MLP pass (its input rows and two hidden activations), kept between calls
/// so that the hot loops do not allocate.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scratch {
    /// The input rows, row-major: filled by the caller.
    pub input: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
}

/// An MLP of three layers, ReLU between them: the `n` rows of `s.input` in, one row of the last
/// layer's outputs per input row into `out`.
pub(super) fn mlp(layers: &[Dense; 3], n: usize, s: &mut Scratch, out: &mut Vec<f32>) {
    layers[0].forward_rows(&s.input, n, &mut s.a);
    relu(&mut s.a);
    layers[1].forward_rows(&s.a, n, &mut s.b);
    relu(&mut s.b);
    layers[2].forward_rows(&s.b, n, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The forward pass as it was: `nalgebra` products.
    fn reference(d: &Dense, x: &DMatrix<f32>) -> DMatrix<f32> {
        let mut y = x * d.weight.transpose();
        let b = DVector::from_vec(d.bias.clone());
        for mut row in y.row_iter_mut() {
            row += b.transpose();
        }
        y
    }

    #[test]
    fn identical_to_nalgebra() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        // Every shape the networks use (level 1's φ and MLP, level 2, the tier head and its
        // unit head), and the edges of the GEMM/GEMV switch.
        let shapes = [
            (14, 16),
            (46, 32),
            (32, 32),
            (32, 1),
            (24, 32),
            (9, 32),
            (1, 1),
            (6, 6),
            (5, 6),
            (6, 5),
        ];
        for (inputs, outputs) in shapes {
            let layer = Dense::random(inputs, outputs, &mut rng);
            for n in (0..=12).chain([33, 100]) {
                // Values over several orders of magnitude, signs mixed, some exact zeros.
                let x = DMatrix::from_fn(n, inputs, |_, _| {
                    if rng.random_bool(0.1) {
                        0.0
                    } else {
                        rng.random_range(-1.0f32..1.0) * 10f32.powi(rng.random_range(-3..4))
                    }
                });
                let flat: Vec<f32> = x.transpose().iter().copied().collect();
                let mut y = Vec::new();
                layer.forward_rows(&flat, n, &mut y);
                let want = reference(&layer, &x);
                let want: Vec<u32> = want.transpose().iter().map(|v| v.to_bits()).collect();
                let got: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "{n} rows through a {inputs}→{outputs} layer");
            }
        }
    }
}
