//! `coda slurm`: the placement daemon on a real Slurm cluster (`run`), the job a live test
//! submits (`job`: it sleeps the time the performance model predicts for the GPUs Slurm gave
//! it), and the tagged jobs of a trace slice (`workload`). The library's [`coda::slurm`] owns
//! the reading and the planning; this file runs Slurm's commands and the loop.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args as ClapArgs, Subcommand};
use coda::PerfModel;
use coda::policies::PolicyKind;
use coda::replay::{PolicySpec, Replay, SimSpec, WorkloadSpec};
use coda::slurm::{Action, JobView, Round, RoundSettings, SlurmSpec, SlurmView, Tag};
use coda::workload::trace::CpuMemMode;
use coda::{Error, Result, Scheduler};

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// The placement daemon: every round, read Slurm, decide the tagged jobs, apply the decision
    /// with `scontrol` (`--once`: one round; `--dry-run`: print the commands, run none).
    Run(Box<RunArgs>),
    /// Run inside a Slurm job: sleep the time the performance model predicts for the GPUs Slurm
    /// gave this job (in context, re-priced every tick), checkpointing its work into its tag.
    Job(JobArgs),
    /// The tagged jobs of a trace slice, one JSON object per line (arrival, nodes and GPUs per
    /// node it asks Slurm for, tag): what a live test submits.
    Workload(WorkloadArgs),
}

/// The cluster coda sees behind Slurm's nodes.
#[derive(ClapArgs, Debug, Clone)]
pub struct ClusterArgs {
    /// Servers, as `coda simulate --cluster` takes them (`4xdgx-1-v100`, `Nx8`, a JSON file).
    #[arg(long, default_value = "4xdgx-1-v100")]
    pub cluster: String,
    /// Slurm's node names for those servers, in order (a host list: `n[1-4]`).
    #[arg(long)]
    pub nodes: String,
    /// Where the server table lives.
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// Seconds of the model's time per wall second (1 on a real cluster; a live test replays
    /// hours in seconds).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
}

impl ClusterArgs {
    fn spec(&self, perf: &dyn PerfModel) -> Result<SlurmSpec> {
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return Err(Error::setting(
                "command line",
                "--time-scale",
                self.time_scale,
                coda::Expected::Positive,
            ));
        }
        let cluster = coda::workload::cluster_from_spec(&self.cluster, &self.datasets, perf)?;
        SlurmSpec::new(cluster, &self.nodes)
    }
}

/// `coda slurm run`'s flags.
#[derive(ClapArgs, Debug)]
pub struct RunArgs {
    /// The cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The policy.
    #[arg(long, value_enum, default_value = "learned")]
    pub policy: PolicyKind,
    /// The policies' settings.
    #[command(flatten)]
    pub policy_spec: PolicySpec,
    /// Round length and restart cost the objective prices (model time).
    #[command(flatten)]
    pub sim: SimSpec,
    /// Wall seconds between rounds (default: a round of model time, `--round-s / --time-scale`).
    #[arg(long)]
    pub interval: Option<f64>,
    /// A job coda released that has not started after this many wall seconds is held again.
    #[arg(long, default_value_t = 30.0)]
    pub stuck_after: f64,
    /// One round, then exit.
    #[arg(long)]
    pub once: bool,
    /// Print the commands a round would run; run none.
    #[arg(long)]
    pub dry_run: bool,
    /// Stop after this many wall seconds (0: never).
    #[arg(long, default_value_t = 0.0)]
    pub max_wall: f64,
}

/// `coda slurm job`'s flags.
#[derive(ClapArgs, Debug)]
pub struct JobArgs {
    /// The cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The Slurm job (default: `$SLURM_JOB_ID`).
    #[arg(long)]
    pub job_id: Option<u64>,
    /// Restart cost, model seconds: slept after a requeue before work resumes (the simulator's
    /// `--restart-s`).
    #[arg(long, default_value_t = coda::Objective::default().restart_s)]
    pub restart_s: f64,
    /// Wall seconds between checkpoints (and re-pricing).
    #[arg(long, default_value_t = 0.5)]
    pub tick: f64,
    /// Folder where the job writes `<job id>.json` (its end time) when it finishes.
    #[arg(long)]
    pub record: Option<PathBuf>,
}

/// `coda slurm workload`'s flags.
#[derive(ClapArgs, Debug)]
pub struct WorkloadArgs {
    /// The trace slice (`--cpu-mem` is fixed: Slurm gives tasks one share).
    #[command(flatten)]
    pub workload: WorkloadSpec,
    /// GPUs per node of the Slurm cluster (a request above it spans whole nodes).
    #[arg(long, default_value_t = 8)]
    pub gpus_per_node: u32,
}

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn log(line: &str) {
    eprintln!("[coda slurm {:.3}] {line}", now_s());
}

