//! The time-indexed relaxation behind the JCT bound's third term (`formulations/README.md`,
//! "The time-indexed bound"): how much of each job's work runs at each size in each period,
//! under the cluster's GPUs per period and each job's time per period, every job's completion
//! at least its mean busy time plus half its fastest duration. Solved by HiGHS as one linear
//! program; its optimum is a lower bound on the sum of completion times of every schedule.

use highs::{ColProblem, HighsModelStatus, Row, Sense};

/// One tracked job as the relaxation sees it.
#[derive(Debug, Clone)]
pub(crate) struct LpJob {
    /// Earliest start (arrival plus the round clock's least wait), seconds.
    pub start_s: f64,
    /// Iterations left.
    pub work: f64,
    /// (GPUs, most iterations per second at that many), by GPUs ascending.
    pub by_gpus: Vec<(u32, f64)>,
}

/// The time-indexed relaxation's size and solver limits ([`crate::sim::Simulator::jct_bound`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LpLimits {
    /// Most columns: the period grows (doubling from one round) until the program fits.
    pub max_columns: usize,
    /// Seconds HiGHS may take; a program not solved to optimality by then gives no bound.
    pub time_limit_s: f64,
}

impl Default for LpLimits {
    /// 200,000 columns, two minutes.
    fn default() -> Self {
        LpLimits {
            max_columns: 200_000,
            time_limit_s: 120.0,
        }
    }
}

/// What the relaxation gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LpOutcome {
    /// A lower bound on the sum of completion times, seconds (absolute times).
    pub sum_completion_s: f64,
    /// The period length used, seconds.
    pub period_s: f64,
    /// Columns of the program.
    pub columns: usize,
}

/// HiGHS' optimality tolerances are relative 1e-7: the optimum is given back this much lower,
/// so that a solver's rounding never lifts the bound above the true optimum.
const SOLVER_SLACK: f64 = 1e-6;

/// The sizes worth running at: the upper concave hull of (GPUs, speed) with the origin, each
/// speed above the last. Any other size is matched, in time, GPUs and work, by sharing a period
/// between two hull sizes (or a hull size and idling).
pub(crate) fn hull(by_gpus: &[(u32, f64)]) -> Vec<(f64, f64)> {
    let mut h: Vec<(f64, f64)> = vec![(0.0, 0.0)];
    for &(g, s) in by_gpus {
        let p = (f64::from(g), s);
        if p.1 <= h.last().map_or(0.0, |l| l.1) {
            continue;
        }
        while h.len() >= 2 {
            let (a, b) = (h[h.len() - 2], h[h.len() - 1]);
            // `b` on or below the segment from `a` to `p`: not on the hull.
            if (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0) >= 0.0 {
                h.pop();
            } else {
                break;
            }
        }
        h.push(p);
    }
    h.remove(0);
    h
}

/// A job in hours: start, fastest duration, hull sizes (GPUs, speed).
type Prepared = (f64, f64, Vec<(f64, f64)>);

