//! Cores and memory as a decision: which CPU/memory tier each placed job's workers get
//! ([`crate::model::Job::tiers`], priced by [`crate::PerfModel::cpu_mem_speed`]).
//!
//! A policy places jobs at their demand (tier 0), which its own feasibility checks guarantee
//! fit; what is left of each server's cores and memory is then handed out, never taking
//! anything a placed task was promised, so a tier can only speed a job up and the schedule stays
//! valid:
//!
//! * [`TierRule::Greedy`] (coda's policies): the upgrade with the most gain per resource
//!   first, again and again while one fits. A job's gain is the share of its remaining work the
//!   upgrade adds per second (its speed-up × speed ÷ remaining work: what the objective pays
//!   for), its cost the cores and memory it takes, each as a share of its servers' capacity.
//! * [`TierRule::Tune`] (the `synergy-tune` baseline): Synergy's TUNE (Mohan et al., OSDI'22)
//!   after the baseline's placement: in the policy's order (shortest remaining time
//!   first), each job gets its best-case demand (its fastest tier) if that fits on its servers,
//!   else keeps its GPU-proportional demand. TUNE proper also picks servers where the best case
//!   fits; here the baseline's packer has placed the job already.
//!
//! Tiers are decided afresh every round from tier 0 (changing them is not a restart, see
//! [`crate::model::Assignment::tier`]); the scheduler inside sees every job without tiers and
//! every running job at its demand, so its own ledger of cores and memory stays exact. Two
//! policies are the exception and choose tiers with the placement, the greedy rule then only
//! upgrading from the tiers they chose, with what is still free: `ilp` (the exact program's
//! options carry a tier, `formulations/README.md`) and `learned*` whose weights hold a tier head
//! (level 1 chooses each job's tier with its option, [`crate::policies::learned::TierHead`]).

use crate::error::Result;
use crate::model::{Assignment, ClusterSnapshot, CoreMemLedger, Schedule};
use crate::perf::{self, PerfModel};
use crate::scheduler::Scheduler;

/// How a placed schedule's spare cores and memory are handed out (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierRule {
    /// Most gain per resource first, while any upgrade fits.
    Greedy,
    /// Synergy's TUNE: shortest remaining time first, best case or nothing.
    Tune,
}

/// Sets every assignment's tier by `rule`, starting from the demand (tier 0; with `keep`, from
/// the tier each assignment has, upgrading only); what the schedule's tasks hold at their
/// starting tiers must fit (a valid schedule).
pub fn assign_tiers(
    perf: &dyn PerfModel,
    snapshot: &ClusterSnapshot,
    schedule: &mut Schedule,
    rule: TierRule,
    keep: bool,
) -> Result<()> {
    if !keep {
        for a in &mut schedule.assignments {
            a.tier = 0;
        }
    }
    let Some(mut round) = TierRound::new(perf, snapshot, schedule)? else {
        return Ok(());
    };
    match rule {
        TierRule::Tune => round.tune(schedule),
        TierRule::Greedy => round.greedy(schedule),
    }
    Ok(())
}

/// Extra (server, cores, GiB) an assignment takes going from one tier to another.
type Extra = Vec<(usize, f64, f64)>;

/// A schedule's tiers being handed out: per assignment its job (by position; `usize::MAX` for a
/// job without tiers), its share of remaining work per second at its starting tier, its
/// starting tier and its speed at each tier, and the cores and memory still free.
struct TierRound<'s> {
    snapshot: &'s ClusterSnapshot,
    jobs: Vec<usize>,
    weight: Vec<f64>,
    start: Vec<u8>,
    by_tier: Vec<Vec<f64>>,
    ledger: CoreMemLedger,
}

