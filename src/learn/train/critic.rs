//! Level 1's learned critic: a value network over the same deep set of jobs the policy reads,
//! fitted to λ-returns, whose values turn per-round rewards into generalised advantage
//! estimates ([`crate::learn::rl::gae`]). It replaces the other-rollouts baseline of
//! [`crate::learn::rl::advantages`] (kept as the ablation without a critic).
//!
//! **Inputs.** Per job of the round, its level-1 job features (normalised as the policy's), each
//! embedded by a small MLP, pooled twice — the mean (what the round looks like) and the sum
//! scaled by [`SCALE`] (how much work is in it: the return is a sum over jobs, so the value
//! grows with them) — plus four round facts: jobs in the round, jobs of the episode yet to
//! arrive, hours since the episode began (each ÷ its scale) and the cluster's GPUs ÷
//! [`GPU_SCALE`]. The critic is trained only, never deployed, so it may read what the policy
//! cannot: the arrivals still to come are the episode's own (an asymmetric actor–critic). They
//! are what the return depends on most and no decision changes.
//!
//! **Scale.** Rewards are job-hours; they are divided by a scale fixed at the first iteration
//! (the standard deviation of its discounted returns) so that the critic's targets stay near
//! unit size and a later, longer stage does not move the scale under it.

use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

use super::{Norm, normalised, pooled};
use crate::error::{Error, Result};
use crate::learn::rl::{Episode, Rollout};
use crate::policies::learned::features::JOB_FEATURES;

/// Jobs (and jobs to come) per unit of the pooled-sum and count inputs.
pub const SCALE: f32 = 32.0;
/// GPUs per unit of the cluster-size input.
pub const GPU_SCALE: f32 = 128.0;
/// Round facts after the pooled embeddings.
pub const EXTRAS: usize = 4;
const EMBED: i64 = 64;
const HIDDEN: i64 = 64;

/// Every round of a set of rollouts as the critic reads them.
pub struct CriticBatch {
    jx: Tensor,
    j_round: Tensor,
    extra: Tensor,
    rounds: i64,
}

impl CriticBatch {
    /// The rounds of `rollouts` (each of `episodes[k / per_episode]`), in rollout order and
    /// round order.
    pub fn new(
        rollouts: &[Rollout],
        episodes: &[&Episode],
        norm: &Norm,
        device: Device,
    ) -> CriticBatch {
        let nj = JOB_FEATURES.len();
        let (mut jx, mut j_round, mut extra) = (Vec::new(), Vec::new(), Vec::new());
        let mut r = 0i64;
        for (rollout, episode) in rollouts.iter().zip(episodes) {
            let mut arrivals: Vec<f64> = episode.jobs.iter().map(|j| j.arrival_s).collect();
            arrivals.sort_by(f64::total_cmp);
            let gpus = episode.cluster.num_gpus() as f32;
            for round in &rollout.rounds {
                for job in &round.choice.jobs {
                    normalised(job, &norm.l1_mean[..nj], &norm.l1_std[..nj], &mut jx);
                    j_round.push(r);
                }
                let to_come = arrivals.len() - arrivals.partition_point(|&a| a <= round.time_s);
                extra.extend([
                    round.choice.jobs.len() as f32 / SCALE,
                    to_come as f32 / SCALE,
                    (round.time_s / 3600.0) as f32 / 24.0,
                    gpus / GPU_SCALE,
                ]);
                r += 1;
            }
        }
        let jn = j_round.len() as i64;
        CriticBatch {
            jx: Tensor::from_slice(&jx)
                .view([jn, nj as i64])
                .to_device(device),
            j_round: Tensor::from_slice(&j_round).to_device(device),
            extra: Tensor::from_slice(&extra)
                .view([r, EXTRAS as i64])
                .to_device(device),
            rounds: r,
        }
    }

    /// Rounds in the batch.
    pub fn len(&self) -> usize {
        self.rounds as usize
    }

