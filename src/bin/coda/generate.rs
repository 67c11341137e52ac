//! `coda generate`: Write a random instance.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::GenerateOptions;

use crate::perf_model;

/// Arguments of `coda generate`.
#[derive(clap::Args)]
pub struct Args {
    /// Servers.
    #[arg(long)]
    pub servers: usize,
    /// Jobs.
    #[arg(long)]
    pub jobs: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// GPU types, round-robin over servers.
    #[arg(long, value_delimiter = ',', default_value = "v100")]
    pub gpu_types: Vec<String>,
    /// Fraction of jobs already running (placed first-fit).
    #[arg(long, default_value_t = 0.3)]
    pub running_fraction: f64,
    /// Largest worker count a job may ask for.
    #[arg(long, default_value_t = 8)]
    pub max_workers: u32,
    /// Output file (stdout if absent).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: Args, params: &Option<PathBuf>) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    let out = args.out;
    let opts = GenerateOptions {
        servers: args.servers,
        jobs: args.jobs,
        seed: args.seed,
        gpu_types: args.gpu_types,
        running_fraction: args.running_fraction,
        max_workers: args.max_workers,
        ..Default::default()
    };
    let snap = coda::generate(&opts, &perf)?;
    match out {
        Some(p) => {
            snap.to_json_file(&p)?;
            eprintln!("wrote {}", p.display());
        }
        None => out!(
            "{}",
            serde_json::to_string_pretty(&snap).expect("serialize")
        ),
    }
    Ok(ExitCode::SUCCESS)
}
