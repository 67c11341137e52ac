//! What a simulation runs on: a trace turned into jobs, and the cluster it is replayed on.
//!
//! Shipped traces by name, each with a default cluster sized for it:
//!
//! | name | rows | default cluster | why |
//! |---|---|---|---|
//! | `philly` | the 5,745-job Philly window | `64xdgx-1-v100` (512 V100) | as the Pollux/Blox Philly replays; the window asks ~957 GPUs on average, so it queues |
//! | `itp-cluster02` | ITP cluster 02 (5,778 jobs) | `16xnd40rs-v2` (128) | mean demand 86 GPUs, largest job 64 |
//! | `itp-cluster06` | ITP cluster 06 (2,396 jobs) | `16xnd40rs-v2` (128) | mean demand 87 GPUs, largest job 64 |
//! | `itp` | both ITP clusters merged | `32xnd40rs-v2` (256) | the sum of the two |
//! | `alibaba` | Alibaba 2023 whole-GPU pods | `alibaba-nodes` | the trace's own nodes whose GPU type the model can price |
//!
//! Any other `--trace` value is a path to a CSV in one of the shipped formats (detected from its
//! header), replayed on `64xdgx-1-v100` unless a cluster is given.
//!
//! Servers come from `datasets/servers.csv`, each row cited to its vendor's specification:
//! `dgx-1-v100` (NVIDIA DGX-1: 40 cores, 512 GiB, 4 × 100 Gb/s) for Philly, whose trace records
//! no hardware coda can price, and `nd40rs-v2` (Azure NDv2: 40 cores, 672 GiB, 100 Gb/s — the
//! machines of the Sia profile that calibrates coda's V100 speeds) for the Microsoft ITP
//! clusters, whose trace records none either. Alibaba's nodes are its own file's.
//!
//! Cluster specs: `NxNAME` (N servers of row NAME of `servers.csv`), `NxG` (N servers of G GPUs
//! of the default type, `v100`), `NxG:TYPE`, `alibaba-nodes`, or the path of a JSON file holding
//! a [`Cluster`]. A generic `G`-GPU server has 2 sockets × 2 PCIe switches when `G` is a
//! multiple of 4 (2 sockets × 1 switch when even, else one of each) and the DGX-1's per-GPU
//! resources (5 cores, 64 GiB, 50 Gb/s of NIC per GPU), but PCIe only: `Nx8` is
//! [`crate::workload::trace::default_server`] without its NVLink, so a placement across its
//! sockets pays the cross-socket estimate (a commodity server; `Nxdgx-1-v100` has NVLink).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::{Architecture, Cluster, Job, Server};
use crate::perf::{JobQuery, PerfModel, PlacementShape};
use crate::workload::trace::{self, TraceFilter, TraceFormat, TraceOptions};

/// Jobs and the cluster they are replayed on.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The trace's name (or path).
    pub trace: String,
    /// The cluster spec used.
    pub cluster_spec: String,
    /// The cluster.
    pub cluster: Cluster,
    /// The jobs, in trace order.
    pub jobs: Vec<Job>,
    /// Trace rows skipped by the reader, with the reason.
    pub skipped: Vec<(String, usize)>,
}

/// The shipped trace names [`load`] understands.
pub const SHIPPED_TRACES: [&str; 5] =
    ["philly", "itp-cluster02", "itp-cluster06", "itp", "alibaba"];

/// Where a trace name points: the file, its format, the group kept and the default cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSource {
    /// The CSV file.
    pub path: PathBuf,
    /// Its format.
    pub format: TraceFormat,
    /// The group kept (`itp-cluster06` keeps `cluster06`), if any.
    pub group: Option<String>,
    /// The cluster spec it is replayed on unless one is given.
    pub default_cluster: &'static str,
}

