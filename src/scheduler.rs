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

    /// Whether, in a round where no job waits (every job of the snapshot already holds GPUs),
    /// this policy keeps every assignment as it is — so that a simulator may skip such rounds
    /// ([`crate::sim::SimConfig::skip_idle_rounds`]). False by default: only a policy that never
    /// moves, grows or shrinks a running job unless another job waits may say true.
    fn keeps_when_none_wait(&self) -> bool {
        false
    }

    /// What the policy has to report about the rounds it decided (fallbacks taken, rounds a
    /// limit stopped), for run summaries; none by default.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}
