//! From a schedule to what the performance model needs per job: the shape of its placement and
//! the contention it meets. [`Occupancy`] is the only place that reads co-location out of a
//! schedule.

use std::sync::Arc;

use serde::Serialize;

use super::{JobQuery, PerfModel, Speed};
use crate::error::{Error, Result};
use crate::model::{Assignment, Cluster, ClusterSnapshot, Footprint, GpuSlot, JobId, Schedule};

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
    /// Expected number of other jobs' transfers competing with this job's on the busiest NIC it
    /// uses, if this job is distributed: `Σ q_o` over the other distributed jobs with a task on
    /// that server, `q_o` from [`super::PerfModel::nic_competition`] of their communication share.
    pub nic_competing_flows: f64,
    /// Per worker server of this job, the models of the other jobs with workers there (one entry
    /// per job and server).
    pub co_runners: Vec<Vec<String>>,
    /// The servers the job runs on, for its packed reference (see [`PerfModel::speed`]);
    /// `None`: one server large enough for all its GPUs.
    ///
    /// [`PerfModel::speed`]: super::PerfModel::speed
    pub server: Option<ServerSize>,
}

/// The size of the servers a job runs on, as far as its packed reference placement is
/// concerned: a placement spread over servers is priced within the measured envelope of spread ÷
/// packed step times, packed meaning on as few of these servers as possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServerSize {
    /// GPUs per server.
    pub gpus: u32,
    /// GPUs under its largest socket, the most a job holds without crossing the socket link
    /// (all of them on an NVLink server).
    pub socket_gpus: u32,
}

impl ServerSize {
    /// The size of `server`.
    pub fn of(server: &crate::model::Server) -> Self {
        let gpus = server.num_gpus();
        let socket_gpus = if server.nvlink {
            gpus
        } else {
            server
                .topology
                .iter()
                .map(|sw| sw.iter().sum::<u32>())
                .max()
                .unwrap_or(0)
        };
        ServerSize { gpus, socket_gpus }
    }

    /// `k` GPUs packed on as few of these servers as possible: GPUs on the fullest server,
    /// servers, and whether the fullest one crosses the socket link.
    pub fn packed(&self, k: u32) -> (u32, u32, bool) {
        let per = self.gpus.max(1);
        let largest = k.min(per);
        (
            largest,
            k.div_ceil(per).max(1),
            largest > self.socket_gpus.max(1),
        )
    }
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

    /// A job alone with `workers` workers of `gpus_per_worker` GPUs packed on as few servers of
    /// `gpus_per_server` GPUs as possible (whole workers per server), PS tasks elsewhere, all
    /// of each server's GPUs under one socket: how policies size jobs.
    pub fn packed(workers: u32, ps: u32, gpus_per_worker: u32, gpus_per_server: u32) -> Self {
        let g = gpus_per_worker.max(1);
        let per = (gpus_per_server / g).max(1);
        let mut shape = Self::isolated(
            workers,
            ps,
            packed(workers, per).into_iter().map(|k| k * g).collect(),
        );
        shape.server = Some(ServerSize {
            gpus: gpus_per_server,
            socket_gpus: gpus_per_server,
        });
        shape
    }

    /// Number of servers holding the job's GPUs.
    pub fn servers(&self) -> u32 {
        self.gpus_per_server.iter().filter(|&&g| g > 0).count() as u32
    }
}

/// `gpus` GPUs packed on as few servers of `per_server` GPUs as possible: `[8, 8, 3]`.
pub fn packed(gpus: u32, per_server: u32) -> Vec<u32> {
    let g = per_server.max(1);
    (0..gpus.div_ceil(g))
        .map(|k| (gpus - k * g).min(g))
        .collect()
}

/// Who runs where: for every placed assignment its footprint, and per server the assignments
/// with workers there, the distributed ones (tasks on several servers) with any task there, and
/// per PCIe switch the ones with a GPU under it. Built for a whole schedule
/// ([`Occupancy::of`]) or grown one assignment at a time by a placement policy
/// ([`Occupancy::add`]); the performance model's context ([`Occupancy::shape`]) and the
/// objective's contention terms both read co-location from here and nowhere else.
#[derive(Debug, Clone)]
pub struct Occupancy {
    slots: Arc<Vec<Vec<GpuSlot>>>,
    footprints: Vec<Footprint>,
    models: Vec<Option<String>>,
    workers_on: Vec<Vec<usize>>,
    distributed_on: Vec<Vec<usize>>,
    /// `[server][switch]` → assignments with a GPU under that switch (a server's list grows
    /// to its switches when a first assignment lands there: most of a large cluster's servers
    /// are never touched by a placement being built).
    switch_on: Vec<Vec<Vec<usize>>>,
    /// Per placed assignment, how often its transfers compete on a shared NIC (`q`); 1 (always)
    /// until [`Occupancy::price_nic_competition`] prices it.
    nic_q: Vec<f64>,
}

