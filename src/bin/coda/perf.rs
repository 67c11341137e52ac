//! `coda perf`: Predicted speed of one job alone with an allocation and a placement.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::PerfModel;
use coda::model::{Architecture, PsTask, WorkerTask};
use coda::model::{Assignment, Cluster, JobId};
use coda::perf::ServerSize;
use coda::perf::{JobQuery, PlacementShape};

use crate::{perf_model, range};
use coda::model::ServerIdx;

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
    /// Servers on which the job's GPUs span two sockets (without `--cluster`).
    #[arg(long, default_value_t = 0, conflicts_with = "cluster")]
    pub cross_socket: u32,
    /// Price the placement on these servers as the simulator would (a cluster spec, e.g.
    /// `2xdgx-1-v100`): server `i` of the cluster holds the `i`-th count of `--placement` on
    /// its first GPUs (sockets and NVLink from its topology), PS tasks round-robin on the worker
    /// servers; also prints the job packed on the same servers and the measured envelope of
    /// spread ÷ packed step times the price is kept within. `--gpu` is the servers' type.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Folder with the measured tables (for `--cluster`'s named servers).
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// List the known models.
    #[arg(long)]
    pub list: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let Args {
        model,
        workers,
        ps,
        placement,
        gpu,
        batch,
        ps_local,
        cross_socket,
        cluster,
        datasets,
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
    let arch = perf.known_architecture(&model, "--model")?;
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
    let q = JobQuery {
        model: &model,
        arch,
        gpus_per_worker: 1,
        local_batch: batch.map(f64::from),
        goodput: None,
    };
    if let Some(spec) = cluster {
        let c = coda::workload::cluster_from_spec(&spec, &datasets, &perf)?;
        return on_cluster(&perf, &q, (&c, &spec), (&placement, ps), json);
    }
    let mut shape = PlacementShape::isolated(workers, ps, placement.clone());
    shape.ps_colocated_fraction = ps_local;
    shape.cross_socket_servers = cross_socket;
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

/// `coda perf --cluster`: the placement (GPUs per server, and PS) laid on the first servers of
/// `cluster` (named `spec`) and priced as the simulator prices a job alone there, next to the
/// same job packed on the same servers.
fn on_cluster(
    perf: &dyn PerfModel,
    q: &JobQuery<'_>,
    (cluster, spec): (&Cluster, &str),
    (placement, ps): (&[u32], u32),
    json: bool,
) -> coda::Result<ExitCode> {
    let bad = |reason: String| {
        coda::Error::invalid(
            "--placement",
            0,
            "placement",
            format!("{placement:?}"),
            reason,
        )
    };
    if placement.len() > cluster.servers.len() {
        return Err(bad(format!(
            "{} servers asked, `{spec}` has {}",
            placement.len(),
            cluster.servers.len()
        )));
    }
    let lay = |per_server: &[u32]| -> coda::Result<Assignment> {
        let mut workers = Vec::new();
        for (server, &n) in per_server.iter().enumerate() {
            let have = cluster.servers[server].num_gpus();
            if n > have {
                return Err(bad(format!(
                    "server {server} of `{spec}` has {have} GPUs, not {n}"
                )));
            }
            workers.extend((0..n).map(|g| WorkerTask {
                server: ServerIdx(server),
                gpus: vec![g],
            }));
        }
        let ps = (0..ps as usize)
            .map(|p| PsTask {
                server: ServerIdx(p % per_server.len()),
            })
            .collect();
        Ok(Assignment {
            tier: 0,
            job: JobId(0),
            workers,
            ps,
        })
    };
    let k: u32 = placement.iter().sum();
    let gpu = cluster.servers[0].gpu_type;
    let job = coda::perf::probe_job(q, k, ps);
    let slots = cluster.slot_table();
    let here = lay(placement)?;
    let s = coda::perf::speed_alone(perf, cluster, &slots, &job, &here)?;
    let size = ServerSize::of(&cluster.servers[0]);
    let packed_layout = coda::perf::packed(k, size.gpus);
    let packed = (packed_layout.len() <= cluster.servers.len())
        .then(|| lay(&packed_layout))
        .transpose()?
        .map(|a| coda::perf::speed_alone(perf, cluster, &slots, &job, &a))
        .transpose()?;
    let envelope = perf.spread_envelope(q.model, &gpu);
    let fp = here.footprint(&slots);
    let cross = fp.cross_socket_servers();
    if json {
        let obj = serde_json::json!({
            "model": q.model, "arch": q.arch, "cluster": spec, "gpu": gpu, "gpus": k, "ps": ps,
            "placement": placement, "cross_socket_servers": cross, "speed": s,
            "step_time_s": s.step_time_s, "packed_placement": packed_layout,
            "packed": packed, "ratio_to_packed": packed.map(|p| s.step_time_s / p.step_time_s),
            "envelope": envelope,
        });
        out!("{obj}");
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{} ({:?}) on `{spec}` ({gpu}{}), {k} GPUs, {ps} PS, placement {placement:?}, {cross} server(s) across sockets",
        q.model,
        q.arch,
        if cluster.servers[0].nvlink {
            ", NVLink"
        } else {
            ", PCIe"
        },
    );
    out!("  step_time (s per step): {:.6}", s.step_time_s);
    out!(
        "  per step: compute {:.4} s, intra-server comm {:.4} s, inter-server comm {:.4} s",
        s.compute_s,
        s.intra_comm_s,
        s.inter_comm_s
    );
    if let Some(p) = packed {
        out!(
            "  packed {packed_layout:?}: {:.6} s per step; this placement / packed = {:.3}",
            p.step_time_s,
            s.step_time_s / p.step_time_s
        );
    }
    if let Some((lo, hi)) = envelope {
        out!(
            "  measured envelope of spread / packed for {} on {gpu}: {lo:.3} .. {hi:.3}",
            q.model
        );
    }
    Ok(ExitCode::SUCCESS)
}
