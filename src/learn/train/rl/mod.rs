//! Reinforcement learning from the imitation checkpoint: PPO (clipped surrogate, entropy bonus)
//! on rollouts of the policy in the simulator ([`crate::learn::rl`]: episodes, rewards,
//! baselines). Rollouts run in parallel (rayon) with the plain-Rust network; the update runs
//! here with libtorch on the recorded rows, so both evaluate the same function (the parity test
//! of the imitation trainer covers it).
//!
//! **Advantages.** By default level 1's advantages are generalised advantage estimates from a
//! learned critic ([`super::critic`]: a value network over the round's jobs, fitted to
//! λ-returns each iteration); [`Advantage::Rollouts`] is the ablation without it, each round's
//! return against the mean of the other rollouts of the same episode from the same time on.
//!
//! A curriculum of [`Stage`]s goes from small clusters and short windows to larger ones; each
//! stage says which level trains (level 2 alone on placement efficiency, level 1 alone on job
//! completion time, then both). Every `validate_every` iterations the policy replays fixed
//! validation episodes as it is deployed ([`Validation`]: best of eight decodings a round,
//! back-filled); the weights with the lowest validation average JCT are returned (the
//! imitation start included, so RL never returns a policy worse on validation than its
//! start).

use std::path::PathBuf;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Tensor};

mod learner;

use super::critic::{Critic, CriticBatch, explained_variance};
pub use super::curves::{RlLog, write_rl_curve};
use super::{Norm, TchPolicy, padded};
use crate::error::{Error, Result};
use crate::learn::examples::{ChoiceExample, PlaceExample};
use crate::learn::rl::{
    Decoding, Episode, JobPool, Rollout, advantages, discounted_returns, gae, replay_deployed,
    rollout,
};
use crate::model::{Cluster, Job};
use crate::objective::Objective;
use crate::perf::PerfModel;
use crate::policies::learned::PolicyNet;
use learner::{Learner, Update};

/// What level 2 is rewarded for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level2Reward {
    /// Placement efficiency (speed in context ÷ the same allocation packed alone).
    Efficiency,
    /// Level 1's job-completion-time advantage of the round (the ablation without a level-2
    /// reward).
    Return,
}

/// Where level 1's advantages come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Advantage {
    /// Generalised advantage estimation with the learned critic, at this λ.
    Gae {
        /// GAE's λ (0: one-step differences, 1: discounted returns minus the value).
        lambda: f64,
    },
    /// Each round's discounted return minus the mean of the other rollouts' returns from the
    /// same time on (no critic: the ablation).
    Rollouts,
}

/// How validation replays a policy: what chooses the weights [`train_rl`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// As the `learned` policy is deployed and judged ([`crate::learn::rl::replay_deployed`]):
    /// this many decodings a round, the best under the objective, back-filled. The greedy
    /// decoding alone averaged 1.14-1.22x the deployed policy's JCT on the distillation's
    /// slices (`benches/results/lookahead/distil-net/extra.csv`): weights chosen by their
    /// greedy decoding are chosen by a policy nobody runs.
    Deployed {
        /// Decodings a round (1: the greedy one).
        samples: usize,
    },
    /// The greedy rollout (level 1 and 2's argmax, back-filled): how validation chose before.
    Greedy,
}

/// One step of the curriculum.
#[derive(Debug, Clone)]
pub struct Stage {
    /// Its name in the learning curve.
    pub name: String,
    /// The cluster its episodes run on.
    pub cluster: Cluster,
    /// Jobs per episode (a window of the pool).
    pub window: usize,
    /// PPO iterations.
    pub iterations: usize,
    /// Whether level 1 trains.
    pub level1: bool,
    /// Whether level 2 trains.
    pub level2: bool,
}

