//! The `coda` command line: a thin layer over the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use coda::CalibratedPerf;

/// A replay allocates and frees millions of small vectors (option lists, proposals, occupancy
/// indices); mimalloc serves them in a fraction of glibc malloc's instructions. The library
/// leaves the choice to its caller.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` that ends the process quietly when stdout is closed (`coda ... | head`) instead of
/// panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

mod bench_decide;
mod bench_sim;
mod bench_solve;
mod bench_warm;
mod bound;
mod calibrate;
mod distil;
mod gap;
mod generate;
mod label;
mod perf;
mod plots;
mod range;
mod report;
mod scaling;
mod sensitivity;
mod simulate;
mod slurm;
mod solve;
mod trace;
#[cfg(feature = "train")]
mod train;
#[cfg(feature = "train")]
mod train_rl;
#[cfg(feature = "train")]
mod train_tiers;
mod validate;

#[derive(Parser)]
#[command(
    name = "coda",
    version,
    about = "Contention-aware joint allocation and placement of DL training jobs"
)]
struct Cli {
    /// Performance-model parameter file (default: the shipped `models/perf_params.json`).
    #[arg(long, global = true)]
    params: Option<PathBuf>,
    /// Statistical efficiency: `on` makes a job's speed its goodput (throughput × progress per
    /// sample at its batch, relative to its requested allocation; `coda::perf::goodput`) for the
    /// simulator, the objective and every policy; `off` prices throughput alone.
    #[arg(long, global = true, value_enum, default_value = "off")]
    goodput: Switch,
    #[command(subcommand)]
    cmd: Cmd,
}

/// A setting that is on or off.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Switch {
    On,
    Off,
}

/// Where the performance model comes from: `--params` (else the shipped file) and `--goodput`.
pub struct PerfSource {
    file: Option<PathBuf>,
    goodput: bool,
}

