//! Imitation training of the two levels with libtorch (the `train` feature; with its [`rl`]
//! submodule, reinforcement learning, the only code that names `tch`). The networks are the ones
//! [`PolicyNet`] evaluates in plain Rust; the trained weights leave through
//! [`TchPolicy::to_policy_net`], and a parity test checks that both forward passes agree.
//!
//! Level 1 minimises the cross-entropy of the expert's choice among each job's rows (options and
//! wait); level 2 the cross-entropy of the expert's server among the candidates of each
//! teacher-forced step ([`crate::learn::examples`]). Each level is first trained on its own,
//! then both together. Everything random takes the seed; libtorch runs one intra-op thread (its
//! own pool thrashes on a small shared machine, and one thread keeps runs byte-identical).

pub mod critic;
mod curves;
mod imitation;
pub mod rl;
pub mod tiers;

pub use curves::{EpochLog, write_curve};
pub use imitation::{Trained, train};

use std::collections::HashMap;
use std::path::PathBuf;

use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

use super::examples::{ChoiceExample, PlaceExample};
use crate::error::{Error, Result};
use crate::policies::learned::features::{JOB_FEATURES, L1_WIDTH, PLACE_FEATURES};
use crate::policies::learned::{EMBED, HIDDEN, PolicyNet};

/// Training settings (defaults written down here, checked once by [`TrainConfig::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// Seed of initialisation and batch order.
    pub seed: u64,
    /// Epochs of level 1 alone, of level 2 alone, then of both.
    pub epochs: (usize, usize, usize),
    /// Rounds per level-1 batch; level-2 batches hold the steps of as many rounds.
    pub batch_rounds: usize,
    /// AdamW's learning rate.
    pub learning_rate: f64,
    /// AdamW's decoupled weight decay.
    pub weight_decay: f64,
    /// Every this many epochs, a checkpoint in `run_dir` (0: none).
    pub checkpoint_every: usize,
    /// Where checkpoints and the learning curve go.
    pub run_dir: PathBuf,
    /// Features the networks may not read (an ablation): normalised to a constant 0 in
    /// training and, through the weights file's normalisation, at inference.
    pub drop_features: Vec<String>,
    /// Where it trains.
    pub device: Device,
    /// Weights to start from (fine-tuning; `None`: fresh, seeded). A file of fewer job features
    /// starts from its [`PolicyNet::widened`] self, the job features it did not read at zero
    /// weight and normalised by the training rows; the others keep its normalisation, so
    /// training starts from exactly its decisions. Its CPU/memory tier head is kept.
    pub init: Option<PolicyNet>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            seed: 0,
            epochs: (40, 40, 20),
            batch_rounds: 8,
            learning_rate: 1e-3,
            weight_decay: 0.01,
            checkpoint_every: 20,
            run_dir: PathBuf::from("train-run"),
            drop_features: Vec::new(),
            device: Device::cuda_if_available(),
            init: None,
        }
    }
}

impl TrainConfig {
    /// Rejects settings out of range.
    pub fn check(&self) -> Result<()> {
        let known = |f: &String| {
            JOB_FEATURES.contains(&f.as_str())
                || crate::policies::learned::features::OPTION_FEATURES.contains(&f.as_str())
                || PLACE_FEATURES.contains(&f.as_str())
        };
        if let Some(f) = self.drop_features.iter().find(|f| !known(f)) {
            return Err(Error::setting(
                "train config",
                "drop_features",
                f,
                "a feature name of models/POLICY.md",
            ));
        }
        if self.batch_rounds == 0 {
            return Err(Error::setting(
                "train config",
                "batch_rounds",
                0,
                "must be >= 1",
            ));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(Error::setting(
                "train config",
                "weight_decay",
                self.weight_decay,
                "must be >= 0 and finite",
            ));
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return Err(Error::setting(
                "train config",
                "learning_rate",
                self.learning_rate,
                "must be positive and finite",
            ));
        }
        Ok(())
    }
}

/// The two levels as libtorch modules, named as the weights file names them.
pub struct TchPolicy {
    vs: nn::VarStore,
    phi: nn::Linear,
    l1: [nn::Linear; 3],
    l2: [nn::Linear; 3],
}

