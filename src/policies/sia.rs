//! Sia (Jayaram Subramanya et al., SOSP'23) as a baseline: each round, one integer program over
//! every job's *configurations* — a GPU type and a GPU count — valued by the job's goodput
//! there, solved by HiGHS.
//!
//! What follows Sia's published algorithm and its simulator (`sia-simulator/sia.py`):
//! * configurations per GPU type: 1, 2, 4 … GPUs up to a server, then whole servers (Sia's
//!   `CONFIGS_4GPU` / `CONFIGS_8GPU`), and the job's smallest, requested and current sizes
//!   (Sia's rigid jobs run at their requested size), within the job's worker range;
//! * a configuration's value is the job's speed there (its goodput with `--goodput on`: the
//!   performance model's, packed on servers of that type) over the job's smallest positive
//!   speed, times Pollux's re-allocation factor `max(age − restarts·δ, 0) / (age + δ)` (δ the
//!   restart cost) for a running job's every configuration but its current one (1 for a job
//!   younger than δ), raised to the fairness power `p = −0.5` and capped at 3,000;
//! * the program minimises the sum of the chosen values plus `λ = 1.1` per job left without a
//!   configuration, with at most one configuration per job and at most the cluster's GPUs of
//!   each type.
//!
//! Differences, said here: the restarts counted are the ones this policy caused (a snapshot
//! carries no restart count); a PS job's configuration holds its requested parameter servers;
//! placement is coda's shared packer (consolidated on the chosen type; a job whose
//! configuration did not change keeps its GPUs), where Sia's simulator places by a fixed rule
//! and ignores moves; the program stops at 10,000 nodes or 60 s (Sia: CBC to a 10⁻⁴ gap).

use std::collections::HashMap;

use good_lp::solvers::highs::highs;
use good_lp::{Expression, ProblemVariables, SolverModel, Variable, variable};

use super::sizing::Base;
use super::{Packer, Placement};
use crate::error::Result;
use crate::model::{Architecture, ClusterSnapshot, GpuType, Job, JobId, Schedule};
use crate::perf::{JobQuery, PlacementShape};
use crate::scheduler::Scheduler;

/// Sia's fairness power (`sia_default_p_val`).
pub const SIA_P: f64 = -0.5;
/// Sia's penalty on a job left without a configuration (`sia_default_lambda_n`).
pub const SIA_NO_ALLOCATION: f64 = 1.1;
/// Sia's cap on a configuration's powered value (`sia_goodput_clip_val`).
pub const SIA_CLIP: f64 = 3000.0;

/// The Sia baseline (see the [module docs](self)).
pub(super) struct Sia<'a> {
    pub(super) base: Base<'a>,
    /// Seconds a restart costs (the objective's).
    pub(super) restart_s: f64,
    /// Restarts this policy caused, per job.
    pub(super) restarts: HashMap<JobId, u32>,
}

/// A GPU type of the cluster: its largest server's GPUs, its servers and its GPUs.
struct TypeInfo {
    gpu_type: GpuType,
    per_server: u32,
    servers: u32,
    gpus: u32,
}

/// One configuration of one job: GPU type, workers, PS, GPUs and its powered value.
struct Config {
    gpu_type: GpuType,
    workers: u32,
    ps: u32,
    gpus: u32,
    value: f64,
}

