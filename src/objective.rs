//! The one round utility every schedule is scored by. The integer program maximises exactly this
//! function; baselines and the learned policy are measured with it.
//!
//! For a running job `j` with `w` workers, `p` parameter servers, a placement *mode* (one server;
//! one server across sockets; several servers) on GPU type `τ`:
//!
//! ```text
//! utility_j = base_j + slope_j·L_j − A_j·Pcol_j − B_j·Npcie_j − C_j·Nnic_j
//! Objective = Σ_running utility_j − Σ_{j running now whose assignment changes} ρ_j
//! ```
//!
//! * `base_j = min(s·T, R) / R`: the fraction of its remaining work `R` the job would finish in a
//!   round of `T` seconds at its isolated speed `s` (from the [`PerfModel`]). Dividing by what is
//!   left favours jobs close to completion; the cap stops a nearly done job from being paid for
//!   resources it cannot use.
//! * PS locality: `L_j` = worker–PS pairs on the same server; `slope_j` interpolates linearly
//!   between the PerfModel's speed with no PS local (f = 0) and all local (f = 1).
//! * Co-location: `Pcol_j = Σ_servers Σ_co-runners (slowdown − 1)` from the PerfModel's pair
//!   slowdowns; `A_j = base_j · compute share` (first-order: the tangent of the PerfModel's
//!   multiplicative slowdown).
//! * PCIe: `Npcie_j` = (switch, other job) pairs sharing a PCIe switch; `B_j` = progress lost to
//!   one such sharer in the PerfModel.
//! * NIC: for a job on several servers, `Nnic_j` = (server, other multi-server job) pairs meeting
//!   on a server; `C_j` = progress lost to one NIC sharer in the PerfModel.
//! * Restart: `ρ_j = (restart_s / T) · utility of the current placement`, charged when a running
//!   job is moved, resized or stopped.
//!
//! The contention terms are first-order (linear in counts) so that an integer program can carry
//! them exactly; the PerfModel itself compounds them. [`Objective::perf_model_utility`] scores a
//! schedule with the full PerfModel instead, and `coda solve` / `coda bench-solve` report both.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{Architecture, Assignment, ClusterSnapshot, Footprint, Job, Schedule};
use crate::perf::{JobQuery, Occupancy, PerfModel, PlacementShape, Speed};

/// How a job's tasks are spread, as far as its isolated speed is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Mode {
    /// All tasks on one server (GPUs under one socket, for all-reduce jobs).
    Single,
    /// All-reduce job on one server with GPUs under several sockets.
    CrossSocket,
    /// Tasks on several servers.
    Multi,
}

/// The coefficients of one job option (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OptionTerms {
    /// Progress fraction at the isolated speed, no PS local.
    pub base: f64,
    /// Added utility per worker–PS pair on the same server.
    pub local_pair_slope: f64,
    /// Utility lost per unit of co-location pressure.
    pub coloc_coef: f64,
    /// Utility lost per (switch, job) PCIe sharing pair.
    pub pcie_coef: f64,
    /// Utility lost per (server, job) NIC sharing pair.
    pub nic_coef: f64,
}

/// One allocation a job may get: `(workers, ps, mode, GPU type)` with its coefficients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobOption {
    /// Workers.
    pub workers: u32,
    /// Parameter servers.
    pub ps: u32,
    /// Placement mode.
    pub mode: Mode,
    /// GPU type of every worker.
    pub gpu_type: String,
    /// Coefficients.
    pub terms: OptionTerms,
}

/// Score of one job in a schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobScore {
    /// The job.
    pub job: u64,
    /// Base progress plus PS locality gain.
    pub isolated: f64,
    /// Co-location loss.
    pub coloc_loss: f64,
    /// PCIe sharing loss.
    pub pcie_loss: f64,
    /// NIC sharing loss.
    pub nic_loss: f64,
    /// Restart penalty (0 unless a running job's assignment changes).
    pub restart_penalty: f64,
}

/// The objective value of a schedule, with its parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// The objective.
    pub total: f64,
    /// Per job with a non-zero contribution (running now or in the schedule).
    pub jobs: Vec<JobScore>,
}

/// The round utility (see the module docs). Settings are validated by [`Objective::new`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// Round length `T`, seconds. Default 300 s, as Blox and Synergy.
    pub round_s: f64,
    /// ESTIMATE. Seconds a job loses when it is moved, resized or stopped: checkpoint, restore and
    /// warm-up. No measurement in `datasets/`; one minute.
    pub restart_s: f64,
}