impl TchPolicy {
    /// Fresh modules of the default widths on `device`.
    pub fn new(device: Device) -> Self {
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let l1 = &root / "l1";
        let l2 = &root / "l2";
        let lin =
            |p: nn::Path, i: usize, o: usize| nn::linear(p, i as i64, o as i64, Default::default());
        let phi = lin(&l1 / "phi", JOB_FEATURES.len(), EMBED);
        let l1m = [
            lin(&l1 / "fc1", L1_WIDTH + EMBED, HIDDEN),
            lin(&l1 / "fc2", HIDDEN, HIDDEN),
            lin(&l1 / "out", HIDDEN, 1),
        ];
        let np = PLACE_FEATURES.len();
        let l2m = [
            lin(&l2 / "fc1", np, HIDDEN),
            lin(&l2 / "fc2", HIDDEN, HIDDEN),
            lin(&l2 / "out", HIDDEN, 1),
        ];
        TchPolicy {
            vs,
            phi,
            l1: l1m,
            l2: l2m,
        }
    }

    /// Copies `net`'s weights in (its hidden widths must be the defaults; a network of fewer
    /// job features is [`PolicyNet::widened`] first).
    pub fn load(&mut self, net: &PolicyNet) -> Result<()> {
        let tensors: HashMap<String, (Vec<usize>, Vec<f32>)> = net
            .widened()
            .tensors()
            .into_iter()
            .map(|(n, s, d)| (n, (s, d)))
            .collect();
        tch::no_grad(|| {
            for (name, mut var) in self.vs.variables() {
                let (shape, data) = tensors.get(&name).ok_or_else(|| Error::ModelFile {
                    path: "policy".into(),
                    reason: format!("no tensor `{name}`"),
                })?;
                let dims: Vec<i64> = shape.iter().map(|&x| x as i64).collect();
                if var.size() != dims {
                    return Err(Error::ModelFile {
                        path: "policy".into(),
                        reason: format!("`{name}` is {shape:?}, the trainer's {:?}", var.size()),
                    });
                }
                var.copy_(&Tensor::from_slice(data).view(dims.as_slice()));
            }
            Ok(())
        })
    }

    /// Level-1 logits of normalised candidate rows `cx` (`[C, L1_WIDTH]`), with jobs `jx`
    /// (`[J, jobs features]`) pooled per round (`j_round`, `c_round`: round of each row).
    pub fn level1(
        &self,
        jx: &Tensor,
        j_round: &Tensor,
        rounds: i64,
        cx: &Tensor,
        c_round: &Tensor,
    ) -> Tensor {
        let (_, mean) = pooled(&self.phi.forward(jx).relu(), j_round, rounds);
        let x = Tensor::cat(&[cx.shallow_clone(), mean.index_select(0, c_round)], 1);
        let h = self.l1[0].forward(&x).relu();
        let h = self.l1[1].forward(&h).relu();
        self.l1[2].forward(&h).squeeze_dim(1)
    }

    /// Level-2 scores of normalised rows `x` (`[N, place features]`).
    pub fn level2(&self, x: &Tensor) -> Tensor {
        let h = self.l2[0].forward(x).relu();
        let h = self.l2[1].forward(&h).relu();
        self.l2[2].forward(&h).squeeze_dim(1)
    }

    /// The weights as a plain-Rust network, with the given normalisation.
    pub fn to_policy_net(&self, norm: &Norm) -> Result<PolicyNet> {
        let mut map = named_tensors(&self.vs)?;
        map.insert("l1.mean".into(), (vec![L1_WIDTH], norm.l1_mean.clone()));
        map.insert("l1.std".into(), (vec![L1_WIDTH], norm.l1_std.clone()));
        let np = PLACE_FEATURES.len();
        map.insert("l2.mean".into(), (vec![np], norm.l2_mean.clone()));
        map.insert("l2.std".into(), (vec![np], norm.l2_std.clone()));
        PolicyNet::from_tensors(&map, "trainer")
    }
}

