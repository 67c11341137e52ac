//! `coda simulate` and `coda compare`: replay a trace under one or several policies.

use std::path::{Path, PathBuf};

use clap::Args;
use coda::io::write_atomic;
use coda::lab::replay::{Replay, ReplaySpec};
use coda::lab::report::{Comparison, jobs_csv, utilization_csv};
use coda::policies::PolicyKind;
use coda::sim::JobRecord;
use coda::workload::Workload;
use coda::{Error, PerfModel};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::plots::{plot_jct_cdf, plot_utilization};
use crate::range;

/// What both commands share: the workload, the simulator and the policy settings (defaults:
/// [`ReplaySpec::default`], the one place they are set).
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// `philly`, `itp-cluster02`, `itp-cluster06`, `itp`, `alibaba`, or the path of a CSV in
    /// one of the shipped formats.
    #[arg(long)]
    pub trace: String,
    /// `NxG`, `NxG:TYPE`, `alibaba-nodes` or a cluster JSON file (default: the trace's own, see
    /// the README).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Seed of the trace's model assignment and of every random choice of the policy.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// `fungible`: jobs offer their model's CPU/memory tiers, which `ilp`, `learned*` and
    /// `synergy-tune` hand out; `fixed`: every task gets its demand under every policy
    #[arg(long, default_value = "fungible")]
    pub cpu_mem: coda::workload::trace::CpuMemMode,
    /// Give every server this many cores per GPU instead of its own (Synergy's testbed: 3)
    #[arg(long, value_parser = range::positive)]
    pub cpu_per_gpu: Option<f64>,
    /// Only the first N jobs of the trace (after `--skip`).
    #[arg(long, value_parser = range::at_least_one)]
    pub take: Option<usize>,
    /// Leave out the first N jobs of the trace (e.g. those a policy was trained on).
    #[arg(long, default_value_t = 0)]
    pub skip: usize,
    /// Folder of the shipped data.
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// Seconds between scheduling rounds.
    #[arg(long, default_value_t = ReplaySpec::default().round_s, value_parser = range::round_s)]
    pub round_s: f64,
    /// Seconds a running job loses when its allocation or placement changes (an estimate; at
    /// most one round).
    #[arg(long, default_value_t = ReplaySpec::default().restart_s, value_parser = range::non_negative)]
    pub restart_s: f64,
    /// In-service credit κ of the objective the `ilp` policy maximises (what a round in
    /// service is worth to any job; 0: the pure fraction-of-remaining-work objective).
    #[arg(long, default_value_t = coda::objective::DEFAULT_IN_SERVICE_CREDIT, value_parser = range::non_negative)]
    pub in_service_credit: f64,
    /// Stop at this simulated time (jobs left are reported unfinished).
    #[arg(long, value_parser = range::positive)]
    pub horizon_s: Option<f64>,
    /// Contention the trace durations already contain, as a factor >= 1 on step time (see the
    /// README): `auto` measures it with a FIFO replay of the same workload; 1 charges all
    /// contention on top of the trace durations.
    #[arg(long, default_value = "auto", value_parser = parse_allowance)]
    pub contention_allowance: Allowance,
    /// Tracked window, as fractions of the jobs in arrival order: metrics leave out warm-up and
    /// tail (Blox does the same).
    #[arg(long, default_value_t = ReplaySpec::default().track_from, value_parser = range::fraction)]
    pub track_from: f64,
    /// End of the tracked window.
    #[arg(long, default_value_t = ReplaySpec::default().track_to, value_parser = range::fraction)]
    pub track_to: f64,
    /// `ilp` policy: seconds per round.
    #[arg(long, default_value_t = ReplaySpec::default().ilp_time_limit, value_parser = range::time_limit)]
    pub ilp_time_limit: f64,
    /// `ilp` policy: branch-and-bound node limit per round (makes runs repeatable; >= 1: a
    /// limit of 0 stops every round before any schedule).
    #[arg(long, value_parser = range::at_least_one_u64)]
    pub ilp_node_limit: Option<u64>,
    /// `ilp` policy: the configuration program's work limit per round, pricing-search nodes
    /// (with a node limit and a time limit that does not bind, runs are repeatable).
    #[arg(long, value_parser = range::at_least_one_u64)]
    pub ilp_work_limit: Option<u64>,
    /// `ilp` policy: jobs each round's program decides (the waiting ones the objective values
    /// most, half kept for them, and the running ones it values least; other running jobs are
    /// held where they are, other waiting jobs wait unless back-fill starts them).
    #[arg(long, default_value_t = ReplaySpec::default().ilp_max_jobs, value_parser = range::at_least_one)]
    pub ilp_max_jobs: usize,
    /// `ilp` policy: re-solve a round in which nothing changed since the last decision (same
    /// jobs, each where it was put) only every this many rounds; 1: every round.
    #[arg(long, default_value_t = coda::policies::DEFAULT_ILP_REVISIT_ROUNDS, value_parser = range::at_least_one_u32)]
    pub ilp_revisit_rounds: u32,
    /// `tiresias` policy: its `PromoteKnob` (a job pending for this many times its executed time
    /// returns to the highest queue; 0 disables promotion).
    #[arg(long, default_value_t = ReplaySpec::default().tiresias_promote_knob, value_parser = range::non_negative)]
    pub tiresias_promote_knob: f64,
    /// `ilp` policy: also start every round's solve from the learned policy's schedule (a MIP
    /// start; the best heuristic's is always offered).
    #[arg(long)]
    pub ilp_policy_start: bool,
    /// `learned` policy: its weights file (default: the shipped `models/policy.safetensors`).
    #[arg(long)]
    pub policy_weights: Option<PathBuf>,
    /// `learned` policy: decodings per round (1: greedy), the best under the objective kept.
    #[arg(long, default_value_t = coda::policies::learned::DEFAULT_SAMPLES, value_parser = range::at_least_one)]
    pub policy_samples: usize,
    /// Leave out (and report) jobs the cluster can never run — their smallest or requested
    /// allocation exceeds it — instead of refusing the workload.
    #[arg(long)]
    pub skip_unplaceable: bool,
    /// Decide every round, even those in which no job waits and the policy would keep every
    /// assignment (by default skipped: same results, less time).
    #[arg(long)]
    pub every_round: bool,
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