/// Settings of [`train_rl`] (defaults written down in [`RlConfig::new`], checked once by
/// [`RlConfig::check`]).
#[derive(Debug, Clone)]
pub struct RlConfig {
    /// Seed of episode windows, sampling and minibatch order.
    pub seed: u64,
    /// The curriculum.
    pub stages: Vec<Stage>,
    /// Episodes (windows) per iteration.
    pub episodes: usize,
    /// Rollouts per episode (the baseline is the others' mean).
    pub rollouts: usize,
    /// PPO epochs over each iteration's samples.
    pub ppo_epochs: usize,
    /// Rounds per minibatch.
    pub minibatch_rounds: usize,
    /// PPO's ratio clip.
    pub clip: f64,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// Weight of the entropy bonus.
    pub entropy: f64,
    /// Discount per round of level 1's return.
    pub gamma: f64,
    /// Sampling temperature of both levels: the policy trained is `softmax(scores / T)`.
    pub temperature: f64,
    /// Level 2's reward.
    pub level2_reward: Level2Reward,
    /// Validate every this many iterations (and after the last).
    pub validate_every: usize,
    /// How validation replays the policy.
    pub validation: Validation,
    /// Checkpoint every this many iterations (0: none), in `run_dir`.
    pub checkpoint_every: usize,
    /// Where checkpoints go.
    pub run_dir: PathBuf,
    /// Level 1's advantages.
    pub advantage: Advantage,
    /// The critic's Adam learning rate.
    pub critic_learning_rate: f64,
    /// Full-batch critic steps per iteration (three times as many on the first, before its
    /// values are first used).
    pub critic_epochs: usize,
    /// Where the networks train (rollouts run on the CPU cores whatever it is).
    pub device: Device,
    /// Stop after the iteration that passes this many seconds (validating then), whatever
    /// the curriculum has left: a run sized to a lease of a machine.
    pub time_budget_s: Option<f64>,
}

impl RlConfig {
    /// The default settings with `stages`.
    pub fn new(stages: Vec<Stage>) -> Self {
        RlConfig {
            seed: 0,
            stages,
            episodes: 2,
            rollouts: 4,
            ppo_epochs: 4,
            minibatch_rounds: 64,
            clip: 0.2,
            learning_rate: 3e-4,
            entropy: 0.003,
            gamma: 0.99,
            temperature: 0.3,
            level2_reward: Level2Reward::Efficiency,
            validate_every: 5,
            validation: Validation::Deployed {
                samples: crate::policies::learned::DEFAULT_SAMPLES,
            },
            checkpoint_every: 10,
            run_dir: PathBuf::from("train-rl"),
            advantage: Advantage::Gae { lambda: 0.95 },
            critic_learning_rate: 1e-3,
            critic_epochs: 40,
            device: Device::cuda_if_available(),
            time_budget_s: None,
        }
    }

    /// Rejects settings out of range.
    pub fn check(&self) -> Result<()> {
        let bad = |field: &str, value: String, expected: &str| {
            Err(Error::setting("rl config", field, value, expected))
        };
        if self.stages.is_empty() || self.stages.iter().any(|s| s.window == 0) {
            return bad(
                "stages",
                format!("{}", self.stages.len()),
                "at least one stage, each with a window >= 1",
            );
        }
        if self.episodes == 0 || self.rollouts < 2 {
            return bad(
                "episodes / rollouts",
                format!("{} / {}", self.episodes, self.rollouts),
                "episodes >= 1 and rollouts >= 2 (the baseline is the other rollouts)",
            );
        }
        if let Advantage::Gae { lambda } = self.advantage
            && !(0.0..=1.0).contains(&lambda)
        {
            return bad("gae lambda", lambda.to_string(), "in [0, 1]");
        }
        if !(self.critic_learning_rate > 0.0 && self.critic_learning_rate.is_finite()) {
            return bad(
                "critic_learning_rate",
                self.critic_learning_rate.to_string(),
                "positive and finite",
            );
        }
        if let Validation::Deployed { samples: 0 } = self.validation {
            return bad("validation samples", "0".into(), "at least 1");
        }
        if self.ppo_epochs == 0 || self.minibatch_rounds == 0 || self.validate_every == 0 {
            return bad(
                "ppo_epochs / minibatch_rounds / validate_every",
                format!(
                    "{} / {} / {}",
                    self.ppo_epochs, self.minibatch_rounds, self.validate_every
                ),
                "each >= 1",
            );
        }
        for (field, v, ok) in [
            ("clip", self.clip, self.clip > 0.0 && self.clip < 1.0),
            (
                "learning_rate",
                self.learning_rate,
                self.learning_rate > 0.0 && self.learning_rate.is_finite(),
            ),
            (
                "entropy",
                self.entropy,
                self.entropy >= 0.0 && self.entropy.is_finite(),
            ),
            ("gamma", self.gamma, self.gamma > 0.0 && self.gamma <= 1.0),
            (
                "temperature",
                self.temperature,
                self.temperature >= 0.01 && self.temperature.is_finite(),
            ),
        ] {
            if !ok {
                return bad(field, v.to_string(), "in range (see the docs)");
            }
        }
        Ok(())
    }
}

