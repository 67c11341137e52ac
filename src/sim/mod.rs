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
//! [`Simulator::step`], which are that loop. Observers and reports read [`Simulator::records`]
//! and [`Simulator::utilization`]. Files: this one is the event core, `env` the environment,
//! `metrics` and `report` what a run leaves behind.

mod env;
mod metrics;
mod report;

pub use env::{JobProgress, RoundOutcome};

pub use metrics::{Metrics, metrics};
pub use report::{Comparison, RunSummary, jobs_csv, utilization_csv};

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{Assignment, Cluster, ClusterSnapshot, Job, JobId, Schedule};
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
    let mut fifo = crate::policies::by_name("fifo", perf, &Default::default())?;
    let mut sim = Simulator::new(
        perf,
        SimConfig {
            contention_allowance: 1.0,
            ..config
        },
        cluster,
        jobs,
    )?;
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// What a job accrues over an interval at its current speed: GPUs held, GPU-seconds held, work
/// done and useful GPU-seconds (held, weighted by in-context ÷ alone speed; none while
/// restarting). The one rule the simulator's clock and the environment's outcomes both read.
struct Accrual {
    gpus: f64,
    held: f64,
    work: f64,
    useful: f64,
}

impl State {
    fn accrue(&self, dt: f64) -> Accrual {
        let Some(a) = &self.assignment else {
            return Accrual {
                gpus: 0.0,
                held: 0.0,
                work: 0.0,
                useful: 0.0,
            };
        };
        let gpus = a.workers.iter().map(|w| w.gpus.len()).sum::<usize>() as f64;
        let progressing = !self.restarting;
        Accrual {
            gpus,
            held: gpus * dt,
            work: if progressing { self.speed * dt } else { 0.0 },
            useful: if progressing && self.alone_speed > 0.0 {
                gpus * dt * self.speed / self.alone_speed
            } else {
                0.0
            },
        }
    }
}

/// The simulator. Build with [`Simulator::new`], drive with [`Simulator::step`],
/// [`Simulator::step_until`] or [`Simulator::run`].
pub struct Simulator<'a> {
    perf: &'a dyn PerfModel,
    config: SimConfig,
    /// The cluster and the running jobs as the performance model last priced them; kept between
    /// events so that re-pricing does not copy the cluster each time.
    priced: ClusterSnapshot,
    jobs: Vec<Job>,
    /// Position of each job id in `jobs` (looked up on every reprice).
    index_of: std::collections::HashMap<JobId, usize>,
    state: Vec<State>,
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
}

