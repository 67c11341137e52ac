//! From a schedule to what the performance model needs per job: the shape of its placement and
//! the contention it meets. This is the only place that reads co-location out of a schedule.

use std::collections::HashMap;

use serde::Serialize;

use super::{JobQuery, PerfModel, Speed};
use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, Schedule};

/// A job's placement reduced to what changes its speed, including its neighbours.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlacementShape {
    /// Worker tasks.
    pub workers: u32,
    /// Parameter-server tasks.
    pub ps: u32,
    /// The job's GPUs on each server it uses (order irrelevant, zeros never present).
    pub gpus_per_server: Vec<u32>,
    /// Servers on which the job's GPUs sit under more than one CPU socket.
    pub cross_socket_servers: u32,
    /// Fraction of (worker, PS) pairs on the same server (PS jobs).
    pub ps_colocated_fraction: f64,
    /// Other jobs with a GPU under a PCIe switch this job uses.
    pub pcie_sharing_jobs: u32,
    /// Most other distributed jobs met on one of this job's servers, if this job is distributed.
    pub nic_sharing_jobs: u32,
    /// Models of the other jobs with workers on this job's worker servers (one entry per job).
    pub co_runners: Vec<String>,
}

impl PlacementShape {
    /// A job alone on the cluster: `gpus_per_server` GPUs on each of its servers, all under one
    /// socket, PS tasks on other servers.
    pub fn isolated(workers: u32, ps: u32, gpus_per_server: Vec<u32>) -> Self {
        PlacementShape {
            workers,
            ps,
            gpus_per_server,
            ..Default::default()
        }
    }

    /// Number of servers holding the job's GPUs.
    pub fn servers(&self) -> u32 {
        self.gpus_per_server.iter().filter(|&&g| g > 0).count() as u32
    }
}

/// The shape of every assignment of a schedule, in schedule order. Tasks on servers or GPUs
/// outside the cluster are ignored here; `Schedule::validate` reports them.
pub fn placement_shapes(
    snapshot: &ClusterSnapshot,
    schedule: &Schedule,
) -> Vec<(u64, PlacementShape)> {
    let servers = &snapshot.cluster.servers;
    let nsrv = servers.len();
    let slots = snapshot.cluster.slot_table();
    let model_of: HashMap<u64, &str> = snapshot
        .jobs
        .iter()
        .map(|j| (j.id, j.model.as_str()))
        .collect();
    // Per server: jobs with workers there; distributed jobs with any task there.
    let mut workers_on: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut distributed_on: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut switch_jobs: HashMap<(usize, u32), Vec<usize>> = HashMap::new();
    let mut shapes = Vec::with_capacity(schedule.assignments.len());
    let mut worker_servers = Vec::with_capacity(schedule.assignments.len());
    let mut all_servers = Vec::with_capacity(schedule.assignments.len());
    let mut switches_of = Vec::with_capacity(schedule.assignments.len());
    for (ai, a) in schedule.assignments.iter().enumerate() {
        let fp = a.footprint(&slots);
        let gps: Vec<(usize, u32)> = a
            .gpus_per_server()
            .into_iter()
            .filter(|(s, _)| *s < nsrv)
            .collect();
        let pairs = a.workers.len() * a.ps.len();
        let srv = fp.task_servers.clone();
        let wsrv = fp.worker_servers.clone();
        for &s in &wsrv {
            workers_on.entry(s).or_default().push(ai);
        }
        if srv.len() > 1 {
            for &s in &srv {
                distributed_on.entry(s).or_default().push(ai);
            }
        }
        for &k in &fp.switches {
            switch_jobs.entry(k).or_default().push(ai);
        }
        shapes.push(PlacementShape {
            workers: a.workers.len() as u32,
            ps: a.ps.len() as u32,
            gpus_per_server: gps.iter().map(|&(_, n)| n).collect(),
            cross_socket_servers: fp.cross_socket_servers(),
            ps_colocated_fraction: if pairs == 0 {
                0.0
            } else {
                fp.local_pairs as f64 / pairs as f64
            },
            ..Default::default()
        });
        switches_of.push(fp.switches);
        worker_servers.push(wsrv);
        all_servers.push(srv);
    }
    let mut out = Vec::with_capacity(shapes.len());
    for (ai, mut shape) in shapes.into_iter().enumerate() {
        let a = &schedule.assignments[ai];
        let mut pcie: Vec<usize> = switches_of[ai]
            .iter()
            .flat_map(|k| switch_jobs[k].iter().copied())
            .filter(|&o| o != ai)
            .collect();
        pcie.sort_unstable();
        pcie.dedup();
        shape.pcie_sharing_jobs = pcie.len() as u32;
        if all_servers[ai].len() > 1 {
            shape.nic_sharing_jobs = all_servers[ai]
                .iter()
                .map(|s| distributed_on[s].len().saturating_sub(1) as u32)
                .max()
                .unwrap_or(0);
        }
        let mut co: Vec<usize> = worker_servers[ai]
            .iter()
            .flat_map(|s| workers_on[s].iter().copied())
            .filter(|&o| o != ai)
            .collect();
        co.sort_unstable();
        co.dedup();
        shape.co_runners = co
            .into_iter()
            .filter_map(|o| {
                model_of
                    .get(&schedule.assignments[o].job)
                    .map(|m| m.to_string())
            })
            .collect();
        out.push((a.job, shape));
    }
    out
}

/// Speed of every running job of a schedule, in context; a job on servers of several GPU types
/// runs at the pace of the slowest. The schedule should validate first; jobs it names that the
/// snapshot lacks are an error here.
pub fn speeds(
    perf: &dyn PerfModel,
    snapshot: &ClusterSnapshot,
    schedule: &Schedule,
) -> Result<Vec<(u64, Speed)>> {
    let jobs: HashMap<u64, &crate::model::Job> = snapshot.jobs.iter().map(|j| (j.id, j)).collect();
    let servers = &snapshot.cluster.servers;
    placement_shapes(snapshot, schedule)
        .into_iter()
        .zip(&schedule.assignments)
        .map(|((id, shape), a)| {
            let job = jobs.get(&id).ok_or_else(|| Error::InvalidInstance {
                context: "schedule".into(),
                reason: format!("job {id} is not in the snapshot"),
            })?;
            let mut types: Vec<&str> = a
                .workers
                .iter()
                .filter_map(|w| servers.get(w.server))
                .map(|s| s.gpu_type.as_str())
                .collect();
            types.sort_unstable();
            types.dedup();
            let q = JobQuery::of(job);
            let mut slowest: Option<Speed> = None;
            for t in types {
                let s = perf.speed(&q, t, &shape)?;
                if slowest.is_none_or(|b| s.step_time_s > b.step_time_s) {
                    slowest = Some(s);
                }
            }
            let s = slowest.ok_or_else(|| Error::UnsupportedConfiguration {
                model: job.model.clone(),
                reason: format!("job {id} has no worker on a known server"),
            })?;
            Ok((id, s))
        })
        .collect()
}
