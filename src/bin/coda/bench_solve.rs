//! `coda bench-solve`: Measure build and solve time against cluster size; write a CSV and an SVG plot.

use std::path::PathBuf;
use std::process::ExitCode;

use coda::{ClusterSnapshot, PerfModel};

use crate::{perf_model, range};

/// Arguments of `coda bench-solve`.
#[derive(clap::Args)]
pub struct Args {
    /// Sizes as SERVERSxJOBS (8-GPU servers), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1x2,2x4,3x6,4x8,5x10,6x12,8x12,8x16",
        value_parser = range::size
    )]
    pub sizes: Vec<(usize, usize)>,
    /// Seeds per size.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub seeds: Vec<u64>,
    /// Solve these instance files instead of generating (a folder of *.json).
    #[arg(long)]
    pub instances: Option<PathBuf>,
    /// Wall-clock limit per solve, seconds.
    #[arg(long, default_value_t = 60.0, value_parser = range::time_limit)]
    pub time_limit: f64,
    /// Also solve every instance without symmetry breaking.
    #[arg(long)]
    pub compare_symmetry: bool,
    /// Also solve every instance with the valid inequalities on co-location.
    #[arg(long)]
    pub compare_cuts: bool,
    /// Also solve every instance with the configuration program (root bound, bound, incumbent,
    /// time, columns side by side with the compact program's).
    #[arg(long)]
    pub compare_programs: bool,
    /// Every job offers its model's measured CPU/memory tiers besides its demand
    /// (`coda::workload::offer_tiers`): the exact program then decides cores and memory too.
    #[arg(long)]
    pub tiers: bool,
    /// Solver threads, comma-separated: every variant is solved once per count (HiGHS's
    /// threads, and the configuration program prices its server classes on that many).
    #[arg(long, value_delimiter = ',', default_value = "1", value_parser = range::at_least_one_u32)]
    pub solver_threads: Vec<u32>,
    /// Save the generated instances here.
    #[arg(long)]
    pub save_instances: Option<PathBuf>,
    /// Output folder (solve_scaling.csv, solve_scaling.svg).
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let Args {
        sizes,
        seeds,
        instances,
        time_limit,
        compare_symmetry,
        compare_cuts,
        compare_programs,
        tiers,
        solver_threads,
        save_instances,
        out,
    } = args;
    use crate::scaling;
    let perf = perf_model(params)?;
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
        if files.is_empty() {
            return Err(coda::Error::invalid(
                "--instances",
                0,
                "instances",
                dir.display(),
                "the folder holds no *.json instance",
            ));
        }
        for f in files {
            let name = f
                .file_stem()
                .map(|x| x.to_string_lossy().to_string())
                .unwrap_or_default();
            cases.push((
                name,
                ClusterSnapshot::from_json_file_with(&f, |s, o| perf.check_snapshot(s, o))?,
            ));
        }
    } else {
        for &(servers, jobs) in &sizes {
            for &seed in &seeds {
                let snap = coda::workload::scaling_instance(servers, jobs, seed, &perf)?;
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
    if tiers {
        for (_, snap) in &mut cases {
            coda::workload::offer_tiers(snap, &perf);
        }
    }
    use coda::ilp::SolveProgram::{Compact, Config};
    let mut variants = vec![(true, false, Compact)];
    if compare_symmetry {
        variants.push((false, false, Compact));
    }
    if compare_cuts {
        variants.push((true, true, Compact));
    }
    if compare_programs {
        variants.push((true, false, Config));
    }
    let mut rows = Vec::new();
    for (name, snap) in &cases {
        let first = rows.len();
        for (&(sym, cuts, program), &threads) in variants
            .iter()
            .flat_map(|v| solver_threads.iter().map(move |t| (v, t)))
        {
            let settings = coda::ilp::SolveSettings {
                time_limit_s: time_limit,
                symmetry_breaking: sym,
                colocation_cuts: cuts,
                // What a machine with fewer cores gets (the row records it).
                threads: crate::cap_threads(threads as usize) as u32,
                ..Default::default()
            };
            let r = scaling::measure(name, snap, &perf, &settings, program)?;
            eprintln!(
                "{name}: {} servers, {} GPUs, {} jobs, {:?}, sym {sym}, cuts {cuts}, {threads} \
                 thread(s): {:?} in \
                 {:.2} s (build {:.4} s), {} nodes, root gap {:.3}, gap {:.2e}",
                r.servers,
                r.gpus,
                r.jobs,
                program,
                r.status,
                r.solve_s,
                r.build_s,
                r.nodes.map_or("?".to_string(), |n| n.to_string()),
                r.root_gap,
                r.gap
            );
            rows.push(r);
        }
        // Root gaps against the best schedule any variant found, so that they compare.
        let best = rows[first..]
            .iter()
            .map(|r| r.objective)
            .fold(f64::NEG_INFINITY, f64::max);
        for r in &mut rows[first..] {
            r.root_gap = coda::ilp::relative_gap(r.root_bound, best);
        }
    }
    scaling::write_csv(&rows, &out.join("solve_scaling.csv"))?;
    crate::plots::plot_svg(
        &rows,
        &out.join("solve_scaling.svg"),
        "coda ILP (HiGHS): solve time vs size",
    )?;
    out!(
        "wrote {} and {}",
        out.join("solve_scaling.csv").display(),
        out.join("solve_scaling.svg").display()
    );
    Ok(ExitCode::SUCCESS)
}
