//! # coda — joint allocation and placement of deep-learning training jobs
//!
//! Every scheduling round, coda decides how many workers (and parameter servers) each job gets
//! and where its tasks run — servers, sockets, PCIe switches — aware that co-located jobs
//! interfere and that a job spread over servers pays network overhead.
//!
//! Data flows one way, and the modules are layered the same way (each imports only from the
//! ones listed before it, and no two files of one folder import each other round a cycle:
//! `tests/it/layout.rs` checks both):
//!
//! ```text
//! id → violation → error → util → model → perf → objective → scheduler → ilp → policies → sim → workload → lab
//!
//! trace (datasets/*.csv) → ClusterSnapshot → Scheduler ─┬─ ilp: SolveRequest (RoundPricing → Formulation → Backend) → decode
//!                                                        └─ policies: sizing → packer
//!                        → Schedule (validated) → Simulator (next_round / apply, PerfModel) → Metrics
//! ```
//!
//! The library is everything but [`lab`], the command line's workbench (calibration, solve-time
//! scaling, run reports, training): public so the binary, benchmarks and tests reach it, not part
//! of what the library promises to keep.
//!
//! ```
//! use coda::workload::{GenerateOptions, generate};
//! use coda::{CalibratedPerf, ClusterSnapshot, PerfModel, Schedule};
//!
//! // A random instance: 4 servers of 8 GPUs, 6 jobs, seed 7 (same seed, same instance).
//! let perf = CalibratedPerf::shipped();
//! let snapshot = generate(&GenerateOptions { servers: 4, jobs: 6, seed: 7, ..Default::default() }, perf)
//!     .unwrap();
//! // The empty schedule (everyone waits) is always valid.
//! assert!(Schedule::default().validate(&snapshot).is_empty());
//! // What-if: an all-reduce job on 4 GPUs of one server vs 4 servers.
//! use coda::model::Architecture;
//! use coda::perf::{JobQuery, PlacementShape};
//! let q = JobQuery { model: "imagenet", arch: Architecture::AllReduce, gpus_per_worker: 1, local_batch: None };
//! let packed = perf.speed(&q, "t4", &PlacementShape::isolated(4, 0, vec![4])).unwrap();
//! let spread = perf.speed(&q, "t4", &PlacementShape::isolated(4, 0, vec![1, 1, 1, 1])).unwrap();
//! assert!(spread.step_time_s > packed.step_time_s);
//! ```
#![deny(missing_docs)]
// Two calls reach HiGHS' C API (a column's bounds by index, the 64-bit node count), both in
// `ilp/backend.rs`; everything else is safe code.
#![deny(unsafe_code)]

pub mod error;
mod id;
mod util;
mod violation;

// The README's Rust blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod ilp;
pub mod lab;
pub mod model;
pub mod objective;
pub mod perf;
pub mod policies;
pub mod scheduler;
pub mod sim;
pub mod workload;

// The root holds what one round needs: the input, the output, the decision, its price and
// its errors. Everything else lives in its module (`coda::model::TaskRange`,
// `coda::objective::RoundPricing`, `coda::ilp::SolveReport`, `coda::workload::generate`...).
pub use error::{Error, Result};
pub use ilp::{ExactScheduler, SolveSettings};
pub use model::{Assignment, Cluster, ClusterSnapshot, Job, JobId, Schedule, Server, Violation};
pub use objective::Objective;
pub use perf::{CalibratedPerf, PerfModel};
pub use scheduler::Scheduler;

/// File helpers the command line and the training loop share: atomic writes (nothing already
/// written is lost if a run fails), a check that an output is writable before long work, CSV
/// rows from serde structs.
pub mod io {
    pub use crate::util::{check_writable, write_atomic, write_csv};
}

/// Schedules one round with the shipped performance model, the default objective and the
/// default solver settings (60 s limit, optimality): the integer program (the compact one on
/// small rounds, the configuration program from 40 servers × jobs: [`ilp::SolveProgram::Auto`])
/// started from the best of keeping the running jobs and the heuristics' schedules, never returning less than that
/// start, then back-filled ([`policies::Backfill`]). The snapshot is checked first, as an
/// instance file is (an error names the field). Build an [`ExactScheduler`] yourself to read
/// the solve's report ([`ExactScheduler::last_report`]).
///
/// ```
/// let snapshot = coda::ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let schedule = coda::schedule(&snapshot)?;
/// assert!(schedule.validate(&snapshot).is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
pub fn schedule(snapshot: &ClusterSnapshot) -> Result<Schedule> {
    exact_round(ilp::CheckedSettings::default()).schedule(snapshot)
}

/// The scheduler [`schedule`] runs, with other solver settings: the integer program on the
/// whole round (shipped performance model, default objective) started from the best heuristic
/// schedule, then back-filled.
pub fn exact_round(settings: ilp::CheckedSettings) -> policies::Backfill<'static> {
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let exact = ExactScheduler::new(perf, objective, settings)
        .with_start(Box::new(policies::BestHeuristic::new(perf, objective)));
    policies::Backfill::new(Box::new(exact), perf, objective)
}

/// Schedules one round with a scheduler of the caller's choice — the learned policy
/// ([`policies::learned::LearnedScheduler`]), a baseline ([`policies::PolicyKind::build`]) or an
/// [`ExactScheduler`] with other settings — after checking the snapshot as [`schedule`] does;
/// a schedule that does not validate is [`Error::InvalidSchedule`] with every violation, never
/// returned.
///
/// ```
/// use coda::workload::{GenerateOptions, generate};
/// use coda::{CalibratedPerf, Objective};
/// use coda::policies::learned::LearnedScheduler;
///
/// let perf = CalibratedPerf::shipped();
/// let snapshot = generate(&GenerateOptions { servers: 4, jobs: 8, seed: 1, ..Default::default() }, perf)?;
/// let mut policy = LearnedScheduler::shipped(perf, Objective::default())?;
/// let schedule = coda::schedule_with(&snapshot, &mut policy)?;
/// assert!(schedule.validate(&snapshot).is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
pub fn schedule_with(
    snapshot: &ClusterSnapshot,
    scheduler: &mut dyn Scheduler,
) -> Result<Schedule> {
    snapshot.check("schedule_with: its snapshot")?;
    let schedule = scheduler.schedule(snapshot)?;
    let violations = schedule.validate(snapshot);
    if !violations.is_empty() {
        return Err(Error::InvalidSchedule {
            context: format!("scheduler `{}`", scheduler.name()),
            violations,
        });
    }
    Ok(schedule)
}