impl Default for Objective {
    fn default() -> Self {
        Objective {
            round_s: 300.0,
            restart_s: 60.0,
        }
    }
}

/// Facts about one assignment that the objective reads.
struct Facts {
    workers: u32,
    ps: u32,
    mode: Mode,
    gpu_type: String,
    local_pairs: f64,
    worker_servers: Vec<usize>,
    task_servers: Vec<usize>,
    switches: Vec<(usize, u32)>,
}

impl Objective {
    /// Checks the settings.
    pub fn new(round_s: f64, restart_s: f64) -> Result<Self> {
        if !(round_s.is_finite() && round_s > 0.0) {
            return Err(Error::invalid(
                "objective",
                0,
                "round_s",
                round_s,
                "must be > 0",
            ));
        }
        if !(restart_s.is_finite() && (0.0..=round_s).contains(&restart_s)) {
            return Err(Error::invalid(
                "objective",
                0,
                "restart_s",
                restart_s,
                "must be in [0, round_s]",
            ));
        }
        Ok(Objective { round_s, restart_s })
    }

    fn progress(&self, job: &Job, s: &Speed) -> f64 {
        let left = job.remaining_iterations();
        (s.iterations_per_s * self.round_s).min(left) / left
    }

    fn shape(
        job: &Job,
        workers: u32,
        ps: u32,
        mode: Mode,
        ps_local: f64,
    ) -> Option<PlacementShape> {
        let gpus = workers * job.demand.gpus_per_worker;
        let mut shape = match (job.arch, mode) {
            // A worker's GPUs share a server, so spreading needs two workers.
            (Architecture::AllReduce, Mode::Multi) if workers < 2 => return None,
            (Architecture::AllReduce, Mode::Multi) => {
                PlacementShape::isolated(workers, 0, vec![gpus - 1, 1])
            }
            (Architecture::AllReduce, Mode::CrossSocket) if gpus < 2 => return None,
            (Architecture::ParameterServer, Mode::CrossSocket) => return None,
            _ => PlacementShape::isolated(workers, ps, vec![gpus]),
        };
        shape.cross_socket_servers = u32::from(mode == Mode::CrossSocket);
        shape.ps_colocated_fraction = ps_local;
        Some(shape)
    }

    /// Coefficients of one option, or `None` if the option is impossible or outside what the
    /// performance model prices.
    pub fn option_terms(
        &self,
        perf: &dyn PerfModel,
        job: &Job,
        workers: u32,
        ps: u32,
        mode: Mode,
        gpu_type: &str,
    ) -> Option<OptionTerms> {
        let q = JobQuery::of(job);
        // PS jobs on one server have every PS next to every worker.
        let all_local = job.arch == Architecture::ParameterServer && mode == Mode::Single;
        let f_mode = if all_local { 1.0 } else { 0.0 };
        let shape = Self::shape(job, workers, ps, mode, f_mode)?;
        let s = perf.speed(&q, gpu_type, &shape).ok()?;
        let at = |sh: &PlacementShape| {
            perf.speed(&q, gpu_type, sh)
                .ok()
                .map(|s| self.progress(job, &s))
        };
        let here = self.progress(job, &s);
        let (base, slope) = if job.arch == Architecture::ParameterServer {
            // One end of the interpolation is the shape priced above.
            let (b0, b1) = if all_local {
                (at(&Self::shape(job, workers, ps, mode, 0.0)?)?, here)
            } else {
                (here, at(&Self::shape(job, workers, ps, mode, 1.0)?)?)
            };
            (b0, (b1 - b0) / f64::from(workers * ps))
        } else {
            (here, 0.0)
        };
        let uncapped = s.iterations_per_s * self.round_s < job.remaining_iterations();
        let coloc_coef = if uncapped {
            here * s.compute_s / s.step_time_s
        } else {
            0.0
        };
        let mut one_pcie = shape.clone();
        one_pcie.pcie_sharing_jobs = 1;
        // One NIC sharer, first-order: a sharer like this job itself (its own communication
        // share sets how often their transfers meet).
        let mut one_nic = shape.clone();
        one_nic.nic_competing_flows = perf.nic_competition(s.inter_comm_s / s.step_time_s);
        Some(OptionTerms {
            base,
            local_pair_slope: slope,
            coloc_coef,
            pcie_coef: here - at(&one_pcie)?,
            nic_coef: if mode == Mode::Multi {
                here - at(&one_nic)?
            } else {
                0.0
            },
        })
    }

