//! The event core: building a simulator, the event queue in `(time, kind, sequence)` order,
//! pricing the running jobs, and applying a round's decision.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::*;
use crate::util::total::TotalF64 as Time;

/// How a [`Simulator`] is made: the model, the cluster and the workload first, then the settings
/// by name (each defaults to [`SimConfig::default`]'s), checked once by [`SimBuilder::build`]
/// with the jobs against the cluster ([`Unplaceable`]).
///
/// ```
/// use coda::policies::{PolicyKind, PolicyOptions};
/// use coda::sim::Simulator;
/// let perf = coda::CalibratedPerf::shipped();
/// let opts = coda::workload::trace::TraceOptions::default();
/// let datasets = std::path::Path::new("datasets");
/// let philly = coda::workload::TraceRef { name: "philly", datasets, cluster: Some("2x8"), take: Some(20) };
/// let wl = coda::workload::load(philly, &opts, perf)?;
/// let mut sim = Simulator::builder(perf, wl.cluster.clone(), wl.jobs.clone())
///     .horizon_s(30.0 * 86_400.0)
///     .build()?;
/// sim.run(PolicyKind::Fifo.build(perf, &PolicyOptions::default())?.as_mut())?;
/// assert!(sim.records().iter().all(|r| r.finish_s.is_some()));
/// # Ok::<(), coda::Error>(())
/// ```
#[must_use = "a builder does nothing until `build`"]
pub struct SimBuilder<'a> {
    perf: &'a dyn PerfModel,
    cluster: Cluster,
    jobs: Vec<Job>,
    config: SimConfig,
    /// Measure the contention allowance at `build` ([`Allowance::Measured`]).
    measure: bool,
}

impl<'a> SimBuilder<'a> {
    /// Every setting at once (a config kept from an earlier run, or read from the command line).
    pub fn config(mut self, config: SimConfig) -> Self {
        self.config = config;
        self
    }

    /// Round length and restart cost ([`SimConfig::objective`]).
    pub fn objective(mut self, objective: Objective) -> Self {
        self.config.objective = objective;
        self
    }

    /// Stop at this time ([`SimConfig::horizon_s`]).
    pub fn horizon_s(mut self, horizon_s: f64) -> Self {
        self.config.horizon_s = horizon_s;
        self
    }

    /// Contention already in the jobs' work ([`SimConfig::contention_allowance`]).
    pub fn contention_allowance(mut self, factor: f64) -> Self {
        self.config.contention_allowance = factor;
        self.measure = false;
        self
    }

    /// The contention allowance given, or measured at [`SimBuilder::build`] by a FIFO replay of
    /// the same jobs on the same cluster under the other settings ([`contention_allowance`]).
    pub fn allowance(self, allowance: Allowance) -> Self {
        match allowance {
            Allowance::Given(factor) => self.contention_allowance(factor),
            Allowance::Measured => SimBuilder {
                measure: true,
                ..self
            },
        }
    }

    /// Whether idle rounds may be skipped ([`SimConfig::skip_idle_rounds`]).
    pub fn skip_idle_rounds(mut self, skip: bool) -> Self {
        self.config.skip_idle_rounds = skip;
        self
    }

    /// What to do with jobs the cluster can never run ([`SimConfig::unplaceable`]).
    pub fn unplaceable(mut self, unplaceable: Unplaceable) -> Self {
        self.config.unplaceable = unplaceable;
        self
    }

    /// The simulator, its settings and jobs checked (the admission rules: a bad setting or a
    /// job the cluster can never run is an error naming it, unless told to skip such jobs).
    /// Every job starts fresh at its arrival, whatever progress or placement it carries.
    pub fn build(self) -> Result<Simulator<'a>> {
        let mut config = self.config;
        if self.measure {
            config.contention_allowance =
                contention_allowance(self.perf, config, self.cluster.clone(), self.jobs.clone())?;
        }
        Simulator::new(self.perf, config, self.cluster, self.jobs)
    }
}

