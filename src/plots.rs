//! SVG plots of what coda measures: JCT CDFs and utilisation over time of replays (drawn by
//! [`crate::replay::RunWriter`] beside the run's CSVs) and the performance model's CPU/memory
//! surfaces (`coda calibrate --surface-plot`). Behind the `plots` feature (plotters), which the
//! command line turns on.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::sim::JobRecord;
use crate::util::write_atomic;

const COLORS: [RGBColor; 16] = [
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
    RGBColor(0, 0, 0),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(152, 223, 138),
    RGBColor(255, 152, 150),
    RGBColor(197, 176, 213),
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

/// Throughput per GPU against cores per GPU (memory ample: 250 GB) of every CPU/memory surface
/// (`coda calibrate --surface-plot`): Synergy's models, then the family medians.
pub fn plot_surfaces(
    surfaces: &std::collections::BTreeMap<String, crate::perf::cpumem::CpuMemSurface>,
    path: &Path,
) -> Result<()> {
    let cores: Vec<f64> = (2..=48).map(|c| f64::from(c) / 2.0).collect();
    let mut names: Vec<&String> = surfaces.keys().filter(|k| !k.contains('-')).collect();
    names.extend(surfaces.keys().filter(|k| k.contains('-')));
    let curves: Vec<(&str, Vec<(f64, f64)>)> = names
        .iter()
        .map(|k| {
            let s = &surfaces[*k];
            let pts = cores.iter().map(|&c| (c, s.throughput(c, 250.0))).collect();
            (k.as_str(), pts)
        })
        .collect();
    let top = curves
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .fold(1.0, f64::max);
    let axes = Axes {
        title: "Throughput per GPU against its cores (Synergy's profiles; 1 = 3 cores, 62.5 GB)",
        x_desc: "cores per GPU",
        y_desc: "throughput (fair share = 1)",
        legend: SeriesLabelPosition::LowerRight,
        stroke: 2,
    };
    line_chart(path, &axes, 0.0..24.5, 0.0..top * 1.05, &curves)
}

/// Points `(x, y)` per labelled series on log–log axes (a benchmark's growth curves: a straight
/// line of slope `k` is growth as the `k`-th power).
pub fn plot_log_log(
    series: &[(&str, Vec<(f64, f64)>)],
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
) -> Result<()> {
    let all = || {
        series
            .iter()
            .flat_map(|(_, v)| v.iter())
            .filter(|p| p.0 > 0.0 && p.1 > 0.0)
    };
    let (x_lo, x_hi) = all().fold((f64::INFINITY, 0.0_f64), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    let (y_lo, y_hi) = all().fold((f64::INFINITY, 0.0_f64), |(a, b), p| {
        (a.min(p.1), b.max(p.1))
    });
    if !x_lo.is_finite() || !y_lo.is_finite() {
        return Ok(());
    }
    let axes = Axes {
        title,
        x_desc,
        y_desc,
        legend: SeriesLabelPosition::UpperLeft,
        stroke: 2,
    };
    line_chart(
        path,
        &axes,
        (x_lo / 1.5..x_hi * 1.5).log_scale(),
        (y_lo / 1.5..y_hi * 1.5).log_scale(),
        series,
    )
}

/// Step functions on a log time axis: each series' `(time, value)` points, the value held until
/// the next point and to `horizon` (an incumbent's gap over a solve: a step at each better
/// schedule). Times below a millisecond are drawn at one.
pub fn plot_steps(
    series: &[(&str, Vec<(f64, f64)>)],
    horizon: f64,
    path: &Path,
    title: &str,
    y_desc: &str,
) -> Result<()> {
    const FIRST: f64 = 1e-3;
    let curves: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(label, pts)| {
            let mut steps: Vec<(f64, f64)> = Vec::new();
            for &(t, v) in pts {
                let t = t.clamp(FIRST, horizon);
                if let Some(&(_, prev)) = steps.last() {
                    steps.push((t, prev));
                }
                steps.push((t, v));
            }
            if let Some(&(_, last)) = steps.last() {
                steps.push((horizon, last));
            }
            (*label, steps)
        })
        .collect();
    let top = curves
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let axes = Axes {
        title,
        x_desc: "seconds since the solve began (log)",
        y_desc,
        legend: SeriesLabelPosition::UpperRight,
        stroke: 2,
    };
    line_chart(
        path,
        &axes,
        (FIRST..horizon.max(FIRST * 10.0)).log_scale(),
        0.0..(top * 1.05).max(1e-9),
        &curves,
    )
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
fn line_chart<X, Y>(
    path: &Path,
    axes: &Axes<'_>,
    x: X,
    y: Y,
    curves: &[(&str, Vec<(f64, f64)>)],
) -> Result<()>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    X::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    Y::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
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