/// Runs one Slurm command; its stdout, or an error with what it printed.
fn slurm(argv: &[String]) -> Result<String> {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| Error::Io {
            path: argv[0].clone().into(),
            source: e,
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Error::ResourceManager {
            command: argv.join(" "),
            message: format!(
                "{} ({})",
                String::from_utf8_lossy(&out.stderr).trim(),
                out.status
            ),
        })
    }
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn read_jobs() -> Result<Vec<JobView>> {
    SlurmView::parse_jobs(&slurm(&args(&["squeue", "--json"]))?)
}

fn read_view() -> Result<SlurmView> {
    Ok(SlurmView {
        jobs: read_jobs()?,
        nodes: SlurmView::parse_nodes(&slurm(&args(&["sinfo", "--json"]))?)?,
    })
}

/// Carries out one action; a refused command is logged and the action's fallback run (the job
/// released as submitted), so no job is left held by a failure.
fn apply(action: &Action, dry_run: bool) {
    log(&action.to_string());
    for c in action.commands() {
        if dry_run {
            println!("{}", c.join(" "));
            continue;
        }
        let result = slurm(&c);
        if result.is_ok() && c.get(1).is_some_and(|s| s == "requeuehold") {
            wait_pending(action.job());
        }
        if let Err(e) = result {
            let msg = e.to_string();
            if c.iter().any(|a| a.starts_with("StartTime=")) && msg.contains("no longer pending") {
                // It started already: what the command asked for.
                continue;
            }
            if msg.contains("already finished") || msg.contains("Invalid job id") {
                // It ended between the read and the command: nothing is held.
                log(&format!("job {}: ended before the action", action.job()));
                return;
            }
            log(&format!(
                "job {}: Slurm refused: {e}; released as submitted",
                action.job()
            ));
            for f in action.fallback() {
                if let Err(e) = slurm(&f) {
                    log(&format!("job {}: fallback refused too: {e}", action.job()));
                }
            }
            return;
        }
    }
}

