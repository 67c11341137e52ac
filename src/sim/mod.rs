//! Trace-driven, event-driven cluster simulator (core).
//!
//! Events — job arrival, round tick, job completion, restart finished — are processed in
//! `(time, kind, sequence)` order: at one instant completions and finished restarts come first,
//! then arrivals, then the round tick, so a round sees everything that happened at its instant;
//! equal-time events of one kind keep their insertion order, and a run is deterministic.
//! Completion times are rounded to the microsecond, so that a job whose exact duration ends on a
//! round boundary is not put before or after it by floating-point noise. Between events every
//! running job progresses at the speed the [`PerfModel`] gives for its actual allocation,
//! placement and co-runners, less the contention its work already contains
//! ([`SimConfig::contention_allowance`]). At each round tick the scheduler sees a [`ClusterSnapshot`] of the
//! jobs that have arrived and not finished; its schedule is validated (an invalid one is an
//! error, never silently fixed) and applied: a running job whose assignment changes stops for
//! [`Objective::restart_s`] (checkpoint and restore) before it progresses again; a job that is
//! not scheduled is preempted and keeps its progress, and pays the same restart when it resumes.
//! A job's first start is free: trace durations include it.
//!
//! Every run ends. Jobs the cluster can never run are refused before the first event, or left
//! out and reported ([`SimConfig::unplaceable`]); job ranges are clipped to what the model
//! prices; when the cluster is empty, nothing will arrive and a round places none of the
//! waiting jobs, the run stops with a [`Stall`]. A round in which no job waits and the policy
//! would keep every placement ([`crate::Scheduler::keeps_when_none_wait`]) is skipped to the
//! next event that can change a decision, on the same tick grid
//! ([`SimConfig::skip_idle_rounds`]), so idle time costs nothing.
//!
//! The simulator owns no policy and prints nothing. Whoever decides owns the loop: a caller
//! steps it as an environment ([`Simulator::next_round`] → decide → [`Simulator::apply`], which
//! reports a [`RoundOutcome`]), or hands a [`crate::Scheduler`] to [`Simulator::run`] /
//! [`Simulator::step`], which are that loop. [`Simulator::run_observed`] is the same loop
//! reporting to observers ([`Observe`]: progress bars, the log of a policy's solves), each
//! round with what the scheduler said of it ([`crate::Scheduler::take_events`]); reports read
//! [`Simulator::records`] and [`Simulator::utilization`]. Files: this one the settings, the
//! records and the simulator's state; `admission` the checks before the first event, `core` the
//! event queue, pricing and applying a decision, `accounting` what a run accrues, `run` the
//! loops that own a scheduler and their observers, `env` the environment, `metrics` what a run
//! measures (the summaries and files a replay leaves behind are [`crate::replay`]'s), `bound`
//! and `bound_lp` lower bounds on a run's JCT under any policy, `resume` a run resumed from a
//! round's snapshot (what a lookahead plays in, [`Simulator::resume`]).
#![doc = include_str!("README.md")]

mod accounting;
mod admission;
mod bound;
mod bound_lp;
mod core;
mod env;
mod metrics;
mod resume;
mod run;
#[cfg(test)]
mod tests;

pub(crate) use bound::fastest;
pub use bound::{Bounds, JctBound, LpLimits};
pub use core::SimBuilder;
pub use env::{JobProgress, RoundOutcome};
pub use run::{Observe, ObserverMode};

pub use metrics::{Metrics, metrics};

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{Assignment, Cluster, ClusterSnapshot, Job, JobId, RunState, Schedule};
use crate::objective::{Objective, same_assignment};
use crate::perf::{self, PerfModel};
use crate::scheduler::Scheduler;
use crate::util::total::TotalF64 as Time;

/// Simulator settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SimConfig {
    /// Seconds between scheduling rounds ([`Objective::round_s`]: default 300, as Blox and
    /// Synergy; Gavel 360, Pollux 60) and seconds a running job loses when its allocation or
    /// placement changes ([`Objective::restart_s`], an ESTIMATE). One source for both: the
    /// simulator charges exactly the round and the restart the objective prices.
    pub objective: Objective,
    /// Stop at this time even if jobs remain (they are reported unfinished).
    pub horizon_s: f64,
    /// Contention already contained in the jobs' work, as a factor `F_ref >= 1` on step time. A
    /// job whose in-context step time is `F` times its time alone in the same placement runs at
    /// `alone speed / max(1, F / F_ref)`: contention up to the level the trace's own durations
    /// contain is not charged twice, and a job alone still takes its trace duration. 1 (the
    /// default) charges all contention on top of the work; [`contention_allowance`] measures
    /// the trace-era level of a workload.
    pub contention_allowance: f64,
    /// Skip rounds in which no job waits when the policy keeps every assignment then
    /// ([`Scheduler::keeps_when_none_wait`]): the clock jumps to the next arrival instead of
    /// ticking, so an idle round costs nothing; results are the same (see the module docs).
    pub skip_idle_rounds: bool,
    /// What to do with a job the cluster can never run ([`ClusterSnapshot::unplaceable`]).
    pub unplaceable: Unplaceable,
}

