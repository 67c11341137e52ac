//! `coda bench-sim`: how a replay's cost grows with jobs and servers. Traces of any length are
//! drawn from the Philly window (jobs resampled with their models, GPU counts and durations;
//! inter-arrival gaps resampled and divided by `servers / 64`, so that every cluster sees the
//! Philly window's load per server), replayed under each policy in a child process (its own
//! peak memory), and written as a CSV and a log–log plot with the fitted exponents.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use coda::model::{Cluster, JobId, RunState};
use coda::policies::PolicyKind;
use coda::replay::Replay;
use coda::sim::{Observe, Simulator};
use coda::workload::Workload;
use coda::{ClusterSnapshot, Error};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::perf_model;

/// Arguments of `coda bench-sim`.
#[derive(clap::Args)]
pub struct Args {
    /// Jobs per generated trace, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000", value_parser = crate::range::at_least_one)]
    pub jobs: Vec<usize>,
    /// Servers (the Philly window's DGX-1: 8 V100 each), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,256,1000", value_parser = crate::range::at_least_one)]
    pub servers: Vec<usize>,
    /// Policies.
    #[arg(long, value_delimiter = ',', default_value = "fifo,pollux,learned")]
    pub policies: Vec<PolicyKind>,
    /// Seed of the resampling (and of the policies).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Wall-clock limit per replay, seconds: a replay still running then is stopped and
    /// reported as such (the CSV says which).
    #[arg(long, default_value_t = 3600.0)]
    pub max_wall_s: f64,
    /// Folder of the shipped data.
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// Output folder: `bench_sim.csv` and `bench_sim.svg`.
    #[arg(long, default_value = "bench_sim")]
    pub out: PathBuf,
    /// One replay, `JOBS,SERVERS,POLICY`, its row printed as JSON (what each child runs).
    #[arg(long, hide = true)]
    pub case: Option<String>,
}

/// One replay's cost (a row of `bench_sim.csv`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// Jobs in the trace.
    pub jobs: usize,
    /// Servers.
    pub servers: usize,
    /// The policy.
    pub policy: String,
    /// `done`, or `stopped` (past `--max-wall-s`) or `failed` (the child's error).
    pub status: String,
    /// The replay itself (trace generation and the policy's set-up excluded), seconds.
    pub wall_s: Option<f64>,
    /// The whole child process, seconds.
    pub process_s: f64,
    /// Rounds the policy decided.
    pub rounds: Option<u64>,
    /// Events the simulator processed.
    pub events: Option<u64>,
    /// Rounds decided per second of `wall_s`.
    pub rounds_per_s: Option<f64>,
    /// Peak resident memory of the child, MiB (Linux `VmHWM`).
    pub peak_rss_mib: Option<f64>,
    /// Instructions retired: left empty (no hardware counters are read; count a single replay
    /// with `valgrind --tool=callgrind coda bench-sim --case JOBS,SERVERS,POLICY`).
    pub instructions: Option<u64>,
    /// Simulated time from the first arrival to the last completion, days.
    pub makespan_days: Option<f64>,
    /// Average JCT of the tracked jobs, hours: the run is a real replay.
    pub avg_jct_h: Option<f64>,
}

/// The rows of a `bench_sim.csv`.
pub fn read_rows(path: &Path) -> coda::Result<Vec<Row>> {
    let mut reader =
        csv::Reader::from_path(path).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    reader
        .deserialize()
        .enumerate()
        .map(|(i, r)| {
            r.map_err(|e| {
                Error::setting(
                    &path.display().to_string(),
                    &format!("line {}", i + 2),
                    e,
                    "a bench-sim row",
                )
            })
        })
        .collect()
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    if let Some(case) = &args.case {
        let row = one(case, &args, params)?;
        out!("{}", serde_json::to_string(&row).expect("rows serialise"));
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&args.out).map_err(|e| Error::io(&args.out, e))?;
    let csv = args.out.join("bench_sim.csv");
    coda::io::check_writable(&csv)?;
    let exe = std::env::current_exe().map_err(|e| Error::io(Path::new("coda"), e))?;
    let mut rows = Vec::new();
    for &jobs in &args.jobs {
        for &servers in &args.servers {
            for policy in &args.policies {
                let row = child(&exe, jobs, servers, policy.name(), &args, params)?;
                eprintln!(
                    "{jobs:>7} jobs {servers:>5} servers {:<8} {:<7} wall {} rounds {} peak {} MiB",
                    row.policy,
                    row.status,
                    row.wall_s.map_or("-".into(), |w| format!("{w:.2} s")),
                    row.rounds.map_or("-".into(), |r| r.to_string()),
                    row.peak_rss_mib.map_or("-".into(), |m| format!("{m:.0}")),
                );
                rows.push(row);
                // Written after every replay: a long sweep stopped midway keeps what it measured.
                coda::io::write_csv(&csv, &rows)?;
            }
        }
    }
    for line in exponents(&rows) {
        out!("{line}");
    }
    plot(&rows, &args.out.join("bench_sim.svg"))?;
    out!("wrote {} and bench_sim.svg", csv.display());
    Ok(ExitCode::SUCCESS)
}

