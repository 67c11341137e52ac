//! Where a phase of the configuration program stops: at a wall-clock deadline, or after a
//! number of pricing-search nodes counted over the whole solve. The node count is the
//! repeatable limit ([`crate::SolveSettings::work_limit`]): everything else the program does
//! between searches (relaxations, the master's branch and bound under its node limit) is
//! deterministic, so the same round under the same work limit takes the same steps on any
//! machine — which a time limit cannot promise.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A phase's limits, and the solve's node counter they share.
#[derive(Clone, Copy)]
pub(crate) struct Budget<'a> {
    deadline: Option<Instant>,
    spent: &'a AtomicU64,
    /// The count of `spent` at which the phase stops.
    stop: u64,
}

impl<'a> Budget<'a> {
    /// No limit, counting into `spent`.
    pub(crate) fn unlimited(spent: &'a AtomicU64) -> Self {
        Budget {
            deadline: None,
            spent,
            stop: u64::MAX,
        }
    }

    /// The same counter, stopping at `deadline` (if any) or once `stop` nodes are spent in all
    /// (if any).
    pub(crate) fn until(self, deadline: Option<Instant>, stop: Option<u64>) -> Self {
        Budget {
            deadline,
            spent: self.spent,
            stop: stop.unwrap_or(u64::MAX),
        }
    }

    /// The wall-clock deadline, checked inside long searches.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether the phase is over: past its deadline or out of nodes.
    pub(crate) fn late(&self) -> bool {
        self.out_of_nodes() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether the nodes are spent.
    pub(crate) fn out_of_nodes(&self) -> bool {
        self.spent.load(Ordering::Relaxed) >= self.stop
    }

    /// A search's node limit: `limit`, or what is left if less.
    pub(crate) fn nodes(&self, limit: u64) -> u64 {
        limit.min(self.stop.saturating_sub(self.spent.load(Ordering::Relaxed)))
    }

    /// Whether the phase stops at a node count: its searches must then run one after the
    /// other, each taking what the ones before it left (in parallel, which search got the
    /// last nodes would depend on timing, and the work limit would no longer repeat).
    pub(crate) fn counts_nodes(&self) -> bool {
        self.stop != u64::MAX
    }

    /// Counts `nodes` more as spent.
    pub(crate) fn spend(&self, nodes: u64) {
        // Saturating: the count never wraps.
        let _ = self
            .spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_add(nodes))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_budget_is_shared_and_caps_each_search() {
        let spent = AtomicU64::new(0);
        let b = Budget::unlimited(&spent).until(None, Some(100));
        assert_eq!(b.nodes(1_000), 100);
        assert!(!b.late());
        b.spend(70);
        assert_eq!(b.nodes(1_000), 30);
        assert_eq!(b.nodes(10), 10);
        // A later phase with a larger stop sees the same count.
        let later = b.until(None, Some(150));
        assert_eq!(later.nodes(1_000), 80);
        b.spend(30);
        assert!(b.late() && b.out_of_nodes());
        assert_eq!(b.nodes(1_000), 0);
        assert!(!later.late());
        assert!(!Budget::unlimited(&spent).late());
    }
}
