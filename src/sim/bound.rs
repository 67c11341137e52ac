//! How much is left to win: lower bounds on the average JCT of a replay's tracked jobs that hold
//! for **every** policy the simulator admits (proofs in `formulations/README.md`, "Lower bounds
//! on a replay's JCT").
//!
//! * **Alone** — every job from its arrival at the fastest allocation and placement the
//!   cluster and the performance model allow it, alone (contention only slows a job down, and
//!   a job's first start is free), starting no earlier than the first round tick the
//!   simulator's round clock can have after its arrival.
//! * **Capacity** — the cluster as one machine of all its GPUs: each job needs at least its
//!   fewest GPU-seconds (its most GPU-efficient allocation), so no schedule completes its `k`-th
//!   job before preemptive shortest-remaining-area-first does on that machine. Combined with
//!   the alone bounds order statistic by order statistic: the `k`-th smallest completion time is
//!   at least the larger of the two `k`-th values.
//!
//! The bound is the larger of the two (the capacity bound is never below the alone one, by
//! construction). What either leaves out — co-location, restarts, fragmentation, a job's GPU
//! limit on the aggregated machine — can only make real schedules slower.

use std::collections::{BTreeSet, BinaryHeap};

use serde::Serialize;

use super::Simulator;
use super::bound_lp::LpJob;
pub use super::bound_lp::LpLimits;
use crate::error::{Error, Result};
use crate::model::{Architecture, Cluster, Job};
use crate::perf::{JobQuery, PerfModel, PlacementShape, ServerSize, tier_speed};
use crate::util::total::TotalF64;

/// Lower bounds on a replay's average JCT (seconds) over its tracked jobs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JctBound {
    /// Jobs in the tracked window (the window of [`super::metrics`]).
    pub jobs_tracked: usize,
    /// The best (largest) of [`JctBound::bounds`]: no policy's average JCT is lower.
    pub avg_jct_s: f64,
    /// Each bound, seconds.
    pub bounds: Bounds,
    /// Average wait for the first round tick, included in every bound (the round grid's share).
    pub round_grid_s: f64,
}

/// The lower bounds on the average JCT, each valid alone (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    /// Every job alone at its fastest, from the first round tick it can see.
    pub alone: f64,
    /// Alone bounds combined with the aggregated cluster's capacity (order statistics).
    pub capacity: f64,
    /// The time-indexed relaxation (how much of each job runs at each size in each period),
    /// when asked for and solved to optimality.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lp: Option<f64>,
    /// The relaxation's period, seconds (it grows with the workload to keep the program
    /// small; a longer period gives a lower bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lp_period_s: Option<f64>,
}

/// A job at its fastest: per GPU count it can hold, the most iterations per second any
/// allocation and placement of that many GPUs gives it alone (at its best CPU/memory tier).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fastest {
    /// (GPUs, iterations per second), by GPUs ascending.
    pub by_gpus: Vec<(u32, f64)>,
}

impl Fastest {
    /// The most iterations per second at any size.
    pub(crate) fn speed(&self) -> f64 {
        self.by_gpus.iter().map(|x| x.1).fold(0.0, f64::max)
    }

    /// The fewest GPU-seconds per iteration at any size.
    pub(crate) fn gpu_s_per_iteration(&self) -> f64 {
        self.by_gpus
            .iter()
            .map(|&(g, s)| f64::from(g) / s)
            .fold(f64::INFINITY, f64::min)
    }
}

/// How much a tick time computed by repeated addition may differ from the exact sum, seconds
/// (far below a round; only keeps the bound on the safe side of floating-point drift).
const TICK_SLACK_S: f64 = 0.01;

/// Completion times are rounded to the microsecond ([`super`]): the bound gives that back.
const COMPLETION_ROUNDING_S: f64 = 1e-6;

