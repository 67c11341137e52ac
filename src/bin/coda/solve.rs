//! `coda solve`: Solve one round exactly (integer program, HiGHS) and write the schedule.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::policies::{ExactRound, FixConfident, WarmStart};
use coda::{ClusterSnapshot, PerfModel, Schedule};

use crate::{perf_model, range};

/// Arguments of `coda solve`.
#[derive(clap::Args)]
pub struct Args {
    /// Instance (ClusterSnapshot JSON).
    #[arg(long)]
    pub instance: PathBuf,
    /// Which program: `compact` (per-job integer columns), `config` (a column per server
    /// configuration, generated against the relaxation's duals: a bound that closes packing
    /// gaps; no `--fix-confident` yet) or `auto` (by size: `config` from 40 servers × jobs).
    #[arg(long, value_enum, default_value_t = coda::ilp::SolveProgram::Auto)]
    pub program: coda::ilp::SolveProgram,
    /// Wall-clock limit, seconds.
    #[arg(long, default_value_t = 60.0, value_parser = range::time_limit)]
    pub time_limit: f64,
    /// Relative gap at which to stop (1 accepts the first feasible schedule).
    #[arg(long, default_value_t = 1e-6, value_parser = range::fraction)]
    pub gap: f64,
    /// Branch-and-bound node limit (a repeatable work limit).
    #[arg(long)]
    pub node_limit: Option<u64>,
    /// The configuration program's work limit: pricing-search nodes over the whole solve (a
    /// repeatable limit; the compact program ignores it).
    #[arg(long, value_parser = range::at_least_one_u64)]
    pub work_limit: Option<u64>,
    /// The work limit scaled with the round: pricing-search nodes per job the program decides
    /// (the smaller of the two with `--work-limit`).
    #[arg(long, value_parser = range::at_least_one_u64)]
    pub work_per_job: Option<u64>,
    /// Solver threads: HiGHS's, and the configuration program prices its server classes on
    /// that many (in order under a work limit); capped at the cores available.
    #[arg(long, default_value_t = 1, value_parser = range::at_least_one_u32)]
    pub threads: u32,
    /// Solver seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// MIP start from this schedule file, or `policy` for the learned policy's schedule of the
    /// round (the shipped weights).
    #[arg(long)]
    pub warm_start: Option<StartArg>,
    /// Weights of the learned policy for `--warm-start policy` (default: the shipped ones).
    #[arg(long)]
    pub policy_weights: Option<PathBuf>,
    /// Fix-and-solve (with `--warm-start policy`): the jobs level 1 gives at least this
    /// probability, and that the policy's schedule treats so, are held to the policy's
    /// schedule while the smaller program is solved; then every job is freed and the whole
    /// program solved with the time left (the bound and gap reported are the whole program's).
    #[arg(long, value_parser = range::fraction)]
    pub fix_confident: Option<f64>,
    /// Fix-and-solve: share of the time limit the fixed phase may use.
    #[arg(long, default_value_t = 0.5, value_parser = range::fraction)]
    pub fix_share: f64,
    /// Do not order interchangeable servers.
    #[arg(long)]
    pub no_symmetry_breaking: bool,
    /// Add the valid inequalities on co-location (group 14 of formulations/README.md).
    #[arg(long)]
    pub colocation_cuts: bool,
    /// The configuration program solves its master only once column generation ends, not also
    /// between its chunks (`SolveSettings::interim_masters`).
    #[arg(long)]
    pub no_interim_masters: bool,
    /// The configuration program's exact pricing searches over fragments, not by shapes and
    /// then layouts (`SolveSettings::shape_pricing`; the same columns, the ablation).
    #[arg(long)]
    pub no_shape_pricing: bool,
    /// Pricing by shapes bounds its search without the co-location floors between jobs
    /// (`SolveSettings::colocation_floors`; the same columns, the ablation).
    #[arg(long)]
    pub no_colocation_floors: bool,
    /// Column generation prices at the relaxation's duals only, not first at duals smoothed
    /// toward the best bound so far (`SolveSettings::dual_smoothing`; the ablation).
    #[arg(long)]
    pub no_dual_smoothing: bool,
    /// Round length T of the objective, seconds.
    #[arg(long, default_value_t = 300.0, value_parser = range::round_s)]
    pub round_s: f64,
    /// Restart cost of the objective, seconds (at most `--round-s`).
    #[arg(long, default_value_t = 60.0, value_parser = range::non_negative)]
    pub restart_s: f64,
    /// In-service credit κ of the objective (what a round at its full pace is worth to any job).
    #[arg(long, default_value_t = coda::objective::DEFAULT_IN_SERVICE_CREDIT, value_parser = range::non_negative)]
    pub in_service_credit: f64,
    /// What a co-runner costs in the objective: its pair slowdown (`pair`, the default), its
    /// share of a full server's saturating slowdown (`full-server`), or that share scaled to
    /// the progress a full server takes (`progress`).
    #[arg(long, value_enum, default_value_t = coda::objective::Colocation::Pair)]
    pub colocation: coda::objective::Colocation,
    /// Write the model as MPS here.
    #[arg(long)]
    pub export_mps: Option<PathBuf>,
    /// Only write the MPS file; do not solve.
    #[arg(long, requires = "export_mps")]
    pub export_only: bool,
    /// Every job offers its model's measured CPU/memory tiers besides its demand
    /// (`coda::workload::offer_tiers`), so the program decides cores and memory too.
    #[arg(long)]
    pub tiers: bool,
    /// Write the schedule here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the solver log.
    #[arg(long)]
    pub verbose: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `--warm-start`: the learned policy's schedule of the round, or a schedule file.
#[derive(Debug, Clone)]
pub enum StartArg {
    /// `policy`.
    Policy,
    /// Any other value: a schedule file.
    File(PathBuf),
}

impl std::str::FromStr for StartArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "policy" => StartArg::Policy,
            path => StartArg::File(PathBuf::from(path)),
        })
    }
}