/// `--contention-allowance`: measured (`auto`) or given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Allowance {
    /// Measured by a FIFO replay ([`sim::contention_allowance`]).
    Auto,
    /// This factor.
    Fixed(f64),
}

fn parse_allowance(s: &str) -> Result<Allowance, String> {
    if s == "auto" {
        return Ok(Allowance::Auto);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 1.0 => Ok(Allowance::Fixed(v)),
        _ => Err(format!("`{s}`: expected `auto` or a number >= 1")),
    }
}

impl SimArgs {
    /// The flags as the library's replay spec (same names, same meaning).
    pub fn spec(&self) -> ReplaySpec {
        ReplaySpec {
            trace: self.trace.clone(),
            cluster: self.cluster.clone(),
            seed: self.seed,
            cpu_mem: self.cpu_mem,
            cpu_per_gpu: self.cpu_per_gpu,
            take: self.take,
            skip: self.skip,
            datasets: self.datasets.clone(),
            round_s: self.round_s,
            restart_s: self.restart_s,
            in_service_credit: self.in_service_credit,
            horizon_s: self.horizon_s,
            contention_allowance: match self.contention_allowance {
                Allowance::Auto => None,
                Allowance::Fixed(v) => Some(v),
            },
            track_from: self.track_from,
            track_to: self.track_to,
            ilp_time_limit: self.ilp_time_limit,
            ilp_node_limit: self.ilp_node_limit,
            ilp_work_limit: self.ilp_work_limit,
            ilp_max_jobs: self.ilp_max_jobs,
            ilp_revisit_rounds: self.ilp_revisit_rounds,
            tiresias_promote_knob: self.tiresias_promote_knob,
            ilp_policy_start: self.ilp_policy_start,
            policy_weights: self.policy_weights.clone(),
            policy_samples: self.policy_samples,
            skip_unplaceable: self.skip_unplaceable,
            every_round: self.every_round,
        }
    }

    fn check(&self) -> coda::Result<()> {
        // Errors name the flags, as the rest of the command line's do.
        self.spec()
            .check_named("command line", &|f| format!("--{}", f.replace('_', "-")))
    }

    /// The contention allowance for `workload`: given, or measured by a FIFO replay.
    pub fn allowance(&self, workload: &Workload, perf: &dyn PerfModel) -> coda::Result<f64> {
        self.spec().allowance(workload, perf)
    }

    pub fn workload(&self, perf: &dyn PerfModel) -> coda::Result<Workload> {
        self.spec().workload(perf)
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix:>9} [{elapsed_precise}] {bar:30} {pos}/{len} jobs done  {msg}",
    )
    .expect("static template")
}

/// Runs `policy` on `workload`, updating `bar` (jobs finished, simulated day).
pub fn run_one(
    policy: PolicyKind,
    workload: &Workload,
    args: &SimArgs,
    allowance: f64,
    perf: &dyn PerfModel,
    bar: &ProgressBar,
) -> coda::Result<Replay> {
    bar.set_prefix(policy.to_string());
    bar.set_length(workload.jobs.len() as u64);
    let run = args
        .spec()
        .run(policy, workload, allowance, perf, &mut |s| {
            bar.set_length(s.total_jobs() as u64);
            bar.set_position(s.finished() as u64);
            bar.set_message(format!("day {:.1}", s.now() / 86_400.0));
        })?;
    bar.finish();
    Ok(run)
}