/// What the simulator does with jobs the cluster can never run (their smallest or requested
/// allocation exceeds it): no policy could ever finish them, and a run that waits for them
/// never ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unplaceable {
    /// Refuse the workload up front, naming the jobs and why.
    #[default]
    Reject,
    /// Leave them out of the run and report them ([`Simulator::unplaceable`]).
    Skip,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            objective: Objective::default(),
            horizon_s: f64::INFINITY,
            contention_allowance: 1.0,
            skip_idle_rounds: true,
            unplaceable: Unplaceable::Reject,
        }
    }
}

/// Where a simulator's [`SimConfig::contention_allowance`] comes from: measured on the workload
/// by a FIFO replay ([`contention_allowance`]; written `auto`), or given (a number >= 1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Allowance {
    /// Measured by a FIFO replay of the same workload on the same cluster.
    #[default]
    Measured,
    /// This factor.
    Given(f64),
}

impl std::str::FromStr for Allowance {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s == "auto" {
            return Ok(Allowance::Measured);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 1.0 => Ok(Allowance::Given(v)),
            _ => Err(format!("`{s}`: expected `auto` or a number >= 1")),
        }
    }
}

impl std::fmt::Display for Allowance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Allowance::Measured => f.write_str("auto"),
            Allowance::Given(v) => v.fmt(f),
        }
    }
}

impl Serialize for Allowance {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Allowance::Measured => s.serialize_str("auto"),
            Allowance::Given(v) => s.serialize_f64(*v),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Allowance {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        /// `"auto"`, a number, or null (measured).
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Form {
            Number(f64),
            Word(String),
            Null(()),
        }
        match Form::deserialize(d)? {
            // Ranges are checked with the rest of the settings, naming the field.
            Form::Number(v) => Ok(Allowance::Given(v)),
            Form::Word(w) if w == "auto" => Ok(Allowance::Measured),
            Form::Word(w) => Err(serde::de::Error::custom(format!(
                "`{w}`: expected `auto` or a number >= 1"
            ))),
            Form::Null(()) => Ok(Allowance::Measured),
        }
    }
}

/// The contention a workload's durations already contain, measured: the GPU-time-weighted mean
/// slowdown (GPU-hours held ÷ useful GPU-hours) of a FIFO replay — coda's stand-in for the
/// trace era's own gang-scheduled, first-come first-served scheduler (Jeon et al., ATC'19) —
/// on the same cluster, charging all contention (`contention_allowance = 1`). Its restarts are
/// none (FIFO never moves a job), so held and useful GPU-time differ by contention alone. 1
/// without a replay when the model has no contention at all ([`PerfModel::contention_free`]).
pub fn contention_allowance(
    perf: &dyn PerfModel,
    config: SimConfig,
    cluster: Cluster,
    jobs: Vec<Job>,
) -> Result<f64> {
    if perf.contention_free() {
        return Ok(1.0);
    }
    let mut fifo = crate::policies::PolicyKind::Fifo.build(perf, &Default::default())?;
    let mut sim = Simulator::builder(perf, cluster, jobs)
        .config(SimConfig {
            contention_allowance: 1.0,
            ..config
        })
        .build()?;
    sim.run(fifo.as_mut())?;
    let held: f64 = sim.records.iter().map(|r| r.gpu_seconds).sum();
    let useful: f64 = sim.records.iter().map(|r| r.useful_gpu_seconds).sum();
    Ok(if useful > 0.0 {
        (held / useful).max(1.0)
    } else {
        1.0
    })
}

/// Why a run ended with jobs left although no horizon cut it: at `time_s` nothing ran, nothing
/// was left to arrive, and the round's decision placed none of the `waiting` jobs on the empty
/// cluster — every later round would see the same, so the run stops instead of ticking forever.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Stall {
    /// When the run stopped, seconds.
    pub time_s: f64,
    /// The jobs left waiting, none of which the policy could place on the empty cluster.
    pub waiting: Vec<JobId>,
}

/// What happened to one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobRecord {
    /// The job.
    pub id: JobId,
    /// Arrival, seconds.
    pub arrival_s: f64,
    /// First time it was given GPUs.
    pub first_start_s: Option<f64>,
    /// Completion time.
    pub finish_s: Option<f64>,
    /// Times a running job's assignment was changed or a preempted job resumed (each cost a
    /// restart).
    pub restarts: u32,
    /// GPU-seconds held (including restarts).
    pub gpu_seconds: f64,
    /// GPU-seconds held up to the last arrival of the run (its busy period).
    pub busy_gpu_seconds: f64,
    /// Useful GPU-seconds: GPU-seconds held, each weighted by the job's in-context speed over its
    /// speed alone in the same placement (zero while restarting) — the GPU time the work done
    /// would have taken without contention.
    pub useful_gpu_seconds: f64,
    /// Seconds spent arrived, unfinished and without GPUs: the first queueing delay plus every
    /// wait after a preemption.
    pub waiting_s: f64,
    /// Most GPUs the job held in one assignment (0 if it never ran).
    pub max_gpus: u32,
    /// Most servers its workers spanned in one assignment (0 if it never ran): with
    /// [`JobRecord::max_gpus`], whether it ever ran spread wider than packed.
    pub max_servers: u32,
}

