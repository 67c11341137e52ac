//! `coda train tiers`: level 1's CPU/memory tier head by imitation of labels of rounds whose
//! jobs offer tiers (`coda label --tiers`), written into a copy of a policy's weights file
//! (levels 1 and 2 and the file's metadata kept; the head's own facts added as `tier_*`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::Objective;
use coda::learn::train::tiers::{TierTrainConfig, train_tiers};
use coda::learn::{TierExample, tier_examples};
use coda::policies::learned::PolicyNet;
use rayon::prelude::*;

use crate::{perf_model, range};

/// Arguments of `coda train tiers`.
#[derive(clap::Args)]
pub struct Args {
    /// Label files of rounds with tiers (JSON lines from `coda label --tiers`), comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub labels: Vec<PathBuf>,
    /// The policy file whose levels 1 and 2 the head joins.
    #[arg(long, default_value = "models/policy.safetensors")]
    pub base: PathBuf,
    /// Weights file to write (default: the base, rewritten).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder for `curve_tiers.csv`.
    #[arg(long, default_value = "train-run")]
    pub run_dir: PathBuf,
    /// Seed of initialisation and batch order.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the networks train: `auto` (CUDA when libtorch sees a GPU), `cpu` or `cuda`.
    #[arg(long, value_enum, default_value_t = coda::learn::train::TrainDevice::Auto)]
    pub device: coda::learn::train::TrainDevice,
    /// Epochs.
    #[arg(long, default_value_t = 60, value_parser = range::at_least_one)]
    pub epochs: usize,
    /// Jobs per batch.
    #[arg(long, default_value_t = 64, value_parser = range::at_least_one)]
    pub batch: usize,
    /// Train and validate only on labels proven optimal. A label stopped at the gap limit keeps
    /// the demand where a tier is worth less than the gap (the start, at the demand, is within
    /// the tolerance): an imperfect expert exactly in the decision the head learns.
    #[arg(long)]
    pub proven_only: bool,
    /// Every this-many-th labelled round (by id order) is held out for validation.
    #[arg(long, default_value_t = 10, value_parser = range::at_least_one)]
    pub validate_every: usize,
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let t0 = Instant::now();
    let perf = perf_model(params)?;
    let out = args.out.clone().unwrap_or_else(|| args.base.clone());
    coda::io::check_writable(&out)?;
    std::fs::create_dir_all(&args.run_dir).map_err(|e| coda::Error::io(&args.run_dir, e))?;
    let bytes = std::fs::read(&args.base).map_err(|e| coda::Error::io(&args.base, e))?;
    let origin = args.base.display().to_string();
    let mut net = PolicyNet::from_safetensors(&bytes, &origin)?;
    let (_, header) =
        safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| coda::Error::ModelFile {
            path: origin.clone(),
            reason: e.to_string(),
        })?;
    // The base file's own facts stay, but not its layout keys (written afresh) nor an earlier
    // head's.
    let mut meta: Vec<(String, String)> = header
        .metadata()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| {
            !k.starts_with("tier_")
                && ![
                    "format",
                    "version",
                    "job_features",
                    "option_features",
                    "place_features",
                ]
                .contains(&k.as_str())
        })
        .collect();
    let (labels, total) = coda::learn::read_label_sets(&args.labels, args.proven_only)?;
    let per_round: Vec<Vec<TierExample>> = labels
        .par_iter()
        .map(|l| tier_examples(&perf, Objective::default(), l))
        .collect();
    let (tr, va) = coda::learn::split_held_out(per_round, args.validate_every);
    let (tr, va): (Vec<TierExample>, Vec<TierExample>) = (
        tr.into_iter().flatten().collect(),
        va.into_iter().flatten().collect(),
    );
    let cfg = TierTrainConfig {
        seed: args.seed,
        epochs: args.epochs,
        batch: args.batch,
        device: args.device.resolve()?,
        ..TierTrainConfig::default()
    };
    let (head, curve) = train_tiers(&cfg, &tr, &va, &mut |_| {})?;
    coda::io::write_csv(&args.run_dir.join("curve_tiers.csv"), &curve)?;
    let best = curve
        .iter()
        .filter(|c| c.val_loss.is_finite())
        .min_by(|a, b| a.val_loss.total_cmp(&b.val_loss));
    let names: Vec<String> = args
        .labels
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    meta.extend([
        ("tier_labels".to_string(), names.join(",")),
        (
            "tier_examples".to_string(),
            format!(
                "{} training, {} validation jobs, from {} of {total} rounds{}",
                tr.len(),
                va.len(),
                labels.len(),
                if args.proven_only {
                    " (proven optimal)"
                } else {
                    ""
                }
            ),
        ),
        ("tier_seed".to_string(), args.seed.to_string()),
        ("tier_epochs".to_string(), args.epochs.to_string()),
        (
            "tier_best_validation".to_string(),
            best.map_or("none".into(), |b| {
                format!(
                    "epoch {}, loss {:.4}, accuracy {:.4}",
                    b.epoch, b.val_loss, b.val_acc
                )
            }),
        ),
    ]);
    net.tier = Some(head);
    let meta_ref: Vec<(&str, String)> = meta.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    coda::io::write_atomic(&out, &net.to_safetensors(&meta_ref)?)?;
    out!(
        "{} of {total} rounds: {} training and {} validation jobs with tiers; best validation epoch {} \
         (loss {:.3}, accuracy {:.3}; always the demand: {:.3}, always the fastest tier: {:.3}); \
         {:.1} s; wrote {}",
        labels.len(),
        tr.len(),
        va.len(),
        best.map_or(0, |b| b.epoch),
        best.map_or(f64::NAN, |b| b.val_loss),
        best.map_or(f64::NAN, |b| b.val_acc),
        best.map_or(f64::NAN, |b| b.val_acc_demand),
        best.map_or(f64::NAN, |b| b.val_acc_fastest),
        t0.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