/// What RL produced.
pub struct RlTrained {
    /// The weights of the lowest validation average JCT.
    pub net: PolicyNet,
    /// Its iteration (0: the start) and validation average JCT.
    pub best: (usize, f64),
    /// The start's validation average JCT.
    pub start_val: f64,
    /// The learning curve.
    pub curve: Vec<RlLog>,
    /// Where the update ran.
    pub device: String,
}

/// The normalisation a network was trained with (kept fixed through RL: the rows the
/// rollouts record are normalised as the start's were).
fn norm_of(net: &PolicyNet) -> Norm {
    Norm {
        l1_mean: net.l1_mean.iter().copied().collect(),
        l1_std: net.l1_std.iter().copied().collect(),
        l2_mean: net.l2_mean.iter().copied().collect(),
        l2_std: net.l2_std.iter().copied().collect(),
    }
}

/// Per group of `pad` (rows of candidate indices, padding one past `logits`), the
/// log-probability of `target` under `softmax(logits / temperature)` and that distribution's
/// entropy.
pub(super) fn grouped_logp(
    logits: &Tensor,
    pad: &Tensor,
    target: &Tensor,
    temperature: f64,
) -> (Tensor, Tensor) {
    let padded = padded(&(logits / temperature), pad);
    let logp = padded.log_softmax(1, Kind::Float);
    let chosen = logp.gather(1, &target.unsqueeze(1), false).squeeze_dim(1);
    let entropy = -(logp.exp() * &logp).sum_dim_intlist(1, false, Kind::Float);
    (chosen, entropy)
}

/// PPO's loss on one group of decisions — minus the clipped surrogate of the probability
/// ratios `exp(logp − old)` weighted by `adv`, minus the entropy bonus — and the ratios.
pub(super) fn ppo_loss(
    logp: &Tensor,
    old: &Tensor,
    adv: &Tensor,
    entropy: &Tensor,
    cfg: &RlConfig,
) -> (Tensor, Tensor) {
    let ratio = (logp - old).exp();
    let surr = (&ratio * adv).min_other(&(ratio.clamp(1.0 - cfg.clip, 1.0 + cfg.clip) * adv));
    (
        -surr.mean(Kind::Float) - entropy.mean(Kind::Float) * cfg.entropy,
        ratio,
    )
}

/// Mean and standard deviation (1 when it is zero).
fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, if var > 1e-12 { var.sqrt() } else { 1.0 })
}

/// One minibatch: level-1 rounds with a per-decision advantage, level-2 steps with theirs.
pub(super) struct Minibatch<'a> {
    pub(super) choices: Vec<&'a ChoiceExample>,
    pub(super) l1_adv: Vec<f32>,
    pub(super) steps: Vec<&'a PlaceExample>,
    pub(super) l2_adv: Vec<f32>,
}

