//! What a run measured, over a tracked window of jobs: JCT percentiles, queueing and waiting,
//! GPU-hours held and useful, utilisation, makespan, restarts.

use serde::{Deserialize, Serialize};

use super::JobRecord;

/// Summary of a run over a tracked window of jobs (by arrival order), as Blox does to leave out
/// warm-up and tail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Jobs in the tracked window.
    pub jobs_tracked: usize,
    /// Tracked jobs that finished.
    pub jobs_finished: usize,
    /// Tracked jobs still unfinished at the end (horizon).
    pub jobs_unfinished: usize,
    /// Mean job completion time (finish − arrival) of finished tracked jobs, seconds.
    pub avg_jct_s: f64,
    /// Median JCT, seconds.
    pub median_jct_s: f64,
    /// 95th-percentile JCT, seconds.
    pub p95_jct_s: f64,
    /// 99th-percentile JCT, seconds.
    pub p99_jct_s: f64,
    /// Mean queueing delay (first start − arrival) of tracked jobs that started, seconds.
    pub avg_queueing_s: f64,
    /// Mean time tracked jobs spent waiting without GPUs, first queueing and every wait after a
    /// preemption included, seconds.
    pub avg_waiting_s: f64,
    /// GPU-hours held by all jobs (restarts included).
    pub gpu_hours_held: f64,
    /// Useful GPU-hours of all jobs: held GPU-hours weighted by in-context ÷ alone speed (see
    /// [`JobRecord::useful_gpu_seconds`]).
    pub gpu_hours_useful: f64,
    /// GPU utilisation over the busy period (first to last arrival): GPU-seconds held then ÷
    /// (cluster GPUs × its length). The whole-run figure also counts the drain after it.
    pub busy_utilization: f64,
    /// Last finish minus first arrival over all jobs, seconds.
    pub makespan_s: f64,
    /// GPU-seconds held ÷ (cluster GPUs × makespan), over all jobs.
    pub gpu_utilization: f64,
    /// Restarts of tracked jobs.
    pub restarts: u64,
    /// Jobs in the whole run.
    pub jobs_total: usize,
    /// Jobs of the whole run unfinished at the end (none is ever dropped).
    pub jobs_unfinished_total: usize,
}

/// Nearest-rank percentile of sorted values (`q` in [0, 1]).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The positions of the tracked jobs among `n` in arrival order, `tracked` as fractions of the
/// list (what the metrics and the JCT bound both average over).
pub(crate) fn window(n: usize, tracked: std::ops::Range<f64>) -> std::ops::Range<usize> {
    let lo = ((tracked.start.clamp(0.0, 1.0)) * n as f64).floor() as usize;
    let hi = ((tracked.end.clamp(0.0, 1.0)) * n as f64).ceil() as usize;
    lo.min(n)..hi.min(n).max(lo.min(n))
}