/// Tensors by name: shape and row-major data.
pub(super) type NamedTensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// Every variable of `vs` by name, with its shape and row-major data (on the CPU): what the
/// plain-Rust networks are read from.
pub(super) fn named_tensors(vs: &nn::VarStore) -> Result<NamedTensors> {
    let mut map = HashMap::new();
    for (name, t) in vs.variables() {
        let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
        let data = Vec::<f32>::try_from(t.to_device(Device::Cpu).flatten(0, -1)).map_err(|e| {
            Error::ModelFile {
                path: name.clone(),
                reason: e.to_string(),
            }
        })?;
        map.insert(name, (shape, data));
    }
    Ok(map)
}

/// The standard deviation of a dropped feature: every value the features take normalises to
/// 0 (to within 1e-25).
const DROPPED_STD: f32 = 1e30;

/// Per-feature mean and standard deviation of the training rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Norm {
    /// Level 1.
    pub l1_mean: Vec<f32>,
    /// Level 1 (1 where a feature is constant).
    pub l1_std: Vec<f32>,
    /// Level 2.
    pub l2_mean: Vec<f32>,
    /// Level 2.
    pub l2_std: Vec<f32>,
}

pub(super) fn moments<'a>(
    rows: impl Iterator<Item = &'a [f32]>,
    width: usize,
) -> (Vec<f32>, Vec<f32>) {
    let mut n = 0.0f64;
    let mut s = vec![0.0f64; width];
    let mut s2 = vec![0.0f64; width];
    for r in rows {
        n += 1.0;
        for k in 0..width {
            s[k] += f64::from(r[k]);
            s2[k] += f64::from(r[k]) * f64::from(r[k]);
        }
    }
    let n = n.max(1.0);
    let mean: Vec<f32> = s.iter().map(|x| (x / n) as f32).collect();
    let std: Vec<f32> = (0..width)
        .map(|k| {
            let v = (s2[k] / n - (s[k] / n).powi(2)).max(0.0).sqrt();
            if v > 1e-6 { v as f32 } else { 1.0 }
        })
        .collect();
    (mean, std)
}

impl Norm {
    /// Makes the named features constant: mean 0 and a standard deviation so large that every
    /// normalised value is 0 (a name in both levels' lists is dropped from both).
    pub fn drop(&mut self, names: &[String]) {
        let l1: Vec<&str> = JOB_FEATURES
            .iter()
            .chain(crate::policies::learned::features::OPTION_FEATURES.iter())
            .copied()
            .collect();
        for name in names {
            for (i, f) in l1.iter().enumerate() {
                if f == name {
                    self.l1_mean[i] = 0.0;
                    self.l1_std[i] = DROPPED_STD;
                }
            }
            for (i, f) in PLACE_FEATURES.iter().enumerate() {
                if f == name {
                    self.l2_mean[i] = 0.0;
                    self.l2_std[i] = DROPPED_STD;
                }
            }
        }
    }

    /// `net`'s normalisation ([`PolicyNet::widened`]: over every job feature), with the job
    /// features `net` did not read taken from `self` (the training rows'): what fine-tuning
    /// from `net` normalises with, so that it starts from `net`'s decisions.
    pub fn kept_from(mut self, net: &PolicyNet) -> Self {
        let wide = net.widened();
        let nj = JOB_FEATURES.len();
        for i in 0..L1_WIDTH {
            if i >= nj || net.job_inputs.contains(&i) {
                self.l1_mean[i] = wide.l1_mean[i];
                self.l1_std[i] = wide.l1_std[i];
            }
        }
        self.l2_mean = wide.l2_mean.iter().copied().collect();
        self.l2_std = wide.l2_std.iter().copied().collect();
        self
    }

    /// From the training examples.
    pub fn of(choices: &[ChoiceExample], steps: &[PlaceExample]) -> Self {
        let (l1_mean, l1_std) = moments(
            choices
                .iter()
                .flat_map(|c| c.candidates.iter().flatten().map(Vec::as_slice)),
            L1_WIDTH,
        );
        let (l2_mean, l2_std) = moments(
            steps.iter().flat_map(|s| s.rows.iter().map(Vec::as_slice)),
            PLACE_FEATURES.len(),
        );
        Norm {
            l1_mean,
            l1_std,
            l2_mean,
            l2_std,
        }
    }
}