/// The policy's mean average JCT over `data.validation`, hours, replayed as `how` says (the
/// deployed decodings seeded 0, as a replay's are by default).
pub(super) fn validate(data: RlData<'_>, how: Validation, net: &PolicyNet) -> Result<f64> {
    let runs: Vec<Result<f64>> =
        data.validation
            .par_iter()
            .map(|e| match how {
                Validation::Deployed { samples } => {
                    replay_deployed(data.perf, data.objective, net, e, samples, 0)
                }
                Validation::Greedy => rollout(data.perf, data.objective, net, e, Decoding::Greedy)
                    .map(|r| r.avg_jct_h),
            })
            .collect();
    Ok(runs.into_iter().sum::<Result<f64>>()? / data.validation.len().max(1) as f64)
}

/// What RL trains on: the round's model and objective, the pool of jobs episodes are cut from
/// (trace order), and the validation episodes that choose the weights returned.
#[derive(Clone, Copy)]
pub struct RlData<'d> {
    /// The performance model.
    pub perf: &'d dyn PerfModel,
    /// The objective the policy's decodings are scored by.
    pub objective: Objective,
    /// The jobs training windows are cut from.
    pub pool: &'d [Job],
    /// The episodes validation replays.
    pub validation: &'d [Episode],
}

/// This iteration's episodes, `cfg.episodes` windows of the pool at seeded offsets, and their
/// rollouts, each episode rolled out `cfg.rollouts` times by the sampling policy (over all
/// cores; each rollout seeded; rollout `k` is of episode `k / cfg.rollouts`).
fn sample_rollouts(
    cfg: &RlConfig,
    stage: &Stage,
    data: RlData<'_>,
    net: &PolicyNet,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<Episode>, Vec<Rollout>)> {
    let RlData {
        perf,
        objective,
        pool,
        ..
    } = data;
    let mut episodes = Vec::with_capacity(cfg.episodes);
    for _ in 0..cfg.episodes {
        let hi = pool.len().saturating_sub(stage.window).max(1);
        let at = rng.random_range(0..hi);
        let jobs = JobPool {
            name: "pool",
            jobs: pool,
            cluster: &stage.cluster,
        };
        episodes.push(Episode::window(
            jobs,
            at..at + stage.window,
            perf,
            objective,
        )?);
    }
    let seeds: Vec<u64> = (0..cfg.episodes * cfg.rollouts)
        .map(|_| rng.random())
        .collect();
    let rollouts: Vec<Result<Rollout>> = (0..cfg.episodes * cfg.rollouts)
        .into_par_iter()
        .map(|k| {
            rollout(
                perf,
                objective,
                net,
                &episodes[k / cfg.rollouts],
                Decoding::Sample {
                    temperature: cfg.temperature as f32,
                    seed: seeds[k],
                },
            )
        })
        .collect();
    Ok((episodes, rollouts.into_iter().collect::<Result<_>>()?))
}

/// The critic's side of an iteration: what it is fitted to and how well it did.
pub(super) struct CriticState {
    critic: Critic,
    /// Rewards are divided by it (fixed at the first iteration).
    scale: Option<f64>,
}

