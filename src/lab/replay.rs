//! One trace replay as `coda simulate` runs it, as plain data: the command line's flags
//! ([`ReplaySpec`], same names without the dashes, same defaults) and the run
//! ([`ReplaySpec::run`]). The command line and the Python package (`coda.simulate`) both go
//! through here, so a replay from Python and from the shell are the same replay.

use std::path::PathBuf;
use std::time::Instant;

use serde::Deserialize;

use crate::SolveSettings;
use crate::error::{Error, Result};
use crate::lab::report::RunSummary;
use crate::objective::Objective;
use crate::perf::PerfModel;
use crate::policies::{IlpOptions, LearnedOptions, PolicyKind, PolicyOptions, TiresiasOptions};
use crate::scheduler::{RoundSolve, RunLog};
use crate::sim::{self, JobRecord, SimConfig, Simulator, Unplaceable};
use crate::workload::trace::{CpuMemMode, TraceOptions};
use crate::workload::{self, Workload};

/// What a replay runs: the workload, the simulator and the policy settings. Each field is the
/// `coda simulate` flag of the same name (dashes for underscores), with its default; `coda
/// simulate --help` says more.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySpec {
    /// `philly`, `itp-cluster02`, `itp-cluster06`, `itp`, `alibaba`, or a CSV path.
    pub trace: String,
    /// `NxG`, `NxG:TYPE`, `alibaba-nodes` or a cluster JSON file; `None`: the trace's own.
    pub cluster: Option<String>,
    /// Seed of the trace's model assignment and of every random choice of the policy.
    pub seed: u64,
    /// Whether jobs offer CPU/memory tiers (`fungible`) or get their demand (`fixed`).
    pub cpu_mem: CpuMemMode,
    /// Cores per GPU every server gets instead of its own.
    pub cpu_per_gpu: Option<f64>,
    /// Only the first N jobs (after `skip`).
    pub take: Option<usize>,
    /// Jobs left out at the start of the trace.
    pub skip: usize,
    /// Folder of the shipped data.
    pub datasets: PathBuf,
    /// Seconds between rounds.
    pub round_s: f64,
    /// Seconds a job loses when its allocation or placement changes (an estimate).
    pub restart_s: f64,
    /// In-service credit κ of the objective.
    pub in_service_credit: f64,
    /// Simulated time at which the run stops.
    pub horizon_s: Option<f64>,
    /// Contention the trace durations already contain; `None`: measured by a FIFO replay (the
    /// command line's `auto`).
    pub contention_allowance: Option<f64>,
    /// Start of the tracked window (fraction of the jobs in arrival order).
    pub track_from: f64,
    /// End of the tracked window.
    pub track_to: f64,
    /// `ilp` policy: seconds per round.
    pub ilp_time_limit: f64,
    /// `ilp` policy: branch-and-bound node limit per round.
    pub ilp_node_limit: Option<u64>,
    /// `ilp` policy: the configuration program's work limit per round.
    pub ilp_work_limit: Option<u64>,
    /// `ilp` policy: jobs each round's program decides.
    pub ilp_max_jobs: usize,
    /// `ilp` policy: rounds between re-solves of an unchanged round.
    pub ilp_revisit_rounds: u32,
    /// `tiresias` policy: its promote knob.
    pub tiresias_promote_knob: f64,
    /// `ilp` policy: also start every solve from the learned policy's schedule.
    pub ilp_policy_start: bool,
    /// `learned` policy: its weights file (default: the shipped ones).
    pub policy_weights: Option<PathBuf>,
    /// `learned` policy: decodings per round (1: greedy).
    pub policy_samples: usize,
    /// Leave out jobs the cluster can never run instead of refusing the workload.
    pub skip_unplaceable: bool,
    /// Decide every round, idle ones included.
    pub every_round: bool,
}

impl Default for ReplaySpec {
    fn default() -> Self {
        ReplaySpec {
            trace: String::new(),
            cluster: None,
            seed: 0,
            cpu_mem: CpuMemMode::Fungible,
            cpu_per_gpu: None,
            take: None,
            skip: 0,
            datasets: PathBuf::from("datasets"),
            round_s: 300.0,
            restart_s: 60.0,
            in_service_credit: crate::objective::DEFAULT_IN_SERVICE_CREDIT,
            horizon_s: None,
            contention_allowance: None,
            track_from: 0.1,
            track_to: 0.9,
            ilp_time_limit: 10.0,
            ilp_node_limit: None,
            ilp_work_limit: None,
            ilp_max_jobs: 12,
            ilp_revisit_rounds: crate::policies::DEFAULT_ILP_REVISIT_ROUNDS,
            tiresias_promote_knob: 4.0,
            ilp_policy_start: false,
            policy_weights: None,
            policy_samples: crate::policies::learned::DEFAULT_SAMPLES,
            skip_unplaceable: false,
            every_round: false,
        }
    }
}