impl<'a> Simulator<'a> {
    /// A simulator over `jobs` (any order; `done_iterations` and `current` are ignored: every job
    /// starts fresh at its arrival).
    pub fn new(
        perf: &'a dyn PerfModel,
        config: SimConfig,
        cluster: Cluster,
        mut jobs: Vec<Job>,
    ) -> Result<Self> {
        // Settings are checked once, with their names in the error: round and restart by the
        // objective's own rules, the allowance here.
        let o = config.objective;
        Objective::new(o.round_s, o.restart_s)?;
        let f = config.contention_allowance;
        if !(f.is_finite() && f >= 1.0) {
            return Err(Error::setting(
                "simulator",
                "contention_allowance",
                f,
                "must be >= 1",
            ));
        }
        for j in &mut jobs {
            j.done_iterations = 0.0;
            j.current = None;
        }
        // Checks every job against the cluster once (sizes, models) before the run starts; jobs
        // it can never run are refused together or, if asked, left out and reported.
        const ORIGIN: &str = "simulator (the workload on this cluster)";
        let mut check = ClusterSnapshot::from_parts(0.0, cluster.clone(), jobs);
        let mut unplaceable = check.unplaceable();
        for j in &check.jobs {
            // Allocations the performance model cannot price can never run either.
            if let Err(Error::UnsupportedConfiguration { reason, .. }) = perf.check_job(j, ORIGIN)
                && !unplaceable.iter().any(|(id, _)| *id == j.id)
            {
                let why = reason.rsplit_once(": ").map_or(reason.as_str(), |(_, r)| r);
                unplaceable.push((j.id, format!("model `{}`: {why}", j.model)));
            }
        }
        if let Some((first, why)) = unplaceable.first() {
            match config.unplaceable {
                Unplaceable::Reject => {
                    let ids: Vec<String> = unplaceable
                        .iter()
                        .take(10)
                        .map(|(j, _)| j.to_string())
                        .collect();
                    return Err(Error::JobTooLarge {
                        context: ORIGIN.into(),
                        job: *first,
                        reason: format!(
                            "{why}. {} job(s) can never run on this cluster (jobs {}{}); leave \
                             them out with `Unplaceable::Skip` (`--skip-unplaceable`)",
                            unplaceable.len(),
                            ids.join(", "),
                            if unplaceable.len() > 10 { ", ..." } else { "" }
                        ),
                    });
                }
                Unplaceable::Skip => {
                    let out: HashSet<JobId> = unplaceable.iter().map(|(j, _)| *j).collect();
                    check.jobs.retain(|j| !out.contains(&j.id));
                    check.reindex();
                }
            }
        }
        check.check(ORIGIN)?;
        perf.check_snapshot(&check, ORIGIN)?;
        let mut jobs = check.jobs;
        // A policy sizes a job within its ranges; ranges beyond what the model prices would let
        // a policy pick an allocation no speed exists for, so they are clipped to it here, once.
        // (The checks above keep each job's smallest allocation inside.)
        for j in &mut jobs {
            if let Some((w, p)) = perf.task_limits(j) {
                j.workers.max = j.workers.max.min(w).max(j.workers.min);
                j.ps.max = j.ps.max.min(p).max(j.ps.min);
            }
        }
        jobs.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
        let state = jobs
            .iter()
            .map(|_| State {
                done: 0.0,
                assignment: None,
                restarting: false,
                arrived: false,
                finished: false,
                speed: 0.0,
                alone_speed: 0.0,
                version: 0,
                event_speed: None,
                restart_version: 0,
            })
            .collect();
        let records = jobs
            .iter()
            .map(|j| JobRecord {
                id: j.id,
                arrival_s: j.arrival_s,
                first_start_s: None,
                finish_s: None,
                restarts: 0,
                gpu_seconds: 0.0,
                busy_gpu_seconds: 0.0,
                useful_gpu_seconds: 0.0,
                waiting_s: 0.0,
                max_gpus: 0,
                max_servers: 0,
            })
            .collect();
        let last_arrival = jobs.iter().map(|j| j.arrival_s).fold(0.0, f64::max);
        let slots = cluster.slot_table();
        let mut sim = Simulator {
            last_arrival,
            slots,
            stranded: (0, 0.0),
            perf,
            config,
            priced: ClusterSnapshot::from_parts(0.0, cluster, Vec::new()),
            index_of: jobs.iter().enumerate().map(|(i, j)| (j.id, i)).collect(),
            jobs,
            state,
            records,
            events: BinaryHeap::new(),
            seq: 0,
            now: 0.0,
            last_advance: 0.0,
            utilization: vec![(0.0, 0)],
            tick_pending: false,
            pending: None,
            arrivals_left: 0,
            stall: None,
            unplaceable,
            keeps: false,
            deferred: None,
            emptied: None,
            processed: 0,
        };
        for i in 0..sim.jobs.len() {
            let t = sim.jobs[i].arrival_s;
            sim.push(t, Event::Arrival(i));
        }
        sim.arrivals_left = sim.jobs.len();
        Ok(sim)
    }

    fn push(&mut self, t: f64, e: Event) {
        self.seq += 1;
        let kind = match e {
            Event::Completion { .. } | Event::RestartDone { .. } => 0,
            Event::Arrival(_) => 1,
            Event::Tick => 2,
        };
        self.events.push(Reverse((Time(t), kind, self.seq, e)));
    }

    /// Current simulated time.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Events processed so far (arrivals, rounds, completions, restarts done; superseded
    /// completion and restart events are dropped uncounted).
    pub fn events_processed(&self) -> u64 {
        self.processed
    }

    /// Per-job outcome so far.
    pub fn records(&self) -> &[JobRecord] {
        &self.records
    }

    /// `(time, GPUs held)` at every change.
    pub fn utilization(&self) -> &[(f64, u64)] {
        &self.utilization
    }