impl<'s> TierRound<'s> {
    /// The round of `schedule` at its starting tiers; `None` when no assignment's job has tiers.
    fn new(
        perf: &dyn PerfModel,
        snapshot: &'s ClusterSnapshot,
        schedule: &Schedule,
    ) -> Result<Option<Self>> {
        let jobs: Vec<usize> = schedule
            .assignments
            .iter()
            .map(|a| {
                snapshot
                    .job_index(a.job)
                    .filter(|&k| !snapshot.jobs[k].tiers.is_empty())
                    .unwrap_or(usize::MAX)
            })
            .collect();
        if jobs.iter().all(|&k| k == usize::MAX) {
            return Ok(None);
        }
        // Share of its remaining work each job does per second at its starting tier.
        let speeds = perf::speeds(perf, snapshot, schedule)?;
        let start: Vec<u8> = schedule.assignments.iter().map(|a| a.tier).collect();
        let weight: Vec<f64> = speeds
            .iter()
            .zip(&jobs)
            .map(|((_, s), &k)| match snapshot.jobs.get(k) {
                Some(j) => s.iterations_per_s / j.remaining_iterations().max(1e-9),
                None => 0.0,
            })
            .collect();
        let mut ledger = CoreMemLedger::new(&snapshot.cluster);
        for a in &schedule.assignments {
            let Some(job) = snapshot.job(a.job) else {
                continue;
            };
            let (c, m) = job.worker_hold(a.tier);
            for w in &a.workers {
                ledger.take(w.server.0, c, m);
            }
            for p in &a.ps {
                ledger.take(p.server.0, job.demand.cpu_per_ps, job.demand.mem_per_ps_gib);
            }
        }
        // Each job's speed at each of its tiers, priced once (the greedy loop reads them often).
        let by_tier: Vec<Vec<f64>> = jobs
            .iter()
            .map(|&k| match snapshot.jobs.get(k) {
                Some(j) => (0..=j.tiers.len() as u8)
                    .map(|t| perf::tier_speed(perf, j, t))
                    .collect(),
                None => Vec::new(),
            })
            .collect();
        Ok(Some(TierRound {
            snapshot,
            jobs,
            weight,
            start,
            by_tier,
            ledger,
        }))
    }

    /// Speed of assignment `i`'s job at tier `t`, relative to its demand.
    fn speed_at(&self, i: usize, t: u8) -> f64 {
        self.by_tier[i][usize::from(t)]
    }

    /// Extra (cores, GiB) per server assignment `a` of job `k` takes going from tier `from` to
    /// `to`.
    fn extra(&self, a: &Assignment, k: usize, from: u8, to: u8) -> Extra {
        let job = &self.snapshot.jobs[k];
        let (Some(f), Some(t)) = (job.worker_share(from), job.worker_share(to)) else {
            return Vec::new();
        };
        let mut per: Extra = Vec::new();
        for w in &a.workers {
            match per.iter_mut().find(|(s, _, _)| *s == w.server.0) {
                Some(e) => {
                    e.1 += t.0 - f.0;
                    e.2 += t.1 - f.1;
                }
                None => per.push((w.server.0, t.0 - f.0, t.1 - f.1)),
            }
        }
        per
    }

    /// Whether every server has room for its share of `per`.
    fn fits(&self, per: &[(usize, f64, f64)]) -> bool {
        let servers = self.snapshot.cluster.servers.len();
        per.iter()
            .all(|&(s, c, m)| s < servers && self.ledger.fits(s, c.max(0.0), m.max(0.0)))
    }

    /// Takes `per` from the ledger and sets assignment `i`'s tier.
    fn upgrade(&mut self, schedule: &mut Schedule, i: usize, t: u8, per: &[(usize, f64, f64)]) {
        for &(s, c, m) in per {
            self.ledger.take(s, c, m);
        }
        schedule.assignments[i].tier = t;
    }

