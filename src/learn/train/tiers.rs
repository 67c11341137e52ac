//! Imitation training of the tier head ([`crate::policies::learned::TierHead`]): per job the
//! expert ran on a round with tiers, the cross-entropy of the expert's tier among the job's
//! tier rows ([`crate::learn::tier_examples`]). Seeded, one libtorch thread, the weights of
//! the epoch with the lowest validation loss kept (the last without validation examples).

use rand::SeedableRng;
use rand::seq::SliceRandom;
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Tensor};

use super::{HIDDEN, RowBatch, grouped_loss, moments, named_tensors, row_batch};
use crate::error::{Error, Result};
use crate::learn::TierExample;
use crate::policies::learned::TierHead;
use crate::policies::learned::tiers::TIER_FEATURES;

/// Settings of `coda train tiers`.
#[derive(Debug, Clone, PartialEq)]
pub struct TierTrainConfig {
    /// Seed of initialisation and batch order.
    pub seed: u64,
    /// Epochs.
    pub epochs: usize,
    /// Examples (jobs) per batch.
    pub batch: usize,
    /// AdamW's learning rate.
    pub learning_rate: f64,
    /// AdamW's decoupled weight decay.
    pub weight_decay: f64,
    /// Where it trains.
    pub device: Device,
}

impl Default for TierTrainConfig {
    fn default() -> Self {
        TierTrainConfig {
            seed: 0,
            epochs: 60,
            batch: 64,
            learning_rate: 1e-3,
            weight_decay: 0.01,
            device: Device::cuda_if_available(),
        }
    }
}

/// One epoch of the tier head's learning curve.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TierEpochLog {
    /// 1-based.
    pub epoch: usize,
    /// Mean training cross-entropy per decision.
    pub train_loss: f64,
    /// Validation cross-entropy (NaN without validation examples).
    pub val_loss: f64,
    /// Validation accuracy: the expert's tier ranked first.
    pub val_acc: f64,
    /// Validation accuracy of always choosing the demand (tier 0): a trivial rule.
    pub val_acc_demand: f64,
    /// Validation accuracy of always choosing the fastest tier (the lowest on ties): the other
    /// trivial rule, Synergy TUNE's first wish.
    pub val_acc_fastest: f64,
    /// Seconds since training began.
    pub seconds: f64,
}

fn batch(ex: &[&TierExample], mean: &[f32], std: &[f32], dev: Device) -> Option<RowBatch> {
    row_batch(
        ex.iter().map(|e| (e.rows.as_slice(), e.target)),
        mean,
        std,
        dev,
    )
}

/// The trained head and its learning curve.
pub fn train_tiers(
    cfg: &TierTrainConfig,
    train: &[TierExample],
    val: &[TierExample],
    observe: &mut dyn FnMut(&TierEpochLog),
) -> Result<(TierHead, Vec<TierEpochLog>)> {
    if train.is_empty() || cfg.batch == 0 || cfg.epochs == 0 {
        return Err(Error::setting(
            "train tiers",
            "examples / batch / epochs",
            format!("{} / {} / {}", train.len(), cfg.batch, cfg.epochs),
            "needs examples (labels of rounds with tiers), batch >= 1 and epochs >= 1",
        ));
    }
    tch::set_num_threads(1);
    tch::manual_seed(cfg.seed as i64);
    let dev = cfg.device;
    let started = std::time::Instant::now();
    let w = TIER_FEATURES.len();
    let (mean, std) = moments(
        train.iter().flat_map(|e| e.rows.iter().map(Vec::as_slice)),
        w,
    );
    let vs = nn::VarStore::new(dev);
    let root = vs.root() / "tier";
    let lin =
        |n: &str, i: usize, o: usize| nn::linear(&root / n, i as i64, o as i64, Default::default());
    let layers = [
        lin("fc1", w, HIDDEN),
        lin("fc2", HIDDEN, HIDDEN),
        lin("out", HIDDEN, 1),
    ];
    let forward = |x: &Tensor| {
        let h = layers[0].forward(x).relu();
        let h = layers[1].forward(&h).relu();
        layers[2].forward(&h).squeeze_dim(1)
    };
    let mut opt = nn::AdamW {
        wd: cfg.weight_decay,
        ..Default::default()
    }
    .build(&vs, cfg.learning_rate)
    .map_err(|e| Error::Solver {
        solver: "libtorch".into(),
        reason: e.to_string(),
    })?;
    let refs: Vec<&TierExample> = train.iter().collect();
    let batches: Vec<RowBatch> = refs
        .chunks(cfg.batch)
        .filter_map(|c| batch(c, &mean, &std, dev))
        .collect();
    let val_refs: Vec<&TierExample> = val.iter().collect();
    let val_b = batch(&val_refs, &mean, &std, dev);
    let share = |hit: &dyn Fn(&TierExample) -> bool| {
        if val.is_empty() {
            f64::NAN
        } else {
            val.iter().filter(|e| hit(e)).count() as f64 / val.len() as f64
        }
    };
    let demand_acc = share(&|e| e.target == 0);
    let speed = TIER_FEATURES
        .iter()
        .position(|&f| f == "tier_speed")
        .expect("a tier feature");
    let fastest_acc = share(&|e| {
        let s = |k: usize| e.rows[k][speed];
        let best = (0..e.rows.len()).fold(0, |b, k| if s(k) > s(b) { k } else { b });
        best == e.target
    });
    let export = || -> Result<TierHead> {
        let mut map = named_tensors(&vs)?;
        map.insert("tier.mean".into(), (vec![w], mean.clone()));
        map.insert("tier.std".into(), (vec![w], std.clone()));
        TierHead::from_tensors(&map, "trainer")?.ok_or_else(|| Error::ModelFile {
            path: "trainer".into(),
            reason: "no tier tensors".into(),
        })
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut curve = Vec::new();
    let mut best: (f64, Option<TierHead>) = (f64::INFINITY, None);
    for epoch in 1..=cfg.epochs {
        let mut order: Vec<usize> = (0..batches.len()).collect();
        order.shuffle(&mut rng);
        let (mut s, mut n) = (0.0, 0i64);
        for i in order {
            let b = &batches[i];
            let (l, _) = grouped_loss(&forward(&b.x), &b.pad, &b.target);
            s += l.double_value(&[]);
            n += b.decisions;
            opt.backward_step(&(l / b.decisions as f64));
        }
        let (vl, va) = tch::no_grad(|| {
            val_b.as_ref().map_or((f64::NAN, f64::NAN), |b| {
                let (l, c) = grouped_loss(&forward(&b.x), &b.pad, &b.target);
                (
                    l.double_value(&[]) / b.decisions as f64,
                    c as f64 / b.decisions as f64,
                )
            })
        });
        let log = TierEpochLog {
            epoch,
            train_loss: s / n.max(1) as f64,
            val_loss: vl,
            val_acc: va,
            val_acc_demand: demand_acc,
            val_acc_fastest: fastest_acc,
            seconds: started.elapsed().as_secs_f64(),
        };
        if vl < best.0 || vl.is_nan() {
            best = (vl, Some(export()?));
        }
        observe(&log);
        curve.push(log);
    }
    let head = match best.1 {
        Some(h) => h,
        None => export()?,
    };
    Ok((head, curve))
}
