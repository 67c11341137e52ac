//! What a run leaves behind: a summary, per-job and utilisation CSVs, and SVG plots. Pure
//! functions of the records; the command line decides where they go.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use super::{JobRecord, Metrics};
use crate::error::{Error, Result};
use crate::model::write_atomic;

/// One simulation, summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Policy name.
    pub policy: String,
    /// Trace name or path.
    pub trace: String,
    /// Cluster spec.
    pub cluster: String,
    /// GPUs in the cluster.
    pub gpus: u64,
    /// Seed of the trace's model assignment and of the policy.
    pub seed: u64,
    /// The metrics (flattened into the JSON object).
    #[serde(flatten)]
    pub metrics: Metrics,
    /// Mean, over rounds in which a job waited, of GPUs idle on servers whose free cores or
    /// memory could not take one more worker of any waiting job
    /// ([`super::Simulator::stranded_gpus`]).
    pub stranded_gpus: f64,
    /// The contention allowance the run was priced with ([`super::SimConfig`]).
    pub contention_allowance: f64,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds of the simulation (loading excluded).
    pub wall_s: f64,
    /// Events per wall-clock second.
    pub events_per_s: f64,
}

/// Several runs of the same workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// One summary per policy, in the order asked.
    pub runs: Vec<RunSummary>,
}

impl Comparison {
    /// A Markdown table: policy, JCTs and waits (hours), makespan (hours), utilisation over the
    /// run and over the busy period, GPU-hours held and useful, stranded GPUs, restarts, wall time.
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| policy | avg JCT (h) | median JCT (h) | p99 JCT (h) | avg queueing (h) | avg wait (h) | makespan (h) | GPU util. | busy util. | GPU-h held | GPU-h useful | stranded GPUs | restarts | unfinished | wall (s) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.runs {
            let m = &r.metrics;
            let _ = writeln!(
                s,
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} % | {:.1} % | {:.0} | {:.0} | {:.1} | {} | {} | {:.2} |",
                r.policy,
                m.avg_jct_s / 3600.0,
                m.median_jct_s / 3600.0,
                m.p99_jct_s / 3600.0,
                m.avg_queueing_s / 3600.0,
                m.avg_waiting_s / 3600.0,
                m.makespan_s / 3600.0,
                100.0 * m.gpu_utilization,
                100.0 * m.busy_utilization,
                m.gpu_hours_held,
                m.gpu_hours_useful,
                r.stranded_gpus,
                m.restarts,
                m.jobs_unfinished_total,
                r.wall_s
            );
        }
        s
    }

    /// The same table as CSV (seconds, fractions).
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "policy,trace,cluster,gpus,seed,jobs_tracked,jobs_finished,jobs_unfinished,avg_jct_s,median_jct_s,p95_jct_s,p99_jct_s,avg_queueing_s,avg_waiting_s,makespan_s,gpu_utilization,busy_utilization,gpu_hours_held,gpu_hours_useful,stranded_gpus,contention_allowance,restarts,jobs_total,jobs_unfinished_total,events,wall_s,events_per_s\n",
        );
        for r in &self.runs {
            let m = &r.metrics;
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{:.0}",
                r.policy,
                r.trace,
                r.cluster,
                r.gpus,
                r.seed,
                m.jobs_tracked,
                m.jobs_finished,
                m.jobs_unfinished,
                m.avg_jct_s,
                m.median_jct_s,
                m.p95_jct_s,
                m.p99_jct_s,
                m.avg_queueing_s,
                m.avg_waiting_s,
                m.makespan_s,
                m.gpu_utilization,
                m.busy_utilization,
                m.gpu_hours_held,
                m.gpu_hours_useful,
                r.stranded_gpus,
                r.contention_allowance,
                m.restarts,
                m.jobs_total,
                m.jobs_unfinished_total,
                r.events,
                r.wall_s,
                r.events_per_s
            );
        }
        s
    }
}

/// One row per job: `id,arrival_s,first_start_s,finish_s,jct_s,queueing_s,restarts,gpu_seconds`
/// (empty where a job never started or never finished).
pub fn jobs_csv(records: &[JobRecord]) -> String {
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
    let mut s =
        String::from("id,arrival_s,first_start_s,finish_s,jct_s,queueing_s,restarts,gpu_seconds\n");
    for r in records {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{}",
            r.id,
            r.arrival_s,
            opt(r.first_start_s),
            opt(r.finish_s),
            opt(r.finish_s.map(|f| f - r.arrival_s)),
            opt(r.first_start_s.map(|f| f - r.arrival_s)),
            r.restarts,
            r.gpu_seconds
        );
    }
    s
}

