//! Imitation: both levels trained on expert labels (the exact program's, the lookahead's),
//! level 1 alone, then level 2, then both, each level's weights kept at its lowest validation
//! loss; from fresh weights or from a file (fine-tuning).

use rand::SeedableRng;
use rand::seq::SliceRandom;
use tch::nn::{self, OptimizerConfig};
use tch::{Kind, Tensor};

use super::curves::EpochLog;
use super::{L1Batch, Norm, RowBatch, TchPolicy, TrainConfig, l1_batch, l2_batch};
use crate::error::{Error, Result};
use crate::learn::examples::{ChoiceExample, PlaceExample};
use crate::policies::learned::PolicyNet;

/// What training produced.
pub struct Trained {
    /// The plain-Rust network: each level's weights from the epoch of its lowest validation
    /// loss (early stopping without stopping: the curve shows every epoch).
    pub net: PolicyNet,
    /// Those lowest validation losses, level 1 and level 2.
    pub best_val: [f64; 2],
    /// The learning curve.
    pub curve: Vec<EpochLog>,
    /// Level-1 decisions and level-2 steps trained on, and held out for validation.
    pub sizes: [usize; 4],
    /// Where it ran.
    pub device: String,
}

/// Per labelled round, its level-1 example and level-2 steps.
type RoundExamples = (ChoiceExample, Vec<PlaceExample>);

/// The training rounds as fixed batches of `cfg.batch_rounds` rounds (tensors built once; their
/// order is shuffled every epoch).
fn batches(
    cfg: &TrainConfig,
    train: &[RoundExamples],
    norm: &Norm,
) -> Vec<(Option<L1Batch>, Option<RowBatch>)> {
    train
        .chunks(cfg.batch_rounds)
        .map(|chunk| {
            let c: Vec<&ChoiceExample> = chunk.iter().map(|t| &t.0).collect();
            let s: Vec<&PlaceExample> = chunk.iter().flat_map(|t| t.1.iter()).collect();
            (
                l1_batch(&c, norm, cfg.device),
                l2_batch(&s, norm, cfg.device),
            )
        })
        .collect()
}

impl TchPolicy {
    /// One epoch over `batches` in a shuffled order, the levels `do1` and `do2` training (each
    /// level's mean cross-entropy per decision; summed when both train); returns each level's
    /// summed loss and decisions.
    fn epoch(
        &self,
        opt: &mut nn::Optimizer,
        batches: &[(Option<L1Batch>, Option<RowBatch>)],
        order: Vec<usize>,
        (do1, do2): (bool, bool),
    ) -> (f64, i64, f64, i64) {
        let (mut s1, mut n1, mut s2, mut n2) = (0.0, 0i64, 0.0, 0i64);
        for i in order {
            let (b1, b2) = &batches[i];
            let mut parts: Vec<Tensor> = Vec::new();
            if do1 && let Some(b) = b1 {
                let (l, _) = self.l1_loss(b);
                s1 += l.double_value(&[]);
                n1 += b.decisions;
                parts.push(l / b.decisions as f64);
            }
            if do2 && let Some(b) = b2 {
                let (l, _) = self.l2_loss(b);
                s2 += l.double_value(&[]);
                n2 += b.decisions;
                parts.push(l / b.decisions as f64);
            }
            if !parts.is_empty() {
                opt.backward_step(&Tensor::stack(&parts, 0).sum(Kind::Float));
            }
        }
        (s1, n1, s2, n2)
    }

    /// Each level's mean validation loss and accuracy per decision (NaN without rounds).
    fn validation(&self, l1: &Option<L1Batch>, l2: &Option<RowBatch>) -> (f64, f64, f64, f64) {
        tch::no_grad(|| {
            let (v1, a1) = l1.as_ref().map_or((f64::NAN, f64::NAN), |b| {
                let (l, c) = self.l1_loss(b);
                (
                    l.double_value(&[]) / b.decisions as f64,
                    c as f64 / b.decisions as f64,
                )
            });
            let (v2, a2) = l2.as_ref().map_or((f64::NAN, f64::NAN), |b| {
                let (l, c) = self.l2_loss(b);
                (
                    l.double_value(&[]) / b.decisions as f64,
                    c as f64 / b.decisions as f64,
                )
            });
            (v1, a1, v2, a2)
        })
    }
}

