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
//!   resources it cannot use. Plus the **in-service credit** `κ · min(s·T, R) / (ŝ·T)`
//!   ([`Objective::in_service_credit`]), `ŝ` the job's full pace (its fastest option alone,
//!   [`RoundPricing::pace`]): a round at full pace is worth `κ` to any job, long or short, as a
//!   waiting round costs any job a round of completion time, and a slower round the share of it
//!   the job's completion gains. Both parts are linear in the work done, so the job's utility is
//!   its `κ = 0` utility times the constant `1 + κ·R/(ŝ·T)`, and every term below, a
//!   difference of this value, costs credit in proportion (`formulations/README.md` derives it).
//!   The credit applies only in a round whose free GPUs hold every waiting job's ask
//!   ([`Objective::for_round`]); where jobs compete for GPUs the fraction alone orders them.
//! * PS locality: `L_j` = worker–PS pairs on the same server; `slope_j` interpolates linearly
//!   between the PerfModel's speed with no PS local (f = 0) and all local (f = 1).
//! * Co-location: `Pcol_j = Σ_servers Σ_co-runners (slowdown − 1)` from the PerfModel's pair
//!   slowdowns, or ([`Colocation::FullServer`]) each co-runner's share of the PerfModel's
//!   compounded slowdown of a full server, which saturates; `A_j = base_j · compute share`
//!   (first-order: the tangent of the PerfModel's multiplicative slowdown).
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

mod colocation;
mod pricing;
mod shape;

use serde::{Deserialize, Serialize};

pub use colocation::Colocation;
pub(crate) use pricing::PricingCache;
pub use pricing::{OptionFacts, RoundPricing};
pub(crate) use shape::ClusterShape;

use crate::error::{Error, Result};
use crate::model::{Architecture, Assignment, ClusterSnapshot, GpuType, Job, JobId, Schedule};
use crate::perf::{JobQuery, PerfModel, PlacementShape, ServerSize, Speed};

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

/// What co-located jobs contend for, as the objective prices it: one loss term each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Sharing {
    /// Jobs with workers on the same server (Gavel's pair slowdowns).
    Colocation,
    /// Jobs with GPUs under the same PCIe switch.
    Pcie,
    /// Distributed jobs with tasks on the same server (its NIC).
    Nic,
}

impl Sharing {
    /// Every kind, in the order the formulation lays out its variables.
    pub const ALL: [Sharing; 3] = [Sharing::Colocation, Sharing::Pcie, Sharing::Nic];

    /// Position in [`Sharing::ALL`], for per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl OptionTerms {
    /// Utility lost per unit of pressure of this kind.
    pub fn coef(&self, kind: Sharing) -> f64 {
        match kind {
            Sharing::Colocation => self.coloc_coef,
            Sharing::Pcie => self.pcie_coef,
            Sharing::Nic => self.nic_coef,
        }
    }
}

/// One allocation a job may get: `(workers, ps, mode, GPU type, tier)` with its coefficients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobOption {
    /// Workers.
    pub workers: u32,
    /// Parameter servers.
    pub ps: u32,
    /// Placement mode.
    pub mode: Mode,
    /// GPU type of every worker.
    pub gpu_type: GpuType,
    /// Cores and memory of every worker ([`crate::model::Job::tiers`]; 0: the demand). The
    /// option's terms are priced at this tier's speed ([`crate::PerfModel::cpu_mem_speed`]).
    pub tier: u8,
    /// Its isolated speed at its tier, iterations per second (the fastest of a job's options
    /// is the job's full pace, the unit of the in-service credit).
    pub iterations_per_s: f64,
    /// Coefficients.
    pub terms: OptionTerms,
}

/// Which of a job's options: its workers, PS, mode, GPU type and tier (a [`JobOption`] less
/// its terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionShape {
    /// Workers.
    pub workers: u32,
    /// Parameter servers.
    pub ps: u32,
    /// Placement mode.
    pub mode: Mode,
    /// GPU type of every worker.
    pub gpu_type: GpuType,
    /// CPU/memory tier of every worker.
    pub tier: u8,
}

/// The speeds one option's terms are made of (the performance model's answers for its shape
/// alone, at its other PS-locality end, with one PCIe sharer and with one NIC sharer). They
/// depend on the job's model, demand and tiers, not on its progress: [`PricingCache`] keeps them
/// across rounds and only the arithmetic of the terms is redone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OptionSpeeds {
    /// The option's shape alone.
    alone: Speed,
    /// A PS job's speed at the other end of the locality interpolation.
    other_end: Option<Speed>,
    /// Whether `alone` is the all-local end (a PS job on one server).
    all_local: bool,
    /// With one job sharing its PCIe switches.
    one_pcie: Speed,
    /// With one NIC sharer (multi-server options).
    one_nic: Option<Speed>,
}