    /// Synergy's TUNE: shortest remaining time first, each job its best-case tier if it fits,
    /// else its demand.
    fn tune(&mut self, schedule: &mut Schedule) {
        let mut order: Vec<usize> = (0..self.jobs.len())
            .filter(|&i| self.jobs[i] != usize::MAX)
            .collect();
        // Shortest remaining time first = largest share of remaining work per second.
        order.sort_by(|&a, &b| self.weight[b].total_cmp(&self.weight[a]).then(a.cmp(&b)));
        for i in order {
            let k = self.jobs[i];
            let n = self.snapshot.jobs[k].tiers.len() as u8;
            let best = (1..=n)
                .max_by(|&x, &y| {
                    self.speed_at(i, x)
                        .total_cmp(&self.speed_at(i, y))
                        .then(y.cmp(&x))
                })
                .filter(|&t| self.speed_at(i, t) > 1.0);
            let Some(t) = best else { continue };
            let per = self.extra(&schedule.assignments[i], k, 0, t);
            if self.fits(&per) {
                self.upgrade(schedule, i, t, &per);
            }
        }
    }

    /// Most gain per resource first, while any upgrade fits.
    fn greedy(&mut self, schedule: &mut Schedule) {
        while let Some((i, t)) = self.best_upgrade(schedule) {
            let per = self.extra(
                &schedule.assignments[i],
                self.jobs[i],
                schedule.assignments[i].tier,
                t,
            );
            self.upgrade(schedule, i, t, &per);
        }
    }

    /// The (assignment, tier) change that gains most per share of a server's cores and memory
    /// it takes, among those that fit; `None` when none gains.
    fn best_upgrade(&self, schedule: &Schedule) -> Option<(usize, u8)> {
        let cluster = &self.snapshot.cluster;
        let mut best: Option<(f64, usize, u8)> = None;
        for (i, &k) in self.jobs.iter().enumerate() {
            if k == usize::MAX {
                continue;
            }
            let a = &schedule.assignments[i];
            // Speeds relative to the starting tier's, at which `weight` was measured.
            let now = self.speed_at(i, a.tier) / self.speed_at(i, self.start[i]);
            // Tier 0 too: a job the exact program gave fewer cores may get its demand back.
            for t in 0..=self.snapshot.jobs[k].tiers.len() as u8 {
                let gain =
                    self.weight[i] * (self.speed_at(i, t) / self.speed_at(i, self.start[i]) - now);
                if gain <= 0.0 {
                    continue;
                }
                let per = self.extra(a, k, a.tier, t);
                if !self.fits(&per) {
                    continue;
                }
                let cost: f64 = per
                    .iter()
                    .map(|&(s, c, m)| {
                        let srv = &cluster.servers[s];
                        c.max(0.0) / srv.cpu_cores.max(1e-9) + m.max(0.0) / srv.memory_gib.max(1e-9)
                    })
                    .sum();
                let ratio = gain / cost.max(1e-12);
                if best.is_none_or(|(r, _, _)| ratio > r) {
                    best = Some((ratio, i, t));
                }
            }
        }
        best.map(|(_, i, t)| (i, t))
    }
}

/// A scheduler whose placements get their tiers by a rule. Unless `joint`, the scheduler inside
/// sees every job without tiers and every running job at its demand (it places at tier 0, and
/// the rule hands out tiers from there); with `joint`, it sees the tiers and chooses them with
/// the placement (the exact program, a learned policy with a tier head), and the rule only
/// upgrades what is still free.
pub(crate) struct WithTiers<'a> {
    pub(crate) inner: Box<dyn Scheduler + 'a>,
    pub(crate) perf: &'a dyn PerfModel,
    pub(crate) rule: TierRule,
    pub(crate) joint: bool,
}

impl Scheduler for WithTiers<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule> {
        let tiered = snapshot.jobs.iter().any(|j| !j.tiers.is_empty());
        let mut out = if tiered && !self.joint {
            self.inner.schedule(&snapshot.at_demand())?
        } else {
            self.inner.schedule(snapshot)?
        };
        assign_tiers(self.perf, snapshot, &mut out, self.rule, self.joint)?;
        Ok(out)
    }

    fn keeps_when_none_wait(&self) -> bool {
        self.inner.keeps_when_none_wait()
    }

    fn take_events(&mut self) -> Vec<crate::scheduler::RoundEvent> {
        self.inner.take_events()
    }
}