/// One batch of level-1 decisions, as tensors.
struct L1Batch {
    jx: Tensor,
    j_round: Tensor,
    rounds: i64,
    cx: Tensor,
    c_round: Tensor,
    /// `[J', K]` indices into the logits (padding: the appended −∞ slot), jobs with a target.
    pad: Tensor,
    target: Tensor,
    decisions: i64,
}

/// Per round (`j_round`: the round of each row of `h`, `[rows, width]`), the sum and the mean of
/// its rows (`[rounds, width]` each; a round without rows has zeros).
fn pooled(h: &Tensor, j_round: &Tensor, rounds: i64) -> (Tensor, Tensor) {
    let dev = h.device();
    let sums = Tensor::zeros([rounds, h.size()[1]], (Kind::Float, dev)).index_add(0, j_round, h);
    let counts = Tensor::zeros([rounds], (Kind::Float, dev))
        .index_add(0, j_round, &Tensor::ones([h.size()[0]], (Kind::Float, dev)))
        .clamp_min(1.0);
    let mean = &sums / counts.unsqueeze(1);
    (sums, mean)
}

fn normalised(row: &[f32], mean: &[f32], std: &[f32], out: &mut Vec<f32>) {
    out.extend(row.iter().zip(mean).zip(std).map(|((x, m), s)| (x - m) / s));
}

fn l1_batch(choices: &[&ChoiceExample], norm: &Norm, device: Device) -> Option<L1Batch> {
    let nj = JOB_FEATURES.len();
    let (mut jx, mut j_round, mut cx, mut c_round) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut groups: Vec<(Vec<i64>, i64)> = Vec::new();
    let mut c = 0i64;
    for (r, ex) in choices.iter().enumerate() {
        for (j, job) in ex.jobs.iter().enumerate() {
            normalised(job, &norm.l1_mean[..nj], &norm.l1_std[..nj], &mut jx);
            j_round.push(r as i64);
            let idx: Vec<i64> = (0..ex.candidates[j].len() as i64).map(|k| c + k).collect();
            for row in &ex.candidates[j] {
                normalised(row, &norm.l1_mean, &norm.l1_std, &mut cx);
                c_round.push(r as i64);
            }
            if let Some(t) = ex.targets[j] {
                groups.push((idx, t as i64));
            }
            c += ex.candidates[j].len() as i64;
        }
    }
    if groups.is_empty() {
        return None;
    }
    let (pad, target, decisions) = grouped(&groups, c, device);
    let jn = j_round.len() as i64;
    Some(L1Batch {
        jx: Tensor::from_slice(&jx)
            .view([jn, nj as i64])
            .to_device(device),
        j_round: Tensor::from_slice(&j_round).to_device(device),
        rounds: choices.len() as i64,
        cx: Tensor::from_slice(&cx)
            .view([c, L1_WIDTH as i64])
            .to_device(device),
        c_round: Tensor::from_slice(&c_round).to_device(device),
        pad,
        target,
        decisions,
    })
}

/// Groups of candidate indices (each with its target's position) as a padded `[groups, k]`
/// index tensor — padding points at `pad_index`, one past the candidates — the targets, and the
/// number of groups.
fn grouped(groups: &[(Vec<i64>, i64)], pad_index: i64, device: Device) -> (Tensor, Tensor, i64) {
    let k = groups.iter().map(|g| g.0.len()).max().unwrap_or(1);
    let mut pad = Vec::with_capacity(groups.len() * k);
    for (idx, _) in groups {
        pad.extend(idx.iter().copied());
        pad.extend(std::iter::repeat_n(pad_index, k - idx.len()));
    }
    let target: Vec<i64> = groups.iter().map(|g| g.1).collect();
    (
        Tensor::from_slice(&pad)
            .view([groups.len() as i64, k as i64])
            .to_device(device),
        Tensor::from_slice(&target).to_device(device),
        groups.len() as i64,
    )
}