/// Waits (at most 5 s) until a requeued job is pending again. Slurm refuses to update a job
/// that is still ending and sets its requeue delay when the requeue completes; and a job
/// released before then may start while its killed run's exit is still on its way, which
/// Slurm then records as the new run's failure (seen: a job failed with exit status 1 within
/// 2 ms of starting).
fn wait_pending(job: u64) {
    for _ in 0..100 {
        let state = slurm(&args(&["squeue", "-h", "-j", &job.to_string(), "-o", "%T"]));
        match state {
            Ok(s) if s.trim() == "PENDING" => return,
            // Gone, or ended for good: nothing to wait for.
            Ok(s) if s.trim().is_empty() => return,
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// One round; `false` when it could not read Slurm or decide (logged; the next round retries).
fn round(
    spec: &SlurmSpec,
    policy: &mut dyn Scheduler,
    perf: &dyn PerfModel,
    settings: &RoundSettings,
    dry_run: bool,
) -> bool {
    let t0 = now_s();
    let view = match read_view() {
        Ok(v) => v,
        Err(e) => {
            log(&format!("cannot read Slurm: {e}"));
            return false;
        }
    };
    let r = match Round::build(spec, &view, now_s(), perf, settings) {
        Ok(r) => r,
        Err(e) => {
            log(&format!("cannot build the round: {e}"));
            return false;
        }
    };
    for n in &r.notes {
        log(n);
    }
    for a in &r.actions {
        apply(a, dry_run);
    }
    if r.snapshot.jobs.is_empty() {
        return true;
    }
    let t1 = now_s();
    let schedule = match policy.schedule(&r.snapshot) {
        Ok(s) => s,
        Err(e) => {
            log(&format!("the policy failed: {e}"));
            return false;
        }
    };
    let t2 = now_s();
    let (actions, notes) = r.plan(&schedule);
    for n in &notes {
        log(n);
    }
    for a in &actions {
        apply(a, dry_run);
    }
    if !actions.is_empty() {
        log(&format!(
            "round: {} jobs, read {:.0} ms, decided in {:.0} ms, {} actions in {:.0} ms",
            r.snapshot.jobs.len(),
            (t1 - t0) * 1e3,
            (t2 - t1) * 1e3,
            actions.len(),
            (now_s() - t2) * 1e3
        ));
    }
    true
}

fn run_daemon(a: RunArgs, perf: &dyn PerfModel) -> Result<ExitCode> {
    let spec = a.cluster.spec(perf)?;
    let replay = Replay {
        workload: WorkloadSpec::default(),
        sim: a.sim,
        policy: a.policy_spec,
    };
    let opts = replay.policy_options()?;
    let mut policy = a.policy.build(perf, &opts)?;
    let settings = RoundSettings {
        time_scale: a.cluster.time_scale,
        stuck_after_s: a.stuck_after,
    };
    let interval = a
        .interval
        .unwrap_or(replay.sim.round_s / a.cluster.time_scale)
        .max(0.05);
    let start = now_s();
    log(&format!(
        "policy {}, {} servers, a round every {interval:.2} s",
        policy.name(),
        spec.cluster.servers.len()
    ));
    loop {
        let t = now_s();
        let ok = round(&spec, policy.as_mut(), perf, &settings, a.dry_run);
        if a.once {
            return Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
        if a.max_wall > 0.0 && now_s() - start > a.max_wall {
            return Ok(ExitCode::SUCCESS);
        }
        let left = interval - (now_s() - t);
        if left > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(left));
        }
    }
}

fn run_job(a: JobArgs, perf: &dyn PerfModel) -> Result<ExitCode> {
    let spec = a.cluster.spec(perf)?;
    let scale = a.cluster.time_scale;
    let id = match a.job_id {
        Some(id) => id,
        None => std::env::var("SLURM_JOB_ID")
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                Error::setting(
                    "environment",
                    "SLURM_JOB_ID",
                    "unset",
                    coda::Expected::Positive,
                )
            })?,
    };
    let me = |jobs: &[JobView]| jobs.iter().find(|j| j.id == id).cloned();
    let jobs = read_jobs()?;
    let view = me(&jobs).ok_or_else(|| {
        Error::setting(
            "squeue",
            "job_id",
            id,
            coda::Expected::Other("a job Slurm knows".into()),
        )
    })?;
    let mut tag = Tag::parse(&view.comment, id)?;
    if tag.done > 0.0 || view.restarts > 0 {
        // Restoring from the checkpoint costs what the simulator charges a restart.
        std::thread::sleep(Duration::from_secs_f64(a.restart_s / scale));
    }
    let mut last = now_s();
    let mut speed = 0.0;
    loop {
        std::thread::sleep(Duration::from_secs_f64(a.tick));
        let jobs = match read_jobs() {
            Ok(j) => j,
            Err(e) => {
                // slurmctld restarting: the work goes on; price it when Slurm answers again.
                eprintln!("job {id}: cannot read Slurm: {e}");
                continue;
            }
        };
        match coda::slurm::running_speeds(&spec, &jobs, perf) {
            Ok(s) => speed = s.get(&id).copied().unwrap_or(0.0),
            Err(e) => eprintln!("job {id}: cannot price the cluster ({e}); speed kept"),
        }
        let now = now_s();
        tag.done = (tag.done + speed * (now - last) * scale).min(tag.iters);
        last = now;
        let finished = tag.done >= tag.iters * (1.0 - 1e-9);
        if !finished || a.record.is_none() {
            let c = args(&[
                "scontrol",
                "update",
                &format!("JobId={id}"),
                &format!("Comment={}", tag.comment()),
            ]);
            if let Err(e) = slurm(&c) {
                eprintln!("job {id}: checkpoint not recorded: {e}");
            }
        }
        if finished {
            if let Some(dir) = &a.record {
                let v = serde_json::json!({"job": id, "name": view.name, "end_s": now,
                    "restarts": me(&jobs).map_or(0, |j| j.restarts)});
                coda::io::write_atomic(&dir.join(format!("{id}.json")), v.to_string().as_bytes())?;
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
}

fn run_workload(a: WorkloadArgs, perf: &dyn PerfModel) -> Result<ExitCode> {
    let mut workload = a.workload;
    workload.cpu_mem = CpuMemMode::Fixed;
    let replay = Replay {
        workload,
        sim: SimSpec::default(),
        policy: PolicySpec::default(),
    };
    let w = replay.workload(perf)?;
    let per = a.gpus_per_node.max(1);
    for j in &w.jobs {
        let (gpus, _) = j.requested_or_min();
        let nodes = gpus.div_ceil(per);
        let tag = Tag {
            model: j.model.clone(),
            gpus,
            iters: j.total_iterations,
            done: 0.0,
            submit: None,
        };
        println!(
            "{}",
            serde_json::json!({"id": j.id.0, "arrival_s": j.arrival_s, "model": j.model,
                "gpus": gpus, "nodes": nodes, "gpus_per_node": gpus.div_ceil(nodes),
                "comment": tag.comment()})
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs a subcommand.
pub fn run(cmd: Cmd, perf: &dyn PerfModel) -> Result<ExitCode> {
    match cmd {
        Cmd::Run(a) => run_daemon(*a, perf),
        Cmd::Job(a) => run_job(a, perf),
        Cmd::Workload(a) => run_workload(a, perf),
    }
}