/// Level 1's advantages of `rollouts` (per rollout, per round) as `cfg.advantage` says; with
/// the critic, also fits it to this iteration's λ-returns and returns its value loss and the
/// variance its values explained (NaN otherwise).
fn level1_advantages(
    cfg: &RlConfig,
    episodes: &[Episode],
    rollouts: &[Rollout],
    norm: &Norm,
    critic: &mut Option<CriticState>,
) -> (Vec<Vec<f64>>, f64, f64) {
    let (Advantage::Gae { lambda }, Some(state)) = (cfg.advantage, critic.as_mut()) else {
        let adv = rollouts
            .chunks(cfg.rollouts)
            .flat_map(|group| advantages(group, cfg.gamma))
            .collect();
        return (adv, f64::NAN, f64::NAN);
    };
    let eps: Vec<&Episode> = (0..rollouts.len())
        .map(|k| &episodes[k / cfg.rollouts])
        .collect();
    let batch = CriticBatch::new(rollouts, &eps, norm, cfg.device);
    let first = state.scale.is_none();
    let scale = *state.scale.get_or_insert_with(|| {
        let all: Vec<f64> = rollouts
            .iter()
            .flat_map(|r| discounted_returns(r, 1.0, cfg.gamma))
            .collect();
        moments(&all).1
    });
    let mc: Vec<f64> = rollouts
        .iter()
        .flat_map(|r| discounted_returns(r, scale, cfg.gamma))
        .collect();
    if first && !batch.is_empty() {
        // A fresh critic's values are noise: fit it to this iteration's discounted returns
        // before its values are first used.
        state.critic.fit(&batch, &mc, 3 * cfg.critic_epochs);
    }
    let values = state.critic.predict(&batch);
    let (mut adv, mut targets) = (Vec::new(), Vec::new());
    let mut at = 0;
    for r in rollouts {
        let n = r.rounds.len();
        let rewards: Vec<f64> = r.rounds.iter().map(|x| x.reward / scale).collect();
        let (a, t) = gae(&rewards, &values[at..at + n], cfg.gamma, lambda);
        adv.push(a);
        targets.extend(t);
        at += n;
    }
    // Against the sampled discounted returns, which do not depend on the values (the
    // λ-returns do).
    let ev = explained_variance(&values, &mc);
    let loss = if batch.is_empty() {
        f64::NAN
    } else {
        state.critic.fit(&batch, &targets, cfg.critic_epochs)
    };
    (adv, loss, ev)
}

/// The rollouts as minibatches with their advantages — level 1 per round (`adv`, per rollout
/// per round), normalised over the iteration; level 2 per step — and the iteration's mean
/// placement efficiency and mean average JCT (hours).
fn minibatches<'a>(
    cfg: &RlConfig,
    rollouts: &'a [Rollout],
    adv: &[Vec<f64>],
) -> (Vec<Minibatch<'a>>, f64, f64) {
    let mut rounds: Vec<(&ChoiceExample, f64, &[PlaceExample], &[f64])> = Vec::new();
    for (r, a) in rollouts.iter().zip(adv) {
        for (round, &x) in r.rounds.iter().zip(a) {
            if !round.choice.jobs.is_empty() {
                rounds.push((&round.choice, x, &round.steps, &round.efficiency));
            }
        }
    }
    let (m1, s1) = moments(&rounds.iter().map(|r| r.1).collect::<Vec<_>>());
    let effs: Vec<f64> = rounds.iter().flat_map(|r| r.3.iter().copied()).collect();
    let (m2, s2) = moments(&effs);
    let train_avg_jct_h = rollouts.iter().map(|r| r.avg_jct_h).sum::<f64>() / rollouts.len() as f64;
    let order: Vec<usize> = (0..rounds.len()).collect();
    let batches: Vec<Minibatch> = order
        .chunks(cfg.minibatch_rounds)
        .map(|chunk| {
            let mut b = Minibatch {
                choices: Vec::new(),
                l1_adv: Vec::new(),
                steps: Vec::new(),
                l2_adv: Vec::new(),
            };
            for &k in chunk {
                let (c, a, steps, eff) = rounds[k];
                let a1 = ((a - m1) / s1) as f32;
                b.choices.push(c);
                b.l1_adv.extend(std::iter::repeat_n(a1, c.jobs.len()));
                for (s, &e) in steps.iter().zip(eff) {
                    b.steps.push(s);
                    b.l2_adv.push(match cfg.level2_reward {
                        Level2Reward::Efficiency => ((e - m2) / s2) as f32,
                        Level2Reward::Return => a1,
                    });
                }
            }
            b
        })
        .collect();
    (batches, m2, train_avg_jct_h)
}