/// Groups of candidate rows, each with its target row, as tensors: level 2's placement steps
/// and the tier head's jobs.
pub(super) struct RowBatch {
    pub(super) x: Tensor,
    pub(super) pad: Tensor,
    pub(super) target: Tensor,
    pub(super) decisions: i64,
}

/// `groups` (each: its rows of `mean.len()` features and the index of its target among them)
/// normalised by `mean` and `std`; `None` without groups.
pub(super) fn row_batch<'a>(
    groups: impl Iterator<Item = (&'a [Vec<f32>], usize)>,
    mean: &[f32],
    std: &[f32],
    device: Device,
) -> Option<RowBatch> {
    let mut x = Vec::new();
    let mut idx = Vec::new();
    let mut n = 0i64;
    for (rows, target) in groups {
        for r in rows {
            normalised(r, mean, std, &mut x);
        }
        idx.push((
            (n..n + rows.len() as i64).collect::<Vec<_>>(),
            target as i64,
        ));
        n += rows.len() as i64;
    }
    if idx.is_empty() {
        return None;
    }
    let (pad, target, decisions) = grouped(&idx, n, device);
    Some(RowBatch {
        x: Tensor::from_slice(&x)
            .view([n, mean.len() as i64])
            .to_device(device),
        pad,
        target,
        decisions,
    })
}

fn l2_batch(steps: &[&PlaceExample], norm: &Norm, device: Device) -> Option<RowBatch> {
    row_batch(
        steps.iter().map(|s| (s.rows.as_slice(), s.target)),
        &norm.l2_mean,
        &norm.l2_std,
        device,
    )
}

/// `logits` gathered into groups: row `g` of the result holds the logits `pad[g]` indexes, the
/// padding index (one past the end) reading −1e9, so a softmax over a row ignores the padding.
fn padded(logits: &Tensor, pad: &Tensor) -> Tensor {
    let ext = Tensor::cat(
        &[
            logits.shallow_clone(),
            Tensor::from_slice(&[-1e9f32]).to_device(logits.device()),
        ],
        0,
    );
    let shape = pad.size();
    ext.index_select(0, &pad.view(-1)).view(shape.as_slice())
}

/// Summed cross-entropy and correct count of grouped `logits` (`pad` rows index into them;
/// the padding index is one past the end).
pub(super) fn grouped_loss(logits: &Tensor, pad: &Tensor, target: &Tensor) -> (Tensor, i64) {
    let padded = padded(logits, pad);
    let logp = padded.log_softmax(1, Kind::Float);
    let nll = -logp.gather(1, &target.unsqueeze(1), false).sum(Kind::Float);
    let correct = padded
        .argmax(1, false)
        .eq_tensor(target)
        .sum(Kind::Int64)
        .int64_value(&[]);
    (nll, correct)
}

impl TchPolicy {
    fn l1_loss(&self, b: &L1Batch) -> (Tensor, i64) {
        let logits = self.level1(&b.jx, &b.j_round, b.rounds, &b.cx, &b.c_round);
        grouped_loss(&logits, &b.pad, &b.target)
    }

    fn l2_loss(&self, b: &RowBatch) -> (Tensor, i64) {
        grouped_loss(&self.level2(&b.x), &b.pad, &b.target)
    }
}

/// Where a network trains, as asked: `auto` (CUDA when libtorch sees a GPU, else the CPU), `cpu`
/// or `cuda` (an error when libtorch sees no GPU at [`TrainDevice::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum TrainDevice {
    /// CUDA when libtorch sees a GPU, else the CPU.
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// The first GPU.
    Cuda,
}

impl TrainDevice {
    /// The libtorch device.
    pub fn resolve(self) -> Result<Device> {
        match self {
            TrainDevice::Auto => Ok(Device::cuda_if_available()),
            TrainDevice::Cpu => Ok(Device::Cpu),
            TrainDevice::Cuda if tch::Cuda::is_available() => Ok(Device::Cuda(0)),
            TrainDevice::Cuda => Err(Error::setting(
                "--device",
                "device",
                "cuda",
                "a GPU libtorch can see (this build or machine has none): use cpu or auto",
            )),
        }
    }
}