    /// Every option of a job on this cluster: workers and PS in range, each mode, each allowed
    /// GPU type present, priced by the performance model.
    pub fn job_options(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        job: &Job,
    ) -> Vec<JobOption> {
        let mut types: Vec<&str> = snapshot
            .cluster
            .servers
            .iter()
            .filter(|s| job.allows_gpu(&s.gpu_type) && s.num_gpus() >= job.demand.gpus_per_worker)
            .map(|s| s.gpu_type.as_str())
            .collect();
        types.sort_unstable();
        types.dedup();
        let multi_socket = snapshot.cluster.servers.iter().any(|s| {
            s.topology
                .iter()
                .filter(|sw| sw.iter().sum::<u32>() > 0)
                .count()
                > 1
        });
        let modes: &[Mode] = match job.arch {
            Architecture::AllReduce if multi_socket => {
                &[Mode::Single, Mode::CrossSocket, Mode::Multi]
            }
            Architecture::AllReduce => &[Mode::Single, Mode::Multi],
            Architecture::ParameterServer => &[Mode::Single, Mode::Multi],
        };
        let multi_server = snapshot.cluster.servers.len() > 1;
        let mut out = Vec::new();
        for &t in &types {
            for w in job.workers.min..=job.workers.max {
                for p in job.ps.min..=job.ps.max {
                    for &mode in modes {
                        if mode == Mode::Multi && !multi_server {
                            continue;
                        }
                        if let Some(terms) = self.option_terms(perf, job, w, p, mode, t) {
                            out.push(JobOption {
                                workers: w,
                                ps: p,
                                mode,
                                gpu_type: t.to_string(),
                                terms,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    fn facts(snapshot: &ClusterSnapshot, job: &Job, a: &Assignment, fp: Footprint) -> Facts {
        let mode = if fp.task_servers.len() > 1 {
            Mode::Multi
        } else if job.arch == Architecture::AllReduce && fp.sockets.len() > 1 {
            Mode::CrossSocket
        } else {
            Mode::Single
        };
        Facts {
            workers: a.workers.len() as u32,
            ps: a.ps.len() as u32,
            mode,
            gpu_type: snapshot.cluster.servers[a.workers[0].server]
                .gpu_type
                .clone(),
            local_pairs: fp.local_pairs as f64,
            worker_servers: fp.worker_servers,
            task_servers: fp.task_servers,
            switches: fp.switches,
        }
    }

    /// `(workers, ps, mode, GPU type)` of an assignment: the option it takes.
    pub fn option_of(
        snapshot: &ClusterSnapshot,
        job: &Job,
        a: &Assignment,
    ) -> (u32, u32, Mode, String) {
        let f = Self::facts(
            snapshot,
            job,
            a,
            a.footprint(&snapshot.cluster.slot_table()),
        );
        (f.workers, f.ps, f.mode, f.gpu_type)
    }

    fn terms_of(&self, perf: &dyn PerfModel, job: &Job, f: &Facts) -> Result<OptionTerms> {
        self.option_terms(perf, job, f.workers, f.ps, f.mode, &f.gpu_type)
            .ok_or_else(|| Error::UnsupportedConfiguration {
                model: job.model.clone(),
                reason: format!(
                    "job {}: {} workers, {} PS, {:?} on {} cannot be priced",
                    job.id, f.workers, f.ps, f.mode, f.gpu_type
                ),
            })
    }

    /// Restart penalty `ρ_j` of a job (0 if it is not running now).
    pub fn restart_cost(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        job: &Job,
    ) -> Result<f64> {
        let Some(cur) = &job.current else {
            return Ok(0.0);
        };
        if cur.workers.is_empty() {
            return Ok(0.0);
        }
        let f = Self::facts(
            snapshot,
            job,
            cur,
            cur.footprint(&snapshot.cluster.slot_table()),
        );
        let t = self.terms_of(perf, job, &f)?;
        Ok(self.restart_s / self.round_s * (t.base + t.local_pair_slope * f.local_pairs))
    }

    /// The objective value of a valid schedule (an invalid one is an error).
    pub fn score(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
    ) -> Result<Score> {
        let violations = schedule.validate(snapshot);
        if let Some(v) = violations.first() {
            return Err(Error::InvalidInstance {
                context: "schedule".into(),
                reason: format!("{} violation(s), first: {v}", violations.len()),
            });
        }
        let jobs: HashMap<u64, &Job> = snapshot.jobs.iter().map(|j| (j.id, j)).collect();
        // Who shares what is read from the one occupancy index the performance model uses; the
        // objective only aggregates it first-order (sums over shared switches and servers).
        let occ = Occupancy::of(snapshot, schedule);
        let facts: Vec<Facts> = schedule
            .assignments
            .iter()
            .enumerate()
            .map(|(i, a)| Self::facts(snapshot, jobs[&a.job], a, occ.footprint(i).clone()))
            .collect();
        let mut out = Vec::new();
        let mut total = 0.0;
        for (i, (a, f)) in schedule.assignments.iter().zip(&facts).enumerate() {
            let job = jobs[&a.job];
            let t = self.terms_of(perf, job, f)?;
            let mut pcol = 0.0;
            for &s in &f.worker_servers {
                let gpu = &snapshot.cluster.servers[s].gpu_type;
                for &o in occ.workers_on(s).iter().filter(|&&o| o != i) {
                    let other = &jobs[&schedule.assignments[o].job].model;
                    pcol += perf.colocation_slowdown(&job.model, other, gpu) - 1.0;
                }
            }
            let npcie: usize = f
                .switches
                .iter()
                .map(|&(s, k)| occ.switch_on(s, k).len() - 1)
                .sum();
            let nnic: usize = if f.mode == Mode::Multi {
                f.task_servers
                    .iter()
                    .map(|&s| occ.distributed_on(s).len() - 1)
                    .sum()
            } else {
                0
            };
            let changed = job.current.as_ref().is_some_and(|c| !same_assignment(c, a));
            let js = JobScore {
                job: job.id,
                isolated: t.base + t.local_pair_slope * f.local_pairs,
                coloc_loss: t.coloc_coef * pcol,
                pcie_loss: t.pcie_coef * npcie as f64,
                nic_loss: t.nic_coef * nnic as f64,
                restart_penalty: if changed {
                    self.restart_cost(perf, snapshot, job)?
                } else {
                    0.0
                },
            };
            total += js.isolated - js.coloc_loss - js.pcie_loss - js.nic_loss - js.restart_penalty;
            out.push(js);
        }
        // Running jobs the schedule stops pay their restart too.
        for job in &snapshot.jobs {
            if job.current.is_some() && schedule.assignment(job.id).is_none() {
                let r = self.restart_cost(perf, snapshot, job)?;
                if r > 0.0 {
                    total -= r;
                    out.push(JobScore {
                        job: job.id,
                        isolated: 0.0,
                        coloc_loss: 0.0,
                        pcie_loss: 0.0,
                        nic_loss: 0.0,
                        restart_penalty: r,
                    });
                }
            }
        }
        Ok(Score { total, jobs: out })
    }
}

impl Objective {
    /// The same round utility computed with the PerfModel's full in-context speeds (contention
    /// compounded, PS locality exact) instead of the first-order terms: what the schedule is
    /// predicted to achieve. The gap to [`Objective::score`] measures the linearisation.
    pub fn perf_model_utility(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
    ) -> Result<f64> {
        let score = self.score(perf, snapshot, schedule)?;
        self.perf_model_utility_of(perf, snapshot, schedule, &score)
    }

    /// [`Objective::perf_model_utility`] for a schedule already scored (no second validation).
    pub fn perf_model_utility_of(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
        score: &Score,
    ) -> Result<f64> {
        let restart: f64 = score.jobs.iter().map(|j| j.restart_penalty).sum();
        let jobs: HashMap<u64, &Job> = snapshot.jobs.iter().map(|j| (j.id, j)).collect();
        let progress: f64 = crate::perf::speeds(perf, snapshot, schedule)?
            .iter()
            .map(|(id, s)| self.progress(jobs[id], s))
            .sum();
        Ok(progress - restart)
    }
}

/// Whether two assignments put the same tasks in the same places (order-insensitive).
pub fn same_assignment(a: &Assignment, b: &Assignment) -> bool {
    let norm = |x: &Assignment| {
        let mut w: Vec<(usize, Vec<u32>)> = x
            .workers
            .iter()
            .map(|w| {
                let mut g = w.gpus.clone();
                g.sort_unstable();
                (w.server, g)
            })
            .collect();
        w.sort();
        let mut p: Vec<usize> = x.ps.iter().map(|p| p.server).collect();
        p.sort_unstable();
        (w, p)
    };
    norm(a) == norm(b)
}
