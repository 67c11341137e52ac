//! `coda trace`: Load a trace, assign models, print a summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::workload::trace::{self, TraceFilter, TraceOptions};

use crate::{perf_model, range};

/// Arguments of `coda trace`.
#[derive(clap::Args)]
pub struct Args {
    /// `philly`, `itp-cluster02`, `itp-cluster06`, `itp`, `alibaba`, or the path of a CSV in
    /// one of the shipped formats (the names `simulate` takes).
    #[arg(long)]
    pub trace: String,
    /// Keep one sub-cluster (`cluster02`, a Philly VC...).
    #[arg(long)]
    pub group: Option<String>,
    /// Seed of the model assignment.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Folder of the shipped traces.
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// Write the jobs (with models and work) as JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write one round (jobs --skip .. --skip + --take on --servers default servers) as an
    /// instance here.
    #[arg(long)]
    pub snapshot_out: Option<PathBuf>,
    /// Servers of the round instance.
    #[arg(long, default_value_t = 8, value_parser = range::servers)]
    pub servers: usize,
    /// Jobs in the round instance.
    #[arg(long, default_value_t = 16, value_parser = range::at_least_one)]
    pub take: usize,
    /// Jobs skipped before the round.
    #[arg(long, default_value_t = 0)]
    pub skip: usize,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let Args {
        trace: name,
        group,
        seed,
        datasets,
        out,
        snapshot_out,
        servers,
        take,
        skip,
        json,
    } = args;
    let perf = perf_model(params)?;
    let src = coda::workload::source(&name, &datasets)?;
    let (path, format) = (src.path, src.format);
    let group = match (group, src.group) {
        (Some(g), Some(named)) if g != named => {
            return Err(coda::Error::setting(
                "command line",
                "--group",
                g,
                format!("trace `{name}` already keeps group `{named}`"),
            ));
        }
        (g, named) => g.or(named),
    };
    let t = Instant::now();
    let tr = trace::load(&path, format, &TraceFilter { group })?;
    let load_s = t.elapsed().as_secs_f64();
    let opts = TraceOptions {
        seed,
        ..Default::default()
    };
    let jobs = trace::to_jobs(&tr.jobs, &opts, &perf)?;
    let gpus: u64 = tr.jobs.iter().map(|j| u64::from(j.num_gpus)).sum();
    let mut by_model: std::collections::BTreeMap<&str, usize> = Default::default();
    for j in &jobs {
        *by_model.entry(j.model.as_str()).or_default() += 1;
    }
    if let Some(p) = &out {
        let text = serde_json::to_string_pretty(&jobs).expect("serialize");
        coda::io::write_atomic(p, text.as_bytes())?;
    }
    if let Some(p) = &snapshot_out {
        trace::round_snapshot(&jobs, skip, take, servers)?.to_json_file(p)?;
    }
    if json {
        let obj = serde_json::json!({
            "file": path, "format": format, "jobs": jobs.len(), "gpus_requested": gpus,
            "skipped": tr.skipped, "models": by_model, "load_s": load_s,
        });
        out!("{obj}");
    } else {
        out!(
            "{}: {} jobs ({:?}), {gpus} GPUs requested in total, loaded in {:.3} s",
            path.display(),
            jobs.len(),
            format,
            load_s
        );
        for (why, n) in &tr.skipped {
            out!("  skipped {n}: {why}");
        }
        out!("  models (seed {seed}): {by_model:?}");
    }
    Ok(ExitCode::SUCCESS)
}
