//! The one `Scheduler` trait every policy implements: exact ([`crate::ilp::ExactScheduler`]),
//! heuristic ([`crate::policies`]) or learned.
//!
//! A scheduler proposes; [`crate::Schedule::validate`] decides whether the proposal can run.
//! Heuristics may change how good a schedule is, never whether it is feasible.

use crate::error::Result;
use crate::model::{ClusterSnapshot, Schedule};

/// Snapshot in, schedule out.
pub trait Scheduler {
    /// A short name for reports (`ilp`, `fifo`, ...).
    fn name(&self) -> &str;

    /// The decision for one round.
    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule>;
}
