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
use crate::model::{Assignment, ClusterSnapshot, Schedule};
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
/// objective. No task of the inner schedule is moved.
///
/// A first pass places the waiting jobs on what the schedule left free. A schedule may leave
/// waiting jobs no room while it gives others more than they asked, or leave a server's GPUs
/// idle while its cores or memory are held by the tiers and parameter servers it put there (a
/// window program hands them out without seeing the jobs outside its window). So while jobs are
/// left out, each server in turn has what its jobs hold there lowered — every tier to the job's
/// least (a tier changes in place), and the workers and parameter servers of jobs starting this
/// round cut to what they asked for (no restart: they start anyway) — and the jobs left out are
/// placed again; that is kept only where the round then scores higher than before.
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

/// Placements scored after one server's shedding beyond its free GPUs (a job that fits may not
/// pay; a bound on the cost of a pass on a busy round, not a tuned value).
const SHED_TRIES: usize = 4;

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

/// [`Backfill`]'s passes on a schedule decided elsewhere: `schedule` with the waiting jobs it
/// left out placed where that raises the round's objective, and how many were placed.
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
    let score = pricing.score(&schedule)?.total;
    let Some(packer) = packed(pricing, &schedule.assignments) else {
        return Ok((schedule, 0));
    };
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
    let mut best = place_waiting(pricing, packer, score, &left, usize::MAX)?;
    for server in 0..snap.cluster.servers.len() {
        if best.unfit.is_empty() {
            break;
        }
        let Some(shed) = shed(snap, best.packer.assignments(), server) else {
            continue;
        };
        let Some(packer) = packed(pricing, &shed.assignments) else {
            continue;
        };
        if packer.free_gpus_on(server).iter().all(|&f| !f) {
            continue;
        }
        let start = pricing.score(&shed)?.total;
        // What one server's shedding frees is a few GPUs: a few more tries than it has free.
        let free = packer.free_gpus_on(server).iter().filter(|&&f| f).count();
        let tried = place_waiting(pricing, packer, start, &best.unfit, free + SHED_TRIES)?;
        if tried.score > best.score + GAIN_EPS {
            best = Filled {
                added: best.added + tried.added,
                ..tried
            };
        }
    }
    Ok((
        Schedule {
            assignments: best.packer.into_assignments(),
        },
        best.added,
    ))
}

/// A packer holding `assignments`, or `None` if one of them does not fit (it is then left as
/// it is).
fn packed<'a>(pricing: &RoundPricing<'a>, assignments: &[Assignment]) -> Option<Packer<'a>> {
    let snap = pricing.snapshot();
    // The round's slot table, shared with the pricing's occupancy index.
    let mut packer = Packer::priced(pricing, pricing.perf());
    for a in assignments {
        let j = snap.job_index(a.job)?;
        if !packer.keep(&snap.jobs[j], a) {
            return None;
        }
    }
    Some(packer)
}

/// What a back-fill pass ends with.
struct Filled<'a> {
    packer: Packer<'a>,
    /// The round's objective with the packer's assignments.
    score: f64,
    /// Waiting jobs placed.
    added: u64,
    /// Waiting jobs that fitted nowhere at any size, or were not tried (no GPU or try left), in
    /// their order.
    unfit: Vec<usize>,
}

/// Places the jobs `left` (snapshot positions, in that order) on what `packer` has free,
/// consolidated, each at the largest size that fits, kept where the round's objective rises
/// above `score`; at most `tries` placements are scored (each scores the whole round).
fn place_waiting<'a>(
    pricing: &RoundPricing<'a>,
    mut packer: Packer<'a>,
    mut score: f64,
    left: &[usize],
    mut tries: usize,
) -> Result<Filled<'a>> {
    let snap = pricing.snapshot();
    // Consolidated placement draws nothing; the stream is only the packer's signature.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut added = 0;
    let mut unfit = Vec::new();
    for (n, &j) in left.iter().enumerate() {
        if packer.free_gpus() == 0 || tries == 0 {
            unfit.extend_from_slice(&left[n..]);
            break;
        }
        let job = &snap.jobs[j];
        let (asked, ps) = job.requested_or_min();
        let mut fitted = false;
        for w in (job.workers.min..=asked.max(job.workers.min)).rev() {
            let mut trial = packer.clone();
            if !trial.place(job, w, ps, Placement::Consolidated, &mut rng) {
                continue;
            }
            fitted = true;
            tries = tries.saturating_sub(1);
            let candidate = Schedule {
                assignments: trial.assignments().to_vec(),
            };
            let Ok(total) = pricing.score(&candidate).map(|s| s.total) else {
                continue;
            };
            if total > score + GAIN_EPS {
                score = total;
                packer = trial;
                added += 1;
            }
            // One try per job, at the largest size that fits: each try re-scores the
            // round, and a smaller size of a job that does not pay seldom does.
            break;
        }
        if !fitted {
            unfit.push(j);
        }
    }
    Ok(Filled {
        packer,
        score,
        added,
        unfit,
    })
}

/// `assignments` with what the jobs on `server` hold there lowered, or `None` if nothing can
/// be: every job with workers there at its least tier ([`crate::model::Job::least_tier`]; a tier
/// changes in place), and every job that is not running yet without the workers and parameter
/// servers it has there beyond the allocation it asked for (it starts this round anyway, so
/// this costs no restart).
fn shed(snap: &ClusterSnapshot, assignments: &[Assignment], server: usize) -> Option<Schedule> {
    let mut changed = false;
    let assignments = assignments
        .iter()
        .map(|a| {
            let mut a = a.clone();
            let Some(job) = snap.job_index(a.job).map(|j| &snap.jobs[j]) else {
                return a;
            };
            if a.workers.iter().any(|w| w.server.0 == server) {
                let least = job.least_tier();
                if job.worker_hold(least) < job.worker_hold(a.tier) {
                    a.tier = least;
                    changed = true;
                }
            }
            if job.run.current.is_none() {
                let (workers, ps) = job.requested_or_min();
                while a.workers.len() > workers.max(job.workers.min) as usize {
                    let Some(w) = a.workers.iter().rposition(|w| w.server.0 == server) else {
                        break;
                    };
                    a.workers.remove(w);
                    changed = true;
                }
                while a.ps.len() > ps.max(job.ps.min) as usize {
                    let Some(p) = a.ps.iter().rposition(|p| p.server.0 == server) else {
                        break;
                    };
                    a.ps.remove(p);
                    changed = true;
                }
            }
            a
        })
        .collect();
    changed.then_some(Schedule { assignments })
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
