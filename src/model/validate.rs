//! The checker that says whether a schedule can run: every [`Violation`], not just the first.

use std::collections::HashMap;

use super::capacity::CoreMemLedger;
use super::job::Job;
use super::schedule::{Assignment, Schedule};
use super::snapshot::ClusterSnapshot;
use crate::id::{GpuType, JobId, ServerIdx};
pub use crate::violation::Violation;

impl Schedule {
    /// Every violation of the snapshot's constraints, in a deterministic order; empty = valid.
    pub fn validate(&self, snapshot: &ClusterSnapshot) -> Vec<Violation> {
        let cluster = &snapshot.cluster;
        let mut c = Checker {
            snapshot,
            out: Vec::new(),
            // GPU owner per server, a flat table indexed by server: most servers of a large
            // cluster are untouched by a schedule's violations, but all by a full schedule.
            owner: cluster
                .servers
                .iter()
                .map(|s| vec![None; s.num_gpus() as usize])
                .collect(),
            // Every task is taken, fitting or not; the servers overdrawn are reported at the end.
            ledger: CoreMemLedger::new(cluster),
        };
        let mut seen: HashMap<JobId, ()> = HashMap::with_capacity(self.assignments.len());
        for a in &self.assignments {
            let Some(job) = snapshot.job(a.job) else {
                c.out.push(Violation::UnknownJob { job: a.job });
                continue;
            };
            if seen.insert(a.job, ()).is_some() {
                c.out.push(Violation::DuplicateJob { job: a.job });
            }
            let share = c.sizes(job, a);
            c.workers(job, a, share);
            c.ps(job, a);
        }
        c.capacity();
        c.out
    }
}

/// The violations found so far, who holds each GPU, and the cores and memory taken.
struct Checker<'s> {
    snapshot: &'s ClusterSnapshot,
    out: Vec<Violation>,
    owner: Vec<Vec<Option<JobId>>>,
    ledger: CoreMemLedger,
}

impl Checker<'_> {
    /// Workers and PS counts in the job's ranges, and a tier it offers; the cores and memory
    /// each worker holds (the demand's for an unknown tier).
    fn sizes(&mut self, job: &Job, a: &Assignment) -> (f64, f64) {
        let nw = a.workers.len() as u32;
        if !job.workers.contains(nw) {
            self.out.push(Violation::WorkersOutOfRange {
                job: job.id,
                workers: nw,
                min: job.workers.min,
                max: job.workers.max,
            });
        }
        let np = a.ps.len() as u32;
        if !job.ps.contains(np) {
            self.out.push(Violation::PsOutOfRange {
                job: job.id,
                ps: np,
                min: job.ps.min,
                max: job.ps.max,
            });
        }
        job.worker_share(a.tier).unwrap_or_else(|| {
            self.out.push(Violation::UnknownTier {
                job: job.id,
                tier: a.tier,
                offered: job.tiers.len(),
            });
            (job.demand.cpu_per_worker, job.demand.mem_per_worker_gib)
        })
    }

    /// Each worker on a known server of a GPU type the job allows, with the job's GPUs per
    /// worker, each GPU existing and given once; every worker of one GPU type.
    fn workers(&mut self, job: &Job, a: &Assignment, share: (f64, f64)) {
        let cluster = &self.snapshot.cluster;
        let mut bad_type_servers: Vec<ServerIdx> = Vec::new();
        let mut types: Vec<GpuType> = Vec::new();
        for (wi, w) in a.workers.iter().enumerate() {
            let Some(server) = cluster.servers.get(w.server.0) else {
                self.out.push(Violation::UnknownServer {
                    job: job.id,
                    server: w.server,
                });
                continue;
            };
            if w.gpus.len() as u32 != job.demand.gpus_per_worker {
                self.out.push(Violation::WrongGpusPerWorker {
                    job: job.id,
                    worker: wi,
                    expected: job.demand.gpus_per_worker,
                    got: w.gpus.len() as u32,
                });
            }
            if !types.contains(&server.gpu_type) {
                types.push(server.gpu_type);
            }
            if !job.allows_gpu(&server.gpu_type) && !bad_type_servers.contains(&w.server) {
                bad_type_servers.push(w.server);
                self.out.push(Violation::IncompatibleGpuType {
                    job: job.id,
                    server: w.server,
                    gpu_type: server.gpu_type,
                });
            }
            for &g in &w.gpus {
                match self.owner[w.server.0].get_mut(g as usize) {
                    None => self.out.push(Violation::UnknownGpu {
                        job: job.id,
                        server: w.server,
                        gpu: g,
                    }),
                    Some(slot @ None) => *slot = Some(job.id),
                    Some(Some(first)) => self.out.push(Violation::GpuDoubleBooked {
                        server: w.server,
                        gpu: g,
                        first_job: *first,
                        second_job: job.id,
                    }),
                }
            }
            self.ledger.take(w.server.0, share.0, share.1);
        }
        if types.len() > 1 {
            types.sort();
            self.out.push(Violation::MixedGpuTypes {
                job: job.id,
                gpu_types: types,
            });
        }
    }

    /// Each PS on a known server, its cores and memory taken.
    fn ps(&mut self, job: &Job, a: &Assignment) {
        for p in &a.ps {
            if p.server.0 >= self.snapshot.cluster.servers.len() {
                self.out.push(Violation::UnknownServer {
                    job: job.id,
                    server: p.server,
                });
                continue;
            }
            self.ledger
                .take(p.server.0, job.demand.cpu_per_ps, job.demand.mem_per_ps_gib);
        }
    }

    /// Every server whose cores or memory the tasks overdraw.
    fn capacity(&mut self) {
        for (server, cpu, mem) in self.ledger.overdrawn() {
            if let Some((used, capacity)) = cpu {
                self.out.push(Violation::CpuOverCapacity {
                    server: ServerIdx(server),
                    used,
                    capacity,
                });
            }
            if let Some((used_gib, capacity_gib)) = mem {
                self.out.push(Violation::MemoryOverCapacity {
                    server: ServerIdx(server),
                    used_gib,
                    capacity_gib,
                });
            }
        }
    }
}
