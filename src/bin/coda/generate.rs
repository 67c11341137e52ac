//! `coda generate`: Write a random instance.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::workload::GenerateOptions;
use indicatif::{ProgressBar, ProgressStyle};

use crate::{perf_model, range};

/// Arguments of `coda generate`.
#[derive(clap::Args)]
pub struct Args {
    /// Servers.
    #[arg(long, value_parser = range::servers)]
    pub servers: usize,
    /// Jobs.
    #[arg(long, value_parser = range::jobs)]
    pub jobs: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// GPU types, round-robin over servers.
    #[arg(long, value_delimiter = ',', default_value = "v100")]
    pub gpu_types: Vec<String>,
    /// Fraction of jobs already running (placed first-fit).
    #[arg(long, default_value_t = 0.3, value_parser = range::fraction)]
    pub running_fraction: f64,
    /// Largest worker count a job may ask for.
    #[arg(long, default_value_t = 8, value_parser = range::workers)]
    pub max_workers: u32,
    /// Output file (stdout if absent).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    let out = args.out;
    if let Some(p) = &out {
        coda::io::check_writable(p)?;
    }
    let opts = GenerateOptions {
        servers: args.servers,
        jobs: args.jobs,
        seed: args.seed,
        gpu_types: args.gpu_types,
        running_fraction: args.running_fraction,
        max_workers: args.max_workers,
        ..Default::default()
    };
    // Two ticks per job (drawn, placed); drawn only on a terminal and for large sizes.
    let bar = if opts.jobs.saturating_add(opts.servers) >= 100_000 {
        ProgressBar::new(2 * opts.jobs as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("generate {bar:40} {pos}/{len} steps, {elapsed} (eta {eta})")
            .expect("a valid template"),
    );
    let snap = coda::workload::generate::generate_with(&opts, &perf, &mut || bar.inc(1))?;
    bar.finish_and_clear();
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