    /// Jobs left out of the run because the cluster can never run them, with why
    /// ([`Unplaceable::Skip`]; empty otherwise).
    pub fn unplaceable(&self) -> &[(JobId, String)] {
        &self.unplaceable
    }

    /// Why the run stopped with jobs left, if it stalled (see [`Stall`]).
    pub fn stall(&self) -> Option<&Stall> {
        self.stall.as_ref()
    }

    /// Whether every job has finished.
    pub fn done(&self) -> bool {
        self.state.iter().all(|s| s.finished)
    }

    fn gpus_held(&self) -> u64 {
        self.state
            .iter()
            .filter_map(|s| s.assignment.as_ref())
            .map(|a| a.workers.iter().map(|w| w.gpus.len() as u64).sum::<u64>())
            .sum()
    }

    /// Moves progress and GPU-time forward to `t`.
    fn advance(&mut self, t: f64) {
        let dt = t - self.last_advance;
        if dt > 0.0 {
            let busy = (self.last_arrival.min(t) - self.last_advance).max(0.0);
            for (i, s) in self.state.iter_mut().enumerate() {
                let r = &mut self.records[i];
                if s.assignment.is_some() {
                    let acc = s.accrue(dt);
                    r.gpu_seconds += acc.held;
                    r.busy_gpu_seconds += acc.gpus * busy;
                    s.done += acc.work;
                    r.useful_gpu_seconds += acc.useful;
                } else if s.arrived && !s.finished {
                    r.waiting_s += dt;
                }
            }
        }
        self.last_advance = t;
        self.now = t;
    }

    /// Recomputes every running job's in-context speed and its completion event.
    fn reprice(&mut self) -> Result<()> {
        let schedule = Schedule {
            assignments: self
                .state
                .iter()
                .filter_map(|s| s.assignment.clone())
                .collect(),
        };
        // Only the jobs that hold GPUs matter for speeds; cloning the rest would cost O(trace).
        self.priced.time_s = self.now;
        self.priced.jobs.clear();
        self.priced.jobs.extend(
            self.jobs
                .iter()
                .zip(&self.state)
                .filter(|(_, st)| st.assignment.is_some())
                .map(|(j, _)| j.clone()),
        );
        self.priced.reindex();
        let speeds = perf::speeds(self.perf, &self.priced, &schedule)?;
        for s in &mut self.state {
            s.speed = 0.0;
        }
        let allowance = self.config.contention_allowance;
        for (id, sp) in speeds {
            let i = self.index_of[&id];
            let alone = self.state[i].alone_speed;
            // Contention up to the allowance is already in the work (see `SimConfig`).
            self.state[i].speed = if alone > 0.0 {
                alone.min(sp.iterations_per_s * allowance)
            } else {
                sp.iterations_per_s
            };
        }
        for i in 0..self.state.len() {
            let s = &mut self.state[i];
            let progressing = s.assignment.is_some() && !s.restarting && s.speed > 0.0;
            let desired = progressing.then_some(s.speed);
            // A job whose speed did not change keeps its pending completion event: its time is
            // still exact, and not re-issuing it keeps the queue free of stale events.
            if desired != s.event_speed {
                s.version += 1;
                s.event_speed = desired;
                if let Some(speed) = desired {
                    let left = (self.jobs[i].total_iterations - s.done).max(0.0);
                    let t = (((self.now + left / speed) * 1e6).round() / 1e6).max(self.now);
                    let version = s.version;
                    self.push(t, Event::Completion { job: i, version });
                }
            }
        }
        Ok(())
    }

    /// What a scheduler sees now: the jobs that have arrived and not finished.
    pub(crate) fn snapshot(&self) -> ClusterSnapshot {
        let jobs = self
            .jobs
            .iter()
            .zip(&self.state)
            .filter(|(_, s)| s.arrived && !s.finished)
            .map(|(j, s)| {
                let mut j = j.clone();
                // Keep the snapshot valid when progress lands a hair short of the total.
                j.done_iterations = s.done.min(j.total_iterations * (1.0 - 1e-12));
                j.current = s.assignment.clone();
                j
            })
            .collect();
        ClusterSnapshot::from_parts(self.now, self.priced.cluster.clone(), jobs)
    }

