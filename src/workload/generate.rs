//! Random instances (`coda generate`): a homogeneous-topology cluster and a mix of jobs, some
//! already running. Same options, same instance.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::ServerIdx;
use crate::model::{
    Architecture, Assignment, Cluster, ClusterSnapshot, Job, JobId, MAX_GPUS_PER_SERVER,
    MAX_SERVERS, PsTask, Schedule, Server, TaskDemand, TaskRange, WorkerTask,
};
use crate::perf::{JobQuery, PerfModel, PlacementShape};

/// What to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateOptions {
    /// Servers.
    pub servers: usize,
    /// Jobs.
    pub jobs: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Server layout: sockets × PCIe switches per socket × GPUs per switch.
    pub topology: (u32, u32, u32),
    /// GPU types, assigned to servers round-robin.
    pub gpu_types: Vec<String>,
    /// CPU cores per server.
    pub cpu_cores: f64,
    /// Memory per server, GiB.
    pub memory_gib: f64,
    /// Fraction of jobs given a current placement (running jobs), placed first-fit.
    pub running_fraction: f64,
    /// Largest worker count a job may ask for.
    pub max_workers: u32,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            servers: 4,
            jobs: 8,
            seed: 0,
            // Two sockets, two PCIe switches each, two GPUs per switch: a common 8-GPU PCIe server.
            topology: (2, 2, 2),
            gpu_types: vec!["v100".into()],
            cpu_cores: 24.0,
            memory_gib: 500.0,
            running_fraction: 0.3,
            max_workers: 8,
        }
    }
}

/// Most jobs one generated instance may hold (about 1 KB of JSON each).
pub(crate) const MAX_GENERATED_JOBS: usize = 10_000_000;

impl GenerateOptions {
    /// Rejects sizes and values no instance can have, before anything is allocated by them.
    pub fn check(&self) -> Result<()> {
        let bad = |f: &str, v: String, why: String| Err(Error::setting("generate", f, v, why));
        if self.servers == 0 {
            return Err(Error::EmptyCluster {
                context: "generate".into(),
                what: "servers".into(),
            });
        }
        if self.servers > MAX_SERVERS {
            return bad(
                "servers",
                self.servers.to_string(),
                format!("at most {MAX_SERVERS}"),
            );
        }
        if self.jobs > MAX_GENERATED_JOBS {
            return bad(
                "jobs",
                self.jobs.to_string(),
                format!("at most {MAX_GENERATED_JOBS}"),
            );
        }
        let (a, b, c) = self.topology;
        let gpus = u64::from(a) * u64::from(b) * u64::from(c);
        if gpus == 0 || gpus > u64::from(MAX_GPUS_PER_SERVER) {
            return bad(
                "topology",
                format!("{:?}", self.topology),
                format!("1 to {MAX_GPUS_PER_SERVER} GPUs per server"),
            );
        }
        if !(0.0..=1.0).contains(&self.running_fraction) {
            return bad(
                "running_fraction",
                self.running_fraction.to_string(),
                "must be in [0, 1]".into(),
            );
        }
        if self.max_workers == 0 {
            return bad("max_workers", "0".into(), "must be >= 1".into());
        }
        for (f, v) in [
            ("cpu_cores", self.cpu_cores),
            ("memory_gib", self.memory_gib),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(f, v.to_string(), "must be finite and > 0".into());
            }
        }
        Ok(())
    }
}

/// Generates a valid snapshot; models are drawn from those the performance model knows.
pub fn generate(opts: &GenerateOptions, perf: &dyn PerfModel) -> Result<ClusterSnapshot> {
    generate_with(opts, perf, &mut || {})
}

