//! `coda bench-warm-start`: the learned policy as the exact solver's start, measured. Every
//! instance is solved from the best heuristic schedule (the default start of every solve), from
//! the policy's schedule as well (a MIP start, and the configuration program's seed columns),
//! and — with the compact program — by fix-and-solve (the jobs the policy is confident about
//! fixed first, then all freed). Writes `warm_start.csv` (time to a proven optimum, or the gap
//! at the limit), `incumbents.csv` (each solve's incumbent over time, and the policy alone:
//! its schedule once it has decided) and `primal.csv` (per instance and method, the primal
//! integral over the time limit and the incumbent's gap at 1, 5, 15 and 60 s, against the best
//! objective any method found); prints the median time ratio and the primal integrals.
//!
//! The policy's decision time counts: the solve started from it begins when the policy has
//! decided (its incumbents are shifted by that time), and so does the policy alone.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::ilp::{Incumbent, SolveStatus};
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
    /// The program solved (`auto`: by the round's size); fix-and-solve runs with the compact
    /// program only.
    #[arg(long, value_enum, default_value = "compact")]
    pub program: coda::ilp::SolveProgram,
    /// The configuration program's master only once column generation ends (the ablation of
    /// `SolveSettings::interim_masters`).
    #[arg(long)]
    pub no_interim_masters: bool,
    /// Solver threads (HiGHS, and the configuration program's pricing).
    #[arg(long, default_value_t = 1, value_parser = range::at_least_one_u32)]
    pub solver_threads: u32,
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

/// One point of a method's incumbent over time (`incumbents.csv`).
#[derive(serde::Serialize)]
struct TrailRow {
    instance: String,
    method: &'static str,
    time_s: f64,
    objective: f64,
}

/// A method's anytime quality on one instance (`primal.csv`): gaps against `best_known`, the
/// best objective any method found; 1 before a method has any schedule.
#[derive(serde::Serialize)]
struct PrimalRow {
    instance: String,
    servers: usize,
    jobs: usize,
    method: &'static str,
    best_known: f64,
    horizon_s: f64,
    primal_integral_s: f64,
    gap_1s: f64,
    gap_5s: f64,
    gap_15s: f64,
    gap_60s: f64,
    decide_s: f64,
}