impl Occupancy {
    /// An empty cluster.
    pub fn new(cluster: &Cluster) -> Self {
        Occupancy::on(Arc::new(cluster.slot_table()))
    }

    /// An empty cluster with this slot table (a round's [`crate::model::Topology`] shares its
    /// own).
    pub(crate) fn on(slots: Arc<Vec<Vec<GpuSlot>>>) -> Self {
        Occupancy {
            workers_on: vec![Vec::new(); slots.len()],
            distributed_on: vec![Vec::new(); slots.len()],
            switch_on: vec![Vec::new(); slots.len()],
            slots,
            footprints: Vec::new(),
            models: Vec::new(),
            nic_q: Vec::new(),
        }
    }

    /// Every assignment of `schedule`, in order (index `i` = assignment `i`), with the model of
    /// its job when the snapshot has it.
    pub fn of(snapshot: &ClusterSnapshot, schedule: &Schedule) -> Self {
        Occupancy::of_on(Arc::new(snapshot.cluster.slot_table()), snapshot, schedule)
    }

    /// [`Occupancy::of`] with the cluster's slot table given (shared by a priced round).
    pub(crate) fn of_on(
        slots: Arc<Vec<Vec<GpuSlot>>>,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
    ) -> Self {
        let mut occ = Occupancy::on(slots);
        for a in &schedule.assignments {
            occ.add(a, snapshot.job(a.job).map(|j| j.model.as_str()));
        }
        occ
    }

    /// The cluster's slot table (`Cluster::slot_table`).
    pub fn slots(&self) -> &[Vec<GpuSlot>] {
        &self.slots
    }

    /// Places `a` (of a job of `model`, if known); returns its index.
    pub fn add(&mut self, a: &Assignment, model: Option<&str>) -> usize {
        let i = self.footprints.len();
        let fp = a.footprint(&self.slots);
        for &s in &fp.worker_servers {
            self.workers_on[s].push(i);
        }
        if fp.task_servers.len() > 1 {
            for &s in &fp.task_servers {
                self.distributed_on[s].push(i);
            }
        }
        for &(s, k) in &fp.switches {
            let on = &mut self.switch_on[s];
            if on.len() <= k as usize {
                on.resize(k as usize + 1, Vec::new());
            }
            on[k as usize].push(i);
        }
        self.footprints.push(fp);
        self.models.push(model.map(str::to_string));
        self.nic_q.push(1.0);
        i
    }

    /// Sets every placed assignment's NIC competition from its communication share when alone
    /// in its placement (see [`speeds`]); assignments the model cannot price keep 1.
    pub fn price_nic_competition(
        &mut self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        assignments: &[Assignment],
    ) {
        for (i, a) in assignments.iter().enumerate().take(self.footprints.len()) {
            if let Some(job) = snapshot.job(a.job) {
                self.price_nic_competition_of(perf, &snapshot.cluster, i, job, a);
            }
        }
    }

    /// [`Occupancy::price_nic_competition`] for placed assignment `i` (`a`, of `job`) alone.
    pub fn price_nic_competition_of(
        &mut self,
        perf: &dyn PerfModel,
        cluster: &Cluster,
        i: usize,
        job: &crate::model::Job,
        a: &Assignment,
    ) {
        if self.footprints[i].task_servers.len() < 2 {
            return;
        }
        let alone = PlacementShape::alone(a, &self.footprints[i], self.slots.len());
        if let Ok(s) = slowest(perf, job, cluster, a, &alone) {
            self.nic_q[i] = perf.nic_competition(s.inter_comm_s / s.step_time_s);
        }
    }

    /// Footprint of placed assignment `i`.
    pub fn footprint(&self, i: usize) -> &Footprint {
        &self.footprints[i]
    }

    /// Placed assignments with workers on `server`.
    pub fn workers_on(&self, server: usize) -> &[usize] {
        &self.workers_on[server]
    }

    /// Placed distributed assignments with any task on `server`.
    pub fn distributed_on(&self, server: usize) -> &[usize] {
        &self.distributed_on[server]
    }

    /// Placed assignments with a GPU under PCIe switch `switch` of `server`.
    pub fn switch_on(&self, server: usize, switch: u32) -> &[usize] {
        self.on_switch(server, switch)
    }