/// [`generate`], calling `tick` twice per job (once drawn, once placed) so that a caller can
/// show progress on large sizes; the work is O((jobs + servers) · log servers).
pub fn generate_with(
    opts: &GenerateOptions,
    perf: &dyn PerfModel,
    tick: &mut dyn FnMut(),
) -> Result<ClusterSnapshot> {
    opts.check()?;
    if opts.gpu_types.is_empty() {
        return Err(Error::setting(
            "generate",
            "gpu_types",
            "[]",
            "need at least one GPU type",
        ));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let (so, sw, g) = opts.topology;
    let servers: Vec<Server> = (0..opts.servers)
        .map(|i| {
            Server::uniform(
                format!("node-{i:03}"),
                opts.gpu_types[i % opts.gpu_types.len()].clone(),
                [so, sw, g],
                crate::model::HostResources::new(opts.cpu_cores, opts.memory_gib, 100.0),
            )
        })
        .collect();
    let cluster = Cluster { servers };
    let models = perf.models();
    if models.is_empty() {
        return Err(Error::InvalidInstance {
            context: "generate".into(),
            reason: "the performance model knows no model".into(),
        });
    }
    let per_server = so * sw * g;
    let mut jobs = Vec::with_capacity(opts.jobs);
    for id in 0..opts.jobs as u64 {
        tick();
        let (model, arch) = models[rng.random_range(0..models.len())].clone();
        let (max_w, max_p) = perf.max_tasks(&model).unwrap_or((1, 0));
        let wmax = rng
            .random_range(1..=opts.max_workers.max(1))
            .min(max_w)
            .max(1);
        let ps = match arch {
            Architecture::AllReduce => TaskRange::new(0, 0),
            Architecture::ParameterServer => {
                TaskRange::new(1, rng.random_range(1..=4u32).min(max_p).max(1))
            }
        };
        let q = JobQuery {
            model: &model,
            arch,
            gpus_per_worker: 1,
            local_batch: None,
            goodput: None,
        };
        let shape = PlacementShape::isolated(1, ps.min, vec![1]);
        let speed = perf.speed(&q, &cluster.servers[0].gpu_type, &shape)?;
        // Durations log-uniform between 10 minutes and 1 day on one worker.
        let duration = (600.0f64.ln() + rng.random::<f64>() * (86_400.0f64 / 600.0).ln()).exp();
        let total = duration * speed.iterations_per_s;
        let running = rng.random::<f64>() < opts.running_fraction;
        jobs.push(Job {
            tiers: Vec::new(),
            id: JobId(id),
            arrival_s: (rng.random::<f64>() * 3600.0).floor(),
            model,
            arch,
            total_iterations: total,
            demand: TaskDemand {
                gpus_per_worker: 1,
                cpu_per_worker: opts.cpu_cores / f64::from(per_server.max(1)),
                mem_per_worker_gib: opts.memory_gib / f64::from(per_server.max(1)) / 2.0,
                cpu_per_ps: 2.0,
                mem_per_ps_gib: 8.0,
            },
            workers: TaskRange::new(1, wmax),
            ps,
            gpu_types: Vec::new(),
            local_batch: None,
            run: crate::model::RunState {
                done_iterations: if running {
                    (rng.random::<f64>() * 0.9 * total).floor()
                } else {
                    0.0
                },
                current: None,
                ..Default::default()
            },
            requested: None,
        });
    }
    place_running(&cluster, &mut jobs, tick);
    ClusterSnapshot::new(3600.0, cluster, jobs)
}

/// First-fit placement of the running jobs with their minimum allocation, skipping any that do
/// not fit, so that the current placements together always form a valid schedule. Each search
/// for "the first server with room" is a descent in a [`FitTree`], and a job that does not fit
/// is undone from a log of what it took, so the whole is O((jobs + servers) · log servers) —
/// the same placements as scanning every server from the first, in a fraction of the time.
fn place_running(cluster: &Cluster, jobs: &mut [Job], tick: &mut dyn FnMut()) {
    let room: Vec<[f64; 3]> = cluster
        .servers
        .iter()
        .map(|s| [f64::from(s.num_gpus()), s.cpu_cores, s.memory_gib])
        .collect();
    // Free GPU ids per server, handed out lowest first.
    let mut free: Vec<std::collections::VecDeque<u32>> = cluster
        .servers
        .iter()
        .map(|s| (0..s.num_gpus()).collect())
        .collect();
    let mut all = FitTree::new(&room);
    // One tree per GPU type: a job's workers all use one type.
    let mut types: Vec<&str> = cluster
        .servers
        .iter()
        .map(|s| s.gpu_type.as_str())
        .collect();
    types.sort_unstable();
    types.dedup();
    let members: Vec<Vec<usize>> = types
        .iter()
        .map(|t| {
            (0..cluster.servers.len())
                .filter(|&s| cluster.servers[s].gpu_type == *t)
                .collect()
        })
        .collect();
    let mut by_type: Vec<FitTree> = members
        .iter()
        .map(|m| FitTree::new(&m.iter().map(|&s| room[s]).collect::<Vec<_>>()))
        .collect();
    let type_of = |s: usize| {
        types
            .binary_search(&cluster.servers[s].gpu_type.as_str())
            .unwrap_or(0)
    };
    let pos_in_type: Vec<usize> = {
        let mut pos = vec![0; cluster.servers.len()];
        for m in &members {
            for (k, &s) in m.iter().enumerate() {
                pos[s] = k;
            }
        }
        pos
    };
    let set = |all: &mut FitTree, by_type: &mut [FitTree], s: usize, v: [f64; 3]| {
        all.set(s, v);
        by_type[type_of(s)].set(pos_in_type[s], v);
    };
    let none = f64::NEG_INFINITY;
    for job in jobs.iter_mut() {
        tick();
        // Jobs drawn as running are exactly those with progress.
        if job.run.done_iterations == 0.0 {
            continue;
        }
        let d = job.demand;
        let g = f64::from(d.gpus_per_worker);
        let mut a = Assignment {
            tier: 0,
            job: job.id,
            workers: Vec::new(),
            ps: Vec::new(),
        };
        // (server, room before, GPUs taken) for undoing a job that does not fit.
        let mut log: Vec<(usize, [f64; 3], Vec<u32>)> = Vec::new();
        // All workers on the GPU type of the first server with room for one.
        let gpu_type = all.first([g, none, none]).map(type_of);
        for _ in 0..job.workers.min {
            let Some(t) = gpu_type else { break };
            let Some(k) = by_type[t].first([g, d.cpu_per_worker, d.mem_per_worker_gib]) else {
                break;
            };
            let s = members[t][k];
            let before = all.get(s);
            let gpus: Vec<u32> = free[s].drain(..d.gpus_per_worker as usize).collect();
            set(
                &mut all,
                &mut by_type,
                s,
                [
                    before[0] - g,
                    before[1] - d.cpu_per_worker,
                    before[2] - d.mem_per_worker_gib,
                ],
            );
            log.push((s, before, gpus.clone()));
            a.workers.push(WorkerTask {
                server: ServerIdx(s),
                gpus,
            });
        }
        for _ in 0..job.ps.min {
            let Some(s) = all.first([none, d.cpu_per_ps, d.mem_per_ps_gib]) else {
                break;
            };
            let before = all.get(s);
            set(
                &mut all,
                &mut by_type,
                s,
                [
                    before[0],
                    before[1] - d.cpu_per_ps,
                    before[2] - d.mem_per_ps_gib,
                ],
            );
            log.push((s, before, Vec::new()));
            a.ps.push(PsTask {
                server: ServerIdx(s),
            });
        }
        if a.workers.len() as u32 == job.workers.min && a.ps.len() as u32 == job.ps.min {
            job.run.current = Some(a);
        } else {
            // Did not fit: undo, newest first; the job waits, with no progress, like any other
            // waiting job.
            for (s, before, gpus) in log.into_iter().rev() {
                for id in gpus.into_iter().rev() {
                    free[s].push_front(id);
                }
                set(&mut all, &mut by_type, s, before);
            }
            job.run.done_iterations = 0.0;
        }
    }
}

/// Componentwise maxima of per-server room `[free GPUs, cores, memory]` over a segment tree:
/// the first server whose room covers a demand is found by descending only into subtrees whose
/// maxima cover it (exact first-fit: a leaf is accepted only if it covers the demand itself).
struct FitTree {
    leaves: usize,
    max: Vec<[f64; 3]>,
}

impl FitTree {
    fn new(room: &[[f64; 3]]) -> Self {
        let leaves = room.len().next_power_of_two().max(1);
        let empty = [f64::NEG_INFINITY; 3];
        let mut max = vec![empty; 2 * leaves];
        max[leaves..leaves + room.len()].copy_from_slice(room);
        for i in (1..leaves).rev() {
            max[i] = Self::join(max[2 * i], max[2 * i + 1]);
        }
        FitTree { leaves, max }
    }

    fn join(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        [a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])]
    }

    fn get(&self, i: usize) -> [f64; 3] {
        self.max[self.leaves + i]
    }

    fn set(&mut self, i: usize, v: [f64; 3]) {
        let mut k = self.leaves + i;
        self.max[k] = v;
        while k > 1 {
            k /= 2;
            self.max[k] = Self::join(self.max[2 * k], self.max[2 * k + 1]);
        }
    }

    /// The first leaf whose room is at least `need` in every component.
    fn first(&self, need: [f64; 3]) -> Option<usize> {
        let covers = |v: [f64; 3]| (0..3).all(|c| v[c] >= need[c]);
        let mut stack = vec![1usize];
        while let Some(k) = stack.pop() {
            if !covers(self.max[k]) {
                continue;
            }
            if k >= self.leaves {
                return Some(k - self.leaves);
            }
            // Right pushed first so the left subtree is searched first.
            stack.push(2 * k + 1);
            stack.push(2 * k);
        }
        None
    }
}