/// The flag that sets a field of [`ExactRound`].
fn flag(field: &str) -> String {
    match field {
        "fix" | "fix.confidence" => "--fix-confident".into(),
        "fix.share" => "--fix-share".into(),
        other => other.into(),
    }
}

/// The solver settings the flags give (threads capped at the cores).
fn settings(args: &Args) -> coda::ilp::SolveSettings {
    coda::ilp::SolveSettings {
        time_limit_s: args.time_limit,
        mip_rel_gap: args.gap,
        mip_abs_gap: 1e-6,
        node_limit: args.node_limit,
        work_limit: args.work_limit,
        work_per_job: args.work_per_job,
        threads: crate::cap_threads(args.threads as usize) as u32,
        seed: args.seed,
        symmetry_breaking: !args.no_symmetry_breaking,
        colocation_cuts: args.colocation_cuts,
        interim_masters: !args.no_interim_masters,
        shape_pricing: !args.no_shape_pricing,
        colocation_floors: !args.no_colocation_floors,
        dual_smoothing: !args.no_dual_smoothing,
        verbose: args.verbose,
    }
}

/// The recipe the flags ask for, checked under the command line's names before any work.
fn recipe(
    args: &Args,
    objective: coda::Objective,
    settings: coda::ilp::SolveSettings,
) -> coda::Result<ExactRound> {
    let warm_start = match &args.warm_start {
        None => WarmStart::Heuristic,
        Some(StartArg::Policy) => WarmStart::Policy(args.policy_weights.clone()),
        Some(StartArg::File(p)) => WarmStart::Schedule(Schedule::from_json_file(p)?),
    };
    let recipe = ExactRound {
        program: args.program,
        settings,
        objective,
        warm_start,
        fix: args.fix_confident.map(|confidence| FixConfident {
            confidence,
            share: args.fix_share,
        }),
        backfill: false,
    };
    recipe.check().map_err(|e| match e {
        coda::Error::InvalidSetting {
            field,
            value,
            expected,
            ..
        } => coda::Error::setting("coda solve", &flag(&field), value, expected),
        other => other,
    })?;
    Ok(recipe)
}

