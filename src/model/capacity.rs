//! The one ledger of cores and memory per server: the validator and the baselines' packer both
//! ask it whether a task fits, under one tolerance, so a schedule the packer builds is one the
//! validator accepts by construction (they used to keep their own sums and slacks).

use super::cluster::Cluster;

/// Slack on core and memory sums, so that demands that add up to the capacity exactly in
/// decimal are not rejected for a rounding error in binary.
pub const TOLERANCE: f64 = 1e-9;

/// What is taken of a resource on a server, and its capacity.
pub type UsedOf = (f64, f64);

/// Free cores and GiB of memory per server, taken task by task.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreMemLedger {
    /// `(cores, GiB)` free per server; negative once over-committed (only the validator, which
    /// takes every task of a proposal before judging it, lets that happen).
    free: Vec<(f64, f64)>,
    capacity: Vec<(f64, f64)>,
}

impl CoreMemLedger {
    /// Every server of `cluster` empty.
    pub fn new(cluster: &Cluster) -> Self {
        let capacity: Vec<(f64, f64)> = cluster
            .servers
            .iter()
            .map(|s| (s.cpu_cores, s.memory_gib))
            .collect();
        CoreMemLedger {
            free: capacity.clone(),
            capacity,
        }
    }

    /// Free `(cores, GiB)` of server `s`.
    pub fn free(&self, s: usize) -> (f64, f64) {
        self.free[s]
    }

    /// Whether `cpu` cores and `mem` GiB fit in what server `s` has free.
    pub fn fits(&self, s: usize, cpu: f64, mem: f64) -> bool {
        fits_in(self.free[s], cpu, mem)
    }

    /// Takes `cpu` cores and `mem` GiB on server `s` (whether or not they fit: see
    /// [`CoreMemLedger::overdrawn`]).
    pub fn take(&mut self, s: usize, cpu: f64, mem: f64) {
        let f = &mut self.free[s];
        f.0 -= cpu;
        f.1 -= mem;
    }

    /// How many tasks of `cpu` cores and `mem` GiB each still fit on server `s` (`u32::MAX`
    /// for a task that needs neither).
    pub fn tasks_that_fit(&self, s: usize, cpu: f64, mem: f64) -> u32 {
        let (c, m) = self.free[s];
        let mut n = u32::MAX;
        if cpu > 0.0 {
            n = n.min(((c + TOLERANCE) / cpu).floor() as u32);
        }
        if mem > 0.0 {
            n = n.min(((m + TOLERANCE) / mem).floor() as u32);
        }
        n
    }

    /// Free cores and free memory of every server, as two columns (a scratch copy for plans
    /// tried before any is taken).
    pub fn free_columns(&self) -> (Vec<f64>, Vec<f64>) {
        self.free.iter().copied().unzip()
    }

    /// Servers taken beyond capacity: `(server, cores (used, capacity) if over, memory (used,
    /// capacity) if over)`, in server order.
    pub fn overdrawn(&self) -> Vec<(usize, Option<UsedOf>, Option<UsedOf>)> {
        self.free
            .iter()
            .zip(&self.capacity)
            .enumerate()
            .filter_map(|(s, (&(c, m), &(cc, mc)))| {
                let cpu = (c < -TOLERANCE).then_some((cc - c, cc));
                let mem = (m < -TOLERANCE).then_some((mc - m, mc));
                (cpu.is_some() || mem.is_some()).then_some((s, cpu, mem))
            })
            .collect()
    }
}

/// Whether `cpu` cores and `mem` GiB fit in `free`: the rule of [`CoreMemLedger::fits`], for
/// scratch copies ([`CoreMemLedger::free_columns`]).
pub fn fits_in(free: (f64, f64), cpu: f64, mem: f64) -> bool {
    cpu <= free.0 + TOLERANCE && mem <= free.1 + TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Server;

    fn cluster() -> Cluster {
        Cluster {
            servers: vec![Server::uniform(
                "a",
                "V100",
                [1, 1, 4],
                crate::model::HostResources::new(10.0, 64.0, 100.0),
            )],
        }
    }

    #[test]
    fn exact_decimal_sums_fit_and_one_more_does_not() {
        let mut l = CoreMemLedger::new(&cluster());
        // 0.1 × 100 is not 10 in binary; the tolerance absorbs it.
        for _ in 0..100 {
            assert!(l.fits(0, 0.1, 0.64));
            l.take(0, 0.1, 0.64);
        }
        assert!(l.overdrawn().is_empty());
        assert!(!l.fits(0, 0.1, 0.0));
        assert_eq!(l.tasks_that_fit(0, 0.1, 0.0), 0);
        l.take(0, 1.0, 0.0);
        let over = l.overdrawn();
        assert_eq!(over.len(), 1);
        let (s, cpu, mem) = over[0];
        assert_eq!(s, 0);
        assert!((cpu.unwrap().0 - 11.0).abs() < 1e-9 && mem.is_none());
    }

    #[test]
    fn tasks_that_fit_counts_the_scarcer_resource() {
        let l = CoreMemLedger::new(&cluster());
        assert_eq!(l.tasks_that_fit(0, 2.5, 10.0), 4);
        assert_eq!(l.tasks_that_fit(0, 1.0, 32.0), 2);
        assert_eq!(l.tasks_that_fit(0, 0.0, 0.0), u32::MAX);
    }
}