    /// Applies a round's decision at the current time: validates it against the snapshot the
    /// round saw (an invalid schedule is an error, never silently fixed), starts, moves, resizes
    /// and preempts jobs, then schedules the next round and re-prices. Returns the ids of the
    /// jobs whose change costs a restart. `who` names the decider in errors.
    fn decide(
        &mut self,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
        who: &str,
    ) -> Result<Vec<JobId>> {
        let violations = schedule.validate(snapshot);
        if let Some(v) = violations.first() {
            // Nothing has changed yet: the caller may keep the round pending and retry.
            return Err(Error::InvalidInstance {
                context: format!("round at t = {} s, policy `{who}`", self.now),
                reason: format!("{} violation(s), first: {v}", violations.len()),
            });
        }
        let mut restarted = Vec::new();
        for i in 0..self.state.len() {
            if !self.state[i].arrived || self.state[i].finished {
                continue;
            }
            let id = self.jobs[i].id;
            let new = schedule.assignment(id).cloned();
            let old = self.state[i].assignment.clone();
            match (&old, &new) {
                (Some(o), Some(n)) if same_assignment(o, n) => {}
                (Some(_), Some(_)) => {
                    self.records[i].restarts += 1;
                    restarted.push(id);
                    self.begin_restart(i, new);
                }
                (None, Some(_)) if self.records[i].first_start_s.is_some() => {
                    // Resuming after a preemption restores from the checkpoint: a restart.
                    self.records[i].restarts += 1;
                    restarted.push(id);
                    self.begin_restart(i, new);
                }
                (None, Some(_)) => {
                    self.records[i].first_start_s = Some(self.now);
                    self.state[i].assignment = new;
                    self.state[i].restarting = false;
                }
                (Some(_), None) => {
                    self.state[i].assignment = None;
                    self.state[i].restarting = false;
                    self.state[i].restart_version += 1;
                }
                (None, None) => {}
            }
            if let Some(a) = self.state[i].assignment.clone()
                && old.as_ref().is_none_or(|o| !same_assignment(o, &a))
            {
                self.state[i].alone_speed = self.alone_speed(i, &a);
                let r = &mut self.records[i];
                let gpus: usize = a.workers.iter().map(|w| w.gpus.len()).sum();
                r.max_gpus = r.max_gpus.max(gpus as u32);
                r.max_servers = r.max_servers.max(a.gpus_per_server().len() as u32);
            }
        }
        self.count_stranded();
        let waiting = self.state.iter().any(|s| s.arrived && !s.finished);
        if waiting && self.arrivals_left == 0 && self.state.iter().all(|s| s.assignment.is_none()) {
            // The cluster is empty, nothing will arrive, and the policy placed no waiting job:
            // no later round can see anything different, so the run ends here and says why.
            self.stall = Some(Stall {
                time_s: self.now,
                waiting: (0..self.state.len())
                    .filter(|&i| self.state[i].arrived && !self.state[i].finished)
                    .map(|i| self.jobs[i].id)
                    .collect(),
            });
            self.events.clear();
            self.after_change()?;
            return Ok(restarted);
        }
        let queued = self
            .state
            .iter()
            .any(|s| s.arrived && !s.finished && s.assignment.is_none());
        if waiting && !queued && self.keeps && self.config.skip_idle_rounds {
            // Every arrived job runs and the policy would keep them all at every round until
            // the next arrival: no tick until then (see `next_event`).
            self.deferred = Some(self.now);
            self.emptied = None;
        } else if waiting {
            self.tick_pending = true;
            self.push(self.now + self.config.objective.round_s, Event::Tick);
        }
        self.after_change()?;
        Ok(restarted)
    }

    /// Re-prices every running job and records the GPUs held, after anything that changed who
    /// runs where or how fast.
    fn after_change(&mut self) -> Result<()> {
        self.reprice()?;
        let held = self.gpus_held();
        if self.utilization.last().is_none_or(|&(_, g)| g != held) {
            self.utilization.push((self.now, held));
        }
        Ok(())
    }