/// What processing one event led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// An event was processed (or dropped as stale); nothing to decide.
    Event,
    /// A round is due now.
    Round,
    /// No event is left before the horizon.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrival(usize),
    Tick,
    Completion { job: usize, version: u64 },
    RestartDone { job: usize, version: u64 },
}

#[derive(Clone)]
struct State {
    done: f64,
    assignment: Option<Assignment>,
    restarting: bool,
    arrived: bool,
    finished: bool,
    speed: f64,
    /// Speed alone in its current placement (for useful GPU-time).
    alone_speed: f64,
    /// Bumped whenever the job's completion time changes: an older completion event is stale.
    version: u64,
    /// The speed the pending completion event was computed with (`None`: no event pending).
    event_speed: Option<f64>,
    /// Bumped at every restart: a restart-done event of an older restart is stale.
    restart_version: u64,
}

/// The simulator. Build with [`Simulator::builder`], drive with [`Simulator::step`],
/// [`Simulator::run`]. A clone is an independent copy of the run so far (a search over
/// decisions plays each from the same state).
#[derive(Clone)]
pub struct Simulator<'a> {
    perf: &'a dyn PerfModel,
    config: SimConfig,
    /// The cluster and the running jobs as the performance model last priced them all (after a
    /// decision; a completion re-prices only its neighbours, in `scratch`); kept between events
    /// so that re-pricing does not copy the cluster each time.
    priced: ClusterSnapshot,
    /// The same cluster, with the jobs a completion re-prices ([`Simulator::reprice_around`]).
    scratch: ClusterSnapshot,
    jobs: Vec<Job>,
    /// Position of each job id in `jobs` (looked up on every reprice).
    index_of: std::collections::HashMap<JobId, usize>,
    state: Vec<State>,
    /// The jobs that have arrived and not finished, ascending: what every per-event pass walks
    /// (not the whole trace, whose jobs mostly have not arrived or are done).
    active: Vec<usize>,
    /// Jobs finished so far.
    finished_count: usize,
    records: Vec<JobRecord>,
    events: BinaryHeap<Reverse<(Time, u8, u64, Event)>>,
    seq: u64,
    now: f64,
    last_advance: f64,
    utilization: Vec<(f64, u64)>,
    tick_pending: bool,
    /// The round handed out by `next_round` and not yet applied.
    pending: Option<ClusterSnapshot>,
    /// Arrival events not processed yet.
    arrivals_left: usize,
    /// Set when the run stopped because no job could ever progress again.
    stall: Option<Stall>,
    /// Jobs left out as never runnable on this cluster ([`Unplaceable::Skip`]), with why.
    unplaceable: Vec<(JobId, String)>,
    /// Whether the deciding scheduler keeps every assignment when no job waits (set by the
    /// loop that owns the scheduler; an external agent's rounds are never skipped).
    keeps: bool,
    /// Idle-round skipping: the time of the last round after which no tick was scheduled
    /// because no job waited; the round clock would have ticked from there.
    deferred: Option<f64>,
    /// While deferred: when the last job running finished (the clock then stops at its next
    /// tick).
    emptied: Option<f64>,
    processed: u64,
    /// Arrival of the last job: the end of the busy period.
    last_arrival: f64,
    /// The cluster's slot table (for pricing a job alone in its placement).
    slots: Vec<Vec<crate::model::GpuSlot>>,
    /// Rounds with a waiting job, and the sum over them of GPUs left idle on servers whose free
    /// cores or memory cannot host one more worker of any waiting job.
    stranded: (u64, f64),
    /// Core- and memory-time held and stranded (see [`CpuMemUse`]).
    cpu_mem: CpuMemUse,
    /// Shares of cores and memory held and stranded right now (`cores_held, mem_held,
    /// cores_stranded, mem_stranded`); `None` once an assignment changed (recomputed then, not
    /// at every event).
    cpu_mem_now: Option<[f64; 4]>,
}

/// Cores and memory over a run, as time-averaged shares of the cluster's capacity from time 0
/// to the last event: **held** by tasks (at their tier), and **stranded** — free on servers
/// whose every GPU is held, so no worker can use them.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuMemUse {
    /// Share of core-time held by tasks.
    pub cores_held: f64,
    /// Share of core-time free on servers with no free GPU.
    pub cores_stranded: f64,
    /// Share of memory-time held by tasks.
    pub mem_held: f64,
    /// Share of memory-time free on servers with no free GPU.
    pub mem_stranded: f64,
    /// Seconds accounted.
    #[serde(skip)]
    pub(crate) span_s: f64,
}
