//! The `coda` command line: a thin layer over the library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

mod sensitivity;
mod simulate;

use clap::{Parser, Subcommand};
use coda::perf::{self, CalibratedPerf, Estimates, FitQuality, PerfParams};
use coda::trace::{self, TraceFilter, TraceFormat, TraceOptions};
use coda::{
    Architecture, ClusterSnapshot, GenerateOptions, JobQuery, PerfModel, PlacementShape, Schedule,
};

/// `println!` that ends the process quietly when stdout is closed (`coda ... | head`) instead of
/// panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

#[derive(Parser)]
#[command(
    name = "coda",
    version,
    about = "Contention-aware joint allocation and placement of DL training jobs"
)]
struct Cli {
    /// Performance-model parameter file (default: the shipped `models/perf_params.json`).
    #[arg(long, global = true)]
    params: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Fit the performance model to datasets/ and write the parameter file.
    Calibrate {
        /// Folder with the measured tables.
        #[arg(long, default_value = "datasets")]
        datasets: PathBuf,
        /// Where to write the parameters.
        #[arg(long, default_value = "models/perf_params.json")]
        out: PathBuf,
        /// Also write the fit-quality table as CSV here.
        #[arg(long)]
        quality_csv: Option<PathBuf>,
        /// Also write the placement check (measured vs predicted spread ÷ one-server step time,
        /// every source) as CSV here, and print its summary.
        #[arg(long)]
        placement_csv: Option<PathBuf>,
        /// Print the fit-quality table as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Predicted speed of one job alone with an allocation and a placement.
    Perf {
        /// Model name (`--list` shows them).
        #[arg(long, required_unless_present = "list")]
        model: Option<String>,
        /// Workers.
        #[arg(long, default_value_t = 1)]
        workers: u32,
        /// Parameter servers (PS models; default 1).
        #[arg(long)]
        ps: Option<u32>,
        /// GPUs per server, comma-separated (default: all workers on one server).
        #[arg(long, value_delimiter = ',')]
        placement: Option<Vec<u32>>,
        /// GPU type.
        #[arg(long, default_value = "v100")]
        gpu: String,
        /// Per-GPU batch for all-reduce models.
        #[arg(long)]
        batch: Option<u32>,
        /// Fraction of worker–PS pairs on the same server (PS models).
        #[arg(long, default_value_t = 0.0)]
        ps_local: f64,
        /// Servers on which the job's GPUs span two sockets.
        #[arg(long, default_value_t = 0)]
        cross_socket: u32,
        /// List the known models.
        #[arg(long)]
        list: bool,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Check a schedule against an instance; exit status 1 if it has violations.
    Validate {
        /// Instance (ClusterSnapshot JSON).
        #[arg(long)]
        instance: PathBuf,
        /// Schedule JSON.
        #[arg(long)]
        schedule: PathBuf,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Solve one round exactly (integer program, HiGHS) and write the schedule.
    Solve {
        /// Instance (ClusterSnapshot JSON).
        #[arg(long)]
        instance: PathBuf,
        /// Wall-clock limit, seconds.
        #[arg(long, default_value_t = 60.0)]
        time_limit: f64,
        /// Relative gap at which to stop.
        #[arg(long, default_value_t = 1e-6)]
        gap: f64,
        /// Branch-and-bound node limit (a repeatable work limit).
        #[arg(long)]
        node_limit: Option<u64>,
        /// Solver threads.
        #[arg(long, default_value_t = 1)]
        threads: u32,
        /// Solver seed.
        #[arg(long, default_value_t = 0)]
        seed: u32,
        /// MIP start from this schedule.
        #[arg(long)]
        warm_start: Option<PathBuf>,
        /// Do not order interchangeable servers.
        #[arg(long)]
        no_symmetry_breaking: bool,
        /// Round length T of the objective, seconds.
        #[arg(long, default_value_t = 300.0)]
        round_s: f64,
        /// Restart cost of the objective, seconds.
        #[arg(long, default_value_t = 60.0)]
        restart_s: f64,
        /// Write the model as MPS here.
        #[arg(long)]
        export_mps: Option<PathBuf>,
        /// Only write the MPS file; do not solve.
        #[arg(long, requires = "export_mps")]
        export_only: bool,
        /// Write the schedule here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the solver log.
        #[arg(long)]
        verbose: bool,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure build and solve time against cluster size; write a CSV and an SVG plot.
    BenchSolve {
        /// Sizes as SERVERSxJOBS (8-GPU servers), comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1x2,2x4,3x6,4x8,5x10,6x12,8x12,8x16"
        )]
        sizes: Vec<String>,
        /// Seeds per size.
        #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
        seeds: Vec<u64>,
        /// Solve these instance files instead of generating (a folder of *.json).
        #[arg(long)]
        instances: Option<PathBuf>,
        /// Wall-clock limit per solve, seconds.
        #[arg(long, default_value_t = 60.0)]
        time_limit: f64,
        /// Also solve every instance without symmetry breaking.
        #[arg(long)]
        compare_symmetry: bool,
        /// Save the generated instances here.
        #[arg(long)]
        save_instances: Option<PathBuf>,
        /// Output folder (solve_scaling.csv, solve_scaling.svg).
        #[arg(long, default_value = "out")]
        out: PathBuf,
    },
    /// Write a random instance.
    Generate {
        /// Servers.
        #[arg(long)]
        servers: usize,
        /// Jobs.
        #[arg(long)]
        jobs: usize,
        /// Seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// GPU types, round-robin over servers.
        #[arg(long, value_delimiter = ',', default_value = "v100")]
        gpu_types: Vec<String>,
        /// Fraction of jobs already running (placed first-fit).
        #[arg(long, default_value_t = 0.3)]
        running_fraction: f64,
        /// Largest worker count a job may ask for.
        #[arg(long, default_value_t = 8)]
        max_workers: u32,
        /// Output file (stdout if absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Load a trace, assign models, print a summary.
    Trace {
        /// `philly`, `itp`, `alibaba`, or the path of a CSV in one of those formats.
        #[arg(long)]
        trace: String,
        /// Keep one sub-cluster (`cluster02`, a Philly VC...).
        #[arg(long)]
        group: Option<String>,
        /// Seed of the model assignment.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Folder of the shipped traces.
        #[arg(long, default_value = "datasets")]
        datasets: PathBuf,
        /// Write the jobs (with models and work) as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write one round (jobs --skip .. --skip + --take on --servers default servers) as an
        /// instance here.
        #[arg(long)]
        snapshot_out: Option<PathBuf>,
        /// Servers of the round instance.
        #[arg(long, default_value_t = 8)]
        servers: usize,
        /// Jobs in the round instance.
        #[arg(long, default_value_t = 16)]
        take: usize,
        /// Jobs skipped before the round.
        #[arg(long, default_value_t = 0)]
        skip: usize,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Replay a trace under one policy: metrics JSON, per-job and utilisation CSVs, plots.
    Simulate {
        #[command(flatten)]
        sim: simulate::SimArgs,
        /// `fifo`, `srtf`, `drf`, `tiresias`, `optimus`, `sjf-bco`, `pollux`, `random`, `ilp`.
        #[arg(long)]
        policy: String,
    },
    /// Replay a trace under several policies in parallel: one table, one plot, and each run's
    /// files in a subfolder.
    Compare {
        #[command(flatten)]
        sim: simulate::SimArgs,
        #[command(flatten)]
        runs: simulate::PolicyRuns,
    },
    /// Which estimate drives which result: replay every policy with each named estimate at its
    /// low, shipped and high value, and with all contention off (`sensitivity.{csv,md}`).
    Sensitivity {
        #[command(flatten)]
        sim: simulate::SimArgs,
        #[command(flatten)]
        runs: simulate::PolicyRuns,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn perf_model(params: &Option<PathBuf>) -> coda::Result<CalibratedPerf> {
    match params {
        Some(p) => CalibratedPerf::from_file(p),
        None => Ok(CalibratedPerf::shipped().clone()),
    }
}

fn run(cli: Cli) -> coda::Result<ExitCode> {
    match cli.cmd {
        Cmd::Calibrate {
            datasets,
            out,
            quality_csv,
            placement_csv,
            json,
        } => {
            let t = Instant::now();
            let params = perf::calibrate(&datasets, Estimates::default())?;
            let text = serde_json::to_string_pretty(&params).expect("params serialize") + "\n";
            coda::write_atomic(&out, text.as_bytes())?;
            if let Some(q) = quality_csv {
                coda::write_atomic(&q, quality_csv_text(&params.fit_quality).as_bytes())?;
            }
            if let Some(p) = placement_csv {
                let rows = perf::placement_check(&datasets, &params)?;
                coda::write_atomic(&p, placement_csv_text(&rows).as_bytes())?;
                if !json {
                    out!("{}", perf::placement_summary(&rows));
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
        Cmd::Perf {
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
        } => {
            let perf = perf_model(&cli.params)?;
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
                out!(
                    "{model} ({arch:?}) on {gpu}, {workers} workers, {ps} PS, placement {placement:?}"
                );
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
        Cmd::Validate {
            instance,
            schedule,
            json,
        } => {
            let perf = perf_model(&cli.params)?;
            let snap = ClusterSnapshot::from_json_file(&instance)?;
            let origin = instance.display().to_string();
            for j in &snap.jobs {
                perf.check_job(j, &origin)?;
            }
            let sched = Schedule::from_json_file(&schedule)?;
            let t = Instant::now();
            let violations = sched.validate(&snap);
            let validate_s = t.elapsed().as_secs_f64();
            let score = if violations.is_empty() {
                Some(coda::Objective::default().score(&perf, &snap, &sched)?)
            } else {
                None
            };
            let speeds = if violations.is_empty() {
                perf::speeds(&perf, &snap, &sched)?
            } else {
                Vec::new()
            };
            if json {
                let obj = serde_json::json!({
                    "valid": violations.is_empty(),
                    "violations": violations,
                    "speeds": speeds.iter().map(|(j, s)| serde_json::json!({"job": j, "speed": s})).collect::<Vec<_>>(),
                    "validate_s": validate_s,
                    "objective": score.as_ref().map(|x| x.total),
                });
                out!("{obj}");
            } else {
                if let Some(sc) = &score {
                    out!("objective (default round utility): {:.6}", sc.total);
                }
                if violations.is_empty() {
                    out!(
                        "valid: {} jobs running, {} GPUs used",
                        sched.assignments.len(),
                        sched.gpus_used()
                    );
                } else {
                    out!("{} violation(s):", violations.len());
                    for v in &violations {
                        out!("  {v}");
                    }
                }
                for (j, s) in &speeds {
                    out!(
                        "  job {j}: {:.4} it/s, step {:.4} s (compute {:.4}, intra {:.4}, inter {:.4})",
                        s.iterations_per_s,
                        s.step_time_s,
                        s.compute_s,
                        s.intra_comm_s,
                        s.inter_comm_s
                    );
                }
            }
            Ok(if violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Solve {
            instance,
            time_limit,
            gap,
            node_limit,
            threads,
            seed,
            warm_start,
            no_symmetry_breaking,
            round_s,
            restart_s,
            export_mps,
            export_only,
            out,
            verbose,
            json,
        } => {
            let perf = perf_model(&cli.params)?;
            let snap = ClusterSnapshot::from_json_file(&instance)?;
            let objective = coda::Objective::new(round_s, restart_s)?;
            if let Some(p) = &export_mps {
                let mut buf = Vec::new();
                let size = coda::solver::export_mps(
                    &snap,
                    &perf,
                    &objective,
                    !no_symmetry_breaking,
                    &mut buf,
                )?;
                coda::write_atomic(p, &buf)?;
                if !json {
                    out!(
                        "wrote {} ({} variables, {} integer, {} constraints)",
                        p.display(),
                        size.variables,
                        size.integer_variables,
                        size.constraints
                    );
                }
                if export_only {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            let start = warm_start
                .as_ref()
                .map(Schedule::from_json_file)
                .transpose()?;
            let settings = coda::SolveSettings {
                time_limit_s: time_limit,
                mip_rel_gap: gap,
                mip_abs_gap: 1e-6,
                node_limit,
                threads,
                seed,
                symmetry_breaking: !no_symmetry_breaking,
                verbose,
            };
            let solved = coda::solver::solve(&snap, &perf, &objective, &settings, start.as_ref())?;
            if let Some(p) = &out {
                solved.schedule.to_json_file(p)?;
            }
            let r = &solved.report;
            if json {
                let mut v = serde_json::to_value(r).expect("serialize");
                v["running_jobs"] = serde_json::json!(solved.schedule.assignments.len());
                v["gpus_used"] = serde_json::json!(solved.schedule.gpus_used());
                out!("{v}");
            } else {
                out!("status      {:?}", r.status);
                out!(
                    "objective   {:.6} (re-scored: {:.6})",
                    r.objective,
                    r.objective_check
                );
                out!("best bound  {:.6}   gap {:.3e}", r.best_bound, r.gap);
                out!(
                    "perfmodel   {:.6} (same schedule, contention compounded by the PerfModel)",
                    r.perf_model_utility
                );
                out!(
                    "model       {} variables ({} integer), {} constraints; built in {:.3} s",
                    r.size.variables,
                    r.size.integer_variables,
                    r.size.constraints,
                    r.build_time_s
                );
                let nodes = r.nodes.map_or("?".to_string(), |n| n.to_string());
                let warm = if r.warm_started { ", warm-started" } else { "" };
                out!("solve       {:.3} s, {nodes} nodes{warm}", r.wall_time_s);
                out!(
                    "schedule    {} jobs running on {} GPUs",
                    solved.schedule.assignments.len(),
                    solved.schedule.gpus_used()
                );
                if let Some(p) = &out {
                    out!("wrote {}", p.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::BenchSolve {
            sizes,
            seeds,
            instances,
            time_limit,
            compare_symmetry,
            save_instances,
            out,
        } => {
            use coda::solver::scaling;
            let perf = perf_model(&cli.params)?;
            std::fs::create_dir_all(&out).map_err(|e| coda::Error::Io {
                path: out.clone(),
                source: e,
            })?;
            let mut cases: Vec<(String, ClusterSnapshot)> = Vec::new();
            if let Some(dir) = &instances {
                let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                    .map_err(|e| coda::Error::Io {
                        path: dir.clone(),
                        source: e,
                    })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect();
                files.sort();
                for f in files {
                    let name = f
                        .file_stem()
                        .map(|x| x.to_string_lossy().to_string())
                        .unwrap_or_default();
                    cases.push((name, ClusterSnapshot::from_json_file(&f)?));
                }
            } else {
                for size in &sizes {
                    let bad = || {
                        coda::Error::invalid(
                            "--sizes",
                            0,
                            "sizes",
                            size,
                            "expected SERVERSxJOBS, e.g. 8x16",
                        )
                    };
                    let (a, b) = size.split_once('x').ok_or_else(bad)?;
                    let servers: usize = a.parse().map_err(|_| bad())?;
                    let jobs: usize = b.parse().map_err(|_| bad())?;
                    for &seed in &seeds {
                        let snap = scaling::scaling_instance(servers, jobs, seed, &perf)?;
                        let name = format!("gen_s{servers:02}_j{jobs:02}_seed{seed}");
                        if let Some(dir) = &save_instances {
                            std::fs::create_dir_all(dir).map_err(|e| coda::Error::Io {
                                path: dir.clone(),
                                source: e,
                            })?;
                            snap.to_json_file(dir.join(format!("{name}.json")))?;
                        }
                        cases.push((name, snap));
                    }
                }
            }
            let mut rows = Vec::new();
            for (name, snap) in &cases {
                for sym in if compare_symmetry {
                    vec![true, false]
                } else {
                    vec![true]
                } {
                    let settings = coda::SolveSettings {
                        time_limit_s: time_limit,
                        symmetry_breaking: sym,
                        ..Default::default()
                    };
                    let r = scaling::measure(name, snap, &perf, &settings)?;
                    eprintln!(
                        "{name}: {} servers, {} GPUs, {} jobs, sym {sym}: {:?} in {:.2} s (build {:.4} s), gap {:.2e}",
                        r.servers, r.gpus, r.jobs, r.status, r.solve_s, r.build_s, r.gap
                    );
                    rows.push(r);
                }
            }
            scaling::write_csv(&rows, &out.join("solve_scaling.csv"))?;
            scaling::plot_svg(
                &rows,
                &out.join("solve_scaling.svg"),
                "coda ILP (HiGHS, 1 thread): solve time vs size",
            )?;
            out!(
                "wrote {} and {}",
                out.join("solve_scaling.csv").display(),
                out.join("solve_scaling.svg").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Generate {
            servers,
            jobs,
            seed,
            gpu_types,
            running_fraction,
            max_workers,
            out,
        } => {
            let perf = perf_model(&cli.params)?;
            let opts = GenerateOptions {
                servers,
                jobs,
                seed,
                gpu_types,
                running_fraction,
                max_workers,
                ..Default::default()
            };
            let snap = coda::generate(&opts, &perf)?;
            match out {
                Some(p) => {
                    snap.to_json_file(&p)?;
                    eprintln!("wrote {}", p.display());
                }
                None => out!(
                    "{}",
                    serde_json::to_string_pretty(&snap).expect("serialize")
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Trace {
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
        } => {
            let perf = perf_model(&cli.params)?;
            let (path, format) = match TraceFormat::from_name(&name) {
                Some(f) => (datasets.join(f.shipped_file()), f),
                None => {
                    let p = PathBuf::from(&name);
                    let f = TraceFormat::detect(&p)?;
                    (p, f)
                }
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
                coda::write_atomic(p, text.as_bytes())?;
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
        Cmd::Simulate { sim, policy } => {
            let perf = perf_model(&cli.params)?;
            let text = simulate::simulate(&sim, &policy, &perf)?;
            out!("{}", text.trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Compare { sim, runs } => {
            let perf = perf_model(&cli.params)?;
            let text = simulate::compare(&sim, &runs.policies, runs.threads, &perf)?;
            out!("{}", text.trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sensitivity { sim, runs } => {
            let perf = perf_model(&cli.params)?;
            let (policies, threads) = (runs.policies, runs.threads);
            simulate::check_policies(&sim, &policies)?;
            std::fs::create_dir_all(&sim.out).map_err(|e| coda::Error::Io {
                path: sim.out.clone(),
                source: e,
            })?;
            let text = sensitivity::sensitivity(&sim, &policies, threads, &perf)?;
            out!("{}", text.trim_end());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn placement_csv_text(rows: &[perf::PlacementCheck]) -> String {
    let mut s =
        String::from("source,gpu,model,gpus,servers,local_batch,measured_ratio,predicted_ratio\n");
    for r in rows {
        s += &format!(
            "{},{},{},{},{},{},{:.4},{:.4}\n",
            r.source,
            r.gpu,
            r.model,
            r.gpus,
            r.servers,
            r.local_batch,
            r.measured_ratio,
            r.predicted_ratio
        );
    }
    s
}

fn quality_csv_text(q: &[FitQuality]) -> String {
    let mut s = String::from("model,gpu,split,rows,mape,median_ape,train_mape\n");
    for r in q {
        let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.4}"));
        s += &format!(
            "{},{},{},{},{},{},{}\n",
            r.model,
            r.gpu,
            r.split,
            r.rows,
            f(r.mape),
            f(r.median_ape),
            f(r.train_mape)
        );
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
        out!(
            "{:<28} {:<10} {:<8} {:>5} {:>9} {:>9} {:>9}",
            r.model,
            r.gpu,
            r.split,
            r.rows,
            f(r.mape),
            f(r.median_ape),
            f(r.train_mape)
        );
    }
    out!(
        "compute ∝ (memory bandwidth)^-{:.3} (fitted across GPU types)",
        p.compute_bandwidth_exponent
    );
    // Row-weighted summary per family and split.
    let family = |m: &str| {
        if p.ps_models.contains_key(m) {
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
        let e = acc.entry((family(&r.model), r.split.as_str())).or_default();
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