/// One finished replay.
pub struct Replay {
    /// What `coda simulate --json` prints.
    pub summary: RunSummary,
    /// One record per job.
    pub records: Vec<JobRecord>,
    /// (time, GPUs busy) at every change.
    pub utilization: Vec<(f64, u64)>,
    /// The optimising policy's solve of every round (empty for heuristics).
    pub solves: Vec<RoundSolve>,
}

impl ReplaySpec {
    /// Checks every field's range (the command line's parsers check the same ones one by one)
    /// and the fields that relate two of them; `origin` names where the spec came from.
    pub fn check(&self, origin: &str) -> Result<()> {
        self.check_named(origin, &str::to_string)
    }

    /// [`ReplaySpec::check`], each field named by `name` (the command line names its flags).
    pub fn check_named(&self, origin: &str, name: &dyn Fn(&str) -> String) -> Result<()> {
        let bad =
            |field: &str, v: f64, why: &str| Err(Error::setting(origin, &name(field), v, why));
        let finite_pos = |v: f64| v.is_finite() && v > 0.0;
        if self.trace.is_empty() {
            return Err(Error::setting(origin, "trace", "", "a trace is needed"));
        }
        for (f, v) in [("track_from", self.track_from), ("track_to", self.track_to)] {
            if !(0.0..=1.0).contains(&v) {
                return bad(f, v, "must be in [0, 1]");
            }
        }
        if self.track_from >= self.track_to {
            let why = format!("must be above {} {}", name("track_from"), self.track_from);
            return bad("track_to", self.track_to, &why);
        }
        if self.ilp_time_limit.is_nan() || self.ilp_time_limit <= 0.0 {
            return bad("ilp_time_limit", self.ilp_time_limit, "must be above 0");
        }
        if let Some(h) = self.horizon_s.filter(|h| !finite_pos(*h)) {
            return bad("horizon_s", h, "must be a positive number");
        }
        if let Some(c) = self.cpu_per_gpu.filter(|c| !finite_pos(*c)) {
            return bad("cpu_per_gpu", c, "must be a positive number");
        }
        if let Some(a) = self
            .contention_allowance
            .filter(|a| !(a.is_finite() && *a >= 1.0))
        {
            return bad("contention_allowance", a, "must be a number >= 1");
        }
        if !(self.tiresias_promote_knob.is_finite() && self.tiresias_promote_knob >= 0.0) {
            return bad(
                "tiresias_promote_knob",
                self.tiresias_promote_knob,
                "must be >= 0",
            );
        }
        for (f, v) in [
            ("take", self.take.unwrap_or(1)),
            ("ilp_max_jobs", self.ilp_max_jobs),
            ("policy_samples", self.policy_samples),
            ("ilp_revisit_rounds", self.ilp_revisit_rounds as usize),
            ("ilp_node_limit", self.ilp_node_limit.unwrap_or(1) as usize),
            ("ilp_work_limit", self.ilp_work_limit.unwrap_or(1) as usize),
        ] {
            if v == 0 {
                return bad(f, 0.0, "must be at least 1");
            }
        }
        if self.restart_s > self.round_s {
            let why = format!(
                "must be at most {} {}: a restart costs at most one round",
                name("round_s"),
                self.round_s
            );
            return bad("restart_s", self.restart_s, &why);
        }
        self.objective(origin).map(|_| ())
    }

    /// The round length and restart cost; the simulator charges and the `ilp` policy prices the
    /// same ones.
    pub fn objective(&self, origin: &str) -> Result<Objective> {
        if self.restart_s > self.round_s {
            return Err(Error::setting(
                origin,
                "restart_s",
                self.restart_s,
                format!(
                    "must be at most round_s {}: a restart costs at most one round",
                    self.round_s
                ),
            ));
        }
        Objective::new(self.round_s, self.restart_s)?.with_in_service_credit(self.in_service_credit)
    }

    /// The simulator's settings at `contention_allowance`.
    pub fn config(&self, contention_allowance: f64) -> Result<SimConfig> {
        Ok(SimConfig {
            objective: self.objective("replay")?,
            horizon_s: self.horizon_s.unwrap_or(f64::INFINITY),
            contention_allowance,
            skip_idle_rounds: !self.every_round,
            unplaceable: if self.skip_unplaceable {
                Unplaceable::Skip
            } else {
                Unplaceable::Reject
            },
        })
    }