/// One row per round the policy solved: status, objectives, bound, gap, times, nodes, and the
/// program (with its columns and search nodes where it was the configuration program).
fn solves_csv(solves: &[coda::scheduler::RoundSolve]) -> String {
    let mut out = String::from(
        "time_s,jobs,held,status,objective,start_objective,returned_start,best_bound,gap,build_s,solve_s,nodes,program,columns,search_nodes\n",
    );
    let opt = |v: Option<u64>| v.map_or(String::new(), |n| n.to_string());
    for r in solves {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.time_s,
            r.jobs,
            r.held,
            r.status,
            r.objective,
            r.start_objective,
            r.returned_start,
            r.best_bound,
            r.gap,
            r.build_s,
            r.solve_s,
            opt(r.nodes),
            if r.columns.is_some() {
                "config"
            } else {
                "compact"
            },
            opt(r.columns.map(|c| c as u64)),
            opt(r.search_nodes),
        ));
    }
    out
}

fn write_run(dir: &Path, run: &Replay, title: &str) -> coda::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let json = serde_json::to_string_pretty(&run.summary).expect("serialize");
    write_atomic(&dir.join("metrics.json"), json.as_bytes())?;
    write_atomic(&dir.join("jobs.csv"), jobs_csv(&run.records).as_bytes())?;
    if !run.solves.is_empty() {
        write_atomic(&dir.join("solves.csv"), solves_csv(&run.solves).as_bytes())?;
    }
    write_atomic(
        &dir.join("utilization.csv"),
        utilization_csv(&run.utilization, run.summary.gpus).as_bytes(),
    )?;
    plot_jct_cdf(
        &[(&run.summary.policy, &run.records)],
        &dir.join("jct_cdf.svg"),
        &format!("JCT CDF — {title}"),
    )?;
    plot_utilization(
        &[(&run.summary.policy, &run.utilization)],
        run.summary.gpus,
        &dir.join("utilization.svg"),
        &format!("GPU utilisation — {title}"),
    )
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
    let workload = args.workload(perf)?;
    let mp = progress(args.quiet);
    let allowance = args.allowance(&workload, perf)?;
    let bar = mp.add(ProgressBar::new(0).with_style(bar_style()));
    let run = run_one(policy, &workload, args, allowance, perf, &bar)?;
    let title = format!(
        "{} on {} ({})",
        policy, workload.trace, workload.cluster_spec
    );
    write_run(&args.out, &run, &title)?;
    Ok(if args.json {
        serde_json::to_string(&run.summary).expect("serialize")
    } else {
        Comparison {
            runs: vec![run.summary],
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

/// `coda compare`: every policy on the same workload, in parallel.
pub fn compare(
    args: &SimArgs,
    policies: &[PolicyKind],
    threads: Option<usize>,
    perf: &dyn PerfModel,
) -> coda::Result<String> {
    check_policies(args, policies)?;
    let workload = args.workload(perf)?;
    let allowance = args.allowance(&workload, perf)?;
    let mp = progress(args.quiet);
    let bars: Vec<ProgressBar> = policies
        .iter()
        .map(|_| mp.add(ProgressBar::new(0).with_style(bar_style())))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(crate::cap_threads(threads.unwrap_or(0)))
        .build()
        .map_err(|e| Error::invalid("command line", 0, "threads", e, "cannot start the pool"))?;
    let runs: Vec<coda::Result<Replay>> = pool.install(|| {
        policies
            .par_iter()
            .zip(bars.par_iter())
            .map(|(p, bar)| run_one(*p, &workload, args, allowance, perf, bar))
            .collect()
    });
    let runs: Vec<Replay> = runs.into_iter().collect::<coda::Result<_>>()?;
    let what = format!("{} on {}", workload.trace, workload.cluster_spec);
    for r in &runs {
        write_run(
            &args.out.join(&r.summary.policy),
            r,
            &format!("{} on {what}", r.summary.policy),
        )?;
    }
    let cmp = Comparison {
        runs: runs.iter().map(|r| r.summary.clone()).collect(),
    };
    write_atomic(&args.out.join("comparison.csv"), cmp.csv().as_bytes())?;
    write_atomic(&args.out.join("comparison.md"), cmp.markdown().as_bytes())?;
    let series: Vec<(&str, &[JobRecord])> = runs
        .iter()
        .map(|r| (r.summary.policy.as_str(), r.records.as_slice()))
        .collect();
    plot_jct_cdf(
        &series,
        &args.out.join("jct_cdf.svg"),
        &format!("JCT CDF — {what}"),
    )?;
    let util: Vec<(&str, &[(f64, u64)])> = runs
        .iter()
        .map(|r| (r.summary.policy.as_str(), r.utilization.as_slice()))
        .collect();
    plot_utilization(
        &util,
        workload.cluster.num_gpus(),
        &args.out.join("utilization.svg"),
        &format!("GPU utilisation — {what}"),
    )?;
    Ok(if args.json {
        serde_json::to_string(&cmp).expect("serialize")
    } else {
        cmp.markdown()
    })
}
