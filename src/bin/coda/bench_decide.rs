//! `coda bench-decide`: the learned policy's decision time for one full round against cluster
//! size, next to the best heuristic's (generated rounds, one thread); a CSV to set beside
//! `bench-solve`'s ILP times.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::objective::RoundPricing;
use coda::policies::BestHeuristic;
use coda::policies::learned::{LearnedScheduler, Placer, PolicyNet};
use coda::workload::{GenerateOptions, generate};
use coda::{Objective, Scheduler};

use crate::{perf_model, range};

/// Arguments of `coda bench-decide`.
#[derive(clap::Args)]
pub struct Args {
    /// Sizes as SERVERSxJOBS (8-GPU servers), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "4x8,8x16,16x32,64x128,250x500,1000x2000",
        value_parser = range::size
    )]
    pub sizes: Vec<(usize, usize)>,
    /// Seeds per size.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub seeds: Vec<u64>,
    /// Fraction of each round's jobs already running.
    #[arg(long, default_value_t = 0.3, value_parser = range::fraction)]
    pub running_fraction: f64,
    /// Timed repetitions per round (the median is reported).
    #[arg(long, default_value_t = 3, value_parser = range::at_least_one)]
    pub repeats: usize,
    /// Policies to time: `learned` (sampled decodings), `learned-greedy` (one decoding),
    /// `learned-packer` (level 1 greedy, placed by the baselines' packer instead of level 2),
    /// `best-heuristic` (the ILP's start: the best of four heuristics), or any baseline name.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "learned,learned-greedy,best-heuristic"
    )]
    pub policies: Vec<String>,
    /// Weights of the learned policy (default: the shipped ones).
    #[arg(long)]
    pub policy_weights: Option<PathBuf>,
    /// Output CSV.
    #[arg(long, default_value = "decide_scaling.csv")]
    pub out: PathBuf,
}

#[derive(serde::Serialize)]
struct Row {
    servers: usize,
    gpus: u64,
    jobs: usize,
    seed: u64,
    policy: String,
    median_s: f64,
    objective: f64,
    valid: bool,
    /// Jobs given workers, and the GPUs they hold (how much of the cluster the schedule uses).
    jobs_run: usize,
    gpus_used: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    let objective = Objective::default();
    coda::io::check_writable(&args.out)?;
    let net = match &args.policy_weights {
        Some(p) => PolicyNet::load(p)?,
        None => LearnedScheduler::shipped(&perf, objective)?.net().clone(),
    };
    let learned = LearnedScheduler::new(&perf, objective, net);
    let mut rows = Vec::new();
    for &(servers, jobs) in &args.sizes {
        for &seed in &args.seeds {
            let snap = generate(
                &GenerateOptions {
                    servers,
                    jobs,
                    seed,
                    running_fraction: args.running_fraction,
                    ..Default::default()
                },
                &perf,
            )?;
            let pricing = RoundPricing::new(&perf, &snap, objective);
            for policy in &args.policies {
                let mut other: Box<dyn Scheduler> = match policy.as_str() {
                    "learned" => Box::new(learned.clone()),
                    "learned-greedy" => Box::new(learned.clone().with_samples(1, 0)),
                    "learned-packer" => Box::new(
                        learned
                            .clone()
                            .with_samples(1, 0)
                            .with_placer(Placer::Packer),
                    ),
                    "best-heuristic" => Box::new(BestHeuristic::new(&perf, objective)),
                    name => name
                        .parse::<coda::policies::PolicyKind>()?
                        .build(&perf, &Default::default())?,
                };
                let mut times = Vec::new();
                let mut last = None;
                for _ in 0..args.repeats {
                    let t = Instant::now();
                    let s = other.schedule(&snap)?;
                    times.push(t.elapsed().as_secs_f64());
                    last = Some(s);
                }
                let s = last.expect("at least one repetition");
                let valid = s.validate(&snap).is_empty();
                let row = Row {
                    servers,
                    gpus: snap.cluster.num_gpus(),
                    jobs,
                    seed,
                    policy: policy.clone(),
                    median_s: median(times),
                    objective: if valid {
                        pricing.score(&s)?.total
                    } else {
                        f64::NAN
                    },
                    valid,
                    jobs_run: s
                        .assignments
                        .iter()
                        .filter(|a| !a.workers.is_empty())
                        .count(),
                    gpus_used: s.gpus_used(),
                };
                eprintln!(
                    "{servers}x{jobs} seed {seed} {policy}: {:.4} s, objective {:.3}",
                    row.median_s, row.objective
                );
                rows.push(row);
            }
        }
    }
    coda::io::write_csv(&args.out, &rows)?;
    out!("{} rows written to {}", rows.len(), args.out.display());
    Ok(ExitCode::SUCCESS)
}
