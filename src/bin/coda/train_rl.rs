//! `coda train rl`: PPO refinement of the learned policy in the simulator, from the imitation
//! checkpoint (the `train` feature, libtorch). Episodes are windows of a trace's first part on a
//! curriculum of clusters; validation windows come from the same part, replayed as the policy is
//! deployed; the rest of the trace and every other trace stay unseen. Writes the weights of the
//! lowest validation average JCT, checkpoints and `curve.csv`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::learn::rl::Episode;
use coda::learn::train::rl::{
    Advantage, Level2Reward, RlConfig, RlData, Stage, Validation, train_rl, write_rl_curve,
};
use coda::policies::learned::PolicyNet;
use coda::workload::trace::TraceOptions;
use coda::workload::{self, cluster_from_spec};
use coda::{Error, Objective, PerfModel};
use indicatif::{ProgressBar, ProgressStyle};

use crate::{perf_model, range};

/// Arguments of `coda train rl`.
#[derive(clap::Args)]
pub struct Args {
    /// The imitation checkpoint to start from.
    #[arg(long, default_value = "models/policy.safetensors")]
    pub start: PathBuf,
    /// Weights file to write.
    #[arg(long, default_value = "models/policy-rl.safetensors")]
    pub out: PathBuf,
    /// Folder for checkpoints and `curve.csv`.
    #[arg(long, default_value = "train-rl")]
    pub run_dir: PathBuf,
    /// Trace whose first part episodes are cut from.
    #[arg(long, default_value = "philly")]
    pub trace: String,
    /// Jobs of the trace (in arrival order) episodes and validation windows may use; the rest
    /// stay unseen.
    #[arg(long, default_value_t = 2872, value_parser = range::at_least_one)]
    pub pool: usize,
    /// Folder of the shipped data.
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// Seed of episodes, sampling and minibatches (and of the trace's model assignment).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The curriculum: `NAME:CLUSTER:WINDOW:ITERATIONS:LEVELS` stages, comma-separated, LEVELS
    /// one of `1`, `2`, `12`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "place:4x8:100:10:2,alloc:4x8:100:15:1,joint-8x8:8x8:200:15:12,joint-16x8:16x8:400:10:12"
    )]
    pub stages: Vec<String>,
    /// Validation windows: `CLUSTER:WINDOW:START` of the pool, comma-separated (a named
    /// cluster's jobs converted on its own servers, as `coda simulate` converts them).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "8x8:200:600,8x8:200:1600,16x8:400:2300"
    )]
    pub validation: Vec<String>,
    /// Episodes per iteration.
    #[arg(long, default_value_t = 2, value_parser = range::at_least_one)]
    pub episodes: usize,
    /// Rollouts per episode (at least 2: each one's baseline is the others).
    #[arg(long, default_value_t = 4)]
    pub rollouts: usize,
    /// PPO epochs per iteration.
    #[arg(long, default_value_t = 4, value_parser = range::at_least_one)]
    pub ppo_epochs: usize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 3e-4)]
    pub learning_rate: f64,
    /// Weight of the entropy bonus.
    #[arg(long, default_value_t = 0.003)]
    pub entropy: f64,
    /// Discount per round of level 1's return.
    #[arg(long, default_value_t = 0.99)]
    pub gamma: f64,
    /// Sampling temperature of both levels during rollouts (the policy trained is
    /// `softmax(scores / T)`; the deployed policy decodes greedily or best-of-samples).
    #[arg(long, default_value_t = 0.3)]
    pub temperature: f64,
    /// Level 2's reward: `efficiency` (placement efficiency) or `return` (level 1's, the
    /// ablation without a level-2 reward).
    #[arg(long, default_value = "efficiency")]
    pub level2_reward: String,
    /// Validate every this many iterations.
    #[arg(long, default_value_t = 5, value_parser = range::at_least_one)]
    pub validate_every: usize,
    /// How validation replays the policy: `deployed` (as `coda simulate --policy learned`
    /// runs it: the best of its decodings a round, back-filled) or `greedy` (the argmax
    /// rollout alone, how validation chose before).
    #[arg(long, default_value = "deployed")]
    pub validation_decoding: String,
    /// Level 1's advantages: `gae` (a learned critic, generalised advantage estimation) or
    /// `rollouts` (each return against the other rollouts of its episode: the ablation without a
    /// critic).
    #[arg(long, default_value = "gae")]
    pub advantage: String,
    /// GAE's λ.
    #[arg(long, default_value_t = 0.95, value_parser = range::fraction)]
    pub gae_lambda: f64,
    /// Full-batch critic steps per iteration.
    #[arg(long, default_value_t = 40, value_parser = range::at_least_one)]
    pub critic_epochs: usize,
    /// Where the networks train: `auto` (CUDA when libtorch sees a GPU), `cpu` or `cuda`
    /// (rollouts run on the CPU cores whatever it is).
    #[arg(long, value_enum, default_value_t = coda::learn::train::TrainDevice::Auto)]
    pub device: coda::learn::train::TrainDevice,
    /// Threads rolling out (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Stop after the iteration that passes this many seconds (validating then), whatever the
    /// curriculum has left.
    #[arg(long, value_parser = range::positive)]
    pub time_budget: Option<f64>,
    /// Checkpoint every this many iterations (0: none).
    #[arg(long, default_value_t = 10)]
    pub checkpoint_every: usize,
}