/// Resolves a trace name for every command alike: one of [`SHIPPED_TRACES`] (in `datasets`),
/// or the path of an existing CSV in a shipped format. Anything else is an error that lists the
/// names.
pub fn source(name: &str, datasets: &Path) -> Result<TraceSource> {
    let (path, format, group, default_cluster) = match name {
        "philly" => (
            datasets.join(TraceFormat::Philly.shipped_file()),
            TraceFormat::Philly,
            None,
            "64xdgx-1-v100",
        ),
        "itp-cluster02" | "itp-cluster06" => (
            datasets.join(TraceFormat::Itp.shipped_file()),
            TraceFormat::Itp,
            Some(name.trim_start_matches("itp-").to_string()),
            "16xnd40rs-v2",
        ),
        "itp" => (
            datasets.join(TraceFormat::Itp.shipped_file()),
            TraceFormat::Itp,
            None,
            "32xnd40rs-v2",
        ),
        "alibaba" => (
            datasets.join(TraceFormat::Alibaba.shipped_file()),
            TraceFormat::Alibaba,
            None,
            "alibaba-nodes",
        ),
        path if Path::new(path).is_file() => {
            let p = Path::new(path).to_path_buf();
            let f = TraceFormat::detect(&p)?;
            (p, f, None, "64xdgx-1-v100")
        }
        _ => {
            return Err(Error::UnknownName {
                what: "trace".into(),
                name: name.into(),
                reason: format!(
                    "neither a shipped trace ({}) nor an existing CSV file",
                    SHIPPED_TRACES.join(", ")
                ),
            });
        }
    };
    Ok(TraceSource {
        path,
        format,
        group,
        default_cluster,
    })
}

/// Which trace to load, from where, and onto which cluster.
#[derive(Debug, Clone, Copy)]
pub struct TraceRef<'a> {
    /// A shipped name or a CSV path (see [`source`]).
    pub name: &'a str,
    /// The folder of the shipped data.
    pub datasets: &'a Path,
    /// A cluster spec (`NxG`, `NxG:TYPE`, `alibaba-nodes`, a cluster file), or `None`: the
    /// trace's default.
    pub cluster: Option<&'a str>,
    /// Only the first this many jobs.
    pub take: Option<usize>,
}

/// Loads `trace`, converts its rows with `opts`, keeps the first `take` jobs if given, and
/// builds its cluster.
pub fn load(trace: TraceRef<'_>, opts: &TraceOptions, perf: &dyn PerfModel) -> Result<Workload> {
    let TraceRef {
        name,
        datasets,
        cluster,
        take,
    } = trace;
    let src = source(name, datasets)?;
    let (path, format, group, default_cluster) =
        (src.path, src.format, src.group, src.default_cluster);
    let spec = cluster.unwrap_or(default_cluster);
    let mut cluster = cluster_from_spec(spec, datasets, perf)?;
    if let Some(c) = opts.server_cpu_per_gpu {
        if !c.is_finite() || c <= 0.0 {
            return Err(Error::setting(
                "trace options",
                "server_cpu_per_gpu",
                c,
                "must be finite and > 0",
            ));
        }
        for s in &mut cluster.servers {
            s.cpu_cores = c * f64::from(s.num_gpus());
        }
    }
    let tr = trace::load(&path, format, &TraceFilter { group })?;
    let mut rows = tr.jobs;
    if let Some(n) = take {
        rows.truncate(n);
    }
    // Durations are converted on the cluster's own servers, so that a job replayed alone on it
    // takes its trace duration (see `trace::to_jobs`).
    let opts = TraceOptions {
        server: reference_server(&cluster),
        cluster: Some(cluster.clone()),
        ..opts.clone()
    };
    let jobs = trace::to_jobs(&rows, &opts, perf)?;
    Ok(Workload {
        trace: name.to_string(),
        cluster_spec: match opts.server_cpu_per_gpu {
            Some(c) => format!("{spec}@{c}cores/gpu"),
            None => spec.to_string(),
        },
        cluster,
        jobs,
        skipped: tr.skipped,
    })
}

