//! `coda train imitation`: the learned policy from expert labels (the `train` feature, libtorch).
//! Writes the weights (safetensors, loadable without libtorch), checkpoints and a learning curve.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::Objective;
use coda::learn::examples::{ChoiceExample, PlaceExample, examples};
use coda::learn::train::{TrainConfig, train, write_curve};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::{perf_model, range};

/// `coda train …`.
#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Imitation of the exact program's labels: level 1, then level 2, then both.
    Imitation(Args),
    /// Reinforcement learning (PPO) in the simulator from an imitation checkpoint: level 1 on
    /// job completion time, level 2 on placement efficiency.
    Rl(crate::train_rl::Args),
    /// Level 1's CPU/memory tier head, by imitation of labels of rounds with tiers, added to
    /// (or replaced in) a policy's weights file; levels 1 and 2 are copied unchanged.
    Tiers(crate::train_tiers::Args),
}

/// Arguments of `coda train imitation`.
#[derive(clap::Args)]
pub struct Args {
    /// Label files (JSON lines from `coda label`), comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub labels: Vec<PathBuf>,
    /// Weights file to write.
    #[arg(long, default_value = "models/policy.safetensors")]
    pub out: PathBuf,
    /// Folder for checkpoints and `curve.csv`.
    #[arg(long, default_value = "train-run")]
    pub run_dir: PathBuf,
    /// Seed of initialisation and batch order.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the networks train: `auto` (CUDA when libtorch sees a GPU), `cpu` or `cuda`.
    #[arg(long, value_enum, default_value_t = coda::learn::train::TrainDevice::Auto)]
    pub device: coda::learn::train::TrainDevice,
    /// Epochs of level 1 alone.
    #[arg(long, default_value_t = 40)]
    pub epochs_level1: usize,
    /// Epochs of level 2 alone.
    #[arg(long, default_value_t = 40)]
    pub epochs_level2: usize,
    /// Epochs of both together.
    #[arg(long, default_value_t = 20)]
    pub epochs_joint: usize,
    /// Labelled rounds per batch.
    #[arg(long, default_value_t = 8, value_parser = range::at_least_one)]
    pub batch_rounds: usize,
    /// AdamW's learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub learning_rate: f64,
    /// AdamW's weight decay.
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f64,
    /// Every this-many-th labelled round (by id order) is held out for validation (unless
    /// `--validation-labels` gives the validation rounds).
    #[arg(long, default_value_t = 10, value_parser = range::at_least_one)]
    pub validate_every: usize,
    /// Label files whose rounds are the validation set (comma-separated); every round of
    /// `--labels` is then trained on. Rounds of one replay are alike from one round to the
    /// next: a replay held out whole validates what a split by id order cannot.
    #[arg(long, value_delimiter = ',')]
    pub validation_labels: Vec<PathBuf>,
    /// Weights to start from (fine-tuning) instead of fresh ones; a file trained before some
    /// job features existed starts with them at zero weight, so training starts from exactly
    /// its decisions.
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Features the networks may not read (an ablation), comma-separated names from
    /// models/POLICY.md.
    #[arg(long, value_delimiter = ',')]
    pub drop_features: Vec<String>,
    /// Train only on labels proven optimal (time-limited labels are imperfect experts).
    #[arg(long)]
    pub proven_only: bool,
}