/// The schedule that keeps every running job where it is.
pub fn current_schedule(snapshot: &ClusterSnapshot) -> Schedule {
    snapshot.current_schedule()
}

/// The generated instance of a `(servers, jobs, seed)` size point (8-GPU V100 servers).
pub fn scaling_instance(
    servers: usize,
    jobs: usize,
    seed: u64,
    perf: &dyn PerfModel,
) -> Result<ClusterSnapshot> {
    generate(
        &GenerateOptions {
            servers,
            jobs,
            seed,
            ..Default::default()
        },
        perf,
    )
}

#[cfg(test)]
mod tests {
    use super::FitTree;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The tree's first fit is the linear scan's, through random updates.
    #[test]
    fn fit_tree_finds_what_a_scan_finds() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for n in [1usize, 2, 3, 7, 64, 100] {
            let mut room: Vec<[f64; 3]> = (0..n)
                .map(|_| {
                    [
                        rng.random_range(0..4) as f64,
                        rng.random_range(0.0..8.0),
                        16.0,
                    ]
                })
                .collect();
            let mut tree = FitTree::new(&room);
            for _ in 0..300 {
                let need = [
                    rng.random_range(0..3) as f64,
                    rng.random_range(0.0..6.0),
                    rng.random_range(0.0..20.0),
                ];
                let scan = room.iter().position(|r| (0..3).all(|c| r[c] >= need[c]));
                assert_eq!(tree.first(need), scan, "{need:?}");
                let i = rng.random_range(0..n);
                room[i] = [
                    rng.random_range(0..4) as f64,
                    rng.random_range(0.0..8.0),
                    16.0,
                ];
                tree.set(i, room[i]);
                assert_eq!(tree.get(i), room[i]);
            }
        }
    }
}
