//! Brute force over every valid schedule of a tiny instance: the reference the integer program
//! must match exactly.

use crate::error::{Error, Result};
use crate::model::ServerIdx;
use crate::model::{Assignment, ClusterSnapshot, PsTask, Schedule, WorkerTask};
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;

/// Refuses instances whose enumeration would not finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BruteForceLimits {
    /// Most schedules to score.
    pub max_schedules: u64,
}

impl Default for BruteForceLimits {
    fn default() -> Self {
        BruteForceLimits {
            max_schedules: 2_000_000,
        }
    }
}

/// Sorted `k`-tuples of `0..n`: strictly increasing (subsets) or, with `repeat`, non-decreasing
/// (multisets).
fn tuples(n: usize, k: usize, repeat: bool) -> Vec<Vec<usize>> {
    /// The tuples so far, and the one being built.
    struct Tuples {
        n: usize,
        k: usize,
        repeat: bool,
        cur: Vec<usize>,
        out: Vec<Vec<usize>>,
    }
    impl Tuples {
        fn rec(&mut self, start: usize) {
            if self.cur.len() == self.k {
                self.out.push(self.cur.clone());
                return;
            }
            for i in start..self.n {
                self.cur.push(i);
                self.rec(if self.repeat { i } else { i + 1 });
                self.cur.pop();
            }
        }
    }
    let mut t = Tuples {
        n,
        k,
        repeat,
        cur: Vec::with_capacity(k),
        out: Vec::new(),
    };
    t.rec(0);
    t.out
}

/// Every assignment of one job (one-GPU workers; PS as server multisets; each at every CPU/memory
/// tier), before capacity checks against other jobs.
fn candidates(snapshot: &ClusterSnapshot, job: &crate::model::Job) -> Result<Vec<Assignment>> {
    if job.demand.gpus_per_worker != 1 {
        return Err(Error::UnsupportedConfiguration {
            model: job.model.clone(),
            reason: "brute force enumerates one-GPU workers only".into(),
        });
    }
    let gpus: Vec<(usize, u32)> = snapshot
        .cluster
        .servers
        .iter()
        .enumerate()
        .flat_map(|(s, srv)| (0..srv.num_gpus()).map(move |g| (s, g)))
        .collect();
    let nsrv = snapshot.cluster.servers.len();
    let mut out = Vec::new();
    for w in job.workers.min..=job.workers.max {
        if w as usize > gpus.len() {
            break;
        }
        let sets = tuples(gpus.len(), w as usize, false);
        for p in job.ps.min..=job.ps.max {
            let ps_sets = tuples(nsrv, p as usize, true);
            for set in &sets {
                for ps in &ps_sets {
                    for tier in 0..=job.tiers.len() as u8 {
                        out.push(Assignment {
                            tier,
                            job: job.id,
                            workers: set
                                .iter()
                                .map(|&i| WorkerTask {
                                    server: ServerIdx(gpus[i].0),
                                    gpus: vec![gpus[i].1],
                                })
                                .collect(),
                            ps: ps
                                .iter()
                                .map(|&s| PsTask {
                                    server: ServerIdx(s),
                                })
                                .collect(),
                        });
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The best objective over every valid schedule, a schedule achieving it, and how many
/// schedules were scored.
pub fn brute_force(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    limits: BruteForceLimits,
) -> Result<(f64, Schedule, u64)> {
    let mut search = Enumeration::new(snapshot, perf, objective, limits)?;
    search.rec(0);
    Ok((search.best.0, search.best.1, search.scored))
}

/// Every valid schedule of a tiny round (one-GPU workers only): what a search over a
/// simulator's decisions branches on (the JCT bound's exhaustive check). Refused, as
/// [`brute_force`] refuses, past `limits`.
pub fn every_schedule(
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    limits: BruteForceLimits,
) -> Result<Vec<Schedule>> {
    let mut search = Enumeration::new(snapshot, perf, objective, limits)?;
    search.all = Some(Vec::new());
    search.rec(0);
    Ok(search.all.unwrap_or_default())
}

/// The depth-first search over every job's choices: the schedule being built, the best so far
/// and how many were scored (and every valid schedule, when collected).
struct Enumeration<'p> {
    cands: Vec<Vec<Assignment>>,
    pricing: RoundPricing<'p>,
    current: Schedule,
    best: (f64, Schedule),
    scored: u64,
    all: Option<Vec<Schedule>>,
}

impl<'p> Enumeration<'p> {
    /// The search over `snapshot`'s schedules, refused past `limits`.
    fn new(
        snapshot: &'p ClusterSnapshot,
        perf: &'p dyn PerfModel,
        objective: &Objective,
        limits: BruteForceLimits,
    ) -> Result<Self> {
        let cands: Vec<Vec<Assignment>> = snapshot
            .jobs
            .iter()
            .map(|j| candidates(snapshot, j))
            .collect::<Result<_>>()?;
        let total: f64 = cands.iter().map(|c| (c.len() + 1) as f64).product();
        if total > limits.max_schedules as f64 {
            return Err(Error::InvalidInstance {
                context: "brute force".into(),
                reason: format!(
                    "{total:.0} schedules to enumerate, limit {}",
                    limits.max_schedules
                ),
            });
        }
        // Every schedule of the search is scored against one pricing of the round.
        Ok(Enumeration {
            cands,
            pricing: RoundPricing::new(perf, snapshot, *objective),
            current: Schedule::default(),
            best: (f64::NEG_INFINITY, Schedule::default()),
            scored: 0,
            all: None,
        })
    }

    /// Jobs `k..` decided every way, each complete schedule scored.
    fn rec(&mut self, k: usize) {
        if k == self.cands.len() {
            // Invalid combinations (GPU given twice, capacity, mixed types) and unpriceable
            // shapes are not schedules: skipped, exactly as the integer program cannot take them.
            if let Ok(s) = self.pricing.score(&self.current) {
                self.scored += 1;
                if let Some(all) = self.all.as_mut() {
                    all.push(self.current.clone());
                }
                if s.total > self.best.0 + 1e-12 {
                    self.best = (s.total, self.current.clone());
                }
            }
            return;
        }
        // Job k waits (c = 0) or takes its candidate assignment c - 1.
        for c in 0..=self.cands[k].len() {
            if c > 0 {
                let a = &self.cands[k][c - 1];
                // Cheap pruning: no GPU twice.
                let clash = self.current.assignments.iter().any(|b| {
                    b.workers.iter().any(|x| {
                        a.workers
                            .iter()
                            .any(|y| x.server == y.server && x.gpus == y.gpus)
                    })
                });
                if clash {
                    continue;
                }
                self.current.assignments.push(a.clone());
            }
            self.rec(k + 1);
            if c > 0 {
                self.current.assignments.pop();
            }
        }
    }
}