    /// Whether it holds no round.
    pub fn is_empty(&self) -> bool {
        self.rounds == 0
    }
}

/// The value network and its optimiser.
pub struct Critic {
    _vs: nn::VarStore,
    phi: [nn::Linear; 2],
    rho: [nn::Linear; 3],
    opt: nn::Optimizer,
}

impl Critic {
    /// A fresh critic on `device` (initialised from libtorch's seeded generator).
    pub fn new(device: Device, learning_rate: f64) -> Result<Critic> {
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let lin = |p: nn::Path, i: i64, o: i64| nn::linear(p, i, o, Default::default());
        let nj = JOB_FEATURES.len() as i64;
        let phi = [
            lin(&root / "phi1", nj, EMBED),
            lin(&root / "phi2", EMBED, EMBED),
        ];
        let rho = [
            lin(&root / "fc1", 2 * EMBED + EXTRAS as i64, HIDDEN),
            lin(&root / "fc2", HIDDEN, HIDDEN),
            lin(&root / "out", HIDDEN, 1),
        ];
        let opt = nn::Adam::default()
            .build(&vs, learning_rate)
            .map_err(|e| Error::Solver {
                solver: "libtorch".into(),
                reason: e.to_string(),
            })?;
        Ok(Critic {
            _vs: vs,
            phi,
            rho,
            opt,
        })
    }

    /// Values of every round of `b` (`[rounds]`, in reward-scale units).
    pub fn values(&self, b: &CriticBatch) -> Tensor {
        let h = self.phi[1]
            .forward(&self.phi[0].forward(&b.jx).relu())
            .relu();
        let (sums, mean) = pooled(&h, &b.j_round, b.rounds);
        let x = Tensor::cat(&[mean, sums / SCALE as f64, b.extra.shallow_clone()], 1);
        let h = self.rho[0].forward(&x).relu();
        let h = self.rho[1].forward(&h).relu();
        self.rho[2].forward(&h).squeeze_dim(1)
    }

    /// The values as plain numbers.
    pub fn predict(&self, b: &CriticBatch) -> Vec<f64> {
        let v = tch::no_grad(|| self.values(b)).to_device(Device::Cpu);
        Vec::<f32>::try_from(v)
            .map(|v| v.into_iter().map(f64::from).collect())
            .unwrap_or_default()
    }

    /// `epochs` passes of mean-squared-error steps towards `targets` (one per round of `b`)
    /// over all rounds at once; returns the last loss. The batch is a whole iteration's
    /// rounds (a few thousand at most): one step per pass needs no minibatching.
    pub fn fit(&mut self, b: &CriticBatch, targets: &[f64], epochs: usize) -> f64 {
        let t: Vec<f32> = targets.iter().map(|&x| x as f32).collect();
        let t = Tensor::from_slice(&t).to_device(b.extra.device());
        let mut last = f64::NAN;
        for _ in 0..epochs {
            let loss = (self.values(b) - &t).square().mean(Kind::Float);
            self.opt.backward_step(&loss);
            last = loss.double_value(&[]);
        }
        last
    }
}

/// Share of the targets' variance the values explain: `1 − Var(target − value) / Var(target)`
/// (1: exact; 0: no better than the mean; negative: worse).
pub fn explained_variance(values: &[f64], targets: &[f64]) -> f64 {
    let n = targets.len().max(1) as f64;
    let var = |x: &mut dyn Iterator<Item = f64>| {
        let v: Vec<f64> = x.collect();
        let m = v.iter().sum::<f64>() / n;
        v.iter().map(|a| (a - m).powi(2)).sum::<f64>() / n
    };
    let vt = var(&mut targets.iter().copied());
    if vt <= 1e-12 {
        return f64::NAN;
    }
    1.0 - var(&mut targets.iter().zip(values).map(|(t, v)| t - v)) / vt
}