impl Simulator<'_> {
    /// Lower bounds on the average JCT of the jobs in the tracked window `tracked` (fractions
    /// of the jobs in arrival order, as [`super::metrics`] reads them), valid for every policy,
    /// computed before the first round. Assumes every tracked job finishes (a run cut by a
    /// horizon averages only the jobs that did).
    pub fn jct_bound(
        &self,
        tracked: std::ops::Range<f64>,
        lp: Option<LpLimits>,
    ) -> Result<JctBound> {
        let cluster = &self.priced.cluster;
        let round = self.config.objective.round_s;
        let fastest: Vec<Fastest> = self
            .jobs
            .iter()
            .map(|j| fastest(self.perf, cluster, j))
            .collect::<Result<_>>()?;
        let durations: Vec<f64> = self
            .jobs
            .iter()
            .zip(&fastest)
            .map(|(j, f)| j.remaining_iterations() / f.speed())
            .collect();
        let arrivals: Vec<f64> = self.jobs.iter().map(|j| j.arrival_s).collect();
        let delays = grid_delays(&arrivals, &durations, round);
        let window = super::metrics::window(self.jobs.len(), tracked);
        let n = window.len();
        if n == 0 {
            return Ok(JctBound {
                jobs_tracked: 0,
                avg_jct_s: f64::NAN,
                bounds: Bounds {
                    alone: f64::NAN,
                    capacity: f64::NAN,
                    lp: None,
                    lp_period_s: None,
                },
                round_grid_s: f64::NAN,
            });
        }
        let mean = |v: f64| v / n as f64;
        // Per tracked job: its earliest start and earliest completion.
        let start: Vec<f64> = window.clone().map(|i| arrivals[i] + delays[i]).collect();
        let alone: Vec<f64> = window
            .clone()
            .zip(&start)
            .map(|(i, s)| (s + durations[i] - COMPLETION_ROUNDING_S).max(arrivals[i]))
            .collect();
        let areas: Vec<f64> = window
            .clone()
            .map(|i| self.jobs[i].remaining_iterations() * fastest[i].gpu_s_per_iteration())
            .collect();
        let gpus = cluster.num_gpus() as f64;
        let mut srpt = srpt_completions(&start, &areas, gpus);
        srpt.sort_by(f64::total_cmp);
        let mut sorted_alone = alone.clone();
        sorted_alone.sort_by(f64::total_cmp);
        let arrived: f64 = window.clone().map(|i| arrivals[i]).sum();
        let alone_sum: f64 = alone.iter().sum();
        let capacity_sum: f64 = srpt.iter().zip(&sorted_alone).map(|(s, a)| s.max(*a)).sum();
        // Each k-th term is at least the k-th alone bound: at least their sum, to the bit.
        let capacity_sum = capacity_sum.max(alone_sum);
        let alone_s = mean(alone_sum - arrived);
        let capacity_s = mean(capacity_sum - arrived);
        let relaxed = lp.and_then(|limits| {
            let jobs: Vec<LpJob> = window
                .clone()
                .zip(&start)
                .map(|(i, &s)| LpJob {
                    start_s: s,
                    work: self.jobs[i].remaining_iterations(),
                    by_gpus: fastest[i].by_gpus.clone(),
                })
                .collect();
            super::bound_lp::sum_completions(&jobs, gpus, round, limits)
        });
        let lp_s = relaxed.map(|o| mean(o.sum_completion_s - arrived));
        Ok(JctBound {
            jobs_tracked: n,
            avg_jct_s: alone_s
                .max(capacity_s)
                .max(lp_s.unwrap_or(f64::NEG_INFINITY)),
            bounds: Bounds {
                alone: alone_s,
                capacity: capacity_s,
                lp: lp_s,
                lp_period_s: relaxed.map(|o| o.period_s),
            },
            round_grid_s: mean(window.map(|i| delays[i]).sum()),
        })
    }
}