/// A job's full pace from its options' isolated speeds (iterations per second): the fastest,
/// the unit of the in-service credit; 0 for a job without options.
fn full_pace(speeds: impl IntoIterator<Item = f64>) -> f64 {
    speeds.into_iter().fold(0.0, f64::max)
}

/// Score of one job in a schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobScore {
    /// The job.
    pub job: JobId,
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
///
/// ```
/// use coda::{CalibratedPerf, ClusterSnapshot, Objective, Schedule};
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let perf = CalibratedPerf::shipped();
/// let keep = coda::workload::current_schedule(&snapshot);
/// let value = Objective::default().score(perf, &snapshot, &keep)?.total;
/// // Nobody running earns nothing.
/// let idle = Objective::default().score(perf, &snapshot, &Schedule::default())?.total;
/// assert!(idle <= value + 1e-9);
/// # Ok::<(), coda::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// Round length `T`, seconds. Default 300 s, as Blox and Synergy.
    pub round_s: f64,
    /// ESTIMATE. Seconds a job loses when it is moved, resized or stopped: checkpoint, restore and
    /// warm-up. No measurement in `datasets/`; one minute.
    pub restart_s: f64,
    /// Weight `κ` of the in-service credit: what a round at a job's full pace (its fastest
    /// option alone) is worth to any job, in the units of `base` (a whole round's work of a job
    /// that would finish in it). A waiting job of any length loses the round; a running one the
    /// share of it that a slower option or contention costs (see the module docs). Off in a
    /// round whose waiting jobs ask for more GPUs than are free ([`Objective::for_round`]). A
    /// design weight, not a measurement; 0 gives the pure fraction-of-remaining-work objective.
    #[serde(default)]
    pub in_service_credit: f64,
    /// What one co-runner on a job's server costs it in the co-location term (see
    /// [`Colocation`]).
    #[serde(default)]
    pub colocation: Colocation,
}

/// The default in-service credit `κ` (see [`Objective::in_service_credit`]): that of
/// [`crate::schedule`], `coda solve` and the replay objective every policy but `ilp` prices
/// rounds with; the `ilp` policy's own is [`crate::policies::DEFAULT_ILP_IN_SERVICE_CREDIT`].
pub const DEFAULT_IN_SERVICE_CREDIT: f64 = 0.0;

impl Default for Objective {
    fn default() -> Self {
        Objective {
            round_s: 300.0,
            restart_s: 60.0,
            in_service_credit: DEFAULT_IN_SERVICE_CREDIT,
            colocation: Colocation::Pair,
        }
    }
}

impl Objective {
    /// Checks the settings.
    pub fn new(round_s: f64, restart_s: f64) -> Result<Self> {
        if !(round_s.is_finite() && round_s > 0.0) {
            return Err(Error::setting(
                "objective",
                "round_s",
                round_s,
                "must be > 0",
            ));
        }
        if !(restart_s.is_finite() && (0.0..=round_s).contains(&restart_s)) {
            return Err(Error::setting(
                "objective",
                "restart_s",
                restart_s,
                "must be in [0, round_s]",
            ));
        }
        Ok(Objective {
            round_s,
            restart_s,
            in_service_credit: DEFAULT_IN_SERVICE_CREDIT,
            colocation: Colocation::Pair,
        })
    }

    /// The same objective with in-service credit `credit` (finite, >= 0).
    pub fn with_in_service_credit(self, credit: f64) -> Result<Self> {
        if !(credit.is_finite() && credit >= 0.0) {
            return Err(Error::setting(
                "objective",
                "in_service_credit",
                credit,
                "must be finite and >= 0",
            ));
        }
        Ok(Objective {
            in_service_credit: credit,
            ..self
        })
    }

    /// The same objective with co-location cost `colocation`.
    pub fn with_colocation(self, colocation: Colocation) -> Self {
        Objective { colocation, ..self }
    }

    /// The objective as it prices `snapshot`'s round: itself, except that the in-service credit
    /// is off where the waiting jobs ask for more GPUs than are free. The credit prices
    /// capacity that would otherwise idle or a long job's pause next to free GPUs; where jobs
    /// compete for GPUs, the progress fraction alone orders them, as
    /// shortest-remaining-time-first does (a credit there kept long jobs growing while short
    /// ones queued: `formulations/README.md`).
    pub fn for_round(&self, snapshot: &ClusterSnapshot) -> Objective {
        if self.in_service_credit == 0.0 {
            return *self;
        }
        let free = snapshot.free_gpus();
        let asked: u64 = snapshot
            .jobs
            .iter()
            .filter(|j| j.run.current.is_none())
            .map(|j| u64::from(j.requested_gpus()))
            .sum();
        if asked <= free {
            *self
        } else {
            Objective {
                in_service_credit: 0.0,
                ..*self
            }
        }
    }

