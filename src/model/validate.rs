//! The checker that says whether a schedule can run: every [`Violation`], not just the first.

use std::collections::HashMap;

use super::capacity::CoreMemLedger;
use super::schedule::Schedule;
use super::snapshot::ClusterSnapshot;
use crate::id::JobId;
pub use crate::violation::Violation;

impl Schedule {
    /// Every violation of the snapshot's constraints, in a deterministic order; empty = valid.
    pub fn validate(&self, snapshot: &ClusterSnapshot) -> Vec<Violation> {
        let cluster = &snapshot.cluster;
        let mut out = Vec::new();
        let mut seen: HashMap<JobId, ()> = HashMap::with_capacity(self.assignments.len());
        // GPU owner per server, allocated lazily: most servers of a large cluster are untouched
        // by most schedules' violations, but all are touched by a full schedule, so a flat table
        // indexed by server is the cheapest.
        let mut owner: Vec<Vec<Option<JobId>>> = cluster
            .servers
            .iter()
            .map(|s| vec![None; s.num_gpus() as usize])
            .collect();
        // Every task is taken, fitting or not, and the servers overdrawn are reported at the end.
        let mut ledger = CoreMemLedger::new(cluster);

        for a in &self.assignments {
            let Some(job) = snapshot.job(a.job) else {
                out.push(Violation::UnknownJob { job: a.job });
                continue;
            };
            if seen.insert(a.job, ()).is_some() {
                out.push(Violation::DuplicateJob { job: a.job });
            }
            let nw = a.workers.len() as u32;
            if !job.workers.contains(nw) {
                out.push(Violation::WorkersOutOfRange {
                    job: job.id,
                    workers: nw,
                    min: job.workers.min,
                    max: job.workers.max,
                });
            }
            let np = a.ps.len() as u32;
            if !job.ps.contains(np) {
                out.push(Violation::PsOutOfRange {
                    job: job.id,
                    ps: np,
                    min: job.ps.min,
                    max: job.ps.max,
                });
            }
            let share = job.worker_share(a.tier).unwrap_or_else(|| {
                out.push(Violation::UnknownTier {
                    job: job.id,
                    tier: a.tier,
                    offered: job.tiers.len(),
                });
                (job.demand.cpu_per_worker, job.demand.mem_per_worker_gib)
            });
            let mut bad_type_servers: Vec<usize> = Vec::new();
            let mut types: Vec<&str> = Vec::new();
            for (wi, w) in a.workers.iter().enumerate() {
                let Some(server) = cluster.servers.get(w.server) else {
                    out.push(Violation::UnknownServer {
                        job: job.id,
                        server: w.server,
                    });
                    continue;
                };
                if w.gpus.len() as u32 != job.demand.gpus_per_worker {
                    out.push(Violation::WrongGpusPerWorker {
                        job: job.id,
                        worker: wi,
                        expected: job.demand.gpus_per_worker,
                        got: w.gpus.len() as u32,
                    });
                }
                if !types.contains(&server.gpu_type.as_str()) {
                    types.push(&server.gpu_type);
                }
                if !job.allows_gpu(&server.gpu_type) && !bad_type_servers.contains(&w.server) {
                    bad_type_servers.push(w.server);
                    out.push(Violation::IncompatibleGpuType {
                        job: job.id,
                        server: w.server,
                        gpu_type: server.gpu_type.clone(),
                    });
                }
                for &g in &w.gpus {
                    match owner[w.server].get_mut(g as usize) {
                        None => out.push(Violation::UnknownGpu {
                            job: job.id,
                            server: w.server,
                            gpu: g,
                        }),
                        Some(slot @ None) => *slot = Some(job.id),
                        Some(Some(first)) => out.push(Violation::GpuDoubleBooked {
                            server: w.server,
                            gpu: g,
                            first_job: *first,
                            second_job: job.id,
                        }),
                    }
                }
                ledger.take(w.server, share.0, share.1);
            }
            if types.len() > 1 {
                let mut gpu_types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
                gpu_types.sort();
                out.push(Violation::MixedGpuTypes {
                    job: job.id,
                    gpu_types,
                });
            }
            for p in &a.ps {
                if p.server >= cluster.servers.len() {
                    out.push(Violation::UnknownServer {
                        job: job.id,
                        server: p.server,
                    });
                    continue;
                }
                ledger.take(p.server, job.demand.cpu_per_ps, job.demand.mem_per_ps_gib);
            }
        }
        for (server, cpu, mem) in ledger.overdrawn() {
            if let Some((used, capacity)) = cpu {
                out.push(Violation::CpuOverCapacity {
                    server,
                    used,
                    capacity,
                });
            }
            if let Some((used_gib, capacity_gib)) = mem {
                out.push(Violation::MemoryOverCapacity {
                    server,
                    used_gib,
                    capacity_gib,
                });
            }
        }
        out
    }
}
