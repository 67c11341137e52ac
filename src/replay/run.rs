//! A replay run under one policy, watched by observers, and what it leaves: its summary, per-job
//! records, utilisation and the policy's solves ([`ReplayRun`]).

use std::time::Instant;

use super::spec::Replay;
use super::summary::RunSummary;
use crate::error::Result;
use crate::lookahead::Lookahead;
use crate::model::ClusterSnapshot;
use crate::perf::PerfModel;
use crate::policies::PolicyKind;
use crate::scheduler::{RoundEvent, RoundEvents, RoundSolve};
use crate::sim::{self, JctBound, JobRecord, LpLimits, Observe, Simulator};
use crate::workload::Workload;

/// One finished replay.
#[derive(Debug, Clone)]
pub struct ReplayRun {
    /// What `coda simulate --json` prints.
    pub summary: RunSummary,
    /// One record per job.
    pub records: Vec<JobRecord>,
    /// (time, GPUs busy) at every change.
    pub utilization: Vec<(f64, u64)>,
    /// The optimising policy's solve of every round (empty for heuristics).
    pub solves: Vec<RoundSolve>,
}

/// The observer every replay keeps: what the policy reported of each round
/// ([`crate::Scheduler::take_events`]), for the run's solves and its summary's notes.
#[derive(Debug, Clone, Default)]
pub(crate) struct RoundLog(pub(crate) RoundEvents);

impl Observe for RoundLog {
    fn observe_round(
        &mut self,
        _sim: &Simulator<'_>,
        _snapshot: &ClusterSnapshot,
        events: &[RoundEvent],
    ) -> Result<()> {
        self.0.0.extend_from_slice(events);
        Ok(())
    }
}

impl Replay {
    /// Replays `workload` under `policy` at `allowance`, reporting to `observers` (a progress
    /// bar, say) besides the run's own log of what the policy reported of each round (its
    /// solves, for [`ReplayRun::solves`], and the summary's notes).
    pub fn run(
        &self,
        policy: PolicyKind,
        workload: &Workload,
        allowance: f64,
        perf: &dyn PerfModel,
        observers: &mut [&mut dyn Observe],
    ) -> Result<ReplayRun> {
        let opts = self.policy_options()?;
        let mut simulator = self.simulator(workload, allowance, perf)?;
        let mut scheduler = match policy {
            // The lookahead plays in simulators with this run's settings.
            PolicyKind::Lookahead => Box::new(Lookahead::new(perf, &opts, *simulator.settings())?),
            _ => policy.build(perf, &opts)?,
        };
        let mut log = RoundLog::default();
        let mut all: Vec<&mut dyn Observe> = Vec::with_capacity(observers.len() + 1);
        all.push(&mut log);
        for o in observers.iter_mut() {
            all.push(&mut **o);
        }
        let t = Instant::now();
        simulator.run_observed(scheduler.as_mut(), &mut all)?;
        let wall = t.elapsed().as_secs_f64();
        Ok(self.finish(policy.name(), workload, &simulator, wall, &log.0))
    }

    /// Lower bounds on the tracked jobs' average JCT that no policy beats on `workload`
    /// ([`JctBound`]; the simulator's settings and tracked window are this replay's), the
    /// time-indexed relaxation within `lp` when given.
    pub fn bound(
        &self,
        workload: &Workload,
        perf: &dyn PerfModel,
        lp: Option<LpLimits>,
    ) -> Result<JctBound> {
        // Contention only slows jobs down, whatever the allowance: none is measured.
        let simulator = self.simulator(workload, 1.0, perf)?;
        simulator.jct_bound(self.sim.track_from..self.sim.track_to, lp)
    }

    /// The summary and records of a finished `simulator` (run by `policy` in `wall_s`
    /// seconds, its rounds' `events`).
    pub fn finish(
        &self,
        policy: &str,
        workload: &Workload,
        simulator: &Simulator,
        wall_s: f64,
        events: &RoundEvents,
    ) -> ReplayRun {
        let gpus = workload.cluster.num_gpus();
        let window = self.sim.track_from..self.sim.track_to;
        let metrics = sim::metrics(simulator.records(), window, gpus);
        let processed = simulator.events_processed();
        ReplayRun {
            summary: RunSummary {
                policy: policy.to_string(),
                trace: workload.trace.clone(),
                cluster: workload.cluster_spec.clone(),
                gpus,
                seed: self.workload.seed,
                metrics,
                stranded_gpus: simulator.stranded_gpus(),
                cpu_mem: simulator.cpu_mem_use(),
                contention_allowance: simulator.settings().contention_allowance,
                events: processed,
                wall_s,
                events_per_s: processed as f64 / wall_s.max(1e-9),
                stall: simulator.stall().cloned(),
                unplaceable: simulator.unplaceable().to_vec(),
                policy_notes: events.notes(),
            },
            records: simulator.records().to_vec(),
            utilization: simulator.utilization().to_vec(),
            solves: events.solves(),
        }
    }
}