/// Builds a cluster from a spec (see the module docs).
pub fn cluster_from_spec(spec: &str, datasets: &Path, perf: &dyn PerfModel) -> Result<Cluster> {
    let bad = |reason: &str| Error::UnknownName {
        what: "cluster spec".into(),
        name: spec.into(),
        reason: reason.into(),
    };
    if spec == "alibaba-nodes" {
        let all = trace::load_alibaba_nodes(&datasets.join("alibaba_2023_openb_gpu_nodes.csv"))?;
        let servers: Vec<Server> = all
            .servers
            .into_iter()
            .filter(|s| s.num_gpus() > 0 && priceable(perf, &s.gpu_type))
            .collect();
        if servers.is_empty() {
            return Err(bad("no node of a GPU type the performance model can price"));
        }
        return Ok(Cluster { servers });
    }
    if let Some((n, name)) = spec.split_once('x')
        && let Ok(n) = n.parse::<usize>()
        && name.parse::<u32>().is_err()
        && !name.contains(':')
    {
        let servers = server_specs(datasets)?;
        let Some(server) = servers.iter().find(|s| s.name == name) else {
            return Err(bad(&format!(
                "no server `{name}` in servers.csv (known: {})",
                servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if n == 0 {
            return Err(bad("need at least one server"));
        }
        if !priceable(perf, &server.gpu_type) {
            return Err(bad(&format!(
                "GPU type `{}` cannot be priced by the performance model",
                server.gpu_type
            )));
        }
        return Ok(Cluster::homogeneous(n, server));
    }
    let (size, gpu_type) = spec.split_once(':').unwrap_or((spec, "v100"));
    if let Some((n, g)) = size.split_once('x')
        && let (Ok(n), Ok(g)) = (n.parse::<usize>(), g.parse::<u32>())
    {
        if n == 0 || g == 0 {
            return Err(bad("need at least one server of at least one GPU"));
        }
        if !priceable(perf, gpu_type) {
            return Err(bad(&format!(
                "GPU type `{gpu_type}` cannot be priced by the performance model"
            )));
        }
        let (sockets, switches, per_switch) = if g % 4 == 0 {
            (2, 2, g / 4)
        } else if g % 2 == 0 {
            (2, 1, g / 2)
        } else {
            (1, 1, g)
        };
        let server = Server::uniform(
            "node",
            gpu_type,
            [sockets, switches, per_switch],
            crate::model::HostResources::new(
                5.0 * f64::from(g),
                64.0 * f64::from(g),
                50.0 * f64::from(g),
            ),
        );
        return Ok(Cluster::homogeneous(n, &server));
    }
    let p = Path::new(spec);
    if p.exists() {
        let text = std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?;
        let cluster: Cluster = crate::util::json::parse_json(&text, &p.display().to_string())?;
        if cluster.num_gpus() == 0 {
            return Err(Error::EmptyCluster {
                context: p.display().to_string(),
                what: "GPUs".into(),
            });
        }
        return Ok(cluster);
    }
    Err(bad(
        "expected NxG, NxG:TYPE, alibaba-nodes or the path of a cluster JSON file",
    ))
}

/// Whether every all-reduce model can be priced on `gpu_type` (PS models ignore the type).
fn priceable(perf: &dyn PerfModel, gpu_type: &str) -> bool {
    perf.models()
        .iter()
        .filter(|(_, a)| *a == Architecture::AllReduce)
        .all(|(m, a)| {
            let q = JobQuery {
                model: m,
                arch: *a,
                gpus_per_worker: 1,
                local_batch: None,
                goodput: None,
            };
            perf.speed(&q, gpu_type, &PlacementShape::isolated(1, 0, vec![1]))
                .is_ok()
        })
}

/// The servers of `datasets/servers.csv` (name, GPU type, topology, cores, memory, NIC), each
/// row cited to its vendor's specification in its `source` column.
pub(crate) fn server_specs(datasets: &Path) -> Result<Vec<Server>> {
    let path = datasets.join("servers.csv");
    let f = crate::util::csvio::CsvFile::open(
        &path,
        &[
            "name",
            "gpu_type",
            "sockets",
            "switches_per_socket",
            "gpus_per_switch",
            "gpu_link",
            "cpu_cores",
            "memory_gib",
            "nic_gbps",
            "source",
        ],
    )?;
    f.rows()
        .map(|r| {
            let server = Server::uniform(
                r.str("name"),
                r.str("gpu_type"),
                [
                    r.positive_count("sockets")?,
                    r.positive_count("switches_per_socket")?,
                    r.positive_count("gpus_per_switch")?,
                ],
                crate::model::HostResources::new(
                    r.positive("cpu_cores")?,
                    r.positive("memory_gib")?,
                    r.positive("nic_gbps")?,
                ),
            );
            match r.str("gpu_link") {
                "nvlink" => Ok(server.with_nvlink()),
                "pcie" => Ok(server),
                _ => Err(r.bad("gpu_link", "expected `nvlink` or `pcie`")),
            }
        })
        .collect()
}

/// The server trace durations are converted on: the most common server among those with the
/// most GPUs (every server of a homogeneous cluster; on Alibaba's nodes, its most common 8-GPU
/// node), first in cluster order on ties.
pub(crate) fn reference_server(cluster: &Cluster) -> Server {
    let most = cluster
        .servers
        .iter()
        .map(|s| s.num_gpus())
        .max()
        .unwrap_or(0);
    // Servers alike in type, topology, cores and memory, counted in one pass (a cluster may have
    // a million servers): count and first position of each kind.
    type Kind<'a> = (&'a str, &'a [Vec<u32>], u64, u64, bool);
    let mut kinds: std::collections::HashMap<Kind<'_>, (usize, usize)> =
        std::collections::HashMap::new();
    for (i, s) in cluster.servers.iter().enumerate() {
        if s.num_gpus() == most {
            let key = (
                s.gpu_type.as_str(),
                s.topology.as_slice(),
                s.cpu_cores.to_bits(),
                s.memory_gib.to_bits(),
                s.nvlink,
            );
            kinds.entry(key).or_insert((0, i)).0 += 1;
        }
    }
    kinds
        .values()
        .max_by_key(|&&(count, first)| (count, std::cmp::Reverse(first)))
        .map(|&(_, first)| &cluster.servers[first])
        .map_or_else(trace::default_server, Server::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, ty: &str, gpus: u32, cores: f64) -> Server {
        Server::uniform(
            name,
            ty,
            [1, 1, gpus],
            crate::model::HostResources::new(cores, 256.0, 25.0),
        )
    }

    #[test]
    fn reference_server_is_the_most_common_of_the_largest_first_on_ties() {
        let cluster = |servers| Cluster { servers };
        // The 8-GPU t4 servers outnumber the 8-GPU v100 one; the 4-GPU k80s, the most numerous,
        // are not among the largest.
        let c = cluster(vec![
            server("a", "v100", 8, 40.0),
            server("b", "k80", 4, 40.0),
            server("c", "k80", 4, 40.0),
            server("d", "k80", 4, 40.0),
            server("e", "t4", 8, 40.0),
            server("f", "t4", 8, 40.0),
        ]);
        assert_eq!(reference_server(&c).name, "e");
        // Servers differing only in cores are different kinds; on a tie the first in cluster
        // order wins.
        let c = cluster(vec![
            server("a", "v100", 8, 40.0),
            server("b", "v100", 8, 48.0),
            server("c", "v100", 8, 48.0),
            server("d", "v100", 8, 40.0),
        ]);
        assert_eq!(reference_server(&c).name, "a");
        let c = cluster(vec![server("z", "v100", 2, 8.0)]);
        assert_eq!(reference_server(&c).name, "z");
    }
}
