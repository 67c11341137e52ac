//! # coda — joint allocation and placement of deep-learning training jobs
//!
//! Every scheduling round, coda decides how many workers (and parameter servers) each job gets
//! and where its tasks run — servers, sockets, PCIe switches — aware that co-located jobs
//! interfere and that a job spread over servers pays network overhead.
//!
//! ## Which entry point for which use
//!
//! | you want to… | call | what it is |
//! |---|---|---|
//! | decide one round, the best coda can | [`schedule`] | [`policies::ExactRound`] at its defaults: the integer program on the whole round, from the best heuristic start, back-filled |
//! | decide one round with any scheduler, checked | [`schedule_with`] | the snapshot checked, the schedule validated |
//! | solve one round exactly and read the report (bound, gap, start, fix-and-solve) | [`policies::ExactRound::solve`] | the one exact-round recipe (`coda solve`, `coda label`, Python's `solve`) |
//! | the program step by step (starts, held jobs, relaxation, MPS) | [`ilp::SolveRequest`] | what the recipe is built from |
//! | a policy by name, as a replay runs it | [`policies::PolicyKind::build`] | the baselines, `learned*`, and `ilp` (the program on a window of jobs each round, back-filled, revisited) |
//! | the learned policy alone (milliseconds, no solver) | [`policies::learned::LearnedScheduler`] | levels 1 and 2, plain Rust |
//! | replay a trace | [`replay::Replay::run`] | `coda simulate`'s flags as data; [`replay::RunWriter`] writes its files |
//! | a policy that plays candidates forward (rollouts in the simulator) | [`lookahead::Lookahead`] | `--policy lookahead`: built with the simulator's settings |
//! | the lookahead's choice without its plays | [`policies::distilled::Distilled`] | `--policy distilled`: a gate fitted to the lookahead's plays ([`learn::distil`], `coda distil`) |
//! | step the simulator yourself | [`sim::Simulator::next_round`], [`sim::Simulator::apply`] | the round-level environment |
//! | step every decision (an RL agent) | [`replay::env::GymEpisode`] | the Python package's `coda/Cluster-v0` |
//! | check a policy against the exact program | [`learn::label_round`], [`learn::RoundLabel::gap_to`] | expert labels and gaps (`coda label`, `coda gap`) |
//! | re-check the program on a tiny round | [`ilp::brute_force`] | exhaustive search |
//!
//! ## The crate as a newcomer should read it
//!
//! Data flows one way, and the modules are layered the same way: each imports only from the
//! ones before it in this list, no two files of one folder import each other round a cycle,
//! and no module names the root's re-exports (`tests/it/layout.rs` checks all three).
//! [`model`] owns the data every scheduler reads and writes — the cluster and its topology,
//! jobs, the round's [`ClusterSnapshot`] and the [`Schedule`] with its validation; [`perf`]
//! prices a placement ([`PerfModel`], fitted on `datasets/`); [`objective`] turns those
//! prices into the one value a round is worth ([`Objective`], and the round priced once);
//! [`Scheduler`] is the one trait of everything that decides; [`ilp`] is the exact program,
//! [`policies`] the baselines, the learned policy and the recipes built on the program;
//! [`sim`] replays decisions over time, with observers; [`lookahead`] decides by playing
//! candidate decisions forward in copies of the simulator; [`workload`] turns traces and
//! cluster specs into jobs and servers; [`replay`] is a whole trace replay as data, run and
//! written, with its decision-level environment; [`learn`] makes what the learned policy
//! learns from (labels, rollouts) and, behind the `train` feature, trains it. The command line
//! (`src/bin/coda`) and the Python package (`python/`) only parse, call these, and print.
//!
//! ```text
//! trace (datasets/*.csv) → workload → ClusterSnapshot → Scheduler ─┬─ ilp: SolveRequest (RoundPricing → Formulation → Backend) → decode
//!                                                                 ├─ policies: sizing → packer; learned: level 1 → level 2
//!                                                                 └─ policies::ExactRound: the program from the best start, back-filled
//!                        → Schedule (validated) → sim::Simulator (next_round / apply, PerfModel, observers) → replay: metrics, CSVs, plots
//! ```
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
//! let q = JobQuery { model: "imagenet", arch: Architecture::AllReduce, gpus_per_worker: 1, local_batch: None, goodput: None };
//! let packed = perf.speed(&q, "t4", &PlacementShape::isolated(4, 0, vec![4])).unwrap();
//! let spread = perf.speed(&q, "t4", &PlacementShape::isolated(4, 0, vec![1, 1, 1, 1])).unwrap();
//! assert!(spread.step_time_s > packed.step_time_s);
//! ```
#![deny(missing_docs)]
// Two calls reach HiGHS' C API (a column's bounds by index, the 64-bit node count), both in
// `ilp/backend.rs`; everything else is safe code.
#![deny(unsafe_code)]

mod error;
mod id;
mod util;
mod violation;

// The README's Rust blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod ilp;
pub mod learn;
pub mod lookahead;
pub mod model;
pub mod objective;
pub mod perf;
#[cfg(feature = "plots")]
pub mod plots;
pub mod policies;
pub mod replay;
pub mod scheduler;
pub mod sim;
pub mod slurm;
pub mod workload;

// The root holds what one round needs: the input, the output, the decision, its price and
// its errors. Everything else lives in its module (`coda::model::Job`,
// `coda::objective::RoundPricing`, `coda::ilp::SolveReport`, `coda::workload::generate`...).
pub use error::{Error, Expected, Result};
pub use model::{ClusterSnapshot, Schedule};
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
/// started from the best of keeping the running jobs and the heuristics' schedules, never
/// returning less than that start, then back-filled — [`policies::ExactRound`] at its
/// defaults. The snapshot is checked first, as an instance file is (an error names the field).
/// Run [`policies::ExactRound::solve`] yourself to read the solve's report.
///
/// ```
/// let snapshot = coda::ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let schedule = coda::schedule(&snapshot)?;
/// assert!(schedule.validate(&snapshot).is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
pub fn schedule(snapshot: &ClusterSnapshot) -> Result<Schedule> {
    let mut exact = policies::ExactRound::default().scheduler(CalibratedPerf::shipped())?;
    schedule_with(snapshot, &mut exact)
}

/// Schedules one round with a scheduler of the caller's choice — the learned policy
/// ([`policies::learned::LearnedScheduler`]), a baseline ([`policies::PolicyKind::build`]) or an
/// [`policies::ExactRound`] with other settings — after checking the snapshot as [`schedule`] does;
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
