//! The layers both networks are made of (levels 1 and 2 in [`super::PolicyNet`], the tier head
//! in [`super::TierHead`]): affine layers, ReLU, a three-layer MLP, row normalisation, and the
//! tensors a layer is stored as.

use std::collections::HashMap;

use nalgebra::{DMatrix, DVector};

use crate::error::{Error, Result};

/// Width of the job embedding `φ` a new network is built with.
pub const EMBED: usize = 16;
/// Hidden width of the MLPs of a new network (both levels and the tier head).
pub const HIDDEN: usize = 32;

/// One affine layer, `y = W x + b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    /// `[out, in]`.
    pub weight: DMatrix<f32>,
    /// `[out]`.
    pub bias: DVector<f32>,
}

impl Dense {
    /// Rows of `x` (`[batch, in]`) through the layer: `[batch, out]`.
    pub(super) fn forward(&self, x: &DMatrix<f32>) -> DMatrix<f32> {
        let mut y = x * self.weight.transpose();
        for mut row in y.row_iter_mut() {
            row += self.bias.transpose();
        }
        y
    }

    /// A layer with weights and biases uniform in ±1/√`inputs` (as libtorch initialises linear
    /// layers), drawn from `rng`.
    pub(super) fn random(inputs: usize, outputs: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Self {
        use rand::Rng;
        let bound = 1.0 / (inputs as f32).sqrt();
        Dense {
            weight: DMatrix::from_fn(outputs, inputs, |_, _| rng.random_range(-bound..=bound)),
            bias: DVector::from_fn(outputs, |_, _| rng.random_range(-bound..=bound)),
        }
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
                self.bias.iter().copied().collect(),
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
        Ok(Dense {
            weight,
            bias: DVector::from_vec(bias.clone()),
        })
    }

    pub(super) fn inputs(&self) -> usize {
        self.weight.ncols()
    }

    pub(super) fn outputs(&self) -> usize {
        self.weight.nrows()
    }
}

pub(super) fn relu(mut m: DMatrix<f32>) -> DMatrix<f32> {
    m.apply(|x| *x = x.max(0.0));
    m
}

pub(super) fn normalise(x: &mut DMatrix<f32>, mean: &DVector<f32>, std: &DVector<f32>) {
    for mut row in x.row_iter_mut() {
        for (k, v) in row.iter_mut().enumerate() {
            *v = (*v - mean[k]) / std[k];
        }
    }
}

/// An MLP of three layers, ReLU between them.
pub(super) fn mlp(layers: &[Dense; 3], x: DMatrix<f32>) -> DMatrix<f32> {
    let h = relu(layers[0].forward(&x));
    let h = relu(layers[1].forward(&h));
    layers[2].forward(&h)
}