    /// What a round at speed `s` is worth to `job` whose full pace (its fastest option alone,
    /// iterations per second) is `pace`: its progress fraction plus `κ` × the rounds at full
    /// pace the work done is worth (`min(s·T, R) / (pace·T)`: 1 for a job at its fastest the
    /// whole round, less for one slower, slowed or finishing early). Both parts are linear in
    /// the work done, so every contention term stays a difference of this value.
    pub(crate) fn value(&self, job: &Job, s: &Speed, pace: f64) -> f64 {
        let left = job.remaining_iterations();
        let done = (s.iterations_per_s * self.round_s).min(left);
        let service = if self.in_service_credit > 0.0 && pace > 0.0 {
            self.in_service_credit * done / (pace * self.round_s)
        } else {
            0.0
        };
        done / left + service
    }

    /// The shape an option is priced with. `Multi` is priced at its dearest split: the most
    /// GPUs one server can hold (`K − 1`, or a whole server of `server`), the rest elsewhere —
    /// every server all-reduces inside itself before the servers exchange, so the fullest one
    /// sets the intra-server part.
    fn shape(
        job: &Job,
        o: &OptionShape,
        ps_local: f64,
        server: Option<ServerSize>,
    ) -> Option<PlacementShape> {
        let (workers, ps, mode) = (o.workers, o.ps, o.mode);
        let g = job.demand.gpus_per_worker.max(1);
        let gpus = workers * g;
        let mut shape = match (job.arch, mode) {
            // A worker's GPUs share a server, so spreading needs two workers.
            (Architecture::AllReduce, Mode::Multi) if workers < 2 => return None,
            (Architecture::AllReduce, Mode::Multi) => {
                // Whole workers per server, the fullest server as full as it can be.
                let per = server.map_or(workers - 1, |s| (s.gpus / g).clamp(1, workers - 1));
                let split = if per == workers - 1 {
                    vec![per * g, g]
                } else {
                    crate::perf::packed(workers, per)
                        .into_iter()
                        .map(|w| w * g)
                        .collect()
                };
                PlacementShape::isolated(workers, 0, split)
            }
            (Architecture::AllReduce, Mode::CrossSocket) if gpus < 2 => return None,
            (Architecture::ParameterServer, Mode::CrossSocket) => return None,
            _ => PlacementShape::isolated(workers, ps, vec![gpus]),
        };
        shape.cross_socket_servers = u32::from(mode == Mode::CrossSocket);
        shape.ps_colocated_fraction = ps_local;
        shape.server = server;
        Some(shape)
    }

    /// Coefficients of option `o` of `job` on servers of `server`'s size (the largest of its
    /// GPU type; `None`: one large enough for all its GPUs), its workers at the option's
    /// CPU/memory tier, or `None` if the option is impossible or outside what the performance
    /// model prices (a tier the job lacks included). The in-service credit is measured against
    /// the option's own speed, as if it were the job's fastest; a [`RoundPricing`] measures
    /// every option of a job against the job's full pace ([`RoundPricing::pace`]) — the same
    /// terms at `κ = 0`.
    pub fn option_terms(
        &self,
        perf: &dyn PerfModel,
        job: &Job,
        o: OptionShape,
        server: Option<ServerSize>,
    ) -> Option<OptionTerms> {
        self.option_terms_at_pace(perf, job, o, server, None)
    }

    /// [`Objective::option_terms`] with the in-service credit measured against `pace`, the
    /// job's full pace, if given (what a [`RoundPricing`] does for an option outside the job's
    /// list), else against the option's own speed.
    pub(crate) fn option_terms_at_pace(
        &self,
        perf: &dyn PerfModel,
        job: &Job,
        o: OptionShape,
        server: Option<ServerSize>,
        pace: Option<f64>,
    ) -> Option<OptionTerms> {
        let speeds = Self::option_speeds(perf, job, &o, server)?;
        let pace = pace.unwrap_or(speeds.alone.iterations_per_s);
        Some(self.terms_at(job, &o, &speeds, pace))
    }