impl<'a> Simulator<'a> {
    /// A simulator of `jobs` (any order) on `cluster`, priced by `perf`, with the settings to
    /// name next.
    pub fn builder(perf: &'a dyn PerfModel, cluster: Cluster, jobs: Vec<Job>) -> SimBuilder<'a> {
        SimBuilder {
            perf,
            cluster,
            jobs,
            config: SimConfig::default(),
            measure: false,
        }
    }

    pub(super) fn new(
        perf: &'a dyn PerfModel,
        config: SimConfig,
        cluster: Cluster,
        jobs: Vec<Job>,
    ) -> Result<Self> {
        let (jobs, unplaceable) = super::admission::admit(perf, &config, &cluster, jobs)?;
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
            cpu_mem: CpuMemUse::default(),
            cpu_mem_now: None,
            perf,
            config,
            scratch: ClusterSnapshot::from_parts(0.0, cluster.clone(), Vec::new()),
            priced: ClusterSnapshot::from_parts(0.0, cluster, Vec::new()),
            index_of: jobs.iter().enumerate().map(|(i, j)| (j.id, i)).collect(),
            jobs,
            state,
            active: Vec::new(),
            finished_count: 0,
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

    pub(super) fn push(&mut self, t: f64, e: Event) {
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

    /// The settings it runs with (the contention allowance measured, if it was).
    pub fn settings(&self) -> &SimConfig {
        &self.config
    }

    /// Events processed so far (arrivals, rounds, completions, restarts done; superseded
    /// completion and restart events are dropped uncounted).
    pub fn events_processed(&self) -> u64 {
        self.processed
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
        self.finished_count == self.state.len()
    }

    /// Recomputes every running job's in-context speed and its completion event.
    pub(super) fn reprice(&mut self) -> Result<()> {
        // Only the jobs that hold GPUs matter for speeds (all of them active, in index order);
        // cloning the rest would cost O(trace).
        let running: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|&i| self.state[i].assignment.is_some())
            .collect();
        if self.perf.progress_dependent() {
            // Speeds move with progress (goodput): the cap of each job alone moves too.
            for &i in &running {
                if let Some(a) = self.state[i].assignment.clone() {
                    self.state[i].alone_speed = self.alone_speed(i, &a);
                }
            }
        }
        let speeds = self.speeds_of(&running, true)?;
        for &i in &self.active {
            self.state[i].speed = 0.0;
        }
        self.set_speeds(speeds);
        let active = std::mem::take(&mut self.active);
        self.reissue(&active);
        self.active = active;
        Ok(())
    }

    /// [`Simulator::reprice`] after a job left `servers` (ascending), with the same result: a
    /// job's speed in context depends only on the jobs sharing one of its servers (PCIe
    /// switches, sockets, NIC: `perf::speeds`), so only the jobs with a task there can change,
    /// and pricing them needs only the jobs on their own servers. A completion frees one job's
    /// servers; re-pricing every running job for it made a replay's cost grow with jobs ×
    /// running jobs.
    fn reprice_around(&mut self, servers: &[usize]) -> Result<()> {
        let on =
            |a: &Assignment, set: &[usize]| a.task_servers().any(|s| set.binary_search(&s).is_ok());
        let assigned = |i: &usize| self.state[*i].assignment.as_ref();
        let touched: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|i| assigned(i).is_some_and(|a| on(a, servers)))
            .collect();
        if touched.is_empty() {
            return Ok(());
        }
        let mut around: Vec<usize> = touched
            .iter()
            .filter_map(assigned)
            .flat_map(Assignment::servers)
            .collect();
        around.sort_unstable();
        around.dedup();
        let context: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|i| assigned(i).is_some_and(|a| on(a, &around)))
            .collect();
        let mut speeds = self.speeds_of(&context, false)?;
        speeds.retain(|(id, _)| touched.binary_search(&self.index_of[id]).is_ok());
        self.set_speeds(speeds);
        self.reissue(&touched);
        Ok(())
    }

    /// In-context speeds of the running jobs `jobs` (ascending indices), each priced with the
    /// others of `jobs` as its only co-runners; into `priced` (the round's full set, kept for
    /// the accounting) when `all`, else into the scratch snapshot.
    fn speeds_of(&mut self, jobs: &[usize], all: bool) -> Result<Vec<(JobId, perf::Speed)>> {
        let schedule = Schedule {
            assignments: jobs
                .iter()
                .filter_map(|&i| self.state[i].assignment.clone())
                .collect(),
        };
        let priced: Vec<_> = jobs.iter().map(|&i| self.job_now(i)).collect();
        let snapshot = if all {
            &mut self.priced
        } else {
            &mut self.scratch
        };
        snapshot.time_s = self.now;
        snapshot.jobs.clear();
        snapshot.jobs.extend(priced);
        snapshot.reindex();
        perf::speeds(self.perf, snapshot, &schedule)
    }

    /// Sets each job's speed from its speed in context, as the work accrues it.
    fn set_speeds(&mut self, speeds: impl IntoIterator<Item = (JobId, perf::Speed)>) {
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
    }

