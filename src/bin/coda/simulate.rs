//! `coda simulate` and `coda compare`: replay a trace under one or several policies. The flags
//! are the library's [`Replay`] (its fields, documentation and defaults) plus where the output
//! goes; the files are written by its [`RunWriter`].

use std::path::PathBuf;

use clap::Args;
use coda::policies::PolicyKind;
use coda::replay::{Comparison, Replay, ReplayRun, RunWriter};
use coda::sim::{LpLimits, Observe, ObserverMode, Simulator};
use coda::workload::Workload;
use coda::{Error, PerfModel};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

/// What both commands share: the replay (the library's [`Replay`], every flag derived from it)
/// and where its results go.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// The replay.
    #[command(flatten)]
    pub replay: Replay,
    /// Output folder.
    #[arg(long)]
    pub out: PathBuf,
    /// One JSON object on stdout instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Which policies to run, and how many at a time (`compare`, `sensitivity`).
#[derive(Args, Debug, Clone)]
pub struct PolicyRuns {
    /// Comma-separated policies (default: every heuristic baseline).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "fifo,srtf,drf,tiresias,optimus,sjf-bco,pollux,random"
    )]
    pub policies: Vec<PolicyKind>,
    /// Runs at a time (default: one per core; more than the cores is capped to them); 1 gives
    /// single-core wall times.
    #[arg(long)]
    pub threads: Option<usize>,
}

impl SimArgs {
    fn check(&self) -> coda::Result<()> {
        // Errors name the flags, as the rest of the command line's do.
        self.replay
            .check_named("command line", &|f| format!("--{}", f.replace('_', "-")))
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix:>9} [{elapsed_precise}] {bar:30} {pos}/{len} jobs done  {msg}",
    )
    .expect("static template")
}

/// A progress bar as an observer of the run: jobs finished, simulated day.
struct Progress<'b>(&'b ProgressBar);

impl Observe for Progress<'_> {
    fn mode(&self) -> ObserverMode {
        ObserverMode::Every(500)
    }

    fn observe_event(&mut self, s: &Simulator<'_>) -> coda::Result<()> {
        self.0.set_length(s.total_jobs() as u64);
        self.0.set_position(s.finished() as u64);
        self.0.set_message(format!("day {:.1}", s.now() / 86_400.0));
        Ok(())
    }

    fn observe_final(&mut self, s: &Simulator<'_>) -> coda::Result<()> {
        self.observe_event(s)
    }
}

/// Runs `policy` on `workload`, updating `bar` (jobs finished, simulated day).
pub fn run_one(
    policy: PolicyKind,
    workload: &Workload,
    replay: &Replay,
    (allowance, perf): (f64, &dyn PerfModel),
    bar: &ProgressBar,
) -> coda::Result<ReplayRun> {
    bar.set_prefix(policy.to_string());
    bar.set_length(workload.jobs.len() as u64);
    let run = replay.run(policy, workload, allowance, perf, &mut [&mut Progress(bar)])?;
    bar.finish();
    Ok(run)
}

fn progress(quiet: bool) -> MultiProgress {
    if quiet {
        MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
    } else {
        MultiProgress::with_draw_target(ProgressDrawTarget::stderr())
    }
}

/// `coda simulate`.
pub fn simulate(args: &SimArgs, policy: PolicyKind, perf: &dyn PerfModel) -> coda::Result<String> {
    args.check()?;
    let workload = args.replay.workload(perf)?;
    let mp = progress(args.quiet);
    let allowance = args.replay.allowance(&workload, perf)?;
    let bar = mp.add(ProgressBar::new(0).with_style(bar_style()));
    let run = run_one(policy, &workload, &args.replay, (allowance, perf), &bar)?;
    let title = format!(
        "{} on {} ({})",
        policy, workload.trace, workload.cluster_spec
    );
    RunWriter::new(&args.out).write_run(&run, &title)?;
    Ok(if args.json {
        serde_json::to_string(&run.summary).expect("serialize")
    } else {
        Comparison {
            runs: vec![run.summary],
            bound: None,
        }
        .markdown()
    })
}

/// Checks the shared arguments and that no policy is named twice (their runs write to one
/// folder each).
pub fn check_policies(args: &SimArgs, policies: &[PolicyKind]) -> coda::Result<()> {
    args.check()?;
    for (i, p) in policies.iter().enumerate() {
        if policies[..i].contains(p) {
            return Err(Error::invalid(
                "command line",
                0,
                "policies",
                p,
                "named twice",
            ));
        }
    }
    Ok(())
}

/// A thread pool of `threads` (0: one per core), capped at the cores available.
pub fn pool(threads: Option<usize>) -> coda::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(crate::cap_threads(threads.unwrap_or(0)))
        .build()
        .map_err(|e| Error::invalid("command line", 0, "threads", e, "cannot start the pool"))
}

/// `coda compare`: every policy on the same workload, in parallel.
pub fn compare(
    args: &SimArgs,
    policies: &[PolicyKind],
    threads: Option<usize>,
    perf: &dyn PerfModel,
) -> coda::Result<String> {
    check_policies(args, policies)?;
    let workload = args.replay.workload(perf)?;
    let allowance = args.replay.allowance(&workload, perf)?;
    let mp = progress(args.quiet);
    let bars: Vec<ProgressBar> = policies
        .iter()
        .map(|_| mp.add(ProgressBar::new(0).with_style(bar_style())))
        .collect();
    let runs: Vec<coda::Result<ReplayRun>> = pool(threads)?.install(|| {
        policies
            .par_iter()
            .zip(bars.par_iter())
            .map(|(p, bar)| run_one(*p, &workload, &args.replay, (allowance, perf), bar))
            .collect()
    });
    let runs: Vec<ReplayRun> = runs.into_iter().collect::<coda::Result<_>>()?;
    let what = format!("{} on {}", workload.trace, workload.cluster_spec);
    // Milliseconds next to the replays: every comparison says how far each policy is from
    // the best any could do.
    let bound = args
        .replay
        .bound(&workload, perf, Some(LpLimits::default()))?;
    let cmp = RunWriter::new(&args.out).write_comparison(&runs, &what, Some(bound))?;
    Ok(if args.json {
        serde_json::to_string(&cmp).expect("serialize")
    } else {
        cmp.markdown()
    })
}
