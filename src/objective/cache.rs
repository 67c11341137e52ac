//! Option speeds kept across rounds ([`PricingCache`]): what pricing a job again would ask
//! the performance model, asked once.

use std::collections::HashMap;
use std::sync::Mutex;

use super::OptionShape;
use super::{ClusterShape, JobOption, Objective, OptionSpeeds};
use crate::model::{Cluster, ClusterSnapshot, Job, JobId, Topology};
use crate::perf::PerfModel;

/// Option speeds kept across rounds: a job's options and the performance model's speeds their
/// terms are made of are a function of the job as submitted, the cluster's shape and the
/// performance model alone ([`Objective::option_speeds_in`]); only the arithmetic that turns
/// them into terms reads the job's progress. A policy that prices every job every round keeps
/// one of these and prices with [`RoundPricing::keeping`]: a job seen before (the whole job as
/// submitted is compared, not its id) gets the options pricing it again would give, without
/// asking the model again. Bit for bit: the terms are computed by the same arithmetic from the
/// same speeds.
#[derive(Debug, Default)]
pub(crate) struct PricingCache(Mutex<Kept>);

/// What a [`PricingCache`] holds.
#[derive(Debug, Default)]
struct Kept {
    /// The cluster of the last round, its topology and its shape (a replay's cluster does not
    /// change: built once, not every round).
    cluster: Option<(Cluster, Topology, ClusterShape)>,
    /// The cluster shape the speeds were priced for, and whether they include the speeds
    /// next to a full server (another shape, or an objective that reads those speeds when the
    /// kept ones lack them, clears them).
    shape: Option<(ClusterShape, bool)>,
    /// Per job id, the versions of the job seen lately (their progress ignored) and their
    /// options' speeds (a round may price a job at its demand and at its tiers: a few versions
    /// each).
    jobs: HashMap<JobId, Vec<(Job, Priced)>>,
}

/// A job's options, each with the speeds its terms are made of.
type Priced = Vec<(OptionShape, OptionSpeeds)>;

/// Versions kept per job.
const VERSIONS: usize = 4;

impl Clone for PricingCache {
    /// An empty cache: what it keeps can always be priced again.
    fn clone(&self) -> Self {
        PricingCache::default()
    }
}

/// Whether two jobs are the same as submitted: every field but where they stand now
/// ([`Job::run`]). Written out field by field so that a new field cannot be forgotten.
fn same_submission(a: &Job, b: &Job) -> bool {
    let Job {
        id,
        arrival_s,
        model,
        arch,
        total_iterations,
        demand,
        tiers,
        workers,
        ps,
        gpu_types,
        local_batch,
        requested,
        run: _,
    } = a;
    *id == b.id
        && *arrival_s == b.arrival_s
        && *model == b.model
        && *arch == b.arch
        && *total_iterations == b.total_iterations
        && *demand == b.demand
        && *tiers == b.tiers
        && *workers == b.workers
        && *ps == b.ps
        && *gpu_types == b.gpu_types
        && *local_batch == b.local_batch
        && *requested == b.requested
}

impl PricingCache {
    /// The topology and shape of `cluster`: the kept ones if it is the last round's cluster.
    pub(super) fn cluster(&self, cluster: &Cluster) -> (Topology, ClusterShape) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &kept.cluster {
            Some((c, t, s)) if c == cluster => (t.clone(), s.clone()),
            _ => {
                let (t, s) = (Topology::of(cluster), ClusterShape::of(cluster));
                kept.cluster = Some((cluster.clone(), t.clone(), s.clone()));
                (t, s)
            }
        }
    }

    /// The options of `job` on a cluster of `shape` under `objective`, their speeds kept if
    /// the same job was priced on the same shape before (by the same keeper's model), else
    /// priced now and kept.
    pub(super) fn options(
        &self,
        perf: &dyn PerfModel,
        shape: &ClusterShape,
        objective: &Objective,
        job: &Job,
    ) -> Vec<JobOption> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Once kept with the speeds next to a full server, every job is priced with them, so
        // that any kept job serves an objective that reads them.
        let full_server = match &kept.shape {
            Some((s, f)) if s == shape && (*f || !objective.reads_full_server()) => *f,
            _ => {
                kept.jobs.clear();
                let f = objective.reads_full_server();
                kept.shape = Some((shape.clone(), f));
                f
            }
        };
        let versions = kept.jobs.entry(job.id).or_default();
        if let Some((_, speeds)) = versions.iter().find(|(j, _)| same_submission(j, job)) {
            return objective.options_at(job, speeds);
        }
        let speeds = Objective::option_speeds_in(perf, shape, job, full_server);
        let options = objective.options_at(job, &speeds);
        if versions.len() == VERSIONS {
            versions.remove(0);
        }
        let submitted = Job {
            run: Default::default(),
            ..job.clone()
        };
        versions.push((submitted, speeds));
        options
    }
    /// Forgets the jobs `snapshot` no longer holds (finished ones), so that the cache stays the
    /// size of one round.
    pub(crate) fn keep_only(&self, snapshot: &ClusterSnapshot) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.jobs.len() > snapshot.jobs.len() {
            kept.jobs.retain(|id, _| snapshot.job_index(*id).is_some());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobPos, WorkerTier};
    use crate::objective::{Colocation, RoundPricing};
    use crate::perf::CalibratedPerf;

    /// Options read through the cache are the ones priced afresh, bit for bit, after the jobs
    /// progressed (the kept speeds, the terms redone), with tiers offered or not, and on
    /// another cluster (the cache starts over).
    #[test]
    fn kept_options_are_the_ones_priced_afresh() {
        let perf = CalibratedPerf::shipped();
        let cache = PricingCache::default();
        for (file, tiers) in [
            ("small", false),
            ("hetero", false),
            ("small", true),
            ("hetero", true),
        ] {
            let path = format!(
                "{}/examples/instances/{file}.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let mut snap = ClusterSnapshot::from_json_file(&path).unwrap();
            if tiers {
                for job in &mut snap.jobs {
                    let d = job.demand;
                    job.tiers = vec![WorkerTier {
                        cpu_per_worker: 2.0 * d.cpu_per_worker,
                        mem_per_worker_gib: 2.0 * d.mem_per_worker_gib,
                    }];
                }
            }
            for step in 0..4 {
                // An objective that reads the speeds next to a full server after one that does
                // not, and back, on one cache.
                let objective = match step {
                    1 | 2 => Objective::default().with_colocation(Colocation::Progress),
                    _ => Objective::default(),
                };
                let kept = RoundPricing::keeping(perf, &snap, objective, &cache);
                let fresh = RoundPricing::new(perf, &snap, objective);
                for j in 0..snap.jobs.len() {
                    assert!(!fresh.options(JobPos(j)).is_empty());
                    assert_eq!(
                        kept.options(JobPos(j)),
                        fresh.options(JobPos(j)),
                        "step {step}"
                    );
                }
                assert_eq!(kept.topology(), fresh.topology());
                // The next round: every job a little further along.
                for job in &mut snap.jobs {
                    job.run.done_iterations = (job.run.done_iterations
                        + 0.3 * job.total_iterations)
                        .min(0.99 * job.total_iterations);
                }
            }
        }
    }
}
