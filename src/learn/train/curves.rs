//! Learning curves: imitation's one row per epoch, RL's one row per iteration, and their CSVs.

use std::path::Path;

use crate::error::Result;

/// One epoch's numbers: a row of the learning curve.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EpochLog {
    /// 1-based, over all phases.
    pub epoch: usize,
    /// `level1`, `level2` or `joint`.
    pub phase: &'static str,
    /// Mean training cross-entropy per decision, level 1 (NaN if not trained this epoch).
    pub l1_train_loss: f64,
    /// Validation cross-entropy, level 1.
    pub l1_val_loss: f64,
    /// Validation accuracy (the expert's row ranked first), level 1.
    pub l1_val_acc: f64,
    /// Mean training cross-entropy per step, level 2 (NaN if not trained this epoch).
    pub l2_train_loss: f64,
    /// Validation cross-entropy, level 2.
    pub l2_val_loss: f64,
    /// Validation accuracy, level 2.
    pub l2_val_acc: f64,
    /// Seconds since training began.
    pub seconds: f64,
}

/// Writes the learning curve as CSV.
pub fn write_curve(path: &Path, curve: &[EpochLog]) -> Result<()> {
    crate::util::write_csv(path, curve)
}

/// One iteration's numbers: a row of the learning curve.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RlLog {
    /// 1-based.
    pub iteration: usize,
    /// The curriculum stage.
    pub stage: String,
    /// Mean average JCT of the iteration's sampled rollouts, hours.
    pub train_avg_jct_h: f64,
    /// Mean placement efficiency of the level-2 steps.
    pub efficiency: f64,
    /// Level-1 decisions and level-2 steps in the iteration.
    pub decisions: (usize, usize),
    /// Mean entropy of level 1's distributions (nats), before the update.
    pub l1_entropy: f64,
    /// Mean entropy of level 2's.
    pub l2_entropy: f64,
    /// Mean approximate KL divergence of the update (old − new log-probability), level 1.
    pub l1_kl: f64,
    /// Share of level-1 decisions whose ratio was clipped in the last epoch.
    pub clip_fraction: f64,
    /// The critic's mean squared error after its steps (reward-scale units²; NaN without one).
    pub value_loss: f64,
    /// Share of the sampled discounted returns' variance the critic's values explained before
    /// its steps (NaN without a critic).
    pub explained_variance: f64,
    /// Rollouts sampled, and seconds spent sampling them.
    pub rollouts: (usize, f64),
    /// Optimiser steps of the policy, and seconds of the whole update (batching, the
    /// critic and PPO).
    pub learner_steps: (usize, f64),
    /// Mean average JCT of the greedy policy on the validation episodes, hours (NaN when not
    /// validated this iteration).
    pub val_avg_jct_h: f64,
    /// Seconds since training began.
    pub seconds: f64,
}

/// Writes the RL learning curve as CSV.
pub fn write_rl_curve(path: &std::path::Path, curve: &[RlLog]) -> crate::error::Result<()> {
    #[derive(serde::Serialize)]
    struct Row<'a> {
        iteration: usize,
        stage: &'a str,
        train_avg_jct_h: f64,
        val_avg_jct_h: f64,
        efficiency: f64,
        l1_decisions: usize,
        l2_steps: usize,
        l1_entropy: f64,
        l2_entropy: f64,
        l1_kl: f64,
        clip_fraction: f64,
        value_loss: f64,
        explained_variance: f64,
        rollouts: usize,
        rollout_s: f64,
        learner_steps: usize,
        learn_s: f64,
        seconds: f64,
    }
    let rows: Vec<Row> = curve
        .iter()
        .map(|l| Row {
            iteration: l.iteration,
            stage: &l.stage,
            train_avg_jct_h: l.train_avg_jct_h,
            val_avg_jct_h: l.val_avg_jct_h,
            efficiency: l.efficiency,
            l1_decisions: l.decisions.0,
            l2_steps: l.decisions.1,
            l1_entropy: l.l1_entropy,
            l2_entropy: l.l2_entropy,
            l1_kl: l.l1_kl,
            clip_fraction: l.clip_fraction,
            value_loss: l.value_loss,
            explained_variance: l.explained_variance,
            rollouts: l.rollouts.0,
            rollout_s: l.rollouts.1,
            learner_steps: l.learner_steps.0,
            learn_s: l.learner_steps.1,
            seconds: l.seconds,
        })
        .collect();
    crate::util::write_csv(path, &rows)
}