impl PerfSource {
    /// The same source as command-line arguments (for a child process).
    fn args(&self) -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = Vec::new();
        if let Some(p) = &self.file {
            a.extend(["--params".into(), p.clone().into_os_string()]);
        }
        if self.goodput {
            a.extend(["--goodput".into(), "on".into()]);
        }
        a
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Fit the performance model to datasets/ and write the parameter file.
    ///
    /// Writes `--out` (default `models/perf_params.json`) atomically; `--quality-csv` and
    /// `--placement-csv` add the held-out fit error per model and the spread ÷ packed check per
    /// measured pair. Prints the fit quality. Under a second.
    Calibrate(calibrate::Args),
    /// Predicted speed of one job alone with an allocation and a placement.
    ///
    /// Writes nothing; prints the step time split into compute, intra- and inter-server sync
    /// (`--json` for one object). With `--cluster`, the placement is priced on those servers
    /// (sockets, PCIe switches) next to the packed one and the measured envelope. Milliseconds.
    Perf(perf::Args),
    /// Check a schedule against an instance; exit status 1 if it has violations.
    ///
    /// Writes nothing; prints every violation, or each job's speed in context. Milliseconds.
    Validate(validate::Args),
    /// Solve one round exactly (integer program, HiGHS) and write the schedule.
    ///
    /// Writes the schedule (`--out`, JSON) and optionally the program (`--export-mps`); prints
    /// status, objective, bound, gap, build and solve time. Takes up to `--time-limit` (60 s by
    /// default; rounds of 2–4 servers are proven in seconds on 2 cores).
    Solve(solve::Args),
    /// Measure build and solve time against cluster size; write a CSV and an SVG plot.
    ///
    /// Writes `solve_scaling.{csv,svg}` under `--out`. Up to 60 s per instance (the time
    /// limit): minutes for the default sizes, about 30 minutes for every shipped instance.
    BenchSolve(bench_solve::Args),
    /// The learned policy as the solver's start: default start vs MIP start vs fix-and-solve
    /// on every instance (time to a proven optimum, or gap at the limit).
    ///
    /// Writes `warm_start.csv` under `--out`. Three solves per instance, each of up to
    /// `--time-limit`: rounds of 1–2 servers take seconds, 8-server rounds the whole limit.
    BenchWarmStart(bench_warm::Args),
    /// The learned policy's decision time for one round against cluster size (CSV).
    ///
    /// Writes `--out` (default `decide_scaling.csv`). About a minute for the default sizes (to
    /// 1,000 servers and 2,000 jobs, three seeds).
    BenchDecide(bench_decide::Args),
    /// How a replay's cost grows with jobs and servers: Philly resampled to 1k–100k jobs on
    /// 64–1,000 servers, replayed under each policy; wall time, rounds per second and peak
    /// memory (CSV, log–log plot, fitted exponents).
    ///
    /// Writes `bench_sim.{csv,svg}` under `--out`. Each replay runs in its own process, stopped
    /// past `--max-wall-s`: seconds for 1,000 jobs, hours for the whole default grid.
    BenchSim(bench_sim::Args),
    /// Write a random instance.
    ///
    /// Writes `--out` (or stdout), JSON; the same seed gives the same instance. Milliseconds.
    Generate(generate::Args),
    /// Expert labels for the learned scheduler: generated rounds solved exactly, decoded per job
    /// into the level-1 allocation and level-2 placement (JSON lines, resumable).
    ///
    /// Appends to `--out` (a second run skips the rounds already there). Each round takes up to
    /// `--time-limit` on one thread: the shipped label sets took minutes to about half an hour.
    Label(label::Args),
    /// The learned policy's optimality gap on held-out labelled rounds, next to every
    /// heuristic's, by size, with decision times (`gap.csv`, `gap.md`).
    ///
    /// Writes `gap.csv` and `gap.md` under `--out`. Under a second for the shipped held-out set.
    Gap(gap::Args),
    /// Regenerate every results table in the docs from the CSVs under `benches/results/`,
    /// `formulations/results/` and `models/`; with `--check`, exit 1 where a committed table
    /// differs.
    ///
    /// Writes `benches/results/README.md`, the README's headline and the generated tables of
    /// `models/README.md`. Well under a second.
    Report(report::Args),
    /// Distil the lookahead into the `distilled` policy's gate: record the lookahead's plays on
    /// the rounds a student visits (`plays`), fit the gate to them (`fit`).
    ///
    /// `plays` appends one JSON line per round to `--out` (resumable) and takes what the
    /// lookahead takes (a 300-job slice: minutes); `fit` writes the gate and its fit table in
    /// seconds.
    #[command(subcommand)]
    Distil(distil::Cmd),
    /// Train the learned policy (built with the `train` feature).
    #[cfg(feature = "train")]
    #[command(subcommand)]
    Train(train::Cmd),
    /// coda on a Slurm cluster: the placement daemon (`run`), the job a live test submits
    /// (`job`), a trace slice as tagged jobs (`workload`). See `examples/slurm/README.md`.
    ///
    /// `run` loops until stopped (`--once`: one round, well under a second with the learned
    /// policy); `job` sleeps its job's predicted time; `workload` prints in milliseconds.
    #[command(subcommand)]
    Slurm(slurm::Cmd),
    /// Load a trace, assign models, print a summary.
    ///
    /// Writes the converted jobs with `--out` (JSON). Milliseconds.
    Trace(trace::Args),
    /// Lower bounds on a replay's average JCT that no policy beats: every job alone at its
    /// fastest, and the cluster's capacity (`formulations/README.md`).
    ///
    /// Takes `simulate`'s workload and simulator flags; prints a table or, with `--json`, one
    /// object. Under a second on the Philly window.
    Bound(bound::Args),
    /// Replay a trace under one policy: metrics JSON, per-job and utilisation CSVs, plots.
    ///
    /// Writes `metrics.json`, `jobs.csv`, `utilization.csv`, `jct_cdf.svg`, `utilization.svg`
    /// (and `solves.csv` for `ilp`) under `--out`. A heuristic replays the Philly window in a few
    /// seconds, the learned policy in under a minute; `ilp` takes minutes on a 150-job slice.
    Simulate {
        #[command(flatten)]
        sim: simulate::SimArgs,
        /// The policy.
        #[arg(long, value_enum)]
        policy: coda::policies::PolicyKind,
    },
    /// Replay a trace under several policies in parallel: one table, one plot, and each run's
    /// files in a subfolder.
    ///
    /// Writes `comparison.{csv,md}`, `jct_cdf.svg`, `utilization.svg` and one folder per policy
    /// (as `simulate`) under `--out`. The eight classic baselines on the Philly window: about 30 s on
    /// 2 cores; `synergy-tune` adds what `srtf` takes (about 6 s of one core).
    Compare {
        #[command(flatten)]
        sim: simulate::SimArgs,
        #[command(flatten)]
        runs: simulate::PolicyRuns,
    },
    /// Which estimate drives which result: replay every policy with each named estimate at its
    /// low, shipped and high value, and with all contention off (`sensitivity.{csv,md}`).
    ///
    /// Writes `sensitivity.{csv,md}` under `--out`: 15 settings × the policies. The eight
    /// baselines on the Philly window: a few minutes on 2 cores.
    Sensitivity {
        #[command(flatten)]
        sim: simulate::SimArgs,
        #[command(flatten)]
        runs: simulate::PolicyRuns,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// A thread count no larger than the cores this process may use (more only time-slice them);
/// 0 stays 0 (the library's default, one per core).
fn cap_threads(n: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    n.min(cores)
}

fn perf_model(source: &PerfSource) -> coda::Result<CalibratedPerf> {
    let perf = match &source.file {
        Some(p) => CalibratedPerf::from_file(p)?,
        None => CalibratedPerf::shipped().clone(),
    };
    Ok(perf.with_goodput(source.goodput))
}

/// One command, one file: this only dispatches.
fn run(cli: Cli) -> coda::Result<ExitCode> {
    let params = &PerfSource {
        file: cli.params,
        goodput: cli.goodput == Switch::On,
    };
    match cli.cmd {
        Cmd::Calibrate(args) => calibrate::run(args, params),
        Cmd::Perf(args) => perf::run(args, params),
        Cmd::Validate(args) => validate::run(args, params),
        Cmd::Solve(args) => solve::run(args, params),
        Cmd::BenchSolve(args) => bench_solve::run(args, params),
        Cmd::BenchWarmStart(args) => bench_warm::run(args, params),
        Cmd::BenchDecide(args) => bench_decide::run(args, params),
        Cmd::BenchSim(args) => bench_sim::run(args, params),
        Cmd::Label(args) => label::run(args, params),
        Cmd::Gap(args) => gap::run(args, params),
        Cmd::Report(args) => report::run(args),
        Cmd::Distil(cmd) => distil::run(cmd, params),
        #[cfg(feature = "train")]
        Cmd::Train(cmd) => train::run(cmd, params),
        Cmd::Generate(args) => generate::run(args, params),
        Cmd::Trace(args) => trace::run(args, params),
        Cmd::Slurm(cmd) => slurm::run(cmd, &perf_model(params)?),
        Cmd::Bound(args) => {
            let text = bound::run(args, &perf_model(params)?)?;
            out!("{}", text.trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Simulate { sim, policy } => {
            let text = simulate::simulate(&sim, policy, &perf_model(params)?)?;
            out!("{}", text.trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Compare { sim, runs } => {
            let text = simulate::compare(&sim, &runs.policies, runs.threads, &perf_model(params)?)?;
            out!("{}", text.trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sensitivity { sim, runs } => {
            let text = sensitivity::run(&sim, &runs, &perf_model(params)?)?;
            out!("{}", text.trim_end());
            Ok(ExitCode::SUCCESS)
        }
    }
}