    /// The speeds option `o`'s terms are made of (see [`OptionSpeeds`]), or `None` if the
    /// option is impossible or unpriced. They read the job's model, demand and tiers, never its
    /// progress.
    fn option_speeds(
        perf: &dyn PerfModel,
        job: &Job,
        o: &OptionShape,
        server: Option<ServerSize>,
    ) -> Option<OptionSpeeds> {
        job.worker_share(o.tier)?;
        let q = JobQuery::of(job);
        // The whole step scales with the tier's speed (as the simulator runs it), so every
        // term below is priced at the cores and memory the option grants.
        let f = crate::perf::tier_speed(perf, job, o.tier);
        let speed = |sh: &PlacementShape| perf.speed(&q, &o.gpu_type, sh).map(|x| x.scaled(f));
        // PS jobs on one server have every PS next to every worker.
        let all_local = job.arch == Architecture::ParameterServer && o.mode == Mode::Single;
        let f_mode = if all_local { 1.0 } else { 0.0 };
        let shape = Self::shape(job, o, f_mode, server)?;
        let s = speed(&shape).ok()?;
        // A PS job's locality slope interpolates to the other end (no PS local, or all).
        let other_end = if job.arch == Architecture::ParameterServer {
            let end = if all_local { 0.0 } else { 1.0 };
            Some(speed(&Self::shape(job, o, end, server)?).ok()?)
        } else {
            None
        };
        let mut one_pcie = shape.clone();
        one_pcie.pcie_sharing_jobs = 1;
        let one_pcie = speed(&one_pcie).ok()?;
        // One NIC sharer, first-order: a sharer like this job itself (its own communication
        // share sets how often their transfers meet).
        let one_nic = if o.mode == Mode::Multi {
            let mut sh = shape.clone();
            sh.nic_competing_flows = perf.nic_competition(s.inter_comm_s / s.step_time_s);
            Some(speed(&sh).ok()?)
        } else {
            None
        };
        Some(OptionSpeeds {
            alone: s,
            other_end,
            all_local,
            one_pcie,
            one_nic,
        })
    }

    /// Option `o`'s terms for `job` as it stands now (its remaining work) from the option's
    /// speeds: arithmetic only, so that a policy pricing the same job round after round asks
    /// the performance model once ([`PricingCache`]).
    fn terms_at(&self, job: &Job, o: &OptionShape, sp: &OptionSpeeds, pace: f64) -> OptionTerms {
        let s = &sp.alone;
        // Every term of the option is a difference of values measured against the same full
        // pace, so contention costs credit too.
        let at = |x: &Speed| self.value(job, x, pace);
        let here = self.value(job, s, pace);
        let (base, slope) = match &sp.other_end {
            // One end of the interpolation is the shape priced alone.
            Some(other) => {
                let (b0, b1) = if sp.all_local {
                    (at(other), here)
                } else {
                    (here, at(other))
                };
                (b0, (b1 - b0) / f64::from(o.workers * o.ps))
            }
            None => (here, 0.0),
        };
        let uncapped = s.iterations_per_s * self.round_s < job.remaining_iterations();
        let coloc_coef = if uncapped {
            here * s.compute_s / s.step_time_s
        } else {
            0.0
        };
        OptionTerms {
            base,
            local_pair_slope: slope,
            coloc_coef,
            pcie_coef: here - at(&sp.one_pcie),
            nic_coef: sp.one_nic.as_ref().map_or(0.0, |x| here - at(x)),
        }
    }

    /// Every option of a job on this cluster: workers and PS in range, each mode, each allowed
    /// GPU type present, each CPU/memory tier the job offers (the demand's options first, then
    /// tier 1's, …: a job without tiers has exactly the options it always had), priced by the
    /// performance model.
    pub fn job_options(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        job: &Job,
    ) -> Vec<JobOption> {
        self.for_round(snapshot)
            .job_options_in(perf, &ClusterShape::of(&snapshot.cluster), job)
    }

    /// [`Objective::job_options`] on a cluster summarised once (what a round priced for many
    /// jobs does: the summary is the only part that reads every server).
    pub(crate) fn job_options_in(
        &self,
        perf: &dyn PerfModel,
        shape: &ClusterShape,
        job: &Job,
    ) -> Vec<JobOption> {
        self.options_at(job, &Self::option_speeds_in(perf, shape, job))
    }

    /// A job's options with their terms at its progress now, from their speeds
    /// ([`Objective::option_speeds_in`]).
    pub(crate) fn options_at(
        &self,
        job: &Job,
        speeds: &[(OptionShape, OptionSpeeds)],
    ) -> Vec<JobOption> {
        let pace = full_pace(speeds.iter().map(|(_, sp)| sp.alone.iterations_per_s));
        speeds
            .iter()
            .map(|(o, sp)| JobOption {
                workers: o.workers,
                ps: o.ps,
                mode: o.mode,
                gpu_type: o.gpu_type,
                tier: o.tier,
                iterations_per_s: sp.alone.iterations_per_s,
                terms: self.terms_at(job, o, sp, pace),
            })
            .collect()
    }

