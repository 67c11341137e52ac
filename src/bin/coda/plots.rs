//! The command line's own plot: solve time against cluster size (`coda bench-solve`).

use std::path::Path;

use coda::ilp::SolveStatus;
use coda::io::write_atomic;
use coda::{Error, Result};
use plotters::prelude::*;

use crate::scaling::ScalingRow;

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
        use coda::ilp::SolveProgram::{Compact, Config};
        for (sym, cuts, program, color, label) in [
            (true, false, Compact, BLUE, "symmetry breaking on"),
            (false, false, Compact, RED, "symmetry breaking off"),
            (true, true, Compact, GREEN, "with co-location cuts"),
            (true, false, Config, MAGENTA, "configuration program"),
        ] {
            let pts: Vec<&ScalingRow> = rows
                .iter()
                .filter(|r| {
                    r.symmetry_breaking == sym && r.colocation_cuts == cuts && r.program == program
                })
                .collect();
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
    write_atomic(path, svg.as_bytes())
}
