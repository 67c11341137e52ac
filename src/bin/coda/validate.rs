//! `coda validate`: Check a schedule against an instance; exit status 1 if it has violations.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::perf::{self};
use coda::{ClusterSnapshot, PerfModel, Schedule};

use crate::perf_model;

/// Arguments of `coda validate`.
#[derive(clap::Args)]
pub struct Args {
    /// Instance (ClusterSnapshot JSON).
    #[arg(long)]
    pub instance: PathBuf,
    /// Schedule JSON.
    #[arg(long)]
    pub schedule: PathBuf,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let Args {
        instance,
        schedule,
        json,
    } = args;
    let perf = perf_model(params)?;
    let snap = ClusterSnapshot::from_json_file_with(&instance, |s, o| perf.check_snapshot(s, o))?;
    let sched = Schedule::from_json_file(&schedule)?;
    let t = Instant::now();
    let violations = sched.validate(&snap);
    let validate_s = t.elapsed().as_secs_f64();
    let score = if violations.is_empty() {
        Some(coda::Objective::default().score(&perf, &snap, &sched)?)
    } else {
        None
    };
    let speeds = if violations.is_empty() {
        perf::speeds(&perf, &snap, &sched)?
    } else {
        Vec::new()
    };
    if json {
        let obj = serde_json::json!({
            "valid": violations.is_empty(),
            "violations": violations,
            "speeds": speeds.iter().map(|(j, s)| serde_json::json!({"job": j, "speed": s})).collect::<Vec<_>>(),
            "validate_s": validate_s,
            "objective": score.as_ref().map(|x| x.total),
        });
        out!("{obj}");
    } else {
        if let Some(sc) = &score {
            out!("objective (default round utility): {:.6}", sc.total);
        }
        if violations.is_empty() {
            out!(
                "valid: {} jobs running, {} GPUs used",
                sched.assignments.len(),
                sched.gpus_used()
            );
        } else {
            out!("{} violation(s):", violations.len());
            for v in &violations {
                out!("  {v}");
            }
        }
        for (j, s) in &speeds {
            out!(
                "  job {j}: {:.4} it/s, step {:.4} s (compute {:.4}, intra {:.4}, inter {:.4})",
                s.iterations_per_s,
                s.step_time_s,
                s.compute_s,
                s.intra_comm_s,
                s.inter_comm_s
            );
        }
    }
    Ok(if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