/// `job` at its fastest on `cluster` (see [`Fastest`]): every worker count in its range, every
/// PS count, on every GPU type it may use, every split of its GPUs over servers (servers used,
/// GPUs on the fullest, socket crossed or not, PS next to its workers or not), alone, at its
/// best tier. The splits are described by what a placement's speed reads alone — GPUs, servers,
/// the fullest server's GPUs and size, socket crossing, PS locality — so each is priced once.
pub(crate) fn fastest(perf: &dyn PerfModel, cluster: &Cluster, job: &Job) -> Result<Fastest> {
    let g = job.demand.gpus_per_worker.max(1);
    // Throughput alone here; with statistical efficiency, times the most the rest of the
    // job's training can make of each GPU count.
    let with_progress = JobQuery::of(job);
    let q = JobQuery {
        goodput: None,
        ..with_progress
    };
    let tier = (0..=u8::try_from(job.tiers.len()).unwrap_or(u8::MAX))
        .map(|t| tier_speed(perf, job, t))
        .fold(1.0_f64, f64::max);
    let mut by_gpus: Vec<(u32, f64)> = Vec::new();
    let mut types: Vec<&str> = cluster
        .servers
        .iter()
        .map(|s| s.gpu_type.as_str())
        .filter(|t| job.allows_gpu(t))
        .collect();
    types.sort_unstable();
    types.dedup();
    for t in types {
        let servers: Vec<&crate::model::Server> = cluster
            .servers
            .iter()
            .filter(|s| s.gpu_type.as_str() == t && s.num_gpus() >= g)
            .collect();
        let mut sizes: Vec<ServerSize> = servers.iter().map(|s| ServerSize::of(s)).collect();
        sizes.sort_by_key(|s| (s.gpus, s.socket_gpus));
        sizes.dedup();
        let slots: u32 = servers.iter().map(|s| s.num_gpus() / g).sum();
        for w in job.workers.min..=job.workers.max.min(slots) {
            for p in job.ps.min..=job.ps.max {
                for shape in splits(job.arch, w, p, g, servers.len() as u32, &sizes) {
                    let Ok(s) = perf.speed(&q, t, &shape) else {
                        continue;
                    };
                    if !(s.iterations_per_s.is_finite() && s.iterations_per_s > 0.0) {
                        continue;
                    }
                    let speed =
                        s.iterations_per_s * tier * perf.goodput_ceiling(&with_progress, w * g);
                    match by_gpus.iter_mut().find(|x| x.0 == w * g) {
                        Some(x) => x.1 = x.1.max(speed),
                        None => by_gpus.push((w * g, speed)),
                    }
                }
            }
        }
    }
    if by_gpus.is_empty() {
        return Err(Error::UnsupportedConfiguration {
            model: job.model.clone(),
            reason: format!(
                "job {}: no allocation on this cluster has a speed, so no bound exists",
                job.id
            ),
        });
    }
    by_gpus.sort_by_key(|x| x.0);
    Ok(Fastest { by_gpus })
}

/// The placements of `w` workers of `g` GPUs and `p` PS alone, one per distinct thing a speed
/// reads: for an all-reduce job every (servers `n` ≤ `most_servers`, GPUs `l` on the fullest,
/// its server size) that whole workers can realise, with and without a socket crossed; for a PS
/// job (whose speed alone reads workers, PS and PS locality, not the split) its packed
/// placement with the PS all away from and all next to the workers.
fn splits(
    arch: Architecture,
    w: u32,
    p: u32,
    g: u32,
    most_servers: u32,
    sizes: &[ServerSize],
) -> Vec<PlacementShape> {
    let k = w * g;
    let mut out = Vec::new();
    for &size in sizes {
        let per = size.gpus / g * g;
        if per == 0 {
            continue;
        }
        let crossings: &[u32] = if size.socket_gpus < size.gpus {
            &[0, 1]
        } else {
            &[0]
        };
        if arch == Architecture::ParameterServer {
            let mut shape = PlacementShape::packed(w, p, g, size.gpus);
            shape.server = Some(size);
            for f in [0.0, 1.0] {
                for &c in crossings {
                    let mut s = shape.clone();
                    s.ps_colocated_fraction = f;
                    s.cross_socket_servers = c;
                    out.push(s);
                }
            }
            continue;
        }
        for n in 1..=w.min(most_servers) {
            for l in (g..=per.min(k)).step_by(g as usize) {
                let rest = k - l;
                // The other n - 1 servers hold whole workers, at most `l` GPUs each.
                if rest < (n - 1) * g || rest > (n - 1) * l {
                    continue;
                }
                let mut gpus = vec![l];
                let mut left = rest;
                for i in 0..n - 1 {
                    let others = n - 2 - i;
                    let take = (left - others * g).min(l);
                    gpus.push(take);
                    left -= take;
                }
                for &c in crossings {
                    let mut s = PlacementShape::isolated(w, p, gpus.clone());
                    s.server = Some(size);
                    s.cross_socket_servers = c;
                    out.push(s);
                }
            }
        }
    }
    out
}

