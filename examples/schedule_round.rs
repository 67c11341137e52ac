//! Schedule one round exactly, and with the learned policy, and compare both with keeping
//! everyone in place.
//!
//! `cargo run --release --example schedule_round [-- examples/instances/hetero.json]`

use coda::policies::learned::LearnedScheduler;
use coda::workload::current_schedule;
use coda::{CalibratedPerf, ClusterSnapshot, Objective, ilp};

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
    // The same solve with its report: status, bound and gap.
    let solved = ilp::solve(
        &snapshot,
        perf,
        &objective,
        &Default::default(),
        Some(&stay),
    )?;
    println!(
        "warm-started from the current placement: {:?}, gap {:.2e}",
        solved.report.status, solved.report.gap
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