    /// The contention allowance for `workload`: given, or measured by a FIFO replay.
    pub fn allowance(&self, workload: &Workload, perf: &dyn PerfModel) -> Result<f64> {
        match self.contention_allowance {
            Some(v) => Ok(v),
            None => sim::contention_allowance(
                perf,
                self.config(1.0)?,
                workload.cluster.clone(),
                workload.jobs.clone(),
            ),
        }
    }

    /// Every policy's settings.
    pub fn policy_options(&self) -> Result<PolicyOptions> {
        Ok(PolicyOptions {
            seed: self.seed,
            objective: self.objective("replay")?,
            tiresias: TiresiasOptions {
                promote_knob: self.tiresias_promote_knob,
                ..TiresiasOptions::default()
            },
            ilp: IlpOptions {
                solve: SolveSettings {
                    time_limit_s: self.ilp_time_limit,
                    node_limit: self.ilp_node_limit,
                    work_limit: self.ilp_work_limit,
                    seed: (self.seed % u64::from(u32::MAX)) as u32,
                    ..SolveSettings::default()
                },
                max_jobs: self.ilp_max_jobs,
                revisit_rounds: self.ilp_revisit_rounds,
                learned_start: self.ilp_policy_start,
            },
            learned: LearnedOptions {
                weights: self.policy_weights.clone(),
                samples: self.policy_samples,
            },
        })
    }

    /// The trace's jobs (after `skip`, up to `take`) on the cluster.
    pub fn workload(&self, perf: &dyn PerfModel) -> Result<Workload> {
        let opts = TraceOptions {
            seed: self.seed,
            cpu_mem: self.cpu_mem,
            server_cpu_per_gpu: self.cpu_per_gpu,
            ..TraceOptions::default()
        };
        let mut wl = workload::load(
            &self.trace,
            &self.datasets,
            self.cluster.as_deref(),
            self.take.map(|t| t + self.skip),
            &opts,
            perf,
        )?;
        if self.skip >= wl.jobs.len() {
            return Err(Error::setting(
                "simulate",
                "skip",
                self.skip,
                format!("fewer than the trace's {} jobs", wl.jobs.len()),
            ));
        }
        wl.jobs.drain(..self.skip);
        Ok(wl)
    }

    /// The simulator of `workload` at `allowance`, before its first round.
    pub fn simulator<'p>(
        &self,
        workload: &Workload,
        allowance: f64,
        perf: &'p dyn PerfModel,
    ) -> Result<Simulator<'p>> {
        Simulator::builder(perf, workload.cluster.clone(), workload.jobs.clone())
            .config(self.config(allowance)?)
            .build()
    }

    /// Replays `workload` under `policy`; `observe` sees the simulator every 500 events (a
    /// progress bar).
    pub fn run(
        &self,
        policy: PolicyKind,
        workload: &Workload,
        allowance: f64,
        perf: &dyn PerfModel,
        observe: &mut dyn FnMut(&Simulator),
    ) -> Result<Replay> {
        let opts = self.policy_options()?;
        let log = RunLog::default();
        let mut scheduler = policy.build_observed(perf, &opts, &log)?;
        let mut simulator = self.simulator(workload, allowance, perf)?;
        let t = Instant::now();
        simulator.run_observed(scheduler.as_mut(), 500, observe)?;
        let wall = t.elapsed().as_secs_f64();
        Ok(self.finish(
            policy.to_string(),
            workload,
            allowance,
            &simulator,
            wall,
            &log,
        ))
    }

    /// The summary and records of a finished `simulator` (run by `policy` in `wall_s`
    /// seconds).
    pub fn finish(
        &self,
        policy: String,
        workload: &Workload,
        allowance: f64,
        simulator: &Simulator,
        wall_s: f64,
        log: &RunLog,
    ) -> Replay {
        let gpus = workload.cluster.num_gpus();
        let metrics = sim::metrics(simulator.records(), self.track_from..self.track_to, gpus);
        let events = simulator.events_processed();
        Replay {
            summary: RunSummary {
                policy,
                trace: workload.trace.clone(),
                cluster: workload.cluster_spec.clone(),
                gpus,
                seed: self.seed,
                metrics,
                stranded_gpus: simulator.stranded_gpus(),
                cpu_mem: simulator.cpu_mem_use(),
                contention_allowance: allowance,
                events,
                wall_s,
                events_per_s: events as f64 / wall_s.max(1e-9),
                stall: simulator.stall().cloned(),
                unplaceable: simulator.unplaceable().to_vec(),
                policy_notes: log.notes(),
            },
            records: simulator.records().to_vec(),
            utilization: simulator.utilization().to_vec(),
            solves: log.solves(),
        }
    }
}
