//! Schedule one round exactly, and with the learned policy, and compare both with keeping
//! everyone in place.
//!
//! `cargo run --release --example schedule_round [-- examples/instances/hetero.json]`

use coda::policies::learned::LearnedScheduler;
use coda::workload::current_schedule;
use coda::{CalibratedPerf, ClusterSnapshot, Objective, Scheduler, ilp};

fn main() -> coda::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "examples/instances/hetero.json".into());
    let snapshot = ClusterSnapshot::from_json_file(&path)?;
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();

    let stay = current_schedule(&snapshot);
    let stay_score = objective.score(perf, &snapshot, &stay)?.total;

    let schedule = coda::schedule(&snapshot)?;
    let score = objective.score(perf, &snapshot, &schedule)?.total;
    println!(
        "{path}: {} jobs, {} GPUs",
        snapshot.jobs.len(),
        snapshot.cluster.num_gpus()
    );
    println!("keep running jobs in place: objective {stay_score:.4}");
    println!(
        "exact round (ILP):          objective {score:.4}, {} jobs on {} GPUs",
        schedule.assignments.len(),
        schedule.gpus_used()
    );
    for (job, speed) in coda::perf::speeds(perf, &snapshot, &schedule)? {
        println!("  job {job}: {:.3} it/s", speed.iterations_per_s);
    }
    // The same round as a solve request, with its report: the round priced once, settings
    // checked once, then the starts — the current placement as the MIP start, a heuristic's
    // schedule as a candidate (the solve never returns less than the best of them).
    let settings = ilp::SolveSettings {
        time_limit_s: 30.0,
        ..Default::default()
    }
    .checked()?;
    let heuristic = coda::policies::BestHeuristic::new(perf, objective).schedule(&snapshot)?;
    let round = ilp::SolveRequest::new(&snapshot, perf, objective)?
        .settings(settings)
        .warm_start(&stay)
        .candidates([heuristic]);
    let solved = round.solve()?;
    println!(
        "warm-started from the current placement: {:?}, objective {:.4}, bound {:.4}, gap {:.2e}",
        solved.report.status, solved.report.objective, solved.report.best_bound, solved.report.gap
    );
    // Fix-and-solve: the running jobs held where they are for half the time, then all freed;
    // the bound is the whole program's.
    let running: Vec<coda::model::JobId> = snapshot
        .jobs
        .iter()
        .filter(|j| j.run.current.is_some())
        .map(|j| j.id)
        .collect();
    let two_phase = round.fix_then_free(&running, 0.5)?.solve()?;
    let phases = two_phase
        .phases
        .as_ref()
        .expect("a fix-and-solve reports its phases");
    println!(
        "fix-and-solve ({} running job(s) held first): objective {:.4}, gap {:.2e}",
        phases.fixed, two_phase.report.objective, two_phase.report.gap
    );
    // The learned policy: no solver, a few milliseconds, valid by construction.
    let mut policy = LearnedScheduler::shipped(perf, objective)?;
    let t = std::time::Instant::now();
    let learned = coda::schedule_with(&snapshot, &mut policy)?;
    let learned_s = t.elapsed().as_secs_f64();
    println!(
        "learned policy:             objective {:.4}, {} jobs on {} GPUs, {:.2} ms",
        objective.score(perf, &snapshot, &learned)?.total,
        learned.assignments.len(),
        learned.gpus_used(),
        1e3 * learned_s
    );
    Ok(())
}
