//! The data every scheduler reads and writes: cluster, jobs, snapshot, schedule.
//!
//! This module owns the types and their checks; it computes no speeds (see [`crate::perf`]).

mod capacity;
mod cluster;
mod job;
mod schedule;
mod snapshot;
mod topology;
mod validate;

pub(crate) use capacity::{CoreMemLedger, fits_in};
pub use cluster::{Cluster, GpuSlot, HostResources, Server};
pub use job::{
    Architecture, GpuType, Job, JobId, JobPos, Request, RunState, ServerIdx, TaskDemand, TaskRange,
    WorkerTier,
};
pub use schedule::{Assignment, Footprint, PsTask, Schedule, WorkerTask};
pub use snapshot::{ClusterSnapshot, MAX_GPUS_PER_SERVER, MAX_SERVERS};
pub use topology::{PcieSwitch, SwitchId, Topology};
pub use validate::Violation;
