//! Score a policy's gap against the exact program on freshly generated rounds.
//!
//! Each round is solved by the integer program (HiGHS, one thread, 10 s limit); where the solver
//! proves its optimum, the gap of a policy is `(optimum − policy's objective) / optimum`, the
//! objective being the program's own (`Objective::score`). `coda gap` does the same on labelled
//! held-out rounds.
//!
//! `cargo run --release --example gap_vs_exact` (six rounds of 2–3 servers; under half a minute).

use coda::ilp::{SolveRequest, SolveSettings, SolveStatus};
use coda::policies::learned::LearnedScheduler;
use coda::policies::{self, PolicyOptions};
use coda::workload::{GenerateOptions, current_schedule, generate};
use coda::{CalibratedPerf, Objective, Scheduler};

fn main() -> coda::Result<()> {
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let settings = SolveSettings {
        time_limit_s: 10.0,
        threads: 1,
        ..SolveSettings::default()
    }
    .checked()?;
    let mut learned = LearnedScheduler::shipped(perf, objective)?;
    let mut pollux = policies::PolicyKind::Pollux.build(perf, &PolicyOptions::default())?;
    println!("| round | optimum | status | learned gap | pollux gap |\n|---|---|---|---|---|");
    let (mut sum_learned, mut sum_pollux, mut proven) = (0.0, 0.0, 0);
    for (servers, jobs) in [(2, 4), (2, 6), (3, 6)] {
        for seed in [1, 2] {
            let snapshot = generate(
                &GenerateOptions {
                    servers,
                    jobs,
                    seed: 100 + seed,
                    ..Default::default()
                },
                perf,
            )?;
            let stay = current_schedule(&snapshot);
            let exact = SolveRequest::new(&snapshot, perf, objective)?
                .settings(settings.clone())
                .warm_start(&stay)
                .solve()?;
            let optimum = exact.report.objective;
            let gap = |p: &mut dyn Scheduler| -> coda::Result<f64> {
                let s = p.schedule(&snapshot)?;
                assert!(
                    s.validate(&snapshot).is_empty(),
                    "{} returned an invalid schedule",
                    p.name()
                );
                // The gap `coda gap` reports: relative to the optimum.
                let value = objective.score(perf, &snapshot, &s)?.total;
                Ok(coda::learn::RoundLabel::gap_to(optimum, value))
            };
            let (g_learned, g_pollux) = (gap(&mut learned)?, gap(pollux.as_mut())?);
            let is_proven = exact.report.status == SolveStatus::Optimal;
            if is_proven {
                proven += 1;
                sum_learned += g_learned;
                sum_pollux += g_pollux;
            }
            println!(
                "| {servers}×8, {jobs} jobs, seed {seed} | {optimum:.4} | {:?} | {:.2} % | {:.2} % |",
                exact.report.status,
                100.0 * g_learned,
                100.0 * g_pollux
            );
        }
    }
    if proven > 0 {
        println!(
            "mean gap over the {proven} proven rounds: learned {:.2} %, pollux {:.2} %",
            100.0 * sum_learned / proven as f64,
            100.0 * sum_pollux / proven as f64
        );
    }
    Ok(())
}
