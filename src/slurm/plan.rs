//! One round of `coda slurm`: Slurm's view turned into a [`ClusterSnapshot`] (only what coda may
//! decide), and coda's schedule turned back into Slurm commands.
//!
//! What the snapshot holds:
//! * every server of the spec whose node is alive, with only the GPUs coda may use: the free
//!   ones of an open node, and those its own running jobs hold (a drained node keeps its jobs
//!   but offers nothing new; GPUs of jobs coda does not decide are left out, so nothing coda
//!   places can collide with them);
//! * every tagged job that is held (waiting for coda) or running on GPUs Slurm reports, with
//!   its checkpointed work (`done` in its tag).
//!
//! What a schedule becomes, per job: nothing if it keeps as many GPUs on the same nodes;
//! `requeuehold` if it is stopped; `requeuehold` (when running), then `update NumNodes
//! ReqNodeList TresPerJob=gres:gpu:N`, `release` and `StartTime=now` (a requeued job would
//! otherwise wait out Slurm's requeue delay) when it is placed.
//!
//! **Enforced**: the nodes and the job's GPU count. **Advisory**: how many GPUs on each node
//! and which ones (the PCIe switch). Slurm's per-node request (`Gres=gpu:k`) holds one count
//! for every node, so a placement of 8 + 4 GPUs cannot be asked that way; a job-wide count
//! over pinned nodes can, and Slurm splits it over the free GPUs, which are the ones coda
//! decided wherever its decision fills a node. Typed GRES per switch would pin the switch, but
//! Slurm 22.05 keeps a job's first typed request when an update changes the type (an update
//! from `gpu:sw2:1` to `gpu:sw1:2` allocates both), so coda asks for untyped GPUs and reads
//! back the indices Slurm chose; the performance model prices those. Also advisory: PS tasks
//! (they run on the job's nodes) and cores and memory per task.

use std::collections::{BTreeMap, HashMap};

use super::action::{Action, SAME_NODE_RESTART_DELAY_S, Stop};
use super::tag::Tag;
use super::view::{JobState, JobView, SlurmView};
use crate::error::{Error, Expected, Result};
use crate::model::{
    Assignment, Cluster, ClusterSnapshot, Job, JobId, PsTask, Schedule, ServerIdx, WorkerTask,
};
use crate::perf::PerfModel;

/// The cluster an operator describes for coda: its servers (sockets, PCIe switches, GPU type),
/// each named as its Slurm node.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmSpec {
    /// Servers, named as Slurm's nodes.
    pub cluster: Cluster,
}

impl SlurmSpec {
    /// `cluster`'s servers renamed, in order, to the nodes of the Slurm host list `nodes`
    /// (`n[1-4]`); an error if the counts differ.
    pub fn new(mut cluster: Cluster, nodes: &str) -> Result<Self> {
        let names = super::expand_hostlist(nodes)?;
        if names.len() != cluster.servers.len() {
            return Err(Error::setting(
                "slurm",
                "nodes",
                nodes,
                Expected::Other(format!(
                    "as many nodes as the cluster has servers ({})",
                    cluster.servers.len()
                )),
            ));
        }
        for (s, n) in cluster.servers.iter_mut().zip(names) {
            s.name = n;
        }
        Ok(SlurmSpec { cluster })
    }

    fn server_of(&self, node: &str) -> Option<usize> {
        self.cluster.servers.iter().position(|s| s.name == node)
    }

