//! The output of every scheduler: a schedule of assignments, and where their tasks sit.

use serde::{Deserialize, Serialize};

use super::cluster::GpuSlot;
use crate::id::{JobId, ServerIdx};

/// One worker task: a server and the GPUs it uses there. Socket and PCIe switch follow from the
/// GPU indices and the server's topology.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerTask {
    /// The server.
    pub server: ServerIdx,
    /// GPU indices on that server.
    pub gpus: Vec<u32>,
}

/// One parameter-server task (CPU and memory only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PsTask {
    /// The server.
    pub server: ServerIdx,
}

/// A job's allocation and placement for one round.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assignment {
    /// The job.
    pub job: JobId,
    /// Worker tasks; their number is the allocation's worker count.
    pub workers: Vec<WorkerTask>,
    /// PS tasks; empty for all-reduce jobs.
    #[serde(default)]
    pub ps: Vec<PsTask>,
    /// Cores and memory each worker gets: 0 is the job's demand, `k ≥ 1` its `tiers[k − 1]`
    /// ([`super::Job::worker_share`]). ESTIMATE: changing it while the job runs is not a
    /// restart (cores and memory limits of a running task change in place).
    #[serde(default, skip_serializing_if = "is_default_tier")]
    pub tier: u8,
}

fn is_default_tier(t: &u8) -> bool {
    *t == 0
}

impl Assignment {
    /// Number of GPUs per server this assignment uses, in server order (servers with none left out).
    pub fn gpus_per_server(&self) -> Vec<(usize, u32)> {
        let mut m: Vec<(usize, u32)> = Vec::new();
        for w in &self.workers {
            match m.iter_mut().find(|(s, _)| *s == w.server.0) {
                Some((_, n)) => *n += w.gpus.len() as u32,
                None => m.push((w.server.0, w.gpus.len() as u32)),
            }
        }
        m.sort_unstable();
        m
    }

    /// Where the tasks sit, given the cluster's slot table (`Cluster::slot_table`).
    pub fn footprint(&self, slots: &[Vec<GpuSlot>]) -> Footprint {
        let mut f = Footprint::default();
        for w in self
            .workers
            .iter()
            .filter(|w| w.server < ServerIdx(slots.len()))
        {
            f.worker_servers.push(w.server.0);
            for slot in w
                .gpus
                .iter()
                .filter_map(|&g| slots[w.server.0].get(g as usize))
            {
                f.switches.push((w.server.0, slot.switch));
                f.sockets.push((w.server.0, slot.socket));
            }
        }
        f.task_servers = self
            .servers()
            .into_iter()
            .filter(|&s| s < slots.len())
            .collect();
        f.worker_servers.sort_unstable();
        f.worker_servers.dedup();
        for v in [&mut f.switches, &mut f.sockets] {
            v.sort_unstable();
            v.dedup();
        }
        f.local_pairs = self
            .workers
            .iter()
            .map(|w| self.ps.iter().filter(|p| p.server == w.server).count())
            .sum();
        f.largest_server = f
            .worker_servers
            .iter()
            .map(|&s| {
                let gpus = &slots[s];
                // GPUs are numbered in socket order, so one pass counts each socket's run.
                let domain = gpus
                    .chunk_by(|a, b| a.socket == b.socket)
                    .map(<[GpuSlot]>::len)
                    .max()
                    .unwrap_or(0);
                (gpus.len() as u32, domain as u32)
            })
            .max();
        f
    }

    /// The server of every task (workers, then PS), repeats included: [`Assignment::servers`]
    /// without sorting or allocating, for the simulator's per-event checks.
    pub(crate) fn task_servers(&self) -> impl Iterator<Item = usize> + '_ {
        self.workers
            .iter()
            .map(|w| w.server.0)
            .chain(self.ps.iter().map(|p| p.server.0))
    }

    /// Every server this assignment touches (workers or PS), sorted, without repeats.
    pub fn servers(&self) -> Vec<usize> {
        let mut s: Vec<usize> = self.task_servers().collect();
        s.sort_unstable();
        s.dedup();
        s
    }
}

/// Where an assignment's tasks sit, as the performance model and the objective read it. Tasks
/// on servers or GPUs outside the given slot table are left out (validation reports them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Servers with workers, sorted.
    pub worker_servers: Vec<usize>,
    /// Servers with any task (workers or PS), sorted.
    pub task_servers: Vec<usize>,
    /// `(server, switch)` pairs under which the job has GPUs, sorted.
    pub switches: Vec<(usize, u32)>,
    /// `(server, socket)` pairs under which the job has GPUs, sorted.
    pub sockets: Vec<(usize, u32)>,
    /// Worker–PS pairs on the same server.
    pub local_pairs: usize,
    /// `(GPUs, GPUs of its largest socket)` of the largest server with workers of the job (a
    /// whole NVLink server is one socket here, see `Server::gpu_slots`): the servers its
    /// placement is compared with when packed. `None` without workers.
    pub largest_server: Option<(u32, u32)>,
}

impl Footprint {
    /// Servers on which the job's GPUs sit under more than one socket.
    pub fn cross_socket_servers(&self) -> u32 {
        self.sockets
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|run| run.len() > 1)
            .count() as u32
    }
}

/// The decision for one round: which jobs run, with how many tasks, where. Jobs absent from
/// `assignments` wait.
///
/// ```
/// let snapshot = coda::ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// // The empty schedule (everyone waits) is always valid.
/// assert!(coda::Schedule::default().validate(&snapshot).is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// One entry per running job.
    pub assignments: Vec<Assignment>,
}

impl Schedule {
    /// Reads a schedule file; type errors name the line, column and JSON path.
    pub fn from_json_file(path: impl AsRef<std::path::Path>) -> crate::error::Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| crate::error::Error::io(path, e))?;
        crate::util::json::parse_json(&text, &path.display().to_string())
    }

    /// Writes the schedule as pretty JSON, atomically.
    pub fn to_json_file(&self, path: impl AsRef<std::path::Path>) -> crate::error::Result<()> {
        crate::util::json::write_json_atomic(path.as_ref(), self)
    }

    /// The assignment of a job, if it runs.
    pub fn assignment(&self, job: JobId) -> Option<&Assignment> {
        self.assignments.iter().find(|a| a.job == job)
    }

    /// GPUs in use.
    pub fn gpus_used(&self) -> usize {
        self.assignments
            .iter()
            .flat_map(|a| &a.workers)
            .map(|w| w.gpus.len())
            .sum()
    }
}
