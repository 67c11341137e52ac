//! # coda — joint allocation and placement of deep-learning training jobs
//!
//! Every scheduling round, coda decides how many workers (and parameter servers) each job gets
//! and where its tasks run — servers, sockets, PCIe switches — aware that co-located jobs
//! interfere and that a job spread over servers pays network overhead.
//!
//! Data flows one way:
//!
//! ```text
//! trace (datasets/*.csv) → ClusterSnapshot → scheduler → Schedule (validated) → PerfModel speeds
//! ```
//!
//! ```
//! use coda::{CalibratedPerf, ClusterSnapshot, PerfModel, Schedule, generate, GenerateOptions};
//!
//! // A random instance: 4 servers of 8 GPUs, 6 jobs, seed 7 (same seed, same instance).
//! let perf = CalibratedPerf::shipped();
//! let snapshot = generate(&GenerateOptions { servers: 4, jobs: 6, seed: 7, ..Default::default() }, perf)
//!     .unwrap();
//! // The empty schedule (everyone waits) is always valid.
//! assert!(Schedule::default().validate(&snapshot).is_empty());
//! // What-if: an all-reduce job on 4 GPUs of one server vs 4 servers.
//! use coda::{JobQuery, PlacementShape, Architecture};
//! let q = JobQuery { model: "imagenet", arch: Architecture::AllReduce, gpus_per_worker: 1, local_batch: None };
//! let packed = perf.speed(&q, "t4", &PlacementShape::isolated(4, 0, vec![4])).unwrap();
//! let spread = perf.speed(&q, "t4", &PlacementShape::isolated(4, 0, vec![1, 1, 1, 1])).unwrap();
//! assert!(spread.step_time_s > packed.step_time_s);
//! ```
#![deny(missing_docs)]
// One call reads a 64-bit solver statistic through HiGHS' C API (see `solver::node_count`);
// everything else is safe code.
#![deny(unsafe_code)]

pub mod baselines;
mod csvio;
pub mod error;
pub mod formulation;
pub mod generate;
pub mod model;
pub mod objective;
pub mod perf;
pub mod scheduler;
pub mod sim;
pub mod solver;
mod total;
pub mod trace;

pub use error::{Error, Result};
pub use generate::{GenerateOptions, current_schedule, generate};
pub use model::{
    Architecture, Assignment, Cluster, ClusterSnapshot, Job, PsTask, Request, Schedule, Server,
    TaskDemand, TaskRange, Violation, WorkerTask, write_atomic,
};
pub use objective::{Objective, Score};
pub use perf::{CalibratedPerf, JobQuery, PerfModel, PlacementShape, Speed};
pub use scheduler::{ExactScheduler, Scheduler, schedule};
pub use solver::{SolveReport, SolveSettings, SolveStatus, Solved};