/// PPO from `start` on windows of `data.pool` (trace order), stage by stage; `data.validation`
/// episodes choose the weights returned. `observe` sees every iteration.
pub fn train_rl(
    cfg: &RlConfig,
    start: &PolicyNet,
    data: RlData<'_>,
    observe: &mut dyn FnMut(&RlLog),
) -> Result<RlTrained> {
    cfg.check()?;
    tch::set_num_threads(1);
    tch::manual_seed(cfg.seed as i64);
    let dev = cfg.device;
    let started = Instant::now();
    // A start of fewer job features trains over every one (the others at zero weight).
    let start = &start.widened();
    let norm = norm_of(start);
    let mut policy = TchPolicy::new(dev);
    policy.load(start)?;
    let opt = nn::Adam::default()
        .build(&policy.vs, cfg.learning_rate)
        .map_err(|e| Error::Solver {
            solver: "libtorch".into(),
            reason: e.to_string(),
        })?;
    let critic = match cfg.advantage {
        Advantage::Gae { .. } => Some(CriticState {
            critic: Critic::new(dev, cfg.critic_learning_rate)?,
            scale: None,
        }),
        Advantage::Rollouts => None,
    };
    let start_val = validate(data, cfg.validation, start)?;
    let mut l = Learner {
        cfg,
        dev,
        norm,
        policy,
        opt,
        rng: ChaCha8Rng::seed_from_u64(cfg.seed),
        critic,
        best: (0usize, start_val, start.clone()),
    };
    let mut curve = Vec::new();
    let mut iteration = 0usize;
    'stages: for stage in &cfg.stages {
        for i in 0..stage.iterations {
            iteration += 1;
            let net = l.policy.to_policy_net(&l.norm)?;
            let sampling = Instant::now();
            let (episodes, rollouts) = sample_rollouts(cfg, stage, data, &net, &mut l.rng)?;
            let rollout_s = sampling.elapsed().as_secs_f64();
            let learning = Instant::now();
            let (adv, value_loss, ev) =
                level1_advantages(cfg, &episodes, &rollouts, &l.norm, &mut l.critic);
            let (batches, m2, train_avg_jct_h) = minibatches(cfg, &rollouts, &adv);
            let tensors = l.device_batches(&batches);
            let mut u = Update::default();
            let old = l.old_logps(&tensors, &mut u);
            l.ppo_epochs(stage, &tensors, &old, &mut u);
            let learn_s = learning.elapsed().as_secs_f64();
            let out_of_time = cfg
                .time_budget_s
                .is_some_and(|b| started.elapsed().as_secs_f64() > b);
            let last_of_stage = i + 1 == stage.iterations || out_of_time;
            let val_avg_jct_h = if iteration.is_multiple_of(cfg.validate_every) || last_of_stage {
                l.validate_keep_best(data, iteration)?
            } else {
                f64::NAN
            };
            let log = RlLog {
                iteration,
                stage: stage.name.clone(),
                train_avg_jct_h,
                efficiency: m2,
                decisions: (u.n1, u.n2),
                l1_entropy: u.ent1 / u.n1.max(1) as f64,
                l2_entropy: u.ent2 / u.n2.max(1) as f64,
                l1_kl: if u.counted > 0.0 {
                    u.kl / u.counted
                } else {
                    0.0
                },
                clip_fraction: if u.counted > 0.0 {
                    u.clipped / u.counted
                } else {
                    0.0
                },
                val_avg_jct_h,
                value_loss,
                explained_variance: ev,
                rollouts: (rollouts.len(), rollout_s),
                learner_steps: (u.steps, learn_s),
                seconds: started.elapsed().as_secs_f64(),
            };
            observe(&log);
            curve.push(log);
            if cfg.checkpoint_every > 0 && iteration.is_multiple_of(cfg.checkpoint_every) {
                l.checkpoint(iteration)?;
            }
            if out_of_time {
                break 'stages;
            }
        }
    }
    Ok(RlTrained {
        net: l.best.2,
        best: (l.best.0, l.best.1),
        start_val,
        curve,
        device: format!("{dev:?}"),
    })
}