    /// `jobs` with every running job's GPUs known. Slurm can report a running job without its
    /// `gres_detail` (seen for a job that started as slurmctld restarted: the detail did not come
    /// back); such a job is taken to hold, on each of its nodes in order, the lowest GPUs no
    /// other job reports there, as many as it asks in all (`TresPerJob`, else its tag), which is
    /// how Slurm picks them. Without this the job would be priced at speed 0 and never finish.
    fn with_gpus_known(&self, jobs: &[JobView]) -> Vec<JobView> {
        let mut out = jobs.to_vec();
        let mut held: HashMap<String, Vec<u32>> = HashMap::new();
        for j in &out {
            for (n, g) in j.nodes.iter().zip(&j.gpus) {
                held.entry(n.clone()).or_default().extend(g);
            }
        }
        for j in &mut out {
            let blind = j.state == JobState::Running
                && !j.nodes.is_empty()
                && j.gpus.iter().all(Vec::is_empty);
            if !blind {
                continue;
            }
            let asks = j.req_gpus.or_else(|| {
                Tag::is_tagged(&j.comment)
                    .then(|| Tag::parse(&j.comment, j.id).ok())
                    .flatten()
                    .map(|t| t.gpus)
            });
            let Some(asks) = asks else {
                continue;
            };
            let mut want = asks as usize;
            j.gpus = j
                .nodes
                .iter()
                .map(|n| {
                    let size = self
                        .server_of(n)
                        .map_or(0, |s| self.cluster.servers[s].num_gpus());
                    slurm_pick(0..size, held.entry(n.clone()).or_default(), &mut want)
                })
                .collect();
        }
        out
    }
}

/// Slurm's pick of a job's GPUs on one node: the lowest of `gpus` (in index order) not in
/// `taken`, at most `want`; they join `taken` and leave `want`. How both a starting job's GPUs
/// and a running job's unreported ones are foreseen.
fn slurm_pick(
    gpus: impl IntoIterator<Item = u32>,
    taken: &mut Vec<u32>,
    want: &mut usize,
) -> Vec<u32> {
    let picked: Vec<u32> = gpus
        .into_iter()
        .filter(|g| !taken.contains(g))
        .take(*want)
        .collect();
    *want -= picked.len();
    taken.extend(&picked);
    picked
}

/// Settings of a round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundSettings {
    /// Seconds of the model's time per second of wall time (1 on a real cluster; larger to
    /// replay a workload quickly with jobs that sleep their predicted time).
    pub time_scale: f64,
    /// A job coda released that has not started after this many wall seconds is held again
    /// and decided anew (its GPUs went to someone else).
    pub stuck_after_s: f64,
}

impl Default for RoundSettings {
    fn default() -> Self {
        RoundSettings {
            time_scale: 1.0,
            stuck_after_s: 30.0,
        }
    }
}

/// GPUs a job holds per snapshot server: (server index, GPU indices there).
type OnServers = Vec<(usize, Vec<u32>)>;

/// Where a job coda decides stands in Slurm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Held: waiting for coda.
    Held,
    /// Released by coda, pinned, not started yet: its GPUs are counted as taken (the lowest
    /// free indices of its nodes, as Slurm picks them).
    Starting,
    /// Running.
    Running,
}

/// One round: the snapshot coda decides on, and what it needs to map the decision back.
#[derive(Debug, Clone)]
pub struct Round {
    /// What the policy sees (job ids are Slurm job ids).
    pub snapshot: ClusterSnapshot,
    /// Per snapshot server: its node, and the Slurm GPU index of each of its GPUs.
    servers: Vec<(String, Vec<u32>)>,
    /// Tagged jobs per Slurm id: tag, first submission, stage.
    tags: HashMap<u64, (Tag, f64, Stage)>,
    /// Jobs stopped moments ago (see [`SAME_NODE_RESTART_DELAY_S`]).
    just_stopped: Vec<u64>,
    /// Alive nodes that take no new work (drained): only the jobs running there may stay.
    closed: Vec<String>,
    /// GPUs of the spec's largest server: a refused job is released asking whole nodes of it.
    node_gpus: u32,
    /// What must be done whatever the policy decides (malformed tags, stuck jobs).
    pub actions: Vec<Action>,
    /// Log lines: jobs left out and why.
    pub notes: Vec<String>,
}