fn bad_spec(field: &str, value: &str, expected: &str) -> Error {
    Error::setting("coda train rl", field, value, expected)
}

/// `--stages`: `NAME:CLUSTER:WINDOW:ITERATIONS:LEVELS` each.
fn stages(args: &Args, perf: &dyn PerfModel) -> coda::Result<Vec<Stage>> {
    let mut stages = Vec::new();
    for spec in &args.stages {
        let p: Vec<&str> = spec.split(':').collect();
        let expected = "NAME:CLUSTER:WINDOW:ITERATIONS:LEVELS (LEVELS 1, 2 or 12)";
        let [name, cluster, window, iterations, levels] = p.as_slice() else {
            return Err(bad_spec("--stages", spec, expected));
        };
        let (Ok(window), Ok(iterations)) = (window.parse::<usize>(), iterations.parse::<usize>())
        else {
            return Err(bad_spec("--stages", spec, expected));
        };
        let (level1, level2) = match *levels {
            "1" => (true, false),
            "2" => (false, true),
            "12" => (true, true),
            _ => return Err(bad_spec("--stages", spec, expected)),
        };
        stages.push(Stage {
            name: name.to_string(),
            cluster: cluster_from_spec(cluster, &args.datasets, perf)?,
            window,
            iterations,
            level1,
            level2,
        });
    }
    Ok(stages)
}

/// `--validation`: `CLUSTER:WINDOW:START` each, windows of the trace's first `--pool` jobs
/// (`opts`), loaded for that cluster as `coda simulate` loads them.
fn validation(
    args: &Args,
    opts: &TraceOptions,
    perf: &dyn PerfModel,
    objective: Objective,
) -> coda::Result<Vec<Episode>> {
    let mut validation = Vec::new();
    // One load of the trace per cluster named (windows on the same cluster share it).
    let mut loaded: std::collections::HashMap<&str, workload::Workload> =
        std::collections::HashMap::new();
    for spec in &args.validation {
        let p: Vec<&str> = spec.split(':').collect();
        let expected = "CLUSTER:WINDOW:START";
        let [cluster, window, at] = p.as_slice() else {
            return Err(bad_spec("--validation", spec, expected));
        };
        let (Ok(window), Ok(at)) = (window.parse::<usize>(), at.parse::<usize>()) else {
            return Err(bad_spec("--validation", spec, expected));
        };
        let wl = match loaded.entry(cluster) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(workload::load(
                workload::TraceRef {
                    name: &args.trace,
                    datasets: &args.datasets,
                    cluster: Some(cluster),
                    take: Some(args.pool),
                },
                opts,
                perf,
            )?),
        };
        let pool = coda::learn::rl::JobPool {
            name: &format!("{}-val", args.trace),
            jobs: &wl.jobs,
            cluster: &wl.cluster,
        };
        validation.push(Episode::window(pool, at..at + window, perf, objective)?);
    }
    Ok(validation)
}

/// The RL settings the flags give, checked.
fn config(args: &Args, stages: Vec<Stage>) -> coda::Result<RlConfig> {
    let level2_reward = match args.level2_reward.as_str() {
        "efficiency" => Level2Reward::Efficiency,
        "return" => Level2Reward::Return,
        other => return Err(bad_spec("--level2-reward", other, "efficiency or return")),
    };
    let advantage = match args.advantage.as_str() {
        "gae" => Advantage::Gae {
            lambda: args.gae_lambda,
        },
        "rollouts" => Advantage::Rollouts,
        other => return Err(bad_spec("--advantage", other, "gae or rollouts")),
    };
    let validation = match args.validation_decoding.as_str() {
        "deployed" => Validation::Deployed {
            samples: coda::policies::learned::DEFAULT_SAMPLES,
        },
        "greedy" => Validation::Greedy,
        other => {
            return Err(bad_spec(
                "--validation-decoding",
                other,
                "deployed or greedy",
            ));
        }
    };
    let cfg = RlConfig {
        seed: args.seed,
        episodes: args.episodes,
        rollouts: args.rollouts,
        ppo_epochs: args.ppo_epochs,
        learning_rate: args.learning_rate,
        entropy: args.entropy,
        gamma: args.gamma,
        temperature: args.temperature,
        level2_reward,
        validate_every: args.validate_every,
        validation,
        run_dir: args.run_dir.clone(),
        advantage,
        critic_epochs: args.critic_epochs,
        time_budget_s: args.time_budget,
        checkpoint_every: args.checkpoint_every,
        device: args.device.resolve()?,
        ..RlConfig::new(stages)
    };
    cfg.check()?;
    Ok(cfg)
}