/// The relaxation's optimum for `jobs` on `gpus` GPUs (rounds of `round_s` seconds), or
/// `None` when HiGHS does not prove it within the limits.
pub(crate) fn sum_completions(
    jobs: &[LpJob],
    gpus: f64,
    round_s: f64,
    limits: LpLimits,
) -> Option<LpOutcome> {
    if jobs.is_empty() {
        return None;
    }
    // Hours from the first start: numbers HiGHS' tolerances suit.
    let t0 = jobs.iter().map(|j| j.start_s).fold(f64::INFINITY, f64::min);
    // Per job: start and fastest duration (hours from `t0`), and its hull sizes.
    let prepared: Vec<Prepared> = jobs
        .iter()
        .map(|j| {
            let sizes = hull(&j.by_gpus);
            let fastest = sizes.last().map_or(0.0, |s| s.1);
            let p = if fastest > 0.0 {
                j.work / fastest / 3600.0
            } else {
                0.0
            };
            ((j.start_s - t0) / 3600.0, p, sizes)
        })
        .collect();
    // Each job's periods from its start: four times its fastest duration, at least half a
    // day; its work past them is left unconstrained (a relaxation), priced at their end.
    let window = |p: f64| (4.0 * p).max(12.0);
    let mut period = round_s / 3600.0;
    let columns = |period: f64| -> usize {
        prepared
            .iter()
            .map(|(_, p, sizes)| ((window(*p) / period).ceil() as usize + 1) * sizes.len() + 2)
            .sum()
    };
    while columns(period) > limits.max_columns && period < 24.0 * 365.0 {
        period *= 2.0;
    }
    let mut pb = ColProblem::default();
    let mut cap_rows: Vec<Row> = Vec::new();
    let mut columns_added = 0;
    for (r, p, sizes) in &prepared {
        let first = (r / period).floor() as usize;
        let last = first + (window(*p) / period).ceil() as usize + 1;
        while cap_rows.len() < last {
            cap_rows.push(pb.add_row(..=gpus * period));
        }
        let work = pb.add_row(1.0..=1.0);
        // C - Σ start · y - tail · u >= p / 2.
        let busy = pb.add_row(p / 2.0..);
        pb.add_column(1.0, (r + p).., [(busy, 1.0)]);
        for (t, &cap) in cap_rows.iter().enumerate().take(last).skip(first) {
            let begin = (t as f64 * period).max(*r);
            let len = (t as f64 + 1.0) * period - begin;
            if len <= 0.0 {
                continue;
            }
            let time = pb.add_row(..=len);
            for &(g, s) in sizes {
                // Fraction of the job's work: its hours at this size, and GPU-hours.
                let hours = if s > 0.0 {
                    p * (sizes.last().map_or(s, |l| l.1) / s)
                } else {
                    0.0
                };
                pb.add_column(
                    0.0,
                    0.0..=1.0,
                    [(work, 1.0), (time, hours), (cap, g * hours), (busy, -begin)],
                );
                columns_added += 1;
            }
        }
        let tail = last as f64 * period;
        pb.add_column(0.0, 0.0..=1.0, [(work, 1.0), (busy, -tail)]);
        columns_added += 2;
    }
    let mut model = pb.optimise(Sense::Minimise);
    model.make_quiet();
    model.set_option("threads", 1);
    // Simplex: on the ITP cluster 06 program (400,000 columns) interior point took 113 s,
    // simplex 63 s.
    model.set_option("solver", "simplex");
    model.set_option("time_limit", limits.time_limit_s);
    let solved = model.solve();
    if solved.status() != HighsModelStatus::Optimal {
        return None;
    }
    let sum_hours = solved.objective_value();
    let n = jobs.len() as f64;
    Some(LpOutcome {
        sum_completion_s: (sum_hours * 3600.0) * (1.0 - SOLVER_SLACK) + n * t0,
        period_s: period * 3600.0,
        columns: columns_added,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hull_keeps_the_sizes_worth_running_at() {
        // 3 GPUs is below the chord from 2 to 4; 8 is slower than 4.
        let h = hull(&[(1, 1.0), (2, 1.9), (3, 2.2), (4, 3.4), (8, 3.0)]);
        assert_eq!(h, vec![(1.0, 1.0), (2.0, 1.9), (4.0, 3.4)]);
    }

    #[test]
    fn one_gpu_two_jobs_queue() {
        // Two one-hour jobs released together on one GPU: completions 1 h and 2 h at best;
        // the relaxation (periods of one round) gives at most that and at least the alone 2 h.
        let job = LpJob {
            start_s: 0.0,
            work: 3600.0,
            by_gpus: vec![(1, 1.0)],
        };
        let o = sum_completions(
            &[job.clone(), job],
            1.0,
            300.0,
            LpLimits {
                max_columns: 10_000,
                time_limit_s: 60.0,
            },
        )
        .unwrap();
        assert!(o.sum_completion_s <= 3.0 * 3600.0 + 1e-6, "{o:?}");
        assert!(o.sum_completion_s > 2.0 * 3600.0 + 1_000.0, "{o:?}");
    }
}