impl Sia<'_> {
    /// The job's configurations on `types`, valued.
    fn configs(&self, snap: &ClusterSnapshot, job: &Job, types: &[TypeInfo]) -> Vec<Config> {
        let g = job.demand.gpus_per_worker.max(1);
        let ps = match job.arch {
            Architecture::ParameterServer => job
                .requested
                .map_or(job.ps.min, |r| r.ps)
                .clamp(job.ps.min, job.ps.max),
            Architecture::AllReduce => 0,
        };
        let limit = self.base.perf.task_limits(job).map_or(u32::MAX, |l| l.0);
        let mut out = Vec::new();
        for ty in types {
            let (t, per_server) = (&ty.gpu_type, ty.per_server);
            if !job.allows_gpu(t) {
                continue;
            }
            let small = (0..).map(|i| 1u32 << i).take_while(|&k| k <= per_server);
            let whole = (2..=ty.servers).map(|n| n * per_server);
            // Also the job's smallest, requested and current sizes, so that a job whose range
            // holds none of Sia's counts still has a configuration, and a running one can stay.
            let own = [
                Some(job.workers.min),
                job.requested.map(|r| r.workers),
                job.run.current.as_ref().map(|a| a.workers.len() as u32),
            ];
            let mut counts: Vec<u32> = small
                .chain(whole)
                .chain(own.into_iter().flatten().map(|w| w * g))
                .collect();
            counts.sort_unstable();
            counts.dedup();
            for gpus in counts {
                let w = gpus / g;
                if gpus % g != 0 || w < job.workers.min || w > job.workers.max.min(limit) {
                    continue;
                }
                let shape = PlacementShape::packed(w, ps, g, per_server);
                let speed = self
                    .base
                    .perf
                    .speed(&JobQuery::of(job), t, &shape)
                    .map_or(0.0, |s| s.iterations_per_s);
                if speed > 0.0 {
                    out.push(Config {
                        gpu_type: *t,
                        workers: w,
                        ps,
                        gpus,
                        value: speed,
                    });
                }
            }
        }
        let Some(least) = out.iter().map(|c| c.value).reduce(f64::min) else {
            return out;
        };
        // Pollux's re-allocation factor on every configuration but the current one.
        let age = (snap.time_s - job.arrival_s).max(0.0);
        let lost = f64::from(self.restarts.get(&job.id).copied().unwrap_or(0)) * self.restart_s;
        let factor = if age < self.restart_s {
            1.0
        } else {
            (age - lost).max(0.0) / (age + self.restart_s)
        };
        let current = job.run.current.as_ref().map(|a| {
            let t = a
                .workers
                .first()
                .map(|w| snap.cluster.servers[w.server.0].gpu_type);
            (t, a.workers.len() as u32 * g)
        });
        for c in &mut out {
            let here = current
                .as_ref()
                .is_some_and(|(t, k)| t.as_ref() == Some(&c.gpu_type) && *k == c.gpus);
            // Only a job that holds GPUs pays for leaving them (Sia: no previous allocation, no
            // factor).
            let moves = current.is_some() && !here;
            let speedup = c.value / least * if moves { factor } else { 1.0 };
            c.value = if speedup > 0.0 {
                speedup.powf(SIA_P).min(SIA_CLIP)
            } else {
                SIA_CLIP
            };
        }
        out
    }
}