/// The weights written with what made them (the start's tier head kept: RL refines levels 1
/// and 2 at the demand).
fn write_weights(
    args: &Args,
    cfg: &RlConfig,
    start: &PolicyNet,
    trained: &coda::learn::train::rl::RlTrained,
) -> coda::Result<()> {
    let meta = [
        ("start", args.start.display().to_string()),
        (
            "trace_pool",
            format!("{} first {} jobs", args.trace, args.pool),
        ),
        ("stages", args.stages.join(",")),
        ("validation", args.validation.join(",")),
        ("validation_decoding", args.validation_decoding.clone()),
        ("seed", args.seed.to_string()),
        ("level2_reward", args.level2_reward.clone()),
        ("advantage", format!("{:?}", cfg.advantage)),
        ("temperature", args.temperature.to_string()),
        (
            "best_iteration",
            format!("{} ({:.4} h)", trained.best.0, trained.best.1),
        ),
        ("device", trained.device.clone()),
        ("coda_version", env!("CARGO_PKG_VERSION").to_string()),
    ];
    let mut net = trained.net.clone();
    net.tier = start.tier.clone();
    coda::io::write_atomic(&args.out, &net.to_safetensors(&meta)?)
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let t0 = Instant::now();
    let perf = perf_model(params)?;
    let objective = Objective::default();
    coda::io::check_writable(&args.out)?;
    std::fs::create_dir_all(&args.run_dir).map_err(|e| Error::io(&args.run_dir, e))?;
    let start = PolicyNet::load(&args.start)?;
    let stages = stages(&args, &perf)?;
    let first = args
        .stages
        .first()
        .and_then(|s| s.split(':').nth(1))
        .unwrap_or("4x8");
    let opts = TraceOptions {
        seed: args.seed,
        // The policy is trained on GPU decisions at the demand (tiers are handed out after it).
        cpu_mem: coda::workload::trace::CpuMemMode::Fixed,
        ..TraceOptions::default()
    };
    let wl = workload::load(
        workload::TraceRef {
            name: &args.trace,
            datasets: &args.datasets,
            cluster: Some(first),
            take: Some(args.pool),
        },
        &opts,
        &perf,
    )?;
    let validation = validation(&args, &opts, &perf, objective)?;
    let cfg = config(&args, stages)?;
    let total: usize = cfg.stages.iter().map(|s| s.iterations).sum();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("rl {bar:40} {pos}/{len} iterations, {elapsed} {msg}")
            .expect("a valid template"),
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(crate::cap_threads(args.threads.unwrap_or(0)))
        .build()
        .map_err(|e| {
            Error::setting("coda train rl", "--threads", e.to_string(), "a thread pool")
        })?;
    let data = RlData {
        perf: &perf,
        objective,
        pool: &wl.jobs,
        validation: &validation,
    };
    let trained = pool.install(|| {
        train_rl(&cfg, &start, data, &mut |log| {
            bar.set_message(format!(
                "{} train JCT {:.2} h, efficiency {:.3}, critic EV {:.2}",
                log.stage, log.train_avg_jct_h, log.efficiency, log.explained_variance
            ));
            bar.inc(1);
        })
    })?;
    bar.finish_and_clear();
    write_rl_curve(&args.run_dir.join("curve.csv"), &trained.curve)?;
    write_weights(&args, &cfg, &start, &trained)?;
    let sum = |f: &dyn Fn(&coda::learn::train::rl::RlLog) -> f64| {
        trained.curve.iter().map(f).sum::<f64>()
    };
    out!(
        "{} rollouts in {:.1} s ({:.2} rollouts/s on {} threads); {} learner steps in {:.1} s \
         ({:.1} steps/s, batching and the critic included)",
        sum(&|l| l.rollouts.0 as f64),
        sum(&|l| l.rollouts.1),
        sum(&|l| l.rollouts.0 as f64) / sum(&|l| l.rollouts.1).max(1e-9),
        pool.current_num_threads(),
        sum(&|l| l.learner_steps.0 as f64),
        sum(&|l| l.learner_steps.1),
        sum(&|l| l.learner_steps.0 as f64) / sum(&|l| l.learner_steps.1).max(1e-9)
    );
    out!(
        "{} of {total} iterations on {}: validation average JCT {:.3} h at the start, {:.3} h \
         at iteration {} (kept); {:.1} s; wrote {}",
        trained.curve.len(),
        trained.device,
        trained.start_val,
        trained.best.1,
        trained.best.0,
        t0.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