/// `--export-mps`: the program written as MPS (and its size said); whether to stop there.
fn export(
    args: &Args,
    snap: &ClusterSnapshot,
    perf: &dyn PerfModel,
    (objective, settings): (coda::Objective, &coda::ilp::SolveSettings),
) -> coda::Result<bool> {
    let Some(p) = &args.export_mps else {
        return Ok(false);
    };
    let round = coda::ilp::SolveRequest::new(snap, perf, objective)?.settings(settings.checked()?);
    let mut buf = Vec::new();
    let size = round.export_mps(&mut buf)?;
    coda::io::write_atomic(p, &buf)?;
    if !args.json {
        out!(
            "wrote {} ({} variables, {} integer, {} constraints)",
            p.display(),
            size.variables,
            size.integer_variables,
            size.constraints
        );
    }
    Ok(args.export_only)
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    let mut snap =
        ClusterSnapshot::from_json_file_with(&args.instance, |s, o| perf.check_snapshot(s, o))?;
    if args.tiers {
        coda::workload::offer_tiers(&mut snap, &perf);
    }
    let objective = range::objective(args.round_s, args.restart_s, args.in_service_credit)?
        .with_colocation(args.colocation);
    // A bad --out fails now, not after a long solve.
    if let Some(p) = &args.out {
        coda::io::check_writable(p)?;
    }
    let settings = settings(&args);
    if export(&args, &snap, &perf, (objective, &settings))? {
        return Ok(ExitCode::SUCCESS);
    }
    let recipe = recipe(&args, objective, settings)?;
    // The solve starts from the best of the warm start, the running jobs kept, and the
    // heuristics' schedules, and never returns less.
    let solved = recipe.solve(&perf, &snap)?;
    let r = &solved.report;
    // A solve that neither improved on its start nor bounded the round (a limit hit before
    // any work: `--node-limit 0`) decided nothing.
    let solver_stopped_empty = matches!(
        r.status,
        coda::ilp::SolveStatus::NoSolution | coda::ilp::SolveStatus::Infeasible
    );
    let learned_nothing = r.returned_start && !r.best_bound.is_finite();
    let decided = !solver_stopped_empty && !learned_nothing;
    // Only the solver's decision is written; when it made none, the start it fell back on is
    // reported, not passed off as a solve.
    let out = args.out.filter(|_| decided);
    if let Some(p) = &out {
        solved.schedule.to_json_file(p)?;
    }
    if args.json {
        let mut v = serde_json::to_value(r).expect("serialize");
        v["running_jobs"] = serde_json::json!(solved.schedule.assignments.len());
        v["gpus_used"] = serde_json::json!(solved.schedule.gpus_used());
        if let Some(f) = &solved.phases {
            v["fix"] = serde_json::to_value(f).expect("serialize");
        }
        out!("{v}");
    } else {
        print_text(&solved, out.as_deref());
    }
    // No schedule was decided: say so with the exit status, not only in the report.
    if !decided {
        eprintln!(
            "error: the solver stopped with status {:?}: no schedule was found within the limits \
             beyond its start (objective {:.6}), and no bound",
            r.status, r.start_objective
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The report as text, one line per fact.
fn print_text(solved: &coda::ilp::Solved, out: Option<&std::path::Path>) {
    let r = &solved.report;
    out!("status      {:?}", r.status);
    out!(
        "objective   {:.6} (re-scored: {:.6})",
        r.objective,
        r.objective_check
    );
    out!("best bound  {:.6}   gap {:.3e}", r.best_bound, r.gap);
    out!(
        "perfmodel   {:.6} (same schedule, contention compounded by the PerfModel)",
        r.perf_model_utility
    );
    out!(
        "model       {} variables ({} integer), {} constraints; built in {:.3} s",
        r.size.variables,
        r.size.integer_variables,
        r.size.constraints,
        r.build_time_s
    );
    out!(
        "start       {:.6}{}",
        r.start_objective,
        if r.returned_start {
            " (returned: the solver did not beat it)"
        } else {
            ""
        }
    );
    let nodes = r.nodes.map_or("?".to_string(), |n| n.to_string());
    let warm = if r.warm_started { ", warm-started" } else { "" };
    out!("solve       {:.3} s, {nodes} nodes{warm}", r.wall_time_s);
    if let Some(f) = &solved.phases {
        out!(
            "fixed       {} job(s) for {:.3} s: restricted program {:.6} ({:?}); then all freed",
            f.fixed,
            f.restricted_s,
            f.restricted_objective,
            f.restricted_status
        );
    }
    out!(
        "schedule    {} jobs running on {} GPUs",
        solved.schedule.assignments.len(),
        solved.schedule.gpus_used()
    );
    if let Some(p) = out {
        out!("wrote {}", p.display());
    }
}