    /// The speed of job `i` alone in assignment `a` (0 if the model refuses it).
    fn alone_speed(&self, i: usize, a: &Assignment) -> f64 {
        perf::speed_alone(
            self.perf,
            &self.priced.cluster,
            &self.slots,
            &self.jobs[i],
            a,
        )
        .map_or(0.0, |s| s.iterations_per_s)
    }

    /// After a round: GPUs idle on servers whose free cores or memory cannot take one more
    /// worker of any waiting job.
    fn count_stranded(&mut self) {
        let waiting: Vec<usize> = (0..self.state.len())
            .filter(|&i| {
                let s = &self.state[i];
                s.arrived && !s.finished && s.assignment.is_none()
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        let min_cpu = waiting
            .iter()
            .map(|&i| self.jobs[i].demand.cpu_per_worker)
            .fold(f64::INFINITY, f64::min);
        let min_mem = waiting
            .iter()
            .map(|&i| self.jobs[i].demand.mem_per_worker_gib)
            .fold(f64::INFINITY, f64::min);
        // The packer's ledger of free GPUs, cores and memory, filled with what runs now.
        let mut ledger = crate::policies::Packer::new(&self.priced, self.perf);
        for (i, st) in self.state.iter().enumerate() {
            if let Some(a) = &st.assignment {
                ledger.keep(&self.jobs[i], a);
            }
        }
        let stranded = ledger.stranded_gpus(min_cpu, min_mem);
        self.stranded.0 += 1;
        self.stranded.1 += stranded as f64;
    }

    /// Mean, over rounds in which a job waited, of the GPUs left idle on servers whose free
    /// cores or memory could not take one more worker of any waiting job.
    pub fn stranded_gpus(&self) -> f64 {
        if self.stranded.0 == 0 {
            0.0
        } else {
            self.stranded.1 / self.stranded.0 as f64
        }
    }

    fn begin_restart(&mut self, i: usize, new: Option<Assignment>) {
        self.state[i].assignment = new;
        self.state[i].restarting = self.config.objective.restart_s > 0.0;
        self.state[i].restart_version += 1;
        if self.state[i].restarting {
            let version = self.state[i].restart_version;
            self.push(
                self.now + self.config.objective.restart_s,
                Event::RestartDone { job: i, version },
            );
        }
    }

    /// Processes the next event, up to a round: `Next::Round` when a round is due now (its
    /// decision is the caller's), `Next::End` when no event is left before the horizon.
    pub(crate) fn next_event(&mut self) -> Result<Next> {
        let Some(Reverse((Time(t), _, _, event))) = self.events.pop() else {
            return Ok(Next::End);
        };
        if t > self.config.horizon_s {
            self.advance(self.config.horizon_s);
            self.events.clear();
            return Ok(Next::End);
        }
        let stale = match event {
            Event::Completion { job, version } => {
                self.state[job].version != version || self.state[job].finished
            }
            Event::RestartDone { job, version } => {
                !self.state[job].restarting || self.state[job].restart_version != version
            }
            Event::Arrival(_) | Event::Tick => false,
        };
        if stale {
            return Ok(Next::Event);
        }
        self.advance(t);
        self.processed += 1;
        match event {
            Event::Arrival(i) => {
                self.state[i].arrived = true;
                self.arrivals_left -= 1;
                if !self.tick_pending {
                    // The first arrival after an idle spell starts the round clock; after
                    // skipped rounds it resumes the clock where it would have ticked.
                    let at = match self.deferred.take() {
                        Some(from) => self.resumed_tick(from, t),
                        None => t,
                    };
                    self.tick_pending = true;
                    self.push(at, Event::Tick);
                }
                return Ok(Next::Event);
            }
            Event::Tick => {
                self.tick_pending = false;
                return Ok(Next::Round);
            }
            Event::Completion { job, .. } => {
                self.state[job].done = self.jobs[job].total_iterations;
                self.state[job].finished = true;
                self.state[job].assignment = None;
                self.records[job].finish_s = Some(t);
                if self.deferred.is_some()
                    && self.emptied.is_none()
                    && !self.state.iter().any(|s| s.arrived && !s.finished)
                {
                    self.emptied = Some(t);
                }
            }
            Event::RestartDone { job, .. } => {
                self.state[job].restarting = false;
            }
        }
        self.after_change()?;
        Ok(Next::Event)
    }

    /// When the round clock, deferred since a round at `from` (no tick scheduled because no job
    /// waited), ticks for an arrival at `t`: the first tick at or after `t` of the sequence
    /// `from + round, + round, ...` — added one round at a time, as the clock does, so the times
    /// are the same to the bit — unless the cluster emptied meanwhile and a tick found it empty,
    /// which stops the clock: then the arrival starts it afresh at `t`.
    fn resumed_tick(&mut self, from: f64, t: f64) -> f64 {
        let round = self.config.objective.round_s;
        let emptied = self.emptied.take();
        let mut next = from + round;
        // At most (t - from) / round steps; arrivals are bounded by the trace readers.
        while next < emptied.unwrap_or(t).min(t) {
            next += round;
        }
        match emptied {
            // The first tick after the cluster emptied came before (or with) the arrival: the
            // clock had stopped.
            Some(_) if next <= t => t,
            _ => {
                while next < t {
                    next += round;
                }
                next
            }
        }
    }

    /// The time of the next round, if the next event to process is one.
    pub(crate) fn round_due(&self) -> Option<f64> {
        match self.events.peek() {
            Some(Reverse((Time(t), _, _, Event::Tick))) => Some(*t),
            _ => None,
        }
    }

    /// Processes the next event; at a round, `scheduler` decides. `Ok(false)` when there is
    /// none left before the horizon. (The same events as [`Simulator::next_round`] and
    /// [`Simulator::apply`], one at a time.)
    pub fn step(&mut self, scheduler: &mut dyn Scheduler) -> Result<bool> {
        self.keeps = scheduler.keeps_when_none_wait();
        // A round handed out by `next_round` and not applied is decided first, not skipped.
        if let Some(snapshot) = self.pending.take() {
            let schedule = scheduler.schedule(&snapshot)?;
            self.decide(&snapshot, &schedule, scheduler.name())?;
            return Ok(true);
        }
        match self.next_event()? {
            Next::End => Ok(false),
            Next::Event => Ok(true),
            Next::Round => {
                let snapshot = self.snapshot();
                let schedule = scheduler.schedule(&snapshot)?;
                self.decide(&snapshot, &schedule, scheduler.name())?;
                Ok(true)
            }
        }
    }

    /// Processes events up to and including time `t`.
    pub fn step_until(&mut self, t: f64, scheduler: &mut dyn Scheduler) -> Result<()> {
        while self
            .events
            .peek()
            .is_some_and(|Reverse((Time(x), _, _, _))| *x <= t)
        {
            if !self.step(scheduler)? {
                break;
            }
        }
        Ok(())
    }

    /// Runs to the end (every job finished) or the horizon: the environment loop
    /// ([`Simulator::next_round`], the scheduler decides, [`Simulator::apply`]) with `scheduler`
    /// as the agent, less the per-round outcome nobody reads.
    pub fn run(&mut self, scheduler: &mut dyn Scheduler) -> Result<()> {
        self.keeps = scheduler.keeps_when_none_wait();
        while let Some(snapshot) = self.next_round()? {
            let schedule = scheduler.schedule(snapshot)?;
            // The outcome of each round is the caller's business; a plain run skips it.
            self.decide_pending(&schedule, scheduler.name())?;
        }
        Ok(())
    }

    /// Runs like [`Simulator::run`], calling `observe` every `every` events and once at the end
    /// (progress bars and logs hang here; the simulator itself prints nothing).
    pub fn run_observed(
        &mut self,
        scheduler: &mut dyn Scheduler,
        every: u64,
        observe: &mut dyn FnMut(&Simulator<'_>),
    ) -> Result<()> {
        let every = every.max(1);
        while self.step(scheduler)? {
            if self.processed.is_multiple_of(every) {
                observe(self);
            }
        }
        observe(self);
        Ok(())
    }

    /// Jobs finished so far.
    pub fn finished(&self) -> usize {
        self.state.iter().filter(|s| s.finished).count()
    }

    /// Jobs in the run.
    pub fn total_jobs(&self) -> usize {
        self.jobs.len()
    }

    /// The cluster simulated.
    pub fn cluster(&self) -> &Cluster {
        &self.priced.cluster
    }
}