/// Trains both levels on `train`, validating on `val` (each: per labelled round, its level-1
/// example and level-2 steps). `observe` sees every epoch; checkpoints go to `cfg.run_dir`.
pub fn train(
    cfg: &TrainConfig,
    train: &[RoundExamples],
    val: &[RoundExamples],
    observe: &mut dyn FnMut(&EpochLog),
) -> Result<Trained> {
    cfg.check()?;
    tch::set_num_threads(1);
    tch::manual_seed(cfg.seed as i64);
    let device = cfg.device;
    let started = std::time::Instant::now();
    let choices: Vec<ChoiceExample> = train.iter().map(|t| t.0.clone()).collect();
    let steps: Vec<PlaceExample> = train.iter().flat_map(|t| t.1.clone()).collect();
    let mut norm = Norm::of(&choices, &steps);
    let mut policy = TchPolicy::new(device);
    if let Some(init) = &cfg.init {
        norm = norm.kept_from(init);
        // The features the start did not read get zero weights: the same decisions, whatever
        // their normalisation (the training rows').
        let mut start = init.widened();
        start.l1_mean = nalgebra::DVector::from_vec(norm.l1_mean.clone());
        start.l1_std = nalgebra::DVector::from_vec(norm.l1_std.clone());
        policy.load(&start)?;
    }
    norm.drop(&cfg.drop_features);
    let mut opt = nn::AdamW {
        wd: cfg.weight_decay,
        ..Default::default()
    }
    .build(&policy.vs, cfg.learning_rate)
    .map_err(|e| Error::Solver {
        solver: "libtorch".into(),
        reason: e.to_string(),
    })?;
    let batches = batches(cfg, train, &norm);
    let val_c: Vec<&ChoiceExample> = val.iter().map(|t| &t.0).collect();
    let val_s: Vec<&PlaceExample> = val.iter().flat_map(|t| t.1.iter()).collect();
    let val_l1 = l1_batch(&val_c, &norm, device);
    let val_l2 = l2_batch(&val_s, &norm, device);
    let count = |b: &Option<L1Batch>| b.as_ref().map_or(0, |b| b.decisions as usize);
    let count2 = |b: &Option<RowBatch>| b.as_ref().map_or(0, |b| b.decisions as usize);
    let sizes = [
        batches.iter().map(|b| count(&b.0)).sum(),
        batches.iter().map(|b| count2(&b.1)).sum(),
        count(&val_l1),
        count2(&val_l2),
    ];

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut curve = Vec::new();
    let phases = [
        ("level1", cfg.epochs.0, true, false),
        ("level2", cfg.epochs.1, false, true),
        ("joint", cfg.epochs.2, true, true),
    ];
    let mut epoch = 0;
    // Each level's weights at its lowest validation loss (with no validation set, the last).
    let mut best: [(f64, Option<PolicyNet>); 2] = [(f64::INFINITY, None), (f64::INFINITY, None)];
    for (phase, n, do1, do2) in phases {
        for _ in 0..n {
            epoch += 1;
            let mut order: Vec<usize> = (0..batches.len()).collect();
            order.shuffle(&mut rng);
            let (s1, n1, s2, n2) = policy.epoch(&mut opt, &batches, order, (do1, do2));
            let (v1, a1, v2, a2) = policy.validation(&val_l1, &val_l2);
            let log = EpochLog {
                epoch,
                phase,
                l1_train_loss: if n1 > 0 { s1 / n1 as f64 } else { f64::NAN },
                l1_val_loss: v1,
                l1_val_acc: a1,
                l2_train_loss: if n2 > 0 { s2 / n2 as f64 } else { f64::NAN },
                l2_val_loss: v2,
                l2_val_acc: a2,
                seconds: started.elapsed().as_secs_f64(),
            };
            for (level, trained, loss) in [(0, do1, v1), (1, do2, v2)] {
                // Without validation rounds (NaN loss) the last epoch stands.
                if trained && (loss < best[level].0 || loss.is_nan()) {
                    best[level] = (loss, Some(policy.to_policy_net(&norm)?));
                }
            }
            observe(&log);
            curve.push(log);
            if cfg.checkpoint_every > 0 && epoch % cfg.checkpoint_every == 0 {
                let net = policy.to_policy_net(&norm)?;
                let path = cfg
                    .run_dir
                    .join(format!("checkpoint-{epoch:04}.safetensors"));
                crate::util::write_atomic(
                    &path,
                    &net.to_safetensors(&[("epoch", epoch.to_string())])?,
                )?;
            }
        }
    }
    let last = policy.to_policy_net(&norm)?;
    let mut net = best[0].1.clone().unwrap_or_else(|| last.clone());
    if let Some(l2) = &best[1].1 {
        net.l2_mean = l2.l2_mean.clone();
        net.l2_std = l2.l2_std.clone();
        net.l2 = l2.l2.clone();
    }
    // A fine-tuned network keeps its start's CPU/memory tier head (trained on the expert's
    // allocations alone, it does not depend on the levels it joins), as `coda train rl` does.
    if let Some(init) = &cfg.init {
        net.tier = init.tier.clone();
    }
    Ok(Trained {
        net,
        best_val: [best[0].0, best[1].0],
        curve,
        sizes,
        device: format!("{device:?}"),
    })
}