    /// Issues a new completion event for each of `jobs` whose progress rate changed.
    fn reissue(&mut self, jobs: &[usize]) {
        for &i in jobs {
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
    }

    /// What a scheduler sees now: the jobs that have arrived and not finished.
    pub(crate) fn snapshot(&self) -> ClusterSnapshot {
        let jobs = self
            .active
            .iter()
            .map(|&i| (&self.jobs[i], &self.state[i], &self.records[i]))
            .map(|(j, s, r)| {
                let mut j = j.clone();
                // Keep the snapshot valid when progress lands a hair short of the total.
                j.run = RunState {
                    done_iterations: s.done.min(j.total_iterations * (1.0 - 1e-12)),
                    current: s.assignment.clone(),
                    restarts: r.restarts,
                    attained_gpu_s: r.gpu_seconds,
                    waited_s: r.waiting_s,
                };
                j
            })
            .collect();
        ClusterSnapshot::from_parts(self.now, self.priced.cluster.clone(), jobs)
    }

    /// Applies a round's decision at the current time: validates it against the snapshot the
    /// round saw (an invalid schedule is an error, never silently fixed), starts, moves, resizes
    /// and preempts jobs, then schedules the next round and re-prices. Returns the ids of the
    /// jobs whose change costs a restart. `who` names the decider in errors.
    pub(super) fn decide(
        &mut self,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
        who: &str,
    ) -> Result<Vec<JobId>> {
        let violations = schedule.validate(snapshot);
        if !violations.is_empty() {
            // Nothing has changed yet: the caller may keep the round pending and retry.
            return Err(Error::InvalidSchedule {
                context: format!("round at t = {} s, policy `{who}`", self.now),
                violations,
            });
        }
        let mut restarted = Vec::new();
        self.cpu_mem_now = None;
        for k in 0..self.active.len() {
            let i = self.active[k];
            let id = self.jobs[i].id;
            let new = schedule.assignment(id).cloned();
            let old = self.state[i].assignment.clone();
            match (&old, &new) {
                // Same tasks in the same places: no restart, though the cores and memory may
                // change (a new tier takes effect in place).
                (Some(o), Some(n)) if same_assignment(o, n) => {
                    if o.tier != n.tier {
                        self.state[i].assignment = new;
                    }
                }
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
                && old
                    .as_ref()
                    .is_none_or(|o| !same_assignment(o, &a) || o.tier != a.tier)
            {
                self.state[i].alone_speed = self.alone_speed(i, &a);
                let r = &mut self.records[i];
                let gpus: usize = a.workers.iter().map(|w| w.gpus.len()).sum();
                r.max_gpus = r.max_gpus.max(gpus as u32);
                r.max_servers = r.max_servers.max(a.gpus_per_server().len() as u32);
            }
        }
        self.count_stranded();
        let waiting = !self.active.is_empty();
        let none_runs = self
            .active
            .iter()
            .all(|&i| self.state[i].assignment.is_none());
        if waiting && self.arrivals_left == 0 && none_runs {
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
            .active
            .iter()
            .any(|&i| self.state[i].assignment.is_none());
        // Rounds are skipped only while speeds cannot change between them: not when they move
        // with progress (goodput, priced afresh each round).
        if waiting
            && !queued
            && self.keeps
            && self.config.skip_idle_rounds
            && !self.perf.progress_dependent()
        {
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
    pub(super) fn after_change(&mut self) -> Result<()> {
        self.reprice()?;
        self.record_held();
        Ok(())
    }

    /// Records the GPUs held now, when they changed.
    fn record_held(&mut self) {
        let held = self.gpus_held();
        if self.utilization.last().is_none_or(|&(_, g)| g != held) {
            self.utilization.push((self.now, held));
        }
    }

    pub(super) fn begin_restart(&mut self, i: usize, new: Option<Assignment>) {
        self.state[i].assignment = new;
        self.cpu_mem_now = None;
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
                let at = self.active.partition_point(|&k| k < i);
                self.active.insert(at, i);
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
                let freed = self.state[job]
                    .assignment
                    .take()
                    .map(|a| a.servers())
                    .unwrap_or_default();
                // As the re-pricing of every job did for a finished one: no completion pending.
                self.state[job].version += 1;
                self.state[job].event_speed = None;
                self.finished_count += 1;
                if let Ok(at) = self.active.binary_search(&job) {
                    self.active.remove(at);
                }
                self.cpu_mem_now = None;
                self.records[job].finish_s = Some(t);
                if self.deferred.is_some() && self.emptied.is_none() && self.active.is_empty() {
                    self.emptied = Some(t);
                }
                // Only the jobs that shared a server with it run at another speed now.
                self.reprice_around(&freed)?;
            }
            Event::RestartDone { job, .. } => {
                // Nobody's speed changes (a restarting job holds its GPUs and prices as
                // running): the job only starts progressing again.
                self.state[job].restarting = false;
                self.reissue(&[job]);
            }
        }
        self.record_held();
        Ok(Next::Event)
    }

    /// When the round clock, deferred since a round at `from` (no tick scheduled because no job
    /// waited), ticks for an arrival at `t`: the first tick at or after `t` of the sequence
    /// `from + round, + round, ...` — added one round at a time, as the clock does, so the times
    /// are the same to the bit — unless the cluster emptied meanwhile and a tick found it empty,
    /// which stops the clock: then the arrival starts it afresh at `t`.
    pub(super) fn resumed_tick(&mut self, from: f64, t: f64) -> f64 {
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

    /// The cluster simulated.
    pub fn cluster(&self) -> &Cluster {
        &self.priced.cluster
    }
}
