//! What makes the exact scheduler the best expert coda has: a heuristic start it must beat
//! ([`BestHeuristic`]) and a back-fill pass that gives GPUs the program left idle to waiting
//! jobs when that scores higher ([`Backfill`]). Both price schedules with the same
//! [`RoundPricing`] the program maximises, so neither can lower the round's objective.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::Placement;
use super::baselines::{Optimus, Pollux, SjfBco, Srtf};
use super::packer::Packer;
use super::sizing::Base;
use crate::error::Result;
use crate::model::JobPos;
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::{Objective, PricingCache, RoundPricing};
use crate::perf::PerfModel;
use crate::scheduler::{RoundEvent, Scheduler};

/// The highest-scoring schedule (under the objective) among stateless heuristics: `srtf`,
/// `sjf-bco`, `optimus` and `pollux`. An exact solve is started from it.
pub struct BestHeuristic<'a> {
    perf: &'a dyn PerfModel,
    objective: Objective,
    candidates: Vec<Box<dyn Scheduler + 'a>>,
}

impl<'a> BestHeuristic<'a> {
    /// The four heuristics, scored by `objective`.
    pub fn new(perf: &'a dyn PerfModel, objective: Objective) -> Self {
        let mut pollux = Base::new(perf);
        pollux.one_distributed_per_server = true;
        BestHeuristic {
            perf,
            objective,
            candidates: vec![
                Box::new(Srtf(Base::new(perf))),
                Box::new(SjfBco(Base::new(perf))),
                Box::new(Optimus(Base::new(perf))),
                Box::new(Pollux(pollux)),
            ],
        }
    }
}

impl Scheduler for BestHeuristic<'_> {
    fn name(&self) -> &str {
        "best-heuristic"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let pricing = RoundPricing::new(self.perf, snap, self.objective);
        let mut best: Option<(f64, Schedule)> = None;
        for h in &mut self.candidates {
            let s = h.schedule(snap)?;
            if !s.validate(snap).is_empty() {
                continue;
            }
            let Ok(score) = pricing.score(&s) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| score.total > b.0) {
                best = Some((score.total, s));
            }
        }
        Ok(best.map(|b| b.1).unwrap_or_default())
    }
}

/// Work conservation after any scheduler: the waiting jobs it left out, highest
/// [`RoundPricing::alone_value`] first, are placed on what is free (consolidated, at the
/// requested size and then smaller down to the minimum) wherever that raises the round's
/// objective. The inner schedule's assignments are never moved.
pub struct Backfill<'a> {
    inner: Box<dyn Scheduler + 'a>,
    perf: &'a dyn PerfModel,
    objective: Objective,
    /// The last round's back-fill, until taken ([`Scheduler::take_events`]).
    events: Vec<RoundEvent>,
    /// Option speeds kept across rounds (every job is priced every round).
    kept: PricingCache,
}

impl<'a> Backfill<'a> {
    /// Back-fills after `inner`, pricing with `perf` and `objective`.
    pub fn new(
        inner: Box<dyn Scheduler + 'a>,
        perf: &'a dyn PerfModel,
        objective: Objective,
    ) -> Self {
        Backfill {
            inner,
            perf,
            objective,
            events: Vec::new(),
            kept: PricingCache::default(),
        }
    }
}

/// Below this a back-fill is not worth a change (the program's own optimality tolerance).
const GAIN_EPS: f64 = 1e-9;

impl Scheduler for Backfill<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        self.events.clear();
        let schedule = self.inner.schedule(snap)?;
        self.kept.keep_only(snap);
        let pricing = RoundPricing::keeping(self.perf, snap, self.objective, &self.kept);
        let (filled, added) = fill(&pricing, schedule)?;
        if added > 0 {
            self.events.push(RoundEvent::BackFilled(added));
        }
        Ok(filled)
    }

    fn keeps_when_none_wait(&self) -> bool {
        self.inner.keeps_when_none_wait()
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        let mut events = self.inner.take_events();
        events.append(&mut self.events);
        events
    }
}

/// [`Backfill`]'s pass on a schedule decided elsewhere: `schedule` with the waiting jobs it left
/// out placed where that raises the round's objective, and how many were placed.
pub fn back_fill(
    perf: &dyn PerfModel,
    objective: Objective,
    snap: &ClusterSnapshot,
    schedule: Schedule,
) -> Result<(Schedule, u64)> {
    fill(&RoundPricing::new(perf, snap, objective), schedule)
}