fn submitted(tag: &Tag, view: &JobView) -> f64 {
    tag.submit.unwrap_or(view.submit_s)
}

/// GPU count per node of an assignment, by node name.
fn per_node(a: &Assignment, names: &[String]) -> BTreeMap<String, u32> {
    let mut m = BTreeMap::new();
    for w in &a.workers {
        *m.entry(names[w.server.0].clone()).or_insert(0) += w.gpus.len() as u32;
    }
    m
}

/// The assignment of a job Slurm runs on `servers` (snapshot index, GPU indices there): one
/// worker per GPU; PS tasks round-robin over the job's nodes (moved by [`place_ps`] where they
/// do not fit).
fn assignment_on(job: &Job, servers: &[(usize, Vec<u32>)]) -> Assignment {
    let workers: Vec<WorkerTask> = servers
        .iter()
        .flat_map(|(s, gpus)| {
            gpus.chunks(job.demand.gpus_per_worker.max(1) as usize)
                .map(|g| WorkerTask {
                    server: ServerIdx(*s),
                    gpus: g.to_vec(),
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let (_, ps) = job.requested_or_min();
    let ps = (0..ps as usize)
        .map(|k| PsTask {
            server: ServerIdx(servers[k % servers.len()].0),
        })
        .collect();
    Assignment {
        job: job.id,
        workers,
        ps,
        tier: 0,
    }
}

impl Round {
    /// Builds the round from Slurm's view at Unix time `now_s`.
    pub fn build(
        spec: &SlurmSpec,
        view: &SlurmView,
        now_s: f64,
        perf: &dyn PerfModel,
        settings: &RoundSettings,
    ) -> Result<Round> {
        let mut notes = Vec::new();
        let mut actions = Vec::new();
        let nodes: HashMap<&str, &super::view::NodeView> =
            view.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        // Tagged jobs coda decides: held ones, and running ones on alive nodes of the spec.
        let mut decided: Vec<(&JobView, Job)> = Vec::new();
        let mut just_stopped = Vec::new();
        let mut tags = HashMap::new();
        let view_jobs = spec.with_gpus_known(&view.jobs);
        for j in &view_jobs {
            if !Tag::is_tagged(&j.comment) {
                continue;
            }
            let runs = j.state == JobState::Running;
            let held = j.held;
            if !(runs || j.state == JobState::Pending) {
                continue;
            }
            // The job is built once, here (its arrival set below, once the clock's origin is known).
            let (tag, job) = match Tag::parse(&j.comment, j.id).and_then(|t| {
                let job = t.job(JobId(j.id), 0.0, perf)?;
                Ok((t, job))
            }) {
                Ok(tj) => tj,
                Err(e) => {
                    // Released once, with why; after that it is Slurm's, silently.
                    if held {
                        actions.push(Action::Release {
                            job: j.id,
                            why: e.to_string(),
                        });
                    }
                    continue;
                }
            };
            let mut stage = if runs { Stage::Running } else { Stage::Held };
            if j.state == JobState::Pending && !held {
                let pinned = !j.req_nodes.is_empty() && j.req_gpus.is_some_and(|k| k > 0);
                if !pinned || now_s - j.eligible_s > settings.stuck_after_s {
                    actions.push(Action::Rehold { job: j.id });
                    continue;
                }
                if j.reason == "BeginTime" {
                    // Requeued while it was still ending: Slurm set its requeue delay after
                    // coda's `StartTime=now`; say it again.
                    actions.push(Action::Kick { job: j.id });
                }
                stage = Stage::Starting;
            }
            if runs {
                let known = j.nodes.iter().all(|n| {
                    spec.server_of(n).is_some() && nodes.get(n.as_str()).is_some_and(|v| v.alive)
                }) && !j.nodes.is_empty();
                if !known {
                    notes.push(format!(
                        "job {}: runs on nodes coda cannot use ({}); left alone",
                        j.id,
                        j.nodes.join(",")
                    ));
                    continue;
                }
            }
            if !runs
                && j.restarts > 0
                && now_s - j.end_s < f64::from(SAME_NODE_RESTART_DELAY_S) + 2.0
            {
                just_stopped.push(j.id);
            }
            tags.insert(j.id, (tag.clone(), submitted(&tag, j), stage));
            decided.push((j, job));
        }
        // GPUs of decided running jobs, per node.
        let mut own: HashMap<&str, Vec<u32>> = HashMap::new();
        for (j, _) in &decided {
            for (n, g) in j.nodes.iter().zip(&j.gpus) {
                own.entry(n.as_str()).or_default().extend(g);
            }
        }
        // Servers, reduced to the GPUs coda may use.
        let mut servers = Vec::new();
        let mut snapshot_servers = Vec::new();
        for server in &spec.cluster.servers {
            let Some(node) = nodes.get(server.name.as_str()) else {
                notes.push(format!("node {}: not in Slurm; left out", server.name));
                continue;
            };
            if !node.alive {
                continue;
            }
            let mine = own.get(server.name.as_str()).cloned().unwrap_or_default();
            let mut topology = server.topology.clone();
            let mut kept = Vec::new();
            let mut g = 0u32;
            for socket in topology.iter_mut() {
                for switch in socket.iter_mut() {
                    let mut k = 0;
                    for _ in 0..*switch {
                        let free = node.open && !node.used_gpus.contains(&g);
                        if free || mine.contains(&g) {
                            kept.push(g);
                            k += 1;
                        }
                        g += 1;
                    }
                    *switch = k;
                }
            }
            if kept.is_empty() {
                continue;
            }
            let mut s = server.clone();
            s.topology = topology;
            snapshot_servers.push(s);
            servers.push((server.name.clone(), kept));
        }
        // Starting jobs: the lowest free GPUs of their nodes, as Slurm will pick them.
        let mut taken: HashMap<String, Vec<u32>> = own
            .iter()
            .map(|(n, g)| (n.to_string(), g.clone()))
            .collect();
        let mut starting: HashMap<u64, Vec<(String, Vec<u32>)>> = HashMap::new();
        for (j, _) in &decided {
            if tags[&j.id].2 != Stage::Starting {
                continue;
            }
            let mut want = j.req_gpus.unwrap_or(0) as usize;
            let mut on = Vec::new();
            for n in &j.req_nodes {
                let kept = servers
                    .iter()
                    .find(|(s, _)| s == n)
                    .map(|(_, g)| g.clone())
                    .unwrap_or_default();
                let free = slurm_pick(kept, taken.entry(n.clone()).or_default(), &mut want);
                on.push((n.clone(), free));
            }
            if want == 0 {
                starting.insert(j.id, on);
            } else {
                // Its GPUs went elsewhere: decide it again.
                actions.push(Action::Rehold { job: j.id });
                tags.get_mut(&j.id).expect("inserted above").2 = Stage::Held;
            }
        }
        let origin = tags.values().map(|(_, t, _)| *t).fold(now_s, f64::min);
        let scale = settings.time_scale;
        let mut jobs = Vec::new();
        let mut placed: Vec<(Job, OnServers)> = Vec::new();
        for (j, mut job) in decided {
            job.arrival_s = (tags[&j.id].1 - origin) * scale;
            let slurm_gpus: Vec<(String, Vec<u32>)> = match tags[&j.id].2 {
                Stage::Held => {
                    jobs.push(job);
                    continue;
                }
                Stage::Running => j
                    .nodes
                    .iter()
                    .cloned()
                    .zip(j.gpus.iter().cloned())
                    .collect(),
                Stage::Starting => starting.remove(&j.id).unwrap_or_default(),
            };
            let mut on = Vec::new();
            for (n, gpus) in &slurm_gpus {
                let Some(s) = servers.iter().position(|(name, _)| name == n) else {
                    continue;
                };
                let idx: Vec<u32> = gpus
                    .iter()
                    .filter_map(|g| servers[s].1.iter().position(|k| k == g).map(|p| p as u32))
                    .collect();
                on.push((s, idx));
            }
            let workers: u32 = on.iter().map(|(_, g)| g.len() as u32).sum();
            if workers == 0 || !job.workers.contains(workers) {
                notes.push(format!(
                    "job {}: runs with {workers} GPUs, outside what its tag allows; left alone",
                    j.id
                ));
                tags.remove(&j.id);
                continue;
            }
            placed.push((job, on));
        }
        let cluster = Cluster {
            servers: snapshot_servers,
        };
        for (mut job, on) in placed {
            job.run.current = Some(assignment_on(&job, &on));
            jobs.push(job);
        }
        place_ps(&cluster, &mut jobs);
        let snapshot = ClusterSnapshot::new((now_s - origin) * scale, cluster, jobs)?;
        let closed = view
            .nodes
            .iter()
            .filter(|n| n.alive && !n.open)
            .map(|n| n.name.clone())
            .collect();
        let node_gpus = spec
            .cluster
            .servers
            .iter()
            .map(|s| s.num_gpus())
            .max()
            .unwrap_or(1)
            .max(1);
        Ok(Round {
            node_gpus,
            snapshot,
            servers,
            tags,
            just_stopped,
            closed,
            actions,
            notes,
        })
    }

    /// The actions that carry out `schedule` (after [`Round::actions`]), and log lines for the
    /// decisions not carried out. A job that keeps as many GPUs on the same nodes is left alone
    /// even if the decision splits them otherwise (the split is Slurm's: stopping a job to
    /// re-split it would cost a restart for nothing Slurm would enforce). A decision that puts a
    /// job on a drained node it does not run on is not carried out (the GPUs a drained node's
    /// jobs hold are in the snapshot, so a policy may hand them to another job; Slurm would not
    /// start it there).
    pub fn plan(&self, schedule: &Schedule) -> (Vec<Action>, Vec<String>) {
        let names: Vec<String> = self.servers.iter().map(|(n, _)| n.clone()).collect();
        // The servers' own size, not the snapshot's (reduced to what coda may use there).
        let per = self.node_gpus;
        let shape = |a: &Assignment| {
            let m = per_node(a, &names);
            (m.values().sum::<u32>(), m.into_keys().collect::<Vec<_>>())
        };
        let mut actions = Vec::new();
        let mut notes = Vec::new();
        for job in &self.snapshot.jobs {
            let id = job.id.0;
            let (tag, submit, stage) = &self.tags[&id];
            let mut keep = tag.clone();
            keep.submit = Some(*submit);
            let comment = keep.comment();
            let running = *stage == Stage::Running;
            let cur = job.run.current.as_ref().map(shape);
            let new = schedule.assignment(job.id).map(shape);
            match (cur, new) {
                (c, n) if c == n => {}
                (Some(_), None) => actions.push(Action::Preempt {
                    job: id,
                    comment,
                    running,
                }),
                (_, Some((_, nodes))) if nodes.iter().any(|n| self.closed.contains(n)) => {
                    notes.push(format!(
                        "job {id}: decided onto drained node(s) ({}); left as is",
                        nodes.join(",")
                    ));
                }
                (c, Some((gpus, nodes))) => {
                    let m = tag.gpus.div_ceil(per).max(1);
                    let again = self.just_stopped.contains(&id)
                        || (running
                            && c.as_ref()
                                .is_some_and(|(_, old)| old.iter().any(|n| nodes.contains(n))));
                    actions.push(Action::Place {
                        delay_s: if again { SAME_NODE_RESTART_DELAY_S } else { 0 },
                        job: id,
                        gpus,
                        nodes,
                        stop: match (c.is_some(), running) {
                            (false, _) => None,
                            (true, true) => Some(Stop::Requeue),
                            (true, false) => Some(Stop::Hold),
                        },
                        comment,
                        fallback: (m, tag.gpus),
                    });
                }
                (None, None) => {}
            }
        }
        (actions, notes)
    }
}

/// Puts the PS tasks of running jobs where cores and memory remain once every worker is
/// counted: Slurm runs a PS job's parameter servers on its own nodes, where its workers may
/// leave no room in coda's model; the decision placed them somewhere that fits, and so does
/// this (the job's own nodes first, then the server with most memory left).
fn place_ps(cluster: &Cluster, jobs: &mut [Job]) {
    let mut left: Vec<(f64, f64)> = cluster
        .servers
        .iter()
        .map(|s| (s.cpu_cores, s.memory_gib))
        .collect();
    for j in jobs.iter() {
        if let Some(a) = &j.run.current {
            let (c, m) = j.worker_hold(a.tier);
            for w in &a.workers {
                left[w.server.0].0 -= c;
                left[w.server.0].1 -= m;
            }
        }
    }
    for j in jobs.iter_mut() {
        let (c, m) = (j.demand.cpu_per_ps, j.demand.mem_per_ps_gib);
        let Some(a) = j.run.current.as_mut() else {
            continue;
        };
        let own: Vec<usize> = a.workers.iter().map(|w| w.server.0).collect();
        for ps in a.ps.iter_mut() {
            let fits =
                |s: usize, left: &[(f64, f64)]| left[s].0 >= c - 1e-9 && left[s].1 >= m - 1e-9;
            let best = own
                .iter()
                .copied()
                .filter(|&s| fits(s, &left))
                .max_by(|&x, &y| left[x].1.total_cmp(&left[y].1))
                .or_else(|| {
                    (0..left.len())
                        .filter(|&s| fits(s, &left))
                        .max_by(|&x, &y| left[x].1.total_cmp(&left[y].1))
                })
                .unwrap_or(ps.server.0);
            ps.server = ServerIdx(best);
            left[best].0 -= c;
            left[best].1 -= m;
        }
    }
}

/// Speed (iterations per second of the model's time) of every running tagged job, priced in
/// context on the GPUs Slurm gave it — what a job that sleeps its predicted time runs at.
/// Jobs on nodes outside the spec, or with tags that do not parse, are left out.
pub fn running_speeds(
    spec: &SlurmSpec,
    jobs: &[JobView],
    perf: &dyn PerfModel,
) -> Result<HashMap<u64, f64>> {
    let mut snap_jobs = Vec::new();
    let mut schedule = Schedule::default();
    for j in &spec.with_gpus_known(jobs) {
        if j.state != JobState::Running || !Tag::is_tagged(&j.comment) {
            continue;
        }
        let Ok(tag) = Tag::parse(&j.comment, j.id) else {
            continue;
        };
        let Ok(mut job) = tag.job(JobId(j.id), 0.0, perf) else {
            continue;
        };
        let on: Option<Vec<(usize, Vec<u32>)>> = j
            .nodes
            .iter()
            .zip(&j.gpus)
            .map(|(n, g)| spec.server_of(n).map(|s| (s, g.clone())))
            .collect();
        let Some(on) = on.filter(|o| !o.is_empty()) else {
            continue;
        };
        let a = assignment_on(&job, &on);
        if a.workers.is_empty() {
            continue;
        }
        // Priced as placed, whatever its tag allows (Slurm ran it so).
        job.workers.max = job.workers.max.max(a.workers.len() as u32);
        job.run.current = Some(a.clone());
        schedule.assignments.push(a);
        snap_jobs.push(job);
    }
    let snapshot = ClusterSnapshot::from_parts(0.0, spec.cluster.clone(), snap_jobs);
    Ok(crate::perf::speeds(perf, &snapshot, &schedule)?
        .into_iter()
        .map(|(id, s)| (id.0, s.iterations_per_s))
        .collect())
}
