//! `coda perf`: Predicted speed of one job alone with an allocation and a placement.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::{Architecture, JobQuery, PerfModel, PlacementShape};

use crate::{perf_model, range};

/// Arguments of `coda perf`.
#[derive(clap::Args)]
pub struct Args {
    /// Model name (`--list` shows them).
    #[arg(long, required_unless_present = "list")]
    pub model: Option<String>,
    /// Workers.
    #[arg(long, default_value_t = 1, value_parser = range::workers)]
    pub workers: u32,
    /// Parameter servers (PS models; default 1).
    #[arg(long)]
    pub ps: Option<u32>,
    /// GPUs per server, comma-separated (default: all workers on one server).
    #[arg(long, value_delimiter = ',')]
    pub placement: Option<Vec<u32>>,
    /// GPU type.
    #[arg(long, default_value = "v100")]
    pub gpu: String,
    /// Per-GPU batch for all-reduce models.
    #[arg(long, value_parser = range::at_least_one_u32)]
    pub batch: Option<u32>,
    /// Fraction of worker–PS pairs on the same server (PS models).
    #[arg(long, default_value_t = 0.0, value_parser = range::fraction)]
    pub ps_local: f64,
    /// Servers on which the job's GPUs span two sockets.
    #[arg(long, default_value_t = 0)]
    pub cross_socket: u32,
    /// List the known models.
    #[arg(long)]
    pub list: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args, params: &Option<PathBuf>) -> coda::Result<ExitCode> {
    let Args {
        model,
        workers,
        ps,
        placement,
        gpu,
        batch,
        ps_local,
        cross_socket,
        list,
        json,
    } = args;
    let perf = perf_model(params)?;
    if list {
        for (m, a) in perf.models() {
            out!("{m}\t{a:?}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let model = model.expect("clap requires --model without --list");
    let arch = perf
        .architecture(&model)
        .ok_or_else(|| coda::Error::UnknownModel {
            context: "--model".into(),
            model: model.clone(),
            known: perf
                .models()
                .into_iter()
                .map(|(m, _)| m)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let ps = match arch {
        Architecture::ParameterServer => ps.unwrap_or(1),
        Architecture::AllReduce => ps.unwrap_or(0),
    };
    let placement = placement.unwrap_or_else(|| vec![workers]);
    if placement.iter().sum::<u32>() != workers || placement.contains(&0) {
        return Err(coda::Error::invalid(
            "--placement",
            0,
            "placement",
            format!("{placement:?}"),
            format!("GPUs per server must be >= 1 and sum to --workers {workers}"),
        ));
    }
    if cross_socket as usize > placement.len() {
        return Err(coda::Error::invalid(
            "--cross-socket",
            0,
            "cross_socket",
            cross_socket,
            format!("at most the {} server(s) of --placement", placement.len()),
        ));
    }
    let mut shape = PlacementShape::isolated(workers, ps, placement.clone());
    shape.ps_colocated_fraction = ps_local;
    shape.cross_socket_servers = cross_socket;
    let q = JobQuery {
        model: &model,
        arch,
        gpus_per_worker: 1,
        local_batch: batch.map(f64::from),
    };
    let s = perf.speed(&q, &gpu, &shape)?;
    let (value, unit) = match arch {
        Architecture::ParameterServer => (
            s.iterations_per_s,
            "job_speed (steps/s summed over workers)",
        ),
        Architecture::AllReduce => (s.step_time_s, "step_time (s per step)"),
    };
    if json {
        let obj = serde_json::json!({
            "model": model, "arch": arch, "gpu": gpu, "workers": workers, "ps": ps,
            "placement": placement, "value": value, "unit": unit, "speed": s,
        });
        out!("{obj}");
    } else {
        out!("{model} ({arch:?}) on {gpu}, {workers} workers, {ps} PS, placement {placement:?}");
        out!("  {unit}: {value:.6}");
        out!(
            "  per step: compute {:.4} s, intra-server comm {:.4} s, inter-server comm {:.4} s",
            s.compute_s,
            s.intra_comm_s,
            s.inter_comm_s
        );
    }
    Ok(ExitCode::SUCCESS)
}