/// [`back_fill`] on a priced round.
fn fill(pricing: &RoundPricing<'_>, schedule: Schedule) -> Result<(Schedule, u64)> {
    let snap = pricing.snapshot();
    let mut best = pricing.score(&schedule)?.total;
    // The round's slot table, shared with the pricing's occupancy index.
    let mut packer = Packer::priced(pricing, pricing.perf());
    for a in &schedule.assignments {
        let Some(j) = snap.job_index(a.job) else {
            return Ok((schedule, 0));
        };
        if !packer.keep(&snap.jobs[j], a) {
            return Ok((schedule, 0));
        }
    }
    let mut left: Vec<usize> = (0..snap.jobs.len())
        .filter(|&j| {
            !schedule
                .assignments
                .iter()
                .any(|a| a.job == snap.jobs[j].id)
        })
        .collect();
    let value: Vec<f64> = (0..snap.jobs.len())
        .map(|j| pricing.alone_value(JobPos(j)))
        .collect();
    left.sort_by(|&a, &b| value[b].total_cmp(&value[a]).then(a.cmp(&b)));
    // Consolidated placement draws nothing; the stream is only the packer's signature.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut added = 0;
    for j in left {
        if packer.free_gpus() == 0 {
            break;
        }
        let job = &snap.jobs[j];
        let (asked, ps) = job.requested_or_min();
        for w in (job.workers.min..=asked.max(job.workers.min)).rev() {
            let mut trial = packer.clone();
            if !trial.place(job, w, ps, Placement::Consolidated, &mut rng) {
                continue;
            }
            let candidate = Schedule {
                assignments: trial.assignments().to_vec(),
            };
            let Ok(score) = pricing.score(&candidate) else {
                continue;
            };
            if score.total > best + GAIN_EPS {
                best = score.total;
                packer = trial;
                added += 1;
            }
            // One try per job, at the largest size that fits: each try re-scores the
            // round, and a smaller size of a job that does not pay seldom does.
            break;
        }
    }
    Ok((
        Schedule {
            assignments: packer.into_assignments(),
        },
        added,
    ))
}

/// Re-solving a round that has not changed: when the jobs are the ones of the last decision and
/// every job sits where that decision put it (nothing arrived, finished or failed to start), the
/// inner scheduler is asked again only every `every` rounds; in between the running jobs keep
/// their placements. Between two such rounds only the running jobs' remaining work moves (a
/// waiting job's coefficients do not change while it waits), so the decision is at most
/// `every − 1` rounds stale. `every = 1` asks every round.
pub struct Revisit<'a> {
    inner: Box<dyn Scheduler + 'a>,
    every: u32,
    /// The jobs and the schedule of the last decision, and rounds kept since.
    last: Option<(Vec<crate::model::JobId>, Schedule, u32)>,
    /// The last round, kept or re-decided, until taken ([`Scheduler::take_events`]).
    events: Vec<RoundEvent>,
    /// Whether the inner scheduler decided the last round (its events are then that round's).
    asked: bool,
}

impl<'a> Revisit<'a> {
    /// Asks `inner` when something changed, and at least every `every` rounds (≥ 1).
    pub fn new(inner: Box<dyn Scheduler + 'a>, every: u32) -> Self {
        Revisit {
            inner,
            every: every.max(1),
            last: None,
            events: Vec::new(),
            asked: false,
        }
    }
}

impl Scheduler for Revisit<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        self.events.clear();
        self.asked = false;
        let mut ids: Vec<_> = snap.jobs.iter().map(|j| j.id).collect();
        ids.sort_unstable();
        if let Some((last_ids, last, age)) = &mut self.last {
            let unchanged = *last_ids == ids
                && snap
                    .jobs
                    .iter()
                    .all(|j| j.run.current.as_ref() == last.assignment(j.id));
            if unchanged && *age + 1 < self.every {
                *age += 1;
                self.events.push(RoundEvent::Revisited {
                    kept: true,
                    every: self.every,
                });
                return Ok(snap.current_schedule());
            }
        }
        self.events.push(RoundEvent::Revisited {
            kept: false,
            every: self.every,
        });
        let s = self.inner.schedule(snap)?;
        self.asked = true;
        self.last = Some((ids, s.clone(), 0));
        Ok(s)
    }

    fn keeps_when_none_wait(&self) -> bool {
        self.inner.keeps_when_none_wait()
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        let mut events = std::mem::take(&mut self.events);
        if std::mem::take(&mut self.asked) {
            events.extend(self.inner.take_events());
        }
        events
    }
}
