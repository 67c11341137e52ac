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
use crate::perf::PerfModel;
#[cfg(doc)]
use crate::policies::LookaheadOptions;
pub use crate::policies::{CANDIDATES, Candidate};
use crate::policies::{
    LookaheadArrivals, LookaheadFollow, LookaheadTail, PolicyKind, PolicyOptions, greedy,
    same_schedule,
};
use crate::scheduler::{LookaheadRound, RoundEvent, Scheduler};
use crate::sim::{SimConfig, Simulator, fastest};

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
        if la.candidates == 0 || la.candidates > CANDIDATES.len() {
            return Err(Error::setting(
                "policy options",
                "lookahead.candidates",
                la.candidates,
                format!("between 1 and {}", CANDIDATES.len()),
            ));
        }
        Self::with_candidates(perf, opts, sim, &CANDIDATES[..la.candidates])
    }

    /// The lookahead of [`Lookahead::new`] over the proposals of `candidates` (the first one's
    /// kept on ties) instead of the first [`candidates`](LookaheadOptions::candidates) of
    /// [`CANDIDATES`]: what the distilled policy's labels are played with
    /// ([`crate::policies::distilled::GATE_CANDIDATES`]).
    pub fn with_candidates(
        perf: &'a dyn PerfModel,
        opts: &PolicyOptions,
        sim: SimConfig,
        candidates: &[Candidate],
    ) -> Result<Self> {
        let la = &opts.lookahead;
        if la.rounds == 0 {
            return Err(Error::setting(
                "policy options",
                "lookahead.rounds",
                0,
                crate::error::Expected::AtLeastOne,
            ));
        }
        if candidates.is_empty() {
            return Err(Error::setting(
                "policy options",
                "lookahead candidates",
                "none",
                crate::error::Expected::AtLeastOne,
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
        let mut built = Vec::new();
        for &c in candidates {
            built.push((c, c.build(perf, opts)?));
        }
        Ok(Lookahead {
            perf,
            sim,
            opts: opts.clone(),
            candidates: built,
            seen: Vec::new(),
            seen_ids: HashSet::new(),
            fastest: HashMap::new(),
            events: Vec::new(),
        })
    }

    /// Every candidate's proposal for the round, in candidate order, and per candidate the
    /// index of the first candidate that proposed the same schedule.
    fn proposals(&mut self, snap: &ClusterSnapshot) -> Result<(Vec<Schedule>, Vec<usize>)> {
        let mut schedules: Vec<Schedule> = Vec::new();
        let mut first = Vec::new();
        for (_, proposer) in &mut self.candidates {
            let schedule = proposer.schedule(snap)?;
            proposer.take_events();
            first.push(
                schedules
                    .iter()
                    .position(|s| same_schedule(s, &schedule))
                    .unwrap_or(schedules.len()),
            );
            schedules.push(schedule);
        }
        Ok((schedules, first))
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

/// The policy that decides a play's later rounds.
fn base_policy<'a>(
    perf: &'a dyn PerfModel,
    opts: &PolicyOptions,
) -> Result<Box<dyn Scheduler + 'a>> {
    opts.lookahead.base.build(perf, &greedy(opts))
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

/// One round's plays ([`Lookahead::plays`]): per candidate, in the lookahead's order, its
/// proposal and what its play cost.
#[derive(Debug, Clone)]
pub struct Plays {
    /// The candidates.
    pub candidates: Vec<Candidate>,
    /// Each candidate's proposal.
    pub schedules: Vec<Schedule>,
    /// Per candidate, the index of the first candidate with the same proposal (itself if none
    /// came before): proposals are played once each.
    pub first_same: Vec<usize>,
    /// Each candidate's cost: job-seconds in the system over the horizon plus the tail (the
    /// same for candidates with the same proposal; all 0 when every proposal is the same and
    /// nothing was played).
    pub costs: Vec<f64>,
    /// The horizon, seconds.
    pub horizon_s: f64,
}

impl Plays {
    /// The cheapest candidate, the first of them on a tie.
    pub fn best(&self) -> usize {
        let mut best = 0;
        for (k, &c) in self.costs.iter().enumerate() {
            if c < self.costs[best] {
                best = k;
            }
        }
        best
    }

    /// Whether any proposal differs from the first candidate's (otherwise nothing was played).
    pub fn played(&self) -> bool {
        self.first_same.iter().any(|&f| f != 0)
    }
}

impl Lookahead<'_> {
    /// Every candidate's proposal for the round of `snap`, each distinct one played (in
    /// parallel) from it: what [`Scheduler::schedule`] decides from, and what the distilled
    /// policy learns from.
    pub fn plays(&mut self, snap: &ClusterSnapshot) -> Result<Plays> {
        // The plays' rounds are the simulator's own.
        let horizon_s = f64::from(self.opts.lookahead.rounds) * self.sim.objective.round_s;
        let arrivals = self.arrivals(snap, horizon_s)?;
        let (schedules, first_same) = self.proposals(snap)?;
        let candidates: Vec<Candidate> = self.candidates.iter().map(|(c, _)| *c).collect();
        let distinct: Vec<usize> = (0..schedules.len())
            .filter(|&k| first_same[k] == k)
            .collect();
        if distinct.len() == 1 {
            return Ok(Plays {
                costs: vec![0.0; schedules.len()],
                candidates,
                schedules,
                first_same,
                horizon_s,
            });
        }
        let (perf, config, opts) = (self.perf, self.sim, &self.opts);
        let fastest = &self.fastest;
        let tail = |id: JobId| fastest.get(&id).copied();
        let tail: Option<&(dyn Fn(JobId) -> Option<(f64, f64)> + Sync)> =
            (opts.lookahead.tail == LookaheadTail::Bound).then_some(&tail);
        let played: Vec<Result<f64>> = distinct
            .par_iter()
            .map(|&k| {
                let mut base = match opts.lookahead.follow {
                    LookaheadFollow::Base => base_policy(perf, opts)?,
                    LookaheadFollow::Candidate => candidates[k].build(perf, opts)?,
                };
                let play = Play {
                    perf,
                    config,
                    snap,
                    horizon_s,
                    tail,
                };
                play.cost(arrivals.clone(), &schedules[k], base.as_mut())
            })
            .collect();
        let mut costs = vec![0.0; schedules.len()];
        for (&k, c) in distinct.iter().zip(played) {
            costs[k] = c?;
        }
        for k in 0..costs.len() {
            costs[k] = costs[first_same[k]];
        }
        Ok(Plays {
            candidates,
            schedules,
            first_same,
            costs,
            horizon_s,
        })
    }
}

impl Scheduler for Lookahead<'_> {
    fn name(&self) -> &str {
        "lookahead"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        self.events.clear();
        let started = Instant::now();
        let mut plays = self.plays(snap)?;
        if !plays.played() {
            return Ok(plays.schedules.swap_remove(0));
        }
        let best = plays.best();
        self.events.push(RoundEvent::LookedAhead(LookaheadRound {
            chosen: plays.candidates[best].name(),
            distinct: plays
                .first_same
                .iter()
                .enumerate()
                .filter(|&(k, &f)| f == k)
                .count() as u32,
            saved_s: plays.costs[0] - plays.costs[best],
            wall_s: started.elapsed().as_secs_f64(),
        }));
        Ok(plays.schedules.swap_remove(best))
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        std::mem::take(&mut self.events)
    }
}