/// `trail` with every time `by` seconds later.
fn shifted(trail: &[Incumbent], by: f64) -> Vec<Incumbent> {
    trail
        .iter()
        .map(|p| Incumbent {
            time_s: p.time_s + by,
            objective: p.objective,
        })
        .collect()
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
        threads: crate::cap_threads(args.solver_threads as usize) as u32,
        interim_masters: !args.no_interim_masters,
        ..Default::default()
    }
    .checked()?;
    let mut rows = Vec::new();
    let (mut trails, mut primal) = (Vec::new(), Vec::new());
    for f in &files {
        let name = f
            .file_stem()
            .map(|x| x.to_string_lossy().to_string())
            .unwrap_or_default();
        let snap = ClusterSnapshot::from_json_file_with(f, |s, o| perf.check_snapshot(s, o))?;
        let heuristic = BestHeuristic::new(&perf, objective).schedule(&snap)?;
        let t = std::time::Instant::now();
        let start = policy.decide(&snap);
        let decide_s = t.elapsed().as_secs_f64();
        let policy_objective = coda::objective::RoundPricing::new(&perf, &snap, objective)
            .score(&start)?
            .total;
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
        let round = coda::ilp::SolveRequest::new(&snap, &perf, objective)?
            .settings(settings.clone())
            .candidates([heuristic])
            .program(args.program);
        let first = rows.len();
        // Each method's incumbents over time, the policy's decision time added where the
        // method waits for it.
        let mut runs: Vec<(&'static str, Vec<Incumbent>)> = Vec::new();
        let cold = round.solve()?;
        rows.push(row("heuristic-start", &cold.report, 0, 0.0));
        runs.push(("heuristic-start", cold.report.incumbents.clone()));
        let round = round.warm_start(&start);
        let warm = round.solve()?;
        rows.push(row("policy-start", &warm.report, 0, 0.0));
        runs.push(("policy-start", shifted(&warm.report.incumbents, decide_s)));
        runs.push((
            "policy",
            vec![Incumbent {
                time_s: decide_s,
                objective: policy_objective,
            }],
        ));
        if round.chosen_program() == coda::ilp::SolveProgram::Compact {
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
            runs.push(("fix-and-solve", shifted(&fs.report.incumbents, decide_s)));
        }
        for r in &rows[first..] {
            eprintln!(
                "{name}: {:<15} {:<10} {:.3} s gap {:.2e} (start {:.4}, fixed {})",
                r.method, r.status, r.solve_s, r.gap, r.start_objective, r.fixed
            );
        }
        let best = runs
            .iter()
            .flat_map(|(_, t)| t.iter().map(|p| p.objective))
            .fold(f64::NEG_INFINITY, f64::max);
        for (method, trail) in &runs {
            let gap_at = |t: f64| {
                let z = coda::ilp::incumbent_at(trail, t);
                if z.is_nan() {
                    1.0
                } else {
                    coda::ilp::relative_gap(best, z)
                }
            };
            primal.push(PrimalRow {
                instance: name.clone(),
                servers: snap.cluster.servers.len(),
                jobs: snap.jobs.len(),
                method,
                best_known: best,
                horizon_s: args.time_limit,
                primal_integral_s: coda::ilp::primal_integral(trail, best, args.time_limit),
                gap_1s: gap_at(1.0),
                gap_5s: gap_at(5.0),
                gap_15s: gap_at(15.0),
                gap_60s: gap_at(60.0),
                decide_s: if *method == "heuristic-start" {
                    0.0
                } else {
                    decide_s
                },
            });
            trails.extend(trail.iter().map(|p| TrailRow {
                instance: name.clone(),
                method,
                time_s: p.time_s,
                objective: p.objective,
            }));
        }
        for p in &primal[primal.len() - runs.len()..] {
            eprintln!(
                "{name}: {:<15} primal integral {:.2} s of {:.0}, gap at 1/5/15/60 s {:.4}/{:.4}/{:.4}/{:.4}",
                p.method,
                p.primal_integral_s,
                p.horizon_s,
                p.gap_1s,
                p.gap_5s,
                p.gap_15s,
                p.gap_60s
            );
        }
    }
    coda::io::write_csv(&args.out.join("incumbents.csv"), &trails)?;
    coda::io::write_csv(&args.out.join("primal.csv"), &primal)?;
    for method in ["policy", "policy-start", "fix-and-solve"] {
        let mut ratios: Vec<f64> = primal
            .iter()
            .filter(|p| p.method == method)
            .filter_map(|m| {
                let cold = primal
                    .iter()
                    .find(|c| c.instance == m.instance && c.method == "heuristic-start")?;
                (cold.primal_integral_s > 0.0).then(|| m.primal_integral_s / cold.primal_integral_s)
            })
            .collect();
        if ratios.is_empty() {
            continue;
        }
        ratios.sort_by(f64::total_cmp);
        out!(
            "{method}: primal integral over {} s, median {:.3}x the heuristic start's over {} \
             instances (min {:.3}, max {:.3})",
            args.time_limit,
            ratios[ratios.len() / 2],
            ratios.len(),
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
    let path = args.out.join("warm_start.csv");
    coda::io::write_csv(&path, &rows)?;
    // Median ratio of time to a proven optimum, over instances every method proved taking
    // the default start more than 0.1 s (below that the times are noise).
    let proven = |r: &Row| r.status == format!("{:?}", SolveStatus::Optimal);
    for method in ["policy-start", "fix-and-solve"] {
        let mut ratios: Vec<f64> = Vec::new();
        let (mut better_gap, mut limited) = (0, 0);
        for chunk in rows.chunk_by(|a, b| a.instance == b.instance) {
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