    /// The list of [`Occupancy::switch_on`] (empty where nothing landed yet).
    fn on_switch(&self, server: usize, switch: u32) -> &Vec<usize> {
        static NONE: Vec<usize> = Vec::new();
        self.switch_on[server].get(switch as usize).unwrap_or(&NONE)
    }

    /// The shape of assignment `a` (footprint `fp`) among the placed ones; `own` is its own index
    /// if it is placed (it is not its own neighbour).
    pub fn shape(&self, a: &Assignment, fp: &Footprint, own: Option<usize>) -> PlacementShape {
        let others = |lists: &mut dyn Iterator<Item = &Vec<usize>>| {
            let mut v: Vec<usize> = lists
                .flat_map(|l| l.iter().copied())
                .filter(|&o| Some(o) != own)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let pcie = others(&mut fp.switches.iter().map(|&(s, k)| self.on_switch(s, k)));
        let co_runners: Vec<Vec<String>> = fp
            .worker_servers
            .iter()
            .map(|&s| {
                others(&mut std::iter::once(&self.workers_on[s]))
                    .into_iter()
                    .filter_map(|o| self.models[o].clone())
                    .collect()
            })
            .collect();
        let nic_competing_flows = if fp.task_servers.len() > 1 {
            fp.task_servers
                .iter()
                .map(|&s| {
                    self.distributed_on[s]
                        .iter()
                        .filter(|&&o| Some(o) != own)
                        .map(|&o| self.nic_q[o])
                        .sum::<f64>()
                })
                .fold(0.0, f64::max)
        } else {
            0.0
        };
        PlacementShape {
            pcie_sharing_jobs: pcie.len() as u32,
            nic_competing_flows,
            co_runners,
            ..PlacementShape::alone(a, fp, self.slots.len())
        }
    }
}

impl PlacementShape {
    /// The shape of assignment `a` (footprint `fp`) with no neighbour, on a cluster of `servers`
    /// servers (tasks beyond it are ignored; `Schedule::validate` reports them).
    pub fn alone(a: &Assignment, fp: &Footprint, servers: usize) -> Self {
        let pairs = a.workers.len() * a.ps.len();
        PlacementShape {
            workers: a.workers.len() as u32,
            ps: a.ps.len() as u32,
            gpus_per_server: a
                .gpus_per_server()
                .into_iter()
                .filter(|(s, _)| *s < servers)
                .map(|(_, n)| n)
                .collect(),
            cross_socket_servers: fp.cross_socket_servers(),
            ps_colocated_fraction: if pairs == 0 {
                0.0
            } else {
                fp.local_pairs as f64 / pairs as f64
            },
            server: fp
                .largest_server
                .map(|(gpus, socket_gpus)| ServerSize { gpus, socket_gpus }),
            ..Default::default()
        }
    }
}

/// A job that carries only what a speed reads (model, architecture, one GPU per worker, batch),
/// with `workers` workers and `ps` PS: what pricing a placement alone needs when there is no
/// job to hand (`coda perf --cluster`, property tests over placements).
pub fn probe_job(query: &JobQuery<'_>, workers: u32, ps: u32) -> crate::model::Job {
    use crate::model::{Job, TaskDemand, TaskRange};
    Job {
        tiers: Vec::new(),
        id: JobId(0),
        arrival_s: 0.0,
        model: query.model.to_string(),
        arch: query.arch,
        total_iterations: 1.0,
        demand: TaskDemand {
            gpus_per_worker: 1,
            cpu_per_worker: 0.0,
            mem_per_worker_gib: 0.0,
            cpu_per_ps: 0.0,
            mem_per_ps_gib: 0.0,
        },
        workers: TaskRange::new(workers, workers),
        ps: TaskRange::new(ps, ps),
        gpu_types: Vec::new(),
        local_batch: query.local_batch.map(|b| b.round() as u32),
        run: crate::model::RunState::default(),
        requested: None,
    }
}

/// Speed of `job` alone in assignment `a` on `cluster` (`slots` its slot table): the same
/// placement, no neighbour; the slowest GPU type of its workers sets the pace.
pub fn speed_alone(
    perf: &dyn PerfModel,
    cluster: &Cluster,
    slots: &[Vec<GpuSlot>],
    job: &crate::model::Job,
    a: &Assignment,
) -> Result<Speed> {
    let fp = a.footprint(slots);
    slowest(
        perf,
        job,
        cluster,
        a,
        &PlacementShape::alone(a, &fp, slots.len()),
    )
}

/// The shape of every assignment of a schedule, in schedule order, with NIC competition
/// priced by `perf` (see [`speeds`]). Tasks on servers or GPUs outside the cluster are ignored
/// here; `Schedule::validate` reports them.
pub fn placement_shapes(
    perf: &dyn PerfModel,
    snapshot: &ClusterSnapshot,
    schedule: &Schedule,
) -> Vec<(JobId, PlacementShape)> {
    let mut occ = Occupancy::of(snapshot, schedule);
    occ.price_nic_competition(perf, snapshot, &schedule.assignments);
    schedule
        .assignments
        .iter()
        .enumerate()
        .map(|(i, a)| (a.job, occ.shape(a, occ.footprint(i), Some(i))))
        .collect()
}

/// The speed of `a` (of `job`) with `shape`; a job on servers of several GPU types runs at the
/// pace of the slowest.
fn slowest(
    perf: &dyn PerfModel,
    job: &crate::model::Job,
    cluster: &Cluster,
    a: &Assignment,
    shape: &PlacementShape,
) -> Result<Speed> {
    let mut types: Vec<&str> = a
        .workers
        .iter()
        .filter_map(|w| cluster.servers.get(w.server.0))
        .map(|s| s.gpu_type.as_str())
        .collect();
    types.sort_unstable();
    types.dedup();
    let q = JobQuery::of(job);
    let mut slowest: Option<Speed> = None;
    for t in types {
        let s = perf.speed(&q, t, shape)?;
        if slowest.is_none_or(|b| s.step_time_s > b.step_time_s) {
            slowest = Some(s);
        }
    }
    let s = slowest.ok_or_else(|| Error::UnsupportedConfiguration {
        model: job.model.clone(),
        reason: format!("job {} has no worker on a known server", job.id),
    })?;
    Ok(s.scaled(tier_speed(perf, job, a.tier)))
}

/// Throughput of `job`'s workers at CPU/memory `tier` relative to its demand (1 at tier 0 or
/// for a tier the job lacks, which validation reports).
pub fn tier_speed(perf: &dyn PerfModel, job: &crate::model::Job, tier: u8) -> f64 {
    if tier == 0 {
        return 1.0;
    }
    let Some((c, m)) = job.worker_share(tier) else {
        return 1.0;
    };
    let g = f64::from(job.demand.gpus_per_worker.max(1));
    let d = &job.demand;
    perf.cpu_mem_speed(
        &job.model,
        (d.cpu_per_worker / g, d.mem_per_worker_gib / g),
        (c / g, m / g),
    )
}

/// Speed of every running job of a schedule, in context; a job on servers of several GPU types
/// runs at the pace of the slowest. A distributed job's NIC competition comes from each sharer's
/// communication share when alone in its own placement (a first pass), so a sharer that rarely
/// communicates barely slows it. The schedule should validate first; jobs it names that the
/// snapshot lacks are an error here.
pub fn speeds(
    perf: &dyn PerfModel,
    snapshot: &ClusterSnapshot,
    schedule: &Schedule,
) -> Result<Vec<(JobId, Speed)>> {
    placement_shapes(perf, snapshot, schedule)
        .into_iter()
        .zip(&schedule.assignments)
        .map(|((id, shape), a)| {
            let job = snapshot.job(id).ok_or_else(|| Error::InvalidInstance {
                context: "schedule".into(),
                reason: format!("job {id} is not in the snapshot"),
            })?;
            Ok((id, slowest(perf, job, &snapshot.cluster, a, &shape)?))
        })
        .collect()
}

/// Per job of `schedule`, its placement efficiency: the speed in context over the speed of the
/// same workers and PS packed alone on servers of its GPU type (capped at 2: a packed shape is
/// not always the fastest, PS locality can beat it). Level 2's reward in reinforcement learning
/// and the environment's `efficiency` reward.
pub(crate) fn placement_efficiencies(
    perf: &dyn PerfModel,
    snapshot: &ClusterSnapshot,
    schedule: &Schedule,
) -> Result<Vec<(JobId, f64)>> {
    let speeds = speeds(perf, snapshot, schedule)?;
    let mut out = Vec::with_capacity(speeds.len());
    for ((id, s), a) in speeds.iter().zip(&schedule.assignments) {
        let (Some(job), Some(w)) = (snapshot.job(*id), a.workers.first()) else {
            continue;
        };
        let server = &snapshot.cluster.servers[w.server];
        let shape = PlacementShape::packed(
            a.workers.len() as u32,
            a.ps.len() as u32,
            job.demand.gpus_per_worker,
            server.num_gpus(),
        );
        let alone = perf.speed(&JobQuery::of(job), &server.gpu_type, &shape)?;
        let e = if alone.iterations_per_s > 0.0 {
            (s.iterations_per_s / alone.iterations_per_s).clamp(0.0, 2.0)
        } else {
            1.0
        };
        out.push((*id, e));
    }
    Ok(out)
}
