//! The data every scheduler reads and writes: cluster, jobs, snapshot, schedule.
//!
//! This module owns the types and their checks; it computes no speeds (see [`crate::perf`]).

mod cluster;
mod job;
mod schedule;
mod snapshot;

pub use cluster::{Cluster, GpuSlot, Server};
pub use job::{Architecture, Job, Request, TaskDemand, TaskRange};
pub use schedule::{Assignment, Footprint, PsTask, Schedule, Violation, WorkerTask};
pub use snapshot::ClusterSnapshot;
pub use snapshot::write_atomic;
pub(crate) use snapshot::{parse_json, write_json_atomic};
