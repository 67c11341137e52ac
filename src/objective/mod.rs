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
//!   (first-order: the tangent of the PerfModel's multiplicative slowdown), or
//!   ([`Colocation::Progress`]) the value a full server of the job's own model takes from it
//!   over that server's `F − 1` (the secant of the progress lost).
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

mod cache;
mod colocation;
mod options;
mod pricing;
mod shape;

use serde::{Deserialize, Serialize};

pub(crate) use cache::PricingCache;
pub use colocation::Colocation;
pub(crate) use options::OptionSpeeds;
pub use pricing::{OptionFacts, RoundPricing};
pub(crate) use shape::ClusterShape;

use crate::error::{Error, Result};
use crate::model::{Assignment, ClusterSnapshot, GpuType, Job, JobId, Schedule};
use crate::perf::{PerfModel, Speed};

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
