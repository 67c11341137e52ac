//! PPO's learner: the policy and its optimiser, each iteration's minibatches on the device, the
//! sampling policy's log-probabilities, the clipped updates, validation and checkpoints.

use rand_chacha::ChaCha8Rng;
use tch::nn;
use tch::{Device, Kind, Tensor};

use super::super::{L1Batch, Norm, RowBatch, TchPolicy, l1_batch, l2_batch};
use super::{CriticState, Minibatch, RlConfig, RlData, Stage, grouped_logp, ppo_loss, validate};
use crate::error::Result;
use crate::policies::learned::PolicyNet;

/// One minibatch on the device: level 1's rows and advantages, level 2's.
pub(super) type DeviceBatch = (Option<L1Batch>, Tensor, Option<RowBatch>, Tensor);

/// The sampling policy's log-probabilities of a batch's decisions, per level.
pub(super) type OldLogp = (Option<Tensor>, Option<Tensor>);

/// What one iteration's PPO epochs measured: the sampling policy's entropy and decisions per
/// level, level 1's KL and clipped decisions over the counted ones, and the learner's steps.
#[derive(Default)]
pub(super) struct Update {
    pub(super) ent1: f64,
    pub(super) ent2: f64,
    pub(super) n1: usize,
    pub(super) n2: usize,
    pub(super) kl: f64,
    pub(super) clipped: f64,
    pub(super) counted: f64,
    pub(super) steps: usize,
}

/// The learner: the policy and its optimiser, the fixed normalisation, the critic, the seeded
/// stream of every random choice, and the best weights so far.
pub(super) struct Learner<'c> {
    pub(super) cfg: &'c RlConfig,
    pub(super) dev: Device,
    pub(super) norm: Norm,
    pub(super) policy: TchPolicy,
    pub(super) opt: nn::Optimizer,
    pub(super) rng: ChaCha8Rng,
    pub(super) critic: Option<CriticState>,
    /// (iteration, validation average JCT, weights) of the best so far.
    pub(super) best: (usize, f64, PolicyNet),
}

impl Learner<'_> {
    /// The batches of this iteration's rollouts on the device.
    pub(super) fn device_batches(&self, batches: &[Minibatch<'_>]) -> Vec<DeviceBatch> {
        let (norm, dev) = (&self.norm, self.dev);
        batches
            .iter()
            .map(|b| {
                (
                    l1_batch(&b.choices, norm, dev),
                    Tensor::from_slice(&b.l1_adv).to_device(dev),
                    l2_batch(&b.steps, norm, dev),
                    Tensor::from_slice(&b.l2_adv).to_device(dev),
                )
            })
            .collect()
    }

    /// The sampling policy's log-probabilities (the weights have not moved yet), and its
    /// entropy and decisions per level into `u`.
    pub(super) fn old_logps(&self, tensors: &[DeviceBatch], u: &mut Update) -> Vec<OldLogp> {
        let (policy, temperature) = (&self.policy, self.cfg.temperature);
        tch::no_grad(|| {
            tensors
                .iter()
                .map(|(b1, _, b2, _)| {
                    let o1 = b1.as_ref().map(|b| {
                        let logits = policy.level1(&b.jx, &b.j_round, b.rounds, &b.cx, &b.c_round);
                        let (lp, ent) = grouped_logp(&logits, &b.pad, &b.target, temperature);
                        u.ent1 += ent.sum(Kind::Float).double_value(&[]);
                        u.n1 += b.decisions as usize;
                        lp
                    });
                    let o2 = b2.as_ref().map(|b| {
                        let (lp, ent) =
                            grouped_logp(&policy.level2(&b.x), &b.pad, &b.target, temperature);
                        u.ent2 += ent.sum(Kind::Float).double_value(&[]);
                        u.n2 += b.decisions as usize;
                        lp
                    });
                    (o1, o2)
                })
                .collect()
        })
    }

    /// PPO's epochs over the minibatches (shuffled, from the seeded stream) of the levels
    /// `stage` trains; level 1's KL and clipping measured in the last epoch.
    pub(super) fn ppo_epochs(
        &mut self,
        stage: &Stage,
        tensors: &[DeviceBatch],
        old: &[OldLogp],
        u: &mut Update,
    ) {
        let cfg = self.cfg;
        for epoch in 0..cfg.ppo_epochs {
            let mut idx: Vec<usize> = (0..tensors.len()).collect();
            rand::seq::SliceRandom::shuffle(idx.as_mut_slice(), &mut self.rng);
            for k in idx {
                let (b1, a1, b2, a2) = &tensors[k];
                let mut parts: Vec<Tensor> = Vec::new();
                if stage.level1
                    && let (Some(b), Some(old1)) = (b1, &old[k].0)
                {
                    let logits = self
                        .policy
                        .level1(&b.jx, &b.j_round, b.rounds, &b.cx, &b.c_round);
                    let (lp, ent) = grouped_logp(&logits, &b.pad, &b.target, cfg.temperature);
                    let (loss, ratio) = ppo_loss(&lp, old1, a1, &ent, cfg);
                    parts.push(loss);
                    if epoch + 1 == cfg.ppo_epochs {
                        tch::no_grad(|| {
                            u.kl += (old1 - &lp).sum(Kind::Float).double_value(&[]);
                            u.clipped += (&ratio - 1.0)
                                .abs()
                                .gt(cfg.clip)
                                .to_kind(Kind::Float)
                                .sum(Kind::Float)
                                .double_value(&[]);
                            u.counted += b.decisions as f64;
                        });
                    }
                }
                if stage.level2
                    && let (Some(b), Some(old2)) = (b2, &old[k].1)
                {
                    let (lp, ent) = grouped_logp(
                        &self.policy.level2(&b.x),
                        &b.pad,
                        &b.target,
                        cfg.temperature,
                    );
                    parts.push(ppo_loss(&lp, old2, a2, &ent, cfg).0);
                }
                if !parts.is_empty() {
                    self.opt
                        .backward_step(&Tensor::stack(&parts, 0).sum(Kind::Float));
                    u.steps += 1;
                }
            }
        }
    }

    /// The current weights' validation average JCT, kept as the best if lower.
    pub(super) fn validate_keep_best(&mut self, data: RlData<'_>, iteration: usize) -> Result<f64> {
        let net = self.policy.to_policy_net(&self.norm)?;
        let v = validate(data, self.cfg.validation, &net)?;
        if v < self.best.1 {
            self.best = (iteration, v, net);
        }
        Ok(v)
    }

    /// The current weights written as `rl-checkpoint-<iteration>.safetensors` in the run folder.
    pub(super) fn checkpoint(&self, iteration: usize) -> Result<()> {
        let net = self.policy.to_policy_net(&self.norm)?;
        let path = self
            .cfg
            .run_dir
            .join(format!("rl-checkpoint-{iteration:04}.safetensors"));
        crate::util::write_atomic(
            &path,
            &net.to_safetensors(&[("rl_iteration", iteration.to_string())])?,
        )
    }
}
