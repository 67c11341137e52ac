//! Admission: the settings checked once, and every job checked against the cluster before
//! the first event — jobs it can never run refused together or, if asked, left out and reported
//! ([`Unplaceable`]); ranges clipped to what the performance model prices; jobs in arrival order.

use std::collections::HashSet;

use super::*;

/// Jobs left out of a run as never runnable, each with why.
pub(super) type LeftOut = Vec<(JobId, String)>;

/// The jobs a run starts with, in arrival order, and those left out as never runnable;
/// every job starts from a fresh [`RunState`] (nothing done, nowhere).
pub(super) fn admit(
    perf: &dyn PerfModel,
    config: &SimConfig,
    cluster: &Cluster,
    mut jobs: Vec<Job>,
) -> Result<(Vec<Job>, LeftOut)> {
    // Settings are checked once, with their names in the error: round and restart by the
    // objective's own rules, the allowance here.
    let o = config.objective;
    Objective::new(o.round_s, o.restart_s)?;
    let f = config.contention_allowance;
    if !(f.is_finite() && f >= 1.0) {
        return Err(Error::setting(
            "simulator",
            "contention_allowance",
            f,
            "must be >= 1",
        ));
    }
    // Every job starts fresh: what it was submitted as, not where it stood.
    for j in &mut jobs {
        j.run = RunState::default();
    }
    // Checks every job against the cluster once (sizes, models) before the run starts; jobs
    // it can never run are refused together or, if asked, left out and reported.
    const ORIGIN: &str = "simulator (the workload on this cluster)";
    let mut check = ClusterSnapshot::from_parts(0.0, cluster.clone(), jobs);
    let mut unplaceable = check.unplaceable();
    for j in &check.jobs {
        // Allocations the performance model cannot price can never run either.
        if let Err(Error::UnsupportedConfiguration { reason, .. }) = perf.check_job(j, ORIGIN)
            && !unplaceable.iter().any(|(id, _)| *id == j.id)
        {
            let why = reason.rsplit_once(": ").map_or(reason.as_str(), |(_, r)| r);
            unplaceable.push((j.id, format!("model `{}`: {why}", j.model)));
        }
    }
    if let Some((first, why)) = unplaceable.first() {
        match config.unplaceable {
            Unplaceable::Reject => {
                let ids: Vec<String> = unplaceable
                    .iter()
                    .take(10)
                    .map(|(j, _)| j.to_string())
                    .collect();
                return Err(Error::JobTooLarge {
                    context: ORIGIN.into(),
                    job: *first,
                    reason: format!(
                        "{why}. {} job(s) can never run on this cluster (jobs {}{}); leave \
                         them out with `Unplaceable::Skip` (`--skip-unplaceable`)",
                        unplaceable.len(),
                        ids.join(", "),
                        if unplaceable.len() > 10 { ", ..." } else { "" }
                    ),
                });
            }
            Unplaceable::Skip => {
                let out: HashSet<JobId> = unplaceable.iter().map(|(j, _)| *j).collect();
                check.jobs.retain(|j| !out.contains(&j.id));
                check.reindex();
            }
        }
    }
    check.check(ORIGIN)?;
    perf.check_snapshot(&check, ORIGIN)?;
    let mut jobs = check.jobs;
    // A policy sizes a job within its ranges; ranges beyond what the model prices would let
    // a policy pick an allocation no speed exists for, so they are clipped to it here, once.
    // (The checks above keep each job's smallest allocation inside.)
    for j in &mut jobs {
        if let Some((w, p)) = perf.task_limits(j) {
            j.workers.max = j.workers.max.min(w).max(j.workers.min);
            j.ps.max = j.ps.max.min(p).max(j.ps.min);
        }
    }
    jobs.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
    Ok((jobs, unplaceable))
}