/// Runs the command.
pub fn run(cmd: Cmd, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let args = match cmd {
        Cmd::Imitation(args) => args,
        Cmd::Rl(args) => return crate::train_rl::run(args, params),
        Cmd::Tiers(args) => return crate::train_tiers::run(args, params),
    };
    let t0 = Instant::now();
    let perf = perf_model(params)?;
    let objective = Objective::default();
    coda::io::check_writable(&args.out)?;
    std::fs::create_dir_all(&args.run_dir).map_err(|e| coda::Error::io(&args.run_dir, e))?;
    let (labels, total) = coda::learn::read_label_sets(&args.labels, args.proven_only)?;
    let of = |labels: &[coda::learn::RoundLabel]| {
        labels
            .par_iter()
            .map(|l| examples(&perf, objective, l))
            .collect::<coda::Result<Vec<(ChoiceExample, Vec<PlaceExample>)>>>()
    };
    let ex = of(&labels)?;
    let (tr, va) = if args.validation_labels.is_empty() {
        coda::learn::split_held_out(ex, args.validate_every)
    } else {
        let (held, _) = coda::learn::read_label_sets(&args.validation_labels, args.proven_only)?;
        (ex, of(&held)?)
    };
    let init = args
        .init
        .as_ref()
        .map(coda::policies::learned::PolicyNet::load)
        .transpose()?;
    let cfg = TrainConfig {
        seed: args.seed,
        epochs: (args.epochs_level1, args.epochs_level2, args.epochs_joint),
        batch_rounds: args.batch_rounds,
        learning_rate: args.learning_rate,
        weight_decay: args.weight_decay,
        checkpoint_every: 20,
        run_dir: args.run_dir.clone(),
        drop_features: args.drop_features.clone(),
        device: args.device.resolve()?,
        init,
    };
    let epochs = args.epochs_level1 + args.epochs_level2 + args.epochs_joint;
    let bar = ProgressBar::new(epochs as u64);
    bar.set_style(
        ProgressStyle::with_template("train {bar:40} {pos}/{len} epochs, {elapsed} {msg}")
            .expect("a valid template"),
    );
    let prep_s = t0.elapsed().as_secs_f64();
    let trained = train(&cfg, &tr, &va, &mut |log| {
        bar.set_message(format!(
            "{} val acc L1 {:.3} L2 {:.3}",
            log.phase, log.l1_val_acc, log.l2_val_acc
        ));
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    write_curve(&args.run_dir.join("curve.csv"), &trained.curve)?;
    let last = trained.curve.last();
    let names: Vec<String> = args
        .labels
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut meta = vec![
        ("labels", names.join(",")),
        (
            "rounds",
            format!("{} of {total} ({} validation)", labels.len(), va.len()),
        ),
        ("decisions", format!("{:?}", trained.sizes)),
        ("seed", args.seed.to_string()),
        ("epochs", format!("{:?}", cfg.epochs)),
        ("best_validation_loss", format!("{:?}", trained.best_val)),
        ("device", trained.device.clone()),
        ("coda_version", env!("CARGO_PKG_VERSION").to_string()),
    ];
    // Only an ablation names dropped features, only a fine-tuning its start and only a
    // held-out replay its validation files (the shipped file stays byte-for-byte the same).
    if !args.drop_features.is_empty() {
        meta.push(("dropped_features", args.drop_features.join(",")));
    }
    if let Some(p) = &args.init {
        meta.push(("init", p.display().to_string()));
    }
    if !args.validation_labels.is_empty() {
        let v: Vec<String> = args
            .validation_labels
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        meta.push(("validation_labels", v.join(",")));
    }
    coda::io::write_atomic(&args.out, &trained.net.to_safetensors(&meta)?)?;
    out!(
        "{} rounds ({} training, {} validation): level-1 decisions {} / {}, level-2 steps {} / {}; \
         {epochs} epochs on {}; kept the epochs of lowest validation loss ({:.3}, {:.3}); \
         final validation accuracy level 1 {:.3}, level 2 {:.3}; \
         examples {:.1} s, total {:.1} s; wrote {}",
        labels.len(),
        tr.len(),
        va.len(),
        trained.sizes[0],
        trained.sizes[2],
        trained.sizes[1],
        trained.sizes[3],
        trained.device,
        trained.best_val[0],
        trained.best_val[1],
        last.map_or(f64::NAN, |l| l.l1_val_acc),
        last.map_or(f64::NAN, |l| l.l2_val_acc),
        prep_s,
        t0.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
