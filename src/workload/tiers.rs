//! The CPU/memory tiers a job offers ([`crate::Job::tiers`]): its model's measured levels
//! ([`crate::perf::cpumem`]) other than its demand.

use crate::model::{ClusterSnapshot, TaskDemand, WorkerTier};
use crate::perf::{PerfModel, TaskDemandFit};

/// The tiers a model's measured surface offers a worker of `demand`'s GPUs, without the demand
/// itself.
pub(crate) fn worker_tiers(
    measured: Option<&TaskDemandFit>,
    demand: &TaskDemand,
) -> Vec<WorkerTier> {
    let same = |a: f64, b: f64| (a - b).abs() < 1e-9;
    measured
        .map(|d| d.tiers.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|t| WorkerTier {
            cpu_per_worker: t.cpu_per_gpu * f64::from(demand.gpus_per_worker),
            mem_per_worker_gib: t.mem_gib_per_gpu * f64::from(demand.gpus_per_worker),
        })
        .filter(|t| {
            !(same(t.cpu_per_worker, demand.cpu_per_worker)
                && same(t.mem_per_worker_gib, demand.mem_per_worker_gib))
        })
        .collect()
}

/// Every job of `snapshot` offers its model's measured tiers besides its demand (which stays
/// as it is, so a running job still fits where it runs); jobs of models without a measured
/// surface offer none. What `--cpu-mem fungible` does to a trace's jobs, for a round given as
/// it is (`coda bench-solve --tiers`).
pub fn offer_tiers(snapshot: &mut ClusterSnapshot, perf: &dyn PerfModel) {
    for job in &mut snapshot.jobs {
        job.tiers = worker_tiers(perf.task_demand(&job.model).as_ref(), &job.demand);
    }
}
