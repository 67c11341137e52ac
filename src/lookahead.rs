//! The lookahead policy (`--policy lookahead`): rollout policy improvement over the simulator.
//!
//! Each round, the first K of [`CANDIDATES`] each propose a schedule for the round (the learned
//! policy's own decision first; K is [`candidates`](LookaheadOptions::candidates)). Every
//! distinct proposal is then *played*: a copy of the simulator is resumed from the round's
//! snapshot ([`Simulator::resume`]), the proposal is applied, and the base policy
//! ([`base`](LookaheadOptions::base)) decides every later round until
//! [`rounds`](LookaheadOptions::rounds) rounds have passed. The proposal whose play leaves the
//! fewest job-seconds in the system over that horizon ([`Simulator::time_in_system_s`]: the
//! area under the number of jobs present, whose sum over a whole run is the sum of JCTs) plus a
//! lower bound on what the jobs left at its end will still spend
//! ([`Simulator::remaining_time_bound_s`], [`tail`](LookaheadOptions::tail)) is the round's
//! decision; ties keep the earlier candidate, so a play that changes nothing keeps the learned
//! policy's decision. Plays run in parallel (rayon), one per candidate.
//!
//! **What a play knows.** The snapshot only: the jobs that have arrived, their progress,
//! placements and total work — which every policy of coda reads (the objective prices
//! remaining work; SRTF is an oracle of it) — and, with [`LookaheadArrivals::Sampled`], jobs
//! drawn from the ones seen so far at the rate seen so far. The trace's future arrivals are
//! never read. A play does not know that a running job was mid-restart (it progresses at once),
//! and it prices with the same performance model and contention allowance as the run it sits
//! in: the lookahead is as exact as the simulator, not more.
//!
//! The policy owns the simulator it plays in, so it sits above [`crate::sim`] and is built
//! with the simulator's settings ([`Lookahead::new`]); [`crate::policies::PolicyKind::build`]
//! refuses it.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, Job, JobId, RunState, Schedule};
use crate::objective::same_assignment;
use crate::perf::PerfModel;
#[cfg(doc)]
use crate::policies::LookaheadOptions;
use crate::policies::{
    Backfill, LookaheadArrivals, LookaheadFollow, LookaheadTail, PolicyKind, PolicyOptions,
};
use crate::scheduler::{LookaheadRound, RoundEvent, Scheduler};
use crate::sim::{SimConfig, Simulator, fastest};

/// Who proposes a schedule to the lookahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Candidate {
    /// A policy as `--policy` builds it.
    Policy(PolicyKind),
    /// The learned policy decoding greedily (one decoding a round).
    LearnedGreedy,
    /// Every running job kept where it is, idle GPUs back-filled: the proposal that restarts
    /// nothing.
    Keep,
}

impl Candidate {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Candidate::Policy(k) => k.name(),
            Candidate::LearnedGreedy => "learned-greedy",
            Candidate::Keep => "keep",
        }
    }
}

impl Candidate {
    /// The policy that proposes for this candidate.
    fn build<'a>(
        self,
        perf: &'a dyn PerfModel,
        opts: &PolicyOptions,
    ) -> Result<Box<dyn Scheduler + 'a>> {
        Ok(match self {
            Candidate::Policy(k) => k.build(perf, opts)?,
            Candidate::LearnedGreedy => PolicyKind::Learned.build(perf, &greedy(opts))?,
            Candidate::Keep => Box::new(Backfill::new(Box::new(Keep), perf, opts.objective)),
        })
    }
}

/// The candidates, in the order [`candidates`](LookaheadOptions::candidates) takes them: the
/// learned policy's decision first (what a round keeps when no play beats it), the proposal
/// that moves nothing, the learned greedy decoding, then the baselines that lead the replays
/// (Pollux, SRTF, DRF), level 1 with the packer, and the rest.
pub const CANDIDATES: [Candidate; 10] = [
    Candidate::Policy(PolicyKind::Learned),
    Candidate::Keep,
    Candidate::LearnedGreedy,
    Candidate::Policy(PolicyKind::Pollux),
    Candidate::Policy(PolicyKind::Srtf),
    Candidate::Policy(PolicyKind::Drf),
    Candidate::Policy(PolicyKind::LearnedPacker),
    Candidate::Policy(PolicyKind::Tiresias),
    Candidate::Policy(PolicyKind::Optimus),
    Candidate::Policy(PolicyKind::SjfBco),
];