/// One replay in a child process, stopped past `--max-wall-s`.
fn child(
    exe: &Path,
    jobs: usize,
    servers: usize,
    policy: &str,
    args: &Args,
    params: &crate::PerfSource,
) -> coda::Result<Row> {
    let mut cmd = Command::new(exe);
    cmd.args(params.args());
    cmd.arg("bench-sim")
        .arg("--case")
        .arg(format!("{jobs},{servers},{policy}"))
        .arg("--seed")
        .arg(args.seed.to_string())
        .arg("--datasets")
        .arg(&args.datasets)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t = Instant::now();
    let mut proc = cmd.spawn().map_err(|e| Error::io(exe, e))?;
    let limit = Duration::from_secs_f64(args.max_wall_s.max(1.0));
    let status = loop {
        if let Some(s) = proc.try_wait().map_err(|e| Error::io(exe, e))? {
            break Some(s);
        }
        if t.elapsed() > limit {
            // Past the limit: stopped, and reported as such rather than waited for.
            let _ = proc.kill();
            let _ = proc.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let process_s = t.elapsed().as_secs_f64();
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut o) = proc.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    if let Some(mut e) = proc.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let empty = |status: &str| Row {
        jobs,
        servers,
        policy: policy.to_string(),
        status: status.to_string(),
        wall_s: None,
        process_s,
        rounds: None,
        events: None,
        rounds_per_s: None,
        peak_rss_mib: None,
        instructions: None,
        makespan_days: None,
        avg_jct_h: None,
    };
    match status {
        None => Ok(empty("stopped")),
        Some(s) if s.success() => {
            let mut row: Row = serde_json::from_str(stdout.trim()).map_err(|e| {
                Error::setting(
                    "bench-sim",
                    "case",
                    stdout.trim(),
                    format!("a row ({e})").as_str(),
                )
            })?;
            row.process_s = process_s;
            Ok(row)
        }
        Some(_) => {
            eprintln!(
                "{jobs} jobs, {servers} servers, {policy}: {}",
                stderr.trim()
            );
            Ok(empty("failed"))
        }
    }
}

/// Counts the rounds a replay decides.
#[derive(Default)]
struct Rounds(u64);

impl Observe for Rounds {
    fn observe_round(
        &mut self,
        _sim: &Simulator<'_>,
        _snapshot: &ClusterSnapshot,
        _events: &[coda::scheduler::RoundEvent],
    ) -> coda::Result<()> {
        self.0 += 1;
        Ok(())
    }
}

/// Runs one case in this process.
fn one(case: &str, args: &Args, params: &crate::PerfSource) -> coda::Result<Row> {
    let bad = || Error::setting("bench-sim", "case", case, "JOBS,SERVERS,POLICY");
    let mut parts = case.split(',');
    let (Some(j), Some(s), Some(p), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let jobs: usize = j.parse().map_err(|_| bad())?;
    let servers: usize = s.parse().map_err(|_| bad())?;
    let policy: PolicyKind = p.parse()?;
    let perf = perf_model(params)?;
    let mut replay = Replay::of("philly");
    replay.workload.seed = args.seed;
    replay.workload.datasets = args.datasets.clone();
    let source = replay.workload(&perf)?;
    let workload = resample(&source, jobs, servers, args.seed)?;
    let mut rounds = Rounds::default();
    // Allowance 1: all contention charged on top of the durations (a FIFO replay to measure
    // it would double the cost measured; it changes speeds, not the work per round).
    let run = replay.run(policy, &workload, 1.0, &perf, &mut [&mut rounds])?;
    let s = &run.summary;
    Ok(Row {
        jobs,
        servers,
        policy: policy.name().to_string(),
        status: "done".into(),
        wall_s: Some(s.wall_s),
        process_s: 0.0,
        rounds: Some(rounds.0),
        events: Some(s.events),
        rounds_per_s: Some(rounds.0 as f64 / s.wall_s.max(1e-9)),
        peak_rss_mib: peak_rss_mib(),
        instructions: None,
        makespan_days: Some(s.metrics.makespan_s / 86_400.0),
        avg_jct_h: Some(s.metrics.avg_jct_s / 3600.0),
    })
}

/// `jobs` jobs drawn (with replacement) from `source`'s, arriving with its inter-arrival gaps
/// (also drawn) divided by `servers / 64`, on `servers` servers like its first.
fn resample(source: &Workload, jobs: usize, servers: usize, seed: u64) -> coda::Result<Workload> {
    let template = source
        .cluster
        .servers
        .first()
        .ok_or_else(|| Error::setting("bench-sim", "trace", "philly", "a cluster"))?;
    let mut arrivals: Vec<f64> = source.jobs.iter().map(|j| j.arrival_s).collect();
    arrivals.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    if source.jobs.is_empty() || gaps.is_empty() {
        return Err(Error::setting(
            "bench-sim",
            "trace",
            "philly",
            "two jobs or more",
        ));
    }
    let scale = 64.0 / servers.max(1) as f64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0;
    let out = (0..jobs)
        .map(|i| {
            let mut job = source.jobs[rng.random_range(0..source.jobs.len())].clone();
            job.id = JobId(i as u64);
            job.arrival_s = t;
            job.run = RunState::default();
            t += gaps[rng.random_range(0..gaps.len())] * scale;
            job
        })
        .collect();
    Ok(Workload {
        trace: format!("philly, resampled to {jobs} jobs"),
        cluster_spec: format!("{servers}x{}", template.name),
        cluster: Cluster::homogeneous(servers, template),
        jobs: out,
        skipped: Vec::new(),
    })
}

/// Peak resident memory of this process, MiB, where the system reports it (Linux).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Least-squares slope of `ln y` against `ln x` (None with fewer than two distinct x).
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.0 > 0.0 && p.1 > 0.0)
        .map(|p| (p.0.ln(), p.1.ln()))
        .collect();
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (pts.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

/// The measured exponents of wall time in jobs (per policy and cluster) and in servers (per
/// policy and trace length), over the finished replays.
pub fn exponents(rows: &[Row]) -> Vec<String> {
    let done: Vec<&Row> = rows.iter().filter(|r| r.wall_s.is_some()).collect();
    let mut policies: Vec<&str> = Vec::new();
    for r in &done {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    let mut lines = vec![
        "| policy | held fixed | exponent of wall time | of wall time per round |".to_string(),
        "|---|---|---|---|".to_string(),
    ];
    let fmt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
    for p in policies {
        let of: Vec<&Row> = done.iter().copied().filter(|r| r.policy == p).collect();
        // Wall time (and per round) against one axis, the other held at each of its values.
        let mut fit = |held: fn(&Row) -> usize, axis: fn(&Row) -> usize, what: &str, by: &str| {
            let mut values: Vec<usize> = of.iter().map(|r| held(r)).collect();
            values.sort_unstable();
            values.dedup();
            for v in values {
                let pick: Vec<&&Row> = of.iter().filter(|r| held(r) == v).collect();
                let wall: Vec<(f64, f64)> = pick
                    .iter()
                    .map(|r| (axis(r) as f64, r.wall_s.unwrap_or(0.0)))
                    .collect();
                let per: Vec<(f64, f64)> = pick
                    .iter()
                    .map(|r| {
                        let rounds = r.rounds.unwrap_or(1).max(1) as f64;
                        (axis(r) as f64, r.wall_s.unwrap_or(0.0) / rounds)
                    })
                    .collect();
                lines.push(format!(
                    "| {p} | {v} {what} (in {by}) | {} | {} |",
                    fmt(slope(&wall)),
                    fmt(slope(&per))
                ));
            }
        };
        fit(|r| r.servers, |r| r.jobs, "servers", "jobs");
        fit(|r| r.jobs, |r| r.servers, "jobs", "servers");
    }
    lines
}

/// Wall time against jobs, one line per (policy, servers), log–log (`coda report` redraws it
/// from the CSV, which may gather several sweeps).
pub fn plot(rows: &[Row], path: &Path) -> coda::Result<()> {
    let mut keys: Vec<(String, usize)> = rows
        .iter()
        .filter(|r| r.wall_s.is_some())
        .map(|r| (r.policy.clone(), r.servers))
        .collect();
    keys.sort();
    keys.dedup();
    let series: Vec<(String, Vec<(f64, f64)>)> = keys
        .iter()
        .map(|(p, s)| {
            let mut pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| &r.policy == p && r.servers == *s)
                .filter_map(|r| Some((r.jobs as f64, r.wall_s?)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (format!("{p}, {s} servers"), pts)
        })
        .collect();
    let refs: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(l, p)| (l.as_str(), p.clone()))
        .collect();
    coda::plots::plot_log_log(
        &refs,
        path,
        "Replay wall time against trace length (Philly resampled, load per server fixed)",
        "jobs in the trace",
        "replay wall time (s)",
    )
}