/// Per job (in arrival order), the least time between its arrival and the first round tick
/// after it, for any policy.
///
/// The round clock starts at an arrival that finds no job in the system and then ticks every
/// `round` seconds; skipped idle rounds resume it on the same grid (`Simulator::resumed_tick`),
/// so every tick is `r_k + m * round` for an arrival `r_k` at which the system can have been
/// empty — at which every earlier job can have finished, even at its fastest from its arrival.
/// A job's first tick is the nearest such point at or after its arrival.
pub(crate) fn grid_delays(arrivals: &[f64], durations: &[f64], round: f64) -> Vec<f64> {
    let mut phases: BTreeSet<TotalF64> = BTreeSet::new();
    let mut busy_until = f64::NEG_INFINITY;
    let mut out = Vec::with_capacity(arrivals.len());
    for (r, d) in arrivals.iter().zip(durations) {
        if busy_until <= *r + TICK_SLACK_S {
            phases.insert(TotalF64(r.rem_euclid(round)));
        }
        busy_until = busy_until.max(r + d);
        let at = r.rem_euclid(round);
        let next = phases
            .range(TotalF64(at)..)
            .next()
            .map(|p| p.0 - at)
            .or_else(|| phases.iter().next().map(|p| p.0 + round - at))
            .unwrap_or(0.0);
        out.push((next - TICK_SLACK_S).max(0.0));
    }
    out
}

/// Completion times of preemptive shortest-remaining-area-first on one machine of `gpus`
/// GPU-seconds per second: jobs released at `start` needing `areas` GPU-seconds (any order; the
/// result in the same order). On one machine it completes, by every time, as many jobs as any
/// schedule can (processor sharing included), so its `k`-th completion is no later than any
/// schedule's `k`-th.
pub(crate) fn srpt_completions(start: &[f64], areas: &[f64], gpus: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..start.len()).collect();
    order.sort_by(|&a, &b| start[a].total_cmp(&start[b]).then(a.cmp(&b)));
    let mut done = vec![0.0; start.len()];
    // (remaining area, job), smallest first.
    let mut heap: BinaryHeap<std::cmp::Reverse<(TotalF64, usize)>> = BinaryHeap::new();
    let mut now = f64::NEG_INFINITY;
    let mut next = 0;
    while next < order.len() || !heap.is_empty() {
        if heap.is_empty() {
            now = now.max(start[order[next]]);
        }
        while next < order.len() && start[order[next]] <= now {
            let j = order[next];
            heap.push(std::cmp::Reverse((TotalF64(areas[j].max(0.0)), j)));
            next += 1;
        }
        let Some(std::cmp::Reverse((TotalF64(left), j))) = heap.pop() else {
            continue;
        };
        let finish = now + left / gpus;
        match order.get(next).map(|&k| start[k]) {
            // The next release comes first: work until then, then look again.
            Some(r) if r < finish => {
                let left = left - (r - now) * gpus;
                heap.push(std::cmp::Reverse((TotalF64(left.max(0.0)), j)));
                now = r;
            }
            _ => {
                done[j] = finish;
                now = finish;
            }
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srpt_runs_the_smallest_remaining_area_first() {
        // Two GPUs: job 0 (area 8) from 0; job 1 (area 2) arrives at 1 and preempts it.
        let c = srpt_completions(&[0.0, 1.0], &[8.0, 2.0], 2.0);
        assert!((c[1] - 2.0).abs() < 1e-12, "{c:?}");
        assert!((c[0] - 5.0).abs() < 1e-12, "{c:?}");
        // Idle gap: job 2 released after the others finish.
        let c = srpt_completions(&[0.0, 10.0], &[2.0, 2.0], 1.0);
        assert_eq!(c, vec![2.0, 12.0]);
    }

    #[test]
    fn the_round_clock_starts_only_at_arrivals_to_an_empty_system() {
        // Job 0 at 0 runs at least 1,000 s: jobs 1 and 2 find it there and wait for its
        // clock's ticks (300, 600); job 3 arrives after every job can have finished and may
        // start the clock itself.
        let d = grid_delays(
            &[0.0, 100.0, 550.0, 5_000.0],
            &[1_000.0, 10.0, 10.0, 10.0],
            300.0,
        );
        let want = [0.0, 200.0, 50.0, 0.0];
        for (a, b) in d.iter().zip(want) {
            assert!((a - b).abs() <= TICK_SLACK_S + 1e-9, "{d:?}");
        }
        // Job 1 could have finished before job 2: job 2 may find an empty system.
        let d = grid_delays(&[0.0, 100.0, 550.0], &[10.0, 10.0, 10.0], 300.0);
        assert_eq!(d[2], 0.0);
    }
}
