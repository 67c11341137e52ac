//! `coda bench-warm-start`: the learned policy as the exact solver's start, measured. Every
//! instance is solved three ways, one thread each: from the best heuristic schedule (the
//! default start of every solve), from the policy's schedule as well (a MIP start), and by
//! fix-and-solve (the jobs the policy is confident about fixed first, then all freed). Writes
//! `warm_start.csv` and prints the median time ratio.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::ilp::SolveStatus;
use coda::policies::BestHeuristic;
use coda::policies::learned::{LearnedScheduler, PolicyNet};
use coda::{ClusterSnapshot, Objective, PerfModel, Scheduler};

use crate::{perf_model, range};

/// Arguments of `coda bench-warm-start`.
#[derive(clap::Args)]
pub struct Args {
    /// Folder of instance files (*.json).
    #[arg(long, default_value = "formulations/instances")]
    pub instances: PathBuf,
    /// Wall-clock limit per solve, seconds.
    #[arg(long, default_value_t = 60.0, value_parser = range::time_limit)]
    pub time_limit: f64,
    /// Weights of the policy (default: the shipped ones).
    #[arg(long)]
    pub policy_weights: Option<PathBuf>,
    /// Fix-and-solve: level-1 probability from which a job is fixed.
    #[arg(long, default_value_t = 0.9, value_parser = range::fraction)]
    pub fix_confident: f64,
    /// Fix-and-solve: share of the time limit the fixed phase may use.
    #[arg(long, default_value_t = 0.5, value_parser = range::fraction)]
    pub fix_share: f64,
    /// Only instances whose file name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Output folder (`warm_start.csv`).
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
}

#[derive(serde::Serialize)]
struct Row {
    instance: String,
    jobs: usize,
    servers: usize,
    method: &'static str,
    status: String,
    objective: f64,
    best_bound: f64,
    gap: f64,
    solve_s: f64,
    nodes: Option<u64>,
    start_objective: f64,
    fixed: usize,
    fixed_phase_s: f64,
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    let objective = Objective::default();
    std::fs::create_dir_all(&args.out).map_err(|e| coda::Error::io(&args.out, e))?;
    let net = match &args.policy_weights {
        Some(p) => PolicyNet::load(p)?,
        None => LearnedScheduler::shipped(&perf, objective)?.net().clone(),
    };
    let policy = LearnedScheduler::new(&perf, objective, net);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&args.instances)
        .map_err(|e| coda::Error::io(&args.instances, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            args.only
                .as_ref()
                .is_none_or(|o| p.to_string_lossy().contains(o.as_str()))
        })
        .collect();
    files.sort();
    let settings = coda::ilp::SolveSettings {
        time_limit_s: args.time_limit,
        ..Default::default()
    }
    .checked()?;
    let mut rows = Vec::new();
    for f in &files {
        let name = f
            .file_stem()
            .map(|x| x.to_string_lossy().to_string())
            .unwrap_or_default();
        let snap = ClusterSnapshot::from_json_file_with(f, |s, o| perf.check_snapshot(s, o))?;
        let heuristic = BestHeuristic::new(&perf, objective).schedule(&snap)?;
        let start = policy.decide(&snap);
        let fixed = policy.confident_jobs(&snap, &start, args.fix_confident as f32);
        let row = |method, r: &coda::ilp::SolveReport, fixed: usize, fixed_s: f64| Row {
            instance: name.clone(),
            jobs: snap.jobs.len(),
            servers: snap.cluster.servers.len(),
            method,
            status: format!("{:?}", r.status),
            objective: r.objective,
            best_bound: r.best_bound,
            gap: r.gap,
            solve_s: r.wall_time_s,
            nodes: r.nodes,
            start_objective: r.start_objective,
            fixed,
            fixed_phase_s: fixed_s,
        };
        // The compact program: the one fix-and-solve works on, so the three rows compare.
        let round = coda::ilp::SolveRequest::new(&snap, &perf, objective)?
            .settings(settings.clone())
            .candidates([heuristic])
            .program(coda::ilp::SolveProgram::Compact);
        let cold = round.solve()?;
        rows.push(row("heuristic-start", &cold.report, 0, 0.0));
        let round = round.warm_start(&start);
        let warm = round.solve()?;
        rows.push(row("policy-start", &warm.report, 0, 0.0));
        let fs = round.fix_then_free(&fixed, args.fix_share)?.solve()?;
        let rep = fs
            .phases
            .clone()
            .expect("a fix-and-solve reports its phases");
        rows.push(row(
            "fix-and-solve",
            &fs.report,
            rep.fixed,
            rep.restricted_s,
        ));
        for r in &rows[rows.len() - 3..] {
            eprintln!(
                "{name}: {:<15} {:<10} {:.3} s gap {:.2e} (start {:.4}, fixed {})",
                r.method, r.status, r.solve_s, r.gap, r.start_objective, r.fixed
            );
        }
    }
    let path = args.out.join("warm_start.csv");
    coda::io::write_csv(&path, &rows)?;
    // Median ratio of time to a proven optimum, over instances every method proved taking
    // the default start more than 0.1 s (below that the times are noise).
    let proven = |r: &Row| r.status == format!("{:?}", SolveStatus::Optimal);
    for method in ["policy-start", "fix-and-solve"] {
        let mut ratios: Vec<f64> = Vec::new();
        let (mut better_gap, mut limited) = (0, 0);
        for chunk in rows.chunks(3) {
            let cold = &chunk[0];
            let Some(m) = chunk.iter().find(|r| r.method == method) else {
                continue;
            };
            if proven(cold) && proven(m) && cold.solve_s > 0.1 {
                ratios.push(cold.solve_s / m.solve_s);
            } else if !proven(cold) {
                limited += 1;
                if m.gap < cold.gap {
                    better_gap += 1;
                }
            }
        }
        ratios.sort_by(f64::total_cmp);
        let median = if ratios.is_empty() {
            f64::NAN
        } else if ratios.len() % 2 == 1 {
            ratios[ratios.len() / 2]
        } else {
            (ratios[ratios.len() / 2 - 1] + ratios[ratios.len() / 2]) / 2.0
        };
        out!(
            "{method}: median speed-up to a proven optimum {median:.2}x over {} instances \
             (min {:.2}, max {:.2}); smaller gap at the limit on {better_gap} of {limited} \
             instances the default start does not prove",
            ratios.len(),
            ratios.first().copied().unwrap_or(f64::NAN),
            ratios.last().copied().unwrap_or(f64::NAN),
        );
    }
    out!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}