    /// The options of [`Objective::job_options_in`] (in its order) with the speeds their terms
    /// are made of: what does not change while the job runs.
    pub(crate) fn option_speeds_in(
        perf: &dyn PerfModel,
        shape: &ClusterShape,
        job: &Job,
    ) -> Vec<(OptionShape, OptionSpeeds)> {
        let g = job.demand.gpus_per_worker;
        let types: Vec<&(GpuType, Vec<(u32, u64)>)> = shape
            .types
            .iter()
            .filter(|(t, sizes)| job.allows_gpu(t) && sizes.iter().any(|&(n, _)| n >= g))
            .collect();
        let modes: &[Mode] = match job.arch {
            Architecture::AllReduce if shape.multi_socket => {
                &[Mode::Single, Mode::CrossSocket, Mode::Multi]
            }
            Architecture::AllReduce => &[Mode::Single, Mode::Multi],
            Architecture::ParameterServer => &[Mode::Single, Mode::Multi],
        };
        let (measured_w, measured_p) = perf.task_limits(job).unwrap_or((u32::MAX, u32::MAX));
        let p_hi = job
            .ps
            .max
            .min(u32::try_from(shape.ps_slots(job)).unwrap_or(u32::MAX))
            .min(measured_p)
            .max(job.ps.min);
        let mut out = Vec::new();
        for tier in 0..=u8::try_from(job.tiers.len()).unwrap_or(u8::MAX) {
            for (t, sizes) in &types {
                let slots: u64 = sizes
                    .iter()
                    .map(|&(n, c)| c * u64::from(n / g.max(1)))
                    .sum();
                let w_hi = job
                    .workers
                    .max
                    .min(u32::try_from(slots).unwrap_or(u32::MAX))
                    .min(measured_w);
                for w in job.workers.min..=w_hi {
                    for p in job.ps.min..=p_hi {
                        for &mode in modes {
                            if mode == Mode::Multi && !shape.multi_server {
                                continue;
                            }
                            let o = OptionShape {
                                workers: w,
                                ps: p,
                                mode,
                                gpu_type: *t,
                                tier,
                            };
                            if let Some(sp) = Self::option_speeds(perf, job, &o, shape.largest(t)) {
                                out.push((o, sp));
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Restart penalty `ρ_j` of a job (0 if it is not running now). Pricing a whole round?
    /// [`RoundPricing::restart_cost`] keeps it.
    pub fn restart_cost(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        job: &Job,
    ) -> Result<f64> {
        let pricing = RoundPricing::new(perf, snapshot, *self);
        let j = pricing
            .job_index(job.id)
            .ok_or_else(|| Error::InvalidInstance {
                context: "objective".into(),
                reason: format!("job {} is not in the snapshot", job.id),
            })?;
        pricing.restart_cost(j)
    }

    /// The objective value of a valid schedule (an invalid one is an error). Scoring many
    /// schedules of one snapshot? Build a [`RoundPricing`] once and call its `score`.
    pub fn score(
        &self,
        perf: &dyn PerfModel,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
    ) -> Result<Score> {
        snapshot.check("<input>")?;
        RoundPricing::new(perf, snapshot, *self).score(schedule)
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
        RoundPricing::new(perf, snapshot, *self).perf_model_utility(schedule, score)
    }
}

/// Whether two assignments put the same tasks in the same places (order-insensitive).
pub fn same_assignment(a: &Assignment, b: &Assignment) -> bool {
    // Different task counts differ in any order; identical lists (a kept assignment, the
    // common case: every proposal of a round asks for every running job) are the same
    // without the sorted copies below.
    if a.workers.len() != b.workers.len() || a.ps.len() != b.ps.len() {
        return false;
    }
    if a.workers == b.workers && a.ps == b.ps {
        return true;
    }
    let norm = |x: &Assignment| {
        let mut w: Vec<(usize, Vec<u32>)> = x
            .workers
            .iter()
            .map(|w| {
                let mut g = w.gpus.clone();
                g.sort_unstable();
                (w.server.0, g)
            })
            .collect();
        w.sort();
        let mut p: Vec<usize> = x.ps.iter().map(|p| p.server.0).collect();
        p.sort_unstable();
        (w, p)
    };
    norm(a) == norm(b)
}
