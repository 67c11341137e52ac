//! `coda calibrate`: Fit the performance model to datasets/ and write the parameter file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::perf::{Estimates, FitQuality, PerfParams};

/// Arguments of `coda calibrate`.
#[derive(clap::Args)]
pub struct Args {
    /// Folder with the measured tables.
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// Where to write the parameters.
    #[arg(long, default_value = "models/perf_params.json")]
    pub out: PathBuf,
    /// Also write the fit-quality table as CSV here.
    #[arg(long)]
    pub quality_csv: Option<PathBuf>,
    /// Also write the placement check (measured vs predicted spread ÷ packed step time, every
    /// source) as CSV here, and print its summary.
    #[arg(long)]
    pub placement_csv: Option<PathBuf>,
    /// Also plot the CPU/memory throughput surfaces (throughput against cores per GPU, memory
    /// ample; family medians last) as SVG here.
    #[arg(long)]
    pub surface_plot: Option<PathBuf>,
    /// Print the fit-quality table as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args, _params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let Args {
        datasets,
        out,
        quality_csv,
        placement_csv,
        surface_plot,
        json,
    } = args;
    let t = Instant::now();
    let params = coda::perf::calibrate::calibrate(&datasets, Estimates::default())?;
    let text = serde_json::to_string_pretty(&params).expect("params serialize") + "\n";
    coda::io::write_atomic(&out, text.as_bytes())?;
    if let Some(q) = quality_csv {
        coda::io::write_atomic(&q, quality_csv_text(&params.fit_quality).as_bytes())?;
    }
    if let Some(p) = surface_plot {
        coda::plots::plot_surfaces(&params.cpu_mem_surfaces, &p)?;
    }
    if let Some(p) = placement_csv {
        let rows = coda::perf::calibrate::placement_check(&datasets, &params)?;
        coda::io::write_atomic(&p, placement_csv_text(&rows).as_bytes())?;
        if !json {
            out!("{}", coda::perf::calibrate::placement_summary(&rows));
        }
    }
    if json {
        out!(
            "{}",
            serde_json::to_string(&params.fit_quality).expect("serialize")
        );
    } else {
        print_quality(&params);
        out!(
            "wrote {} in {:.2} s",
            out.display(),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn placement_csv_text(rows: &[coda::perf::calibrate::PlacementCheck]) -> String {
    let mut s = String::from(
        "source,gpu,model,gpus,servers,placement,local_batch,measured_ratio,predicted_ratio\n",
    );
    for r in rows {
        s += &format!(
            "{},{},{},{},{},{},{},{:.4},{:.4}\n",
            r.source,
            r.gpu,
            r.model,
            r.gpus,
            r.servers,
            r.placement,
            r.local_batch,
            r.measured_ratio,
            r.predicted_ratio
        );
    }
    s
}

/// One fit-quality row as cells, its three errors written by `err`.
fn quality_cells(r: &FitQuality, err: &dyn Fn(Option<f64>) -> String) -> [String; 7] {
    [
        r.model.clone(),
        r.gpu.clone(),
        r.split.to_string(),
        r.rows.to_string(),
        err(r.mape),
        err(r.median_ape),
        err(r.train_mape),
    ]
}

fn quality_csv_text(q: &[FitQuality]) -> String {
    let mut s = String::from("model,gpu,split,rows,mape,median_ape,train_mape\n");
    for r in q {
        let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.4}"));
        s += &quality_cells(r, &f).join(",");
        s.push('\n');
    }
    s
}

fn print_quality(p: &PerfParams) {
    out!(
        "{:<28} {:<10} {:<8} {:>5} {:>9} {:>9} {:>9}",
        "model",
        "gpu",
        "split",
        "rows",
        "MAPE",
        "medAPE",
        "train"
    );
    for r in &p.fit_quality {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{:.1}%", 100.0 * x));
        let [model, gpu, split, rows, mape, median, train] = quality_cells(r, &f);
        out!("{model:<28} {gpu:<10} {split:<8} {rows:>5} {mape:>9} {median:>9} {train:>9}");
    }
    out!(
        "compute ∝ (memory bandwidth)^-{:.3} (fitted across GPU types)",
        p.compute_bandwidth_exponent
    );
    // Row-weighted summary per family and split.
    let family = |r: &FitQuality| {
        let m = r.model.as_str();
        if r.gpu == coda::perf::cpumem::CPU_MEM_PROFILE {
            "cpu/memory (synergy)"
        } else if r.gpu == coda::perf::goodput::GOODPUT_PROFILE {
            "efficiency (pollux)"
        } else if p.ps_models.contains_key(m) {
            "PS (dl2)"
        } else if m.starts_with("gavel-") {
            "all-reduce (gavel)"
        } else {
            "all-reduce (pollux/sia)"
        }
    };
    let mut acc: std::collections::BTreeMap<(&str, &str), (f64, usize)> = Default::default();
    for r in &p.fit_quality {
        let Some(mape) = r.mape else { continue };
        let e = acc.entry((family(r), r.split.as_str())).or_default();
        e.0 += mape * r.rows as f64;
        e.1 += r.rows;
    }
    for ((fam, split), (sum, n)) in acc {
        out!(
            "summary: {fam:<24} {split:<8} held-out MAPE {:>6.1}% over {n} rows",
            100.0 * sum / n as f64
        );
    }
}