/// The lookahead policy (see the [module docs](self)).
pub struct Lookahead<'a> {
    perf: &'a dyn PerfModel,
    sim: SimConfig,
    opts: PolicyOptions,
    /// Each candidate and the policy that proposes for it.
    candidates: Vec<(Candidate, Box<dyn Scheduler + 'a>)>,
    /// Every job seen so far (progress reset), the material of sampled arrivals.
    seen: Vec<Job>,
    seen_ids: HashSet<JobId>,
    /// Per job seen (and job imagined, under its template's entry): its most iterations per
    /// second alone and fewest GPU-seconds per iteration, for the tail bound.
    fastest: HashMap<JobId, (f64, f64)>,
    events: Vec<RoundEvent>,
}

impl<'a> Lookahead<'a> {
    /// The lookahead with `opts` ([`PolicyOptions::lookahead`] and what its candidates and base
    /// need), playing in simulators with the settings `sim` (the run's own: round, restart,
    /// contention allowance). Its horizon, candidates and base are checked here.
    pub fn new(perf: &'a dyn PerfModel, opts: &PolicyOptions, sim: SimConfig) -> Result<Self> {
        let la = &opts.lookahead;
        if la.rounds == 0 {
            return Err(Error::setting(
                "policy options",
                "lookahead.rounds",
                0,
                crate::error::Expected::AtLeastOne,
            ));
        }
        if la.candidates == 0 || la.candidates > CANDIDATES.len() {
            return Err(Error::setting(
                "policy options",
                "lookahead.candidates",
                la.candidates,
                format!("between 1 and {}", CANDIDATES.len()),
            ));
        }
        if la.base == PolicyKind::Lookahead {
            return Err(Error::setting(
                "policy options",
                "lookahead.base",
                "lookahead",
                "a policy built from its options alone (a lookahead inside every play would \
                 never end)",
            ));
        }
        // The base is built once here so that a bad base is an error now, not in a play.
        base_policy(perf, opts)?;
        let mut candidates = Vec::new();
        for &c in &CANDIDATES[..la.candidates] {
            candidates.push((c, c.build(perf, opts)?));
        }
        Ok(Lookahead {
            perf,
            sim,
            opts: opts.clone(),
            candidates,
            seen: Vec::new(),
            seen_ids: HashSet::new(),
            fastest: HashMap::new(),
            events: Vec::new(),
        })
    }

    /// The distinct proposals of the round, each with the first candidate that made it.
    fn proposals(&mut self, snap: &ClusterSnapshot) -> Result<Vec<(Candidate, Schedule)>> {
        let mut out: Vec<(Candidate, Schedule)> = Vec::new();
        for (c, proposer) in &mut self.candidates {
            let schedule = proposer.schedule(snap)?;
            proposer.take_events();
            if !out.iter().any(|(_, s)| same_schedule(s, &schedule)) {
                out.push((*c, schedule));
            }
        }
        Ok(out)
    }

    /// The jobs a play imagines arriving after `snap` (see [`LookaheadArrivals`]); every job
    /// of `snap` seen (and priced at its fastest, with a tail) on the way.
    fn arrivals(&mut self, snap: &ClusterSnapshot, horizon_s: f64) -> Result<Vec<Job>> {
        for j in &snap.jobs {
            if self.seen_ids.insert(j.id) {
                let mut j = j.clone();
                j.run = RunState::default();
                if self.opts.lookahead.tail == LookaheadTail::Bound {
                    let f = fastest(self.perf, &snap.cluster, &j)?;
                    self.fastest
                        .insert(j.id, (f.speed(), f.gpu_s_per_iteration()));
                }
                self.seen.push(j);
            }
        }
        Ok(self.imagined(snap, horizon_s))
    }

    /// Jobs drawn from those seen, at the rate seen (none unless [`LookaheadArrivals::Sampled`]).
    fn imagined(&mut self, snap: &ClusterSnapshot, horizon_s: f64) -> Vec<Job> {
        if self.opts.lookahead.arrivals == LookaheadArrivals::None || self.seen.is_empty() {
            return Vec::new();
        }
        let first = self
            .seen
            .iter()
            .map(|j| j.arrival_s)
            .fold(f64::INFINITY, f64::min);
        let elapsed = snap.time_s - first;
        if elapsed <= 0.0 {
            return Vec::new();
        }
        let rate = self.seen.len() as f64 / elapsed;
        let mut rng = ChaCha8Rng::seed_from_u64(self.opts.seed ^ snap.time_s.to_bits());
        // Ids above every id seen: no imagined job collides with a real one.
        let mut next_id = self.seen.iter().map(|j| j.id.0).max().unwrap_or(0) + 1;
        let mut t = snap.time_s;
        let mut out = Vec::new();
        loop {
            // Exponential gaps: a Poisson process at `rate`.
            let u: f64 = rng.random();
            t += -(1.0 - u).ln() / rate;
            if t >= snap.time_s + horizon_s {
                break;
            }
            let mut j = self.seen[rng.random_range(0..self.seen.len())].clone();
            if let Some(&f) = self.fastest.get(&j.id) {
                self.fastest.insert(JobId(next_id), f);
            }
            j.id = JobId(next_id);
            j.arrival_s = t;
            next_id += 1;
            out.push(j);
        }
        out
    }
}

