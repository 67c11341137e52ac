//! Identifiers every layer names: a leaf module (it imports nothing of the crate), so that the
//! error type, the model and everything above can all refer to a job without a cycle.

use serde::{Deserialize, Serialize};

/// A job's identity: unique within a snapshot and stable across rounds (the trace's job).
/// Not its position in [`crate::ClusterSnapshot::jobs`] — a [`JobPos`], which changes from
/// round to round as jobs arrive and finish. Written in JSON as the bare number.
///
/// ```
/// use coda::model::JobId;
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

/// A server's position in its cluster (`cluster.servers[idx.0]`, or `cluster.servers[idx]`):
/// what a schedule names a server by. Its own type so that a server index is never passed where
/// a job's position or a GPU index is meant. Written in JSON as the bare number.
///
/// ```
/// use coda::model::ServerIdx;
/// assert_eq!(serde_json::to_string(&ServerIdx(3)).unwrap(), "3");
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct ServerIdx(pub usize);

impl std::fmt::Display for ServerIdx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<usize> for ServerIdx {
    fn from(i: usize) -> Self {
        ServerIdx(i)
    }
}

/// A GPU type as its servers and jobs name it (`v100`, `a100`, `t4`, `rtx2080ti`...), interned:
/// a copy is a pointer, and comparing two is comparing two short strings at most. The names
/// are kept as written (the performance model and the trace loaders write them lower case).
/// Written in JSON as the bare name.
///
/// ```
/// use coda::model::GpuType;
/// let t = GpuType::new("v100");
/// assert_eq!(t, "v100");
/// assert_eq!(serde_json::to_string(&t).unwrap(), "\"v100\"");
/// ```
#[derive(Clone, Copy, Eq, PartialOrd, Ord)]
pub struct GpuType(&'static str);

impl std::hash::Hash for GpuType {
    /// The name's hash: equal types (one pointer) have equal names.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq for GpuType {
    /// Every name is stored once ([`GpuType::new`]), so the same type is the same pointer: a
    /// comparison in a placement's inner loops costs no string comparison.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl GpuType {
    /// The type named `name` (every name is stored once, for the life of the process).
    pub fn new(name: &str) -> Self {
        use std::collections::HashSet;
        use std::sync::{Mutex, OnceLock};
        static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
        let mut names = NAMES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = names.get(name) {
            return GpuType(n);
        }
        // A handful of GPU types exist: the few bytes leaked are the interning's whole cost.
        let n: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.insert(n);
        GpuType(n)
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::ops::Deref for GpuType {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl std::fmt::Debug for GpuType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for GpuType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl From<&str> for GpuType {
    fn from(name: &str) -> Self {
        GpuType::new(name)
    }
}

impl From<String> for GpuType {
    fn from(name: String) -> Self {
        GpuType::new(&name)
    }
}

impl PartialEq<str> for GpuType {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for GpuType {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for GpuType {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl PartialEq<GpuType> for &str {
    fn eq(&self, other: &GpuType) -> bool {
        *self == other.0
    }
}

impl PartialEq<GpuType> for String {
    fn eq(&self, other: &GpuType) -> bool {
        self.as_str() == other.0
    }
}

impl Serialize for GpuType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for GpuType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(GpuType::new(&name))
    }
}
