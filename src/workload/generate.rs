//! Random instances (`coda generate`): a homogeneous-topology cluster and a mix of jobs, some
//! already running. Same options, same instance.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{
    Architecture, Assignment, Cluster, ClusterSnapshot, Job, JobId, PsTask, Schedule, Server,
    TaskDemand, TaskRange, WorkerTask,
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

/// Generates a valid snapshot; models are drawn from those the performance model knows.
pub fn generate(opts: &GenerateOptions, perf: &dyn PerfModel) -> Result<ClusterSnapshot> {
    if opts.servers == 0 {
        return Err(Error::EmptyCluster {
            context: "generate".into(),
            what: "servers".into(),
        });
    }
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
                so,
                sw,
                g,
                opts.cpu_cores,
                opts.memory_gib,
                100.0,
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
        };
        let shape = PlacementShape::isolated(1, ps.min, vec![1]);
        let speed = perf.speed(&q, &cluster.servers[0].gpu_type, &shape)?;
        // Durations log-uniform between 10 minutes and 1 day on one worker.
        let duration = (600.0f64.ln() + rng.random::<f64>() * (86_400.0f64 / 600.0).ln()).exp();
        let total = duration * speed.iterations_per_s;
        let running = rng.random::<f64>() < opts.running_fraction;
        jobs.push(Job {
            id: JobId(id),
            arrival_s: (rng.random::<f64>() * 3600.0).floor(),
            model,
            arch,
            total_iterations: total,
            done_iterations: if running {
                (rng.random::<f64>() * 0.9 * total).floor()
            } else {
                0.0
            },
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
            current: None,
            requested: None,
        });
    }
    place_running(&cluster, &mut jobs);
    ClusterSnapshot::new(3600.0, cluster, jobs)
}

/// First-fit placement of the running jobs with their minimum allocation, skipping any that do
/// not fit, so that the current placements together always form a valid schedule.
fn place_running(cluster: &Cluster, jobs: &mut [Job]) {
    let mut free: Vec<Vec<u32>> = cluster
        .servers
        .iter()
        .map(|s| (0..s.num_gpus()).collect())
        .collect();
    let mut cpu: Vec<f64> = cluster.servers.iter().map(|s| s.cpu_cores).collect();
    let mut mem: Vec<f64> = cluster.servers.iter().map(|s| s.memory_gib).collect();
    for job in jobs.iter_mut() {
        // Jobs drawn as running are exactly those with progress.
        if job.done_iterations == 0.0 {
            continue;
        }
        let d = job.demand;
        let mut a = Assignment {
            job: job.id,
            workers: Vec::new(),
            ps: Vec::new(),
        };
        let (mut f2, mut c2, mut m2) = (free.clone(), cpu.clone(), mem.clone());
        // All workers on the GPU type of the first server with room for one.
        let gpu_type = (0..f2.len())
            .find(|&s| f2[s].len() as u32 >= d.gpus_per_worker)
            .map(|s| cluster.servers[s].gpu_type.clone());
        for _ in 0..job.workers.min {
            let Some(s) = (0..f2.len()).find(|&s| {
                Some(&cluster.servers[s].gpu_type) == gpu_type.as_ref()
                    && f2[s].len() as u32 >= d.gpus_per_worker
                    && c2[s] >= d.cpu_per_worker
                    && m2[s] >= d.mem_per_worker_gib
            }) else {
                break;
            };
            let gpus: Vec<u32> = f2[s].drain(..d.gpus_per_worker as usize).collect();
            c2[s] -= d.cpu_per_worker;
            m2[s] -= d.mem_per_worker_gib;
            a.workers.push(WorkerTask { server: s, gpus });
        }
        for _ in 0..job.ps.min {
            let Some(s) =
                (0..c2.len()).find(|&s| c2[s] >= d.cpu_per_ps && m2[s] >= d.mem_per_ps_gib)
            else {
                break;
            };
            c2[s] -= d.cpu_per_ps;
            m2[s] -= d.mem_per_ps_gib;
            a.ps.push(PsTask { server: s });
        }
        if a.workers.len() as u32 == job.workers.min && a.ps.len() as u32 == job.ps.min {
            (free, cpu, mem) = (f2, c2, m2);
            job.current = Some(a);
        } else {
            // Did not fit: the job waits, with no progress, like any other waiting job.
            job.done_iterations = 0.0;
        }
    }
}

/// The schedule that keeps every running job where it is.
pub fn current_schedule(snapshot: &ClusterSnapshot) -> Schedule {
    Schedule {
        assignments: snapshot
            .jobs
            .iter()
            .filter_map(|j| j.current.clone())
            .collect(),
    }
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