/// Every running job where it is, every waiting job waiting (back-filled by its wrapper).
struct Keep;

impl Scheduler for Keep {
    fn name(&self) -> &str {
        "keep"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        Ok(snap.current_schedule())
    }
}

/// `opts` with learned policies decoding greedily (a play's base, the greedy candidate).
fn greedy(opts: &PolicyOptions) -> PolicyOptions {
    let mut o = opts.clone();
    o.learned.samples = 1;
    o
}

/// The policy that decides a play's later rounds.
fn base_policy<'a>(
    perf: &'a dyn PerfModel,
    opts: &PolicyOptions,
) -> Result<Box<dyn Scheduler + 'a>> {
    opts.lookahead.base.build(perf, &greedy(opts))
}

/// Whether two schedules put the same jobs in the same places at the same tiers.
fn same_schedule(a: &Schedule, b: &Schedule) -> bool {
    a.assignments.len() == b.assignments.len()
        && a.assignments.iter().all(|x| {
            b.assignment(x.job)
                .is_some_and(|y| same_assignment(x, y) && x.tier == y.tier)
        })
}

/// One round's plays: where they start, how far they go, what they add at the end.
struct Play<'p> {
    perf: &'p dyn PerfModel,
    config: SimConfig,
    snap: &'p ClusterSnapshot,
    horizon_s: f64,
    /// The jobs' fastest speeds, for the tail bound (`None`: no tail).
    tail: Option<&'p (dyn Fn(JobId) -> Option<(f64, f64)> + Sync)>,
}

impl Play<'_> {
    /// Plays `first` and then `base` until the horizon: the job-seconds in the system over
    /// it, plus the tail bound on the jobs left.
    fn cost(&self, arrivals: Vec<Job>, first: &Schedule, base: &mut dyn Scheduler) -> Result<f64> {
        let start = self.snap.time_s;
        let end = start + self.horizon_s;
        let config = SimConfig {
            horizon_s: end,
            ..self.config
        };
        let mut sim = Simulator::resume(self.perf, config, self.snap, arrivals)?;
        if sim.next_round()?.is_some() {
            sim.apply(first)?;
            sim.run(base)?;
        }
        let tail = self.tail.map_or(0.0, |f| sim.remaining_time_bound_s(f));
        Ok(sim.time_in_system_s(start, end) + tail)
    }
}

impl Scheduler for Lookahead<'_> {
    fn name(&self) -> &str {
        "lookahead"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        self.events.clear();
        let started = Instant::now();
        // The plays' rounds are the simulator's own.
        let horizon_s = f64::from(self.opts.lookahead.rounds) * self.sim.objective.round_s;
        let arrivals = self.arrivals(snap, horizon_s)?;
        let mut proposals = self.proposals(snap)?;
        if proposals.len() == 1 {
            return Ok(proposals.remove(0).1);
        }
        let (perf, config, opts) = (self.perf, self.sim, &self.opts);
        let fastest = &self.fastest;
        let tail = |id: JobId| fastest.get(&id).copied();
        let tail: Option<&(dyn Fn(JobId) -> Option<(f64, f64)> + Sync)> =
            (opts.lookahead.tail == LookaheadTail::Bound).then_some(&tail);
        let costs: Vec<Result<f64>> = proposals
            .par_iter()
            .map(|(c, first)| {
                let mut base = match opts.lookahead.follow {
                    LookaheadFollow::Base => base_policy(perf, opts)?,
                    LookaheadFollow::Candidate => c.build(perf, opts)?,
                };
                let play = Play {
                    perf,
                    config,
                    snap,
                    horizon_s,
                    tail,
                };
                play.cost(arrivals.clone(), first, base.as_mut())
            })
            .collect();
        let costs = costs.into_iter().collect::<Result<Vec<f64>>>()?;
        // The first of the cheapest: ties keep the earlier candidate (the learned policy's).
        let mut best = 0;
        for (k, &c) in costs.iter().enumerate() {
            if c < costs[best] {
                best = k;
            }
        }
        self.events.push(RoundEvent::LookedAhead(LookaheadRound {
            chosen: proposals[best].0.name(),
            distinct: proposals.len() as u32,
            saved_s: costs[0] - costs[best],
            wall_s: started.elapsed().as_secs_f64(),
        }));
        Ok(proposals.swap_remove(best).1)
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        std::mem::take(&mut self.events)
    }
}