/// `time_s,gpus_held,utilization` at every change of the GPUs held.
pub fn utilization_csv(timeline: &[(f64, u64)], gpus: u64) -> String {
    let mut s = String::from("time_s,gpus_held,utilization\n");
    for &(t, g) in timeline {
        let _ = writeln!(s, "{t},{g},{}", g as f64 / gpus.max(1) as f64);
    }
    s
}

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// CDF of job completion time (hours, log scale) for each `(label, records)` series.
pub fn plot_jct_cdf(series: &[(&str, &[JobRecord])], path: &Path, title: &str) -> Result<()> {
    let curves: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(l, rs)| {
            let mut v: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.finish_s.map(|f| ((f - r.arrival_s) / 3600.0).max(1e-3)))
                .collect();
            v.sort_by(f64::total_cmp);
            let n = v.len().max(1) as f64;
            // At most ~2,000 points per curve keeps the file small and the shape exact enough.
            let stride = (v.len() / 2000).max(1);
            let pts = v
                .iter()
                .enumerate()
                .filter(|(i, _)| i % stride == 0 || *i + 1 == v.len())
                .map(|(i, &x)| (x, (i + 1) as f64 / n))
                .collect();
            (*l, pts)
        })
        .collect();
    let xs = || curves.iter().flat_map(|(_, v)| v.iter().map(|p| p.0));
    let lo = xs().fold(f64::INFINITY, f64::min).clamp(1e-3, 1.0);
    let hi = xs().fold(lo * 10.0, f64::max) * 1.2;
    let axes = Axes {
        title,
        x_desc: "job completion time (hours)",
        y_desc: "fraction of finished jobs",
        legend: SeriesLabelPosition::LowerRight,
        stroke: 2,
    };
    line_chart(path, &axes, (lo..hi).log_scale(), 0.0..1.0, &curves)
}

/// GPUs held over time (fraction of `gpus`, days on the x axis) for each series.
pub fn plot_utilization(
    series: &[(&str, &[(f64, u64)])],
    gpus: u64,
    path: &Path,
    title: &str,
) -> Result<()> {
    let end = series
        .iter()
        .filter_map(|(_, t)| t.last().map(|x| x.0))
        .fold(1.0, f64::max)
        / 86_400.0;
    let curves: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(label, t)| {
            // Step function, thinned to ~4,000 steps.
            let stride = (t.len() / 4000).max(1);
            let mut pts = Vec::with_capacity(2 * t.len() / stride + 2);
            let mut prev = 0.0;
            for (i, &(time, g)) in t.iter().enumerate() {
                if i % stride != 0 && i + 1 != t.len() {
                    continue;
                }
                let x = time / 86_400.0;
                pts.push((x, prev));
                prev = g as f64 / gpus.max(1) as f64;
                pts.push((x, prev));
            }
            (*label, pts)
        })
        .collect();
    let axes = Axes {
        title,
        x_desc: "time (days)",
        y_desc: "GPUs held / cluster GPUs",
        legend: SeriesLabelPosition::UpperRight,
        stroke: 1,
    };
    line_chart(path, &axes, 0.0..end * 1.02, 0.0..1.05, &curves)
}

/// Titles and styling of a [`line_chart`].
struct Axes<'a> {
    title: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    legend: SeriesLabelPosition,
    stroke: u32,
}

/// One line per `(label, points)` on the given axes, written as a 900 × 560 SVG.
fn line_chart<X>(
    path: &Path,
    axes: &Axes<'_>,
    x: X,
    y: std::ops::Range<f64>,
    curves: &[(&str, Vec<(f64, f64)>)],
) -> Result<()>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    X::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let err = |e: String| Error::io(path, std::io::Error::other(e));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(axes.title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x, y)
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .draw()
            .map_err(|e| err(e.to_string()))?;
        for (k, (label, pts)) in curves.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    pts.iter().copied(),
                    color.stroke_width(axes.stroke),
                ))
                .map_err(|e| err(e.to_string()))?
                .label(*label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .position(axes.legend.clone())
            .draw()
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    write_atomic(path, svg.as_bytes())
}
