//! Solve time against cluster size (`coda bench-solve`): one row per instance, a CSV, and a plot.

use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use super::{SolveSettings, SolveStatus, solve};
use crate::error::{Error, Result};
use crate::generate::{GenerateOptions, generate};
use crate::model::ClusterSnapshot;
use crate::objective::Objective;
use crate::perf::PerfModel;

/// One measured solve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScalingRow {
    /// Instance name.
    pub instance: String,
    /// Servers.
    pub servers: usize,
    /// GPUs in the cluster.
    pub gpus: u64,
    /// Jobs.
    pub jobs: usize,
    /// Symmetry breaking on?
    pub symmetry_breaking: bool,
    /// Columns.
    pub variables: usize,
    /// Integer columns.
    pub integer_variables: usize,
    /// Rows.
    pub constraints: usize,
    /// Build seconds.
    pub build_s: f64,
    /// Solver seconds.
    pub solve_s: f64,
    /// Outcome.
    pub status: SolveStatus,
    /// Objective.
    pub objective: f64,
    /// Utility of the same schedule with the PerfModel's compounded contention.
    pub perf_model_utility: f64,
    /// Best bound.
    pub best_bound: f64,
    /// Relative gap.
    pub gap: f64,
    /// Nodes.
    pub nodes: Option<u64>,
}

/// Solves one instance and reports the row.
pub fn measure(
    name: &str,
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    settings: &SolveSettings,
) -> Result<ScalingRow> {
    let s = solve(snapshot, perf, &Objective::default(), settings, None)?;
    let r = s.report;
    Ok(ScalingRow {
        instance: name.to_string(),
        servers: snapshot.cluster.servers.len(),
        gpus: snapshot.cluster.num_gpus(),
        jobs: snapshot.jobs.len(),
        symmetry_breaking: settings.symmetry_breaking,
        variables: r.size.variables,
        integer_variables: r.size.integer_variables,
        constraints: r.size.constraints,
        build_s: r.build_time_s,
        solve_s: r.wall_time_s,
        status: r.status,
        objective: r.objective,
        perf_model_utility: r.perf_model_utility,
        best_bound: r.best_bound,
        gap: r.gap,
        nodes: r.nodes,
    })
}

/// The generated instance of a `(servers, jobs, seed)` size point (8-GPU V100 servers).
pub fn scaling_instance(
    servers: usize,
    jobs: usize,
    seed: u64,
    perf: &dyn PerfModel,
) -> Result<ClusterSnapshot> {
    generate(
        &GenerateOptions {
            servers,
            jobs,
            seed,
            ..Default::default()
        },
        perf,
    )
}

/// Writes rows as CSV (atomically).
pub fn write_csv(rows: &[ScalingRow], path: &Path) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)
            .map_err(|e| Error::io(path, std::io::Error::other(e.to_string())))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| Error::io(path, std::io::Error::other(e.to_string())))?;
    crate::model::write_atomic(path, &bytes)
}

/// Plots solve time against GPUs × jobs (log scale), one series per symmetry setting; points
/// that hit the time limit are drawn hollow.
pub fn plot_svg(rows: &[ScalingRow], path: &Path, title: &str) -> Result<()> {
    let err = |e: String| Error::io(path, std::io::Error::other(e));
    let max_x = rows
        .iter()
        .map(|r| r.gpus as f64 * r.jobs as f64)
        .fold(1.0, f64::max)
        * 1.2;
    let max_y = rows.iter().map(|r| r.solve_s).fold(0.1, f64::max) * 2.0;
    let min_y = rows
        .iter()
        .map(|r| r.solve_s)
        .fold(max_y, f64::min)
        .max(1e-3)
        / 2.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d((1.0..max_x).log_scale(), (min_y..max_y).log_scale())
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("cluster GPUs × jobs")
            .y_desc("solve time (s)")
            .draw()
            .map_err(|e| err(e.to_string()))?;
        for (sym, color, label) in [
            (true, BLUE, "symmetry breaking on"),
            (false, RED, "symmetry breaking off"),
        ] {
            let pts: Vec<&ScalingRow> =
                rows.iter().filter(|r| r.symmetry_breaking == sym).collect();
            if pts.is_empty() {
                continue;
            }
            chart
                .draw_series(pts.iter().map(|r| {
                    let x = r.gpus as f64 * r.jobs as f64;
                    let filled = r.status == SolveStatus::Optimal;
                    Circle::new(
                        (x, r.solve_s),
                        5,
                        if filled {
                            color.filled()
                        } else {
                            color.stroke_width(2)
                        },
                    )
                }))
                .map_err(|e| err(e.to_string()))?
                .label(label)
                .legend(move |(x, y)| Circle::new((x, y), 5, color.filled()));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    crate::model::write_atomic(path, svg.as_bytes())
}