/// Metrics of `records` (in arrival order) over the window `tracked` (fractions of the job
/// list, e.g. `0.1..0.9`), for a cluster of `gpus` GPUs.
pub fn metrics(records: &[JobRecord], tracked: std::ops::Range<f64>, gpus: u64) -> Metrics {
    let n = records.len();
    let window = &records[window(n, tracked)];
    let mut jct: Vec<f64> = window
        .iter()
        .filter_map(|r| r.finish_s.map(|f| f - r.arrival_s))
        .collect();
    jct.sort_by(f64::total_cmp);
    let queue: Vec<f64> = window
        .iter()
        .filter_map(|r| r.first_start_s.map(|s| s - r.arrival_s))
        .collect();
    let first = records
        .iter()
        .map(|r| r.arrival_s)
        .fold(f64::INFINITY, f64::min);
    let last = records
        .iter()
        .filter_map(|r| r.finish_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let makespan = if last.is_finite() && first.is_finite() {
        last - first
    } else {
        0.0
    };
    let gpu_seconds: f64 = records.iter().map(|r| r.gpu_seconds).sum();
    let last_arrival = records
        .iter()
        .map(|r| r.arrival_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let busy_span = if first.is_finite() {
        last_arrival - first
    } else {
        0.0
    };
    let waiting: Vec<f64> = window.iter().map(|r| r.waiting_s).collect();
    let mean = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    Metrics {
        jobs_tracked: window.len(),
        jobs_finished: jct.len(),
        jobs_unfinished: window.len() - jct.len(),
        avg_jct_s: mean(&jct),
        median_jct_s: percentile(&jct, 0.5),
        p95_jct_s: percentile(&jct, 0.95),
        p99_jct_s: percentile(&jct, 0.99),
        avg_queueing_s: mean(&queue),
        avg_waiting_s: mean(&waiting),
        gpu_hours_held: gpu_seconds / 3600.0,
        gpu_hours_useful: records.iter().map(|r| r.useful_gpu_seconds).sum::<f64>() / 3600.0,
        busy_utilization: if busy_span > 0.0 && gpus > 0 {
            records.iter().map(|r| r.busy_gpu_seconds).sum::<f64>() / (gpus as f64 * busy_span)
        } else {
            0.0
        },
        makespan_s: makespan,
        gpu_utilization: if makespan > 0.0 && gpus > 0 {
            gpu_seconds / (gpus as f64 * makespan)
        } else {
            0.0
        },
        restarts: window.iter().map(|r| u64::from(r.restarts)).sum(),
        jobs_total: n,
        jobs_unfinished_total: records.iter().filter(|r| r.finish_s.is_none()).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u64, arrival: f64, start: Option<f64>, finish: Option<f64>) -> JobRecord {
        JobRecord {
            id: crate::model::JobId(id),
            arrival_s: arrival,
            first_start_s: start,
            finish_s: finish,
            restarts: 1,
            gpu_seconds: 10.0,
            busy_gpu_seconds: 7.0,
            useful_gpu_seconds: 5.0,
            waiting_s: start.map_or(0.0, |s| s - arrival) + 1.0,
            max_gpus: 1,
            max_servers: 1,
        }
    }

    #[test]
    fn metrics_by_hand() {
        let r = vec![
            rec(0, 0.0, Some(0.0), Some(10.0)),
            rec(1, 5.0, Some(10.0), Some(30.0)),
            rec(2, 6.0, Some(6.0), Some(106.0)),
            rec(3, 7.0, None, None),
        ];
        let m = metrics(&r, 0.0..1.0, 2);
        assert_eq!(
            (m.jobs_tracked, m.jobs_finished, m.jobs_unfinished),
            (4, 3, 1)
        );
        assert!((m.avg_jct_s - (10.0 + 25.0 + 100.0) / 3.0).abs() < 1e-12);
        assert_eq!(m.median_jct_s, 25.0);
        assert_eq!(m.p99_jct_s, 100.0);
        assert!((m.avg_queueing_s - (0.0 + 5.0 + 0.0) / 3.0).abs() < 1e-12);
        assert_eq!(m.makespan_s, 106.0);
        assert!((m.gpu_utilization - 40.0 / (2.0 * 106.0)).abs() < 1e-12);
        // Busy period: first to last arrival (0 to 7 s).
        assert!((m.busy_utilization - 28.0 / (2.0 * 7.0)).abs() < 1e-12);
        assert!((m.gpu_hours_held - 40.0 / 3600.0).abs() < 1e-12);
        assert!((m.gpu_hours_useful - 20.0 / 3600.0).abs() < 1e-12);
        assert!((m.avg_waiting_s - (1.0 + 6.0 + 1.0 + 1.0) / 4.0).abs() < 1e-12);
        assert_eq!(m.restarts, 4);
        // The window 25 %..75 % keeps jobs 1 and 2.
        let w = metrics(&r, 0.25..0.75, 2);
        assert_eq!(w.jobs_tracked, 2);
        assert_eq!(w.avg_jct_s, (25.0 + 100.0) / 2.0);
    }
}
