//! What option enumeration reads of a cluster ([`ClusterShape`]).

use crate::model::{GpuType, Job, MAX_GPUS_PER_SERVER};
use crate::perf::ServerSize;

/// What enumerating a job's options reads of a cluster, summarised once: per GPU type (by
/// name) its servers' GPU counts with how many servers have each, the distinct (cores, memory)
/// of servers with their counts, and whether any server has several sockets and whether there
/// are several servers.
///
/// A job's largest worker count (per GPU type) and PS count worth enumerating are its own
/// maxima clipped to what the cluster can hold (workers: the GPUs of that type in whole
/// workers; PS: the servers' cores and memory in whole PS tasks) and to the range the
/// performance model prices. Ranges in an instance may be far larger (`workers.max =
/// 4294967295`); the options, and so the program's size, stay bounded by the cluster.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClusterShape {
    /// Per GPU type, sorted: its servers' GPU counts, with how many servers have each.
    pub(super) types: Vec<(GpuType, Vec<(u32, u64)>)>,
    /// Per GPU type (by name), its largest server.
    largest: Vec<(GpuType, ServerSize)>,
    capacities: Vec<(f64, f64, u64)>,
    /// Whether any server has GPUs under several sockets.
    pub(super) multi_socket: bool,
    /// Whether there are several servers.
    pub(super) multi_server: bool,
}

impl ClusterShape {
    pub(crate) fn of(cluster: &crate::model::Cluster) -> Self {
        let mut types: Vec<(GpuType, Vec<(u32, u64)>)> = Vec::new();
        let mut largest: Vec<(GpuType, ServerSize)> = Vec::new();
        let mut capacities: Vec<(f64, f64, u64)> = Vec::new();
        for s in &cluster.servers {
            let size = ServerSize::of(s);
            match largest.iter_mut().find(|(t, _)| *t == s.gpu_type) {
                Some((_, l)) if (size.gpus, size.socket_gpus) > (l.gpus, l.socket_gpus) => {
                    *l = size
                }
                Some(_) => {}
                None => largest.push((s.gpu_type, size)),
            }
            let sizes = match types.iter_mut().find(|(t, _)| *t == s.gpu_type) {
                Some((_, v)) => v,
                None => {
                    types.push((s.gpu_type, Vec::new()));
                    &mut types.last_mut().expect("just pushed").1
                }
            };
            match sizes.iter_mut().find(|(n, _)| *n == s.num_gpus()) {
                Some((_, c)) => *c += 1,
                None => sizes.push((s.num_gpus(), 1)),
            }
            match capacities.iter_mut().find(|(c, m, _)| {
                c.to_bits() == s.cpu_cores.to_bits() && m.to_bits() == s.memory_gib.to_bits()
            }) {
                Some((_, _, n)) => *n += 1,
                None => capacities.push((s.cpu_cores, s.memory_gib, 1)),
            }
        }
        types.sort_by_key(|t| t.0);
        ClusterShape {
            types,
            largest,
            capacities,
            // GPUs of an NVLink server never cross the socket link (`Server::gpu_slots`).
            multi_socket: cluster.servers.iter().any(|s| {
                !s.nvlink
                    && s.topology
                        .iter()
                        .filter(|sw| sw.iter().sum::<u32>() > 0)
                        .count()
                        > 1
            }),
            multi_server: cluster.servers.len() > 1,
        }
    }

    /// The largest server of GPU type `gpu_type`, if the cluster has one.
    pub(crate) fn largest(&self, gpu_type: &str) -> Option<ServerSize> {
        self.largest
            .iter()
            .find(|(t, _)| t == gpu_type)
            .map(|&(_, s)| s)
    }

    /// PS tasks of `job` the cluster can hold; a demand of zero cores and memory is bounded by
    /// the most tasks any server may hold (one per GPU slot of the largest server allowed).
    pub(super) fn ps_slots(&self, job: &Job) -> u64 {
        let d = job.demand;
        let by = |have: f64, need: f64| {
            if need > 0.0 {
                (have / need).floor().min(f64::from(MAX_GPUS_PER_SERVER)) as u64
            } else {
                u64::from(MAX_GPUS_PER_SERVER)
            }
        };
        self.capacities
            .iter()
            .map(|&(c, m, n)| n * by(c, d.cpu_per_ps).min(by(m, d.mem_per_ps_gib)))
            .sum()
    }
}
