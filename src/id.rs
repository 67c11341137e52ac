//! Identifiers every layer names: a leaf module (it imports nothing of the crate), so that the
//! error type, the model and everything above can all refer to a job without a cycle.

use serde::{Deserialize, Serialize};

/// A job's identity: unique within a snapshot and stable across rounds (the trace's job).
/// Not its position in [`crate::ClusterSnapshot::jobs`] — a [`JobPos`], which changes from
/// round to round as jobs arrive and finish. Written in JSON as the bare number.
///
/// ```
/// use coda::JobId;
/// assert_eq!(JobId(7).to_string(), "7");
/// assert_eq!(serde_json::to_string(&JobId(7)).unwrap(), "7");
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct JobId(pub u64);

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<u64> for JobId {
    fn from(id: u64) -> Self {
        JobId(id)
    }
}

/// A job's position in a round's snapshot (`snapshot.jobs[pos.0]`), not its id: the index the
/// round's pricing, its program and the policies share. Its own type so that a job position is
/// never passed where a server index is meant (`colocation_excess(victim, other, server)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobPos(pub usize);