impl Scheduler for Sia<'_> {
    fn name(&self) -> &str {
        "sia"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut types: Vec<TypeInfo> = Vec::new();
        for s in &snap.cluster.servers {
            match types.iter_mut().find(|t| t.gpu_type == s.gpu_type) {
                Some(t) => {
                    t.per_server = t.per_server.max(s.num_gpus());
                    t.servers += 1;
                    t.gpus += s.num_gpus();
                }
                None => types.push(TypeInfo {
                    gpu_type: s.gpu_type,
                    per_server: s.num_gpus(),
                    servers: 1,
                    gpus: s.num_gpus(),
                }),
            }
        }
        let configs: Vec<Vec<Config>> = snap
            .jobs
            .iter()
            .map(|j| self.configs(snap, j, &types))
            .collect();
        let chosen = solve(&configs, &types);
        // Place: jobs whose configuration is unchanged keep their GPUs; the rest, largest first,
        // on their chosen type, one worker smaller at a time if the packer cannot fit them.
        let mut packer = Packer::new(snap, self.base.perf);
        let mut order: Vec<(usize, &Config)> = chosen
            .iter()
            .enumerate()
            .filter_map(|(j, c)| c.map(|k| (j, &configs[j][k])))
            .collect();
        order.sort_by_key(|(j, c)| (std::cmp::Reverse(c.gpus), *j));
        let mut placed = vec![false; snap.jobs.len()];
        for &(j, c) in &order {
            let job = &snap.jobs[j];
            if let Some(a) = &job.run.current
                && a.workers.len() as u32 == c.workers
                && a.ps.len() as u32 == c.ps
                && a.workers
                    .first()
                    .is_some_and(|w| snap.cluster.servers[w.server.0].gpu_type == c.gpu_type)
            {
                placed[j] = packer.keep(job, a);
            }
        }
        for &(j, c) in &order {
            if placed[j] {
                continue;
            }
            let mut typed = snap.jobs[j].clone();
            typed.gpu_types = vec![c.gpu_type];
            let mut w = c.workers;
            while !placed[j] && w >= typed.workers.min.max(1) {
                let p = if w == c.workers {
                    c.ps
                } else {
                    c.ps.min(w).max(typed.ps.min)
                };
                placed[j] = packer.place(&typed, w, p, Placement::Consolidated, &mut self.base.rng);
                w -= 1;
            }
        }
        let schedule = Schedule {
            assignments: packer.into_assignments(),
        };
        // A running job moved, resized or stopped pays a restart (on resuming, for a stop).
        for job in &snap.jobs {
            if let Some(a) = &job.run.current
                && schedule
                    .assignment(job.id)
                    .is_none_or(|n| !crate::objective::same_assignment(a, n))
            {
                *self.restarts.entry(job.id).or_default() += 1;
            }
        }
        self.restarts
            .retain(|id, _| snap.jobs.iter().any(|j| j.id == *id));
        Ok(schedule)
    }
}

/// Sia's program: per job at most one configuration, per GPU type at most its GPUs, minimising
/// the chosen values plus [`SIA_NO_ALLOCATION`] per job without one. `None` for a job left out
/// (and for every job if HiGHS finds no solution: the round then runs nothing new).
fn solve(configs: &[Vec<Config>], types: &[TypeInfo]) -> Vec<Option<usize>> {
    let mut vars = ProblemVariables::new();
    let x: Vec<Vec<Variable>> = configs
        .iter()
        .map(|cs| cs.iter().map(|_| vars.add(variable().binary())).collect())
        .collect();
    let mut objective = Expression::from(SIA_NO_ALLOCATION * configs.len() as f64);
    for (cs, xs) in configs.iter().zip(&x) {
        for (c, v) in cs.iter().zip(xs) {
            objective += (c.value - SIA_NO_ALLOCATION) * *v;
        }
    }
    let mut problem = vars.minimise(objective).using(highs);
    for xs in &x {
        if xs.len() > 1 {
            problem.add_constraint(
                xs.iter()
                    .fold(Expression::from(0.0), |e, v| e + *v)
                    .leq(1.0),
            );
        }
    }
    for t in types {
        let used = configs
            .iter()
            .zip(&x)
            .flat_map(|(cs, xs)| cs.iter().zip(xs))
            .filter(|(c, _)| c.gpu_type == t.gpu_type)
            .fold(Expression::from(0.0), |e, (c, v)| {
                e + f64::from(c.gpus) * *v
            });
        problem.add_constraint(used.leq(f64::from(t.gpus)));
    }
    let mut model = problem.into_inner();
    model.set_option("output_flag", false);
    model.set_option("threads", 1);
    model.set_option("random_seed", 0);
    model.set_option("mip_rel_gap", 1e-4);
    model.set_option("mip_max_nodes", 10_000);
    model.set_option("time_limit", 60.0);
    let Ok(solved) = model.try_solve() else {
        return vec![None; configs.len()];
    };
    let values = solved.get_solution();
    let cols = values.columns();
    let mut at = 0;
    let mut out = Vec::with_capacity(configs.len());
    for xs in &x {
        let mut pick = None;
        for k in 0..xs.len() {
            if cols.get(at + k).is_some_and(|v| *v > 0.5) {
                pick = Some(k);
            }
        }
        at += xs.len();
        out.push(pick);
    }
    out
}
