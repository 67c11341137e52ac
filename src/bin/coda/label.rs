//! `coda label`: expert labels for the learned scheduler — generated rounds of many sizes and
//! rounds cut from a trace replay (running jobs included), solved
//! by the exact program in parallel (one HiGHS thread per round), decoded into level-1 choices
//! and level-2 placement steps, appended one JSON object per line. Seeded, and resumable: rounds
//! already in the file are skipped, a line cut short by an interrupted run is dropped.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::learn::{LabelSpec, RoundLabel, label_round};
use coda::{Objective, PerfModel};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::{perf_model, range};

/// Arguments of `coda label`.
#[derive(clap::Args)]
pub struct Args {
    /// The generated rounds (the library's [`LabelSpec`]).
    #[command(flatten)]
    pub spec: LabelSpec,
    /// Rounds solved at once (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Also label rounds cut from a replay of this trace (running jobs included), e.g.
    /// `philly`, `itp-cluster06`, `alibaba`.
    #[arg(long)]
    pub trace: Option<String>,
    /// First jobs of the trace to replay.
    #[arg(long, default_value_t = 150, value_parser = range::at_least_one)]
    pub take: usize,
    /// Cluster of the replay (default: the trace's own).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Policy the replay runs under (the states it visits are labelled): a baseline, or
    /// `learned` for on-policy states.
    #[arg(long, value_enum, default_value = "pollux")]
    pub trace_policy: coda::policies::PolicyKind,
    /// Weights of the `learned` policy when it runs the replay (DAgger: the states the policy
    /// itself visits, labelled by the program; default: the shipped weights).
    #[arg(long)]
    pub policy_weights: Option<PathBuf>,
    /// Label every this-many-th round of the replay.
    #[arg(long, default_value_t = 6, value_parser = range::at_least_one)]
    pub trace_every: usize,
    /// Trace rounds to label.
    #[arg(long, default_value_t = 20, value_parser = range::at_least_one)]
    pub trace_rounds: usize,
    /// Jobs per trace round, as the `ilp` policy's window: every running job, and the waiting
    /// ones the objective ranks first up to this many in all (at least a quarter of it).
    #[arg(long, default_value_t = 10, value_parser = range::at_least_one)]
    pub max_jobs: usize,
    /// Also re-solve the rounds of this label file (their ids and snapshots) under the current
    /// performance model: an evaluation set kept comparable across model changes.
    #[arg(long)]
    pub relabel: Option<PathBuf>,
    /// Jobs offer their model's measured CPU/memory tiers (`coda::workload::offer_tiers`;
    /// trace replays run with `--cpu-mem fungible`), so the labels hold the program's tier
    /// choices too (what `coda train tiers` learns from). Round ids end in `-tiers`.
    #[arg(long)]
    pub tiers: bool,
    /// Cores per GPU of the replay's servers (Synergy's testbed: 3), as `coda compare
    /// --cpu-per-gpu`; generated rounds have 3 already (24 cores, 8 GPUs).
    #[arg(long, value_parser = range::positive, requires = "trace")]
    pub cpu_per_gpu: Option<f64>,
    /// Datasets folder (traces, cluster specs).
    #[arg(long, default_value = "datasets")]
    pub datasets: PathBuf,
    /// Labels file (JSON lines), appended to.
    #[arg(long, default_value = "labels.jsonl")]
    pub out: PathBuf,
}

/// Where a round comes from.
enum Round {
    /// A generated round: (seed, servers, jobs).
    Generated(u64, usize, usize),
    /// A round cut from a trace replay.
    Cut(Box<coda::ClusterSnapshot>),
}

/// The rounds to label, in the file's order: the generated ones, those cut from a trace replay,
/// those of a label file re-solved; ids end in `-tiers` with `--tiers`.
fn rounds_to_label(
    args: &Args,
    perf: &dyn PerfModel,
    objective: &Objective,
) -> coda::Result<Vec<(String, Round)>> {
    let spec = &args.spec;
    let mut rounds: Vec<(String, Round)> = spec
        .rounds()
        .into_iter()
        .map(|(id, seed, servers, jobs)| (id, Round::Generated(seed, servers, jobs)))
        .collect();
    if let Some(name) = &args.trace {
        let w = trace_workload(args, name, perf)?;
        let how = trace_cut(args);
        let cut = coda::learn::trace_rounds(name, &w, perf, objective, &how)?;
        rounds.extend(cut.into_iter().map(|(id, s)| (id, Round::Cut(Box::new(s)))));
    }
    if let Some(p) = &args.relabel {
        rounds.extend(
            coda::learn::read_labels(p)?
                .into_iter()
                .map(|l| (l.id, Round::Cut(Box::new(l.snapshot)))),
        );
    }
    if args.tiers {
        for r in &mut rounds {
            r.0.push_str("-tiers");
        }
    }
    Ok(rounds)
}

/// A JSON-lines file (labels, plays), appended to one whole line at a time (flushed: an
/// interrupted run leaves at most one line cut short, which resuming drops).
pub(crate) struct LabelFile<'p> {
    path: &'p std::path::Path,
    file: std::fs::File,
}

impl<'p> LabelFile<'p> {
    pub(crate) fn open(path: &'p std::path::Path) -> coda::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| coda::Error::io(path, e))?;
        Ok(LabelFile { path, file })
    }

    pub(crate) fn append<T: serde::Serialize>(&mut self, row: &T) -> coda::Result<()> {
        let mut line = serde_json::to_string(row)
            .map_err(|e| coda::Error::io(self.path, std::io::Error::other(e)))?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(|e| coda::Error::io(self.path, e))
    }
}

/// The `--trace` replay's workload.
fn trace_workload(
    args: &Args,
    name: &str,
    perf: &dyn PerfModel,
) -> coda::Result<coda::workload::Workload> {
    coda::workload::load(
        coda::workload::TraceRef {
            name,
            datasets: &args.datasets,
            cluster: args.cluster.as_deref(),
            take: Some(args.take),
        },
        &coda::workload::trace::TraceOptions {
            seed: args.spec.seed,
            cpu_mem: if args.tiers {
                coda::workload::trace::CpuMemMode::Fungible
            } else {
                coda::workload::trace::CpuMemMode::Fixed
            },
            server_cpu_per_gpu: args.cpu_per_gpu,
            ..Default::default()
        },
        perf,
    )
}

/// How `--trace` rounds are cut (the replay's policy and its weights).
fn trace_cut(args: &Args) -> coda::learn::TraceCut {
    coda::learn::TraceCut {
        policy: args.trace_policy,
        options: coda::policies::PolicyOptions {
            learned: coda::policies::LearnedOptions {
                weights: args.policy_weights.clone(),
                ..Default::default()
            },
            ..Default::default()
        },
        every: args.trace_every,
        count: args.trace_rounds,
        max_jobs: args.max_jobs,
    }
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    let spec = &args.spec;
    let settings = spec.settings();
    settings.checked()?;
    let objective = Objective::default();
    let rounds = rounds_to_label(&args, &perf, &objective)?;
    let done = coda::learn::resume_labels(&args.out)?;
    let todo: Vec<_> = rounds
        .into_iter()
        .filter(|r| !done.contains(&r.0))
        .collect();
    let threads = crate::cap_threads(args.threads.unwrap_or(0));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| {
            coda::Error::invalid("command line", 0, "threads", e, "cannot start the pool")
        })?;
    let mut file = LabelFile::open(&args.out)?;
    let bar = ProgressBar::new(todo.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("label {bar:40} {pos}/{len} rounds, {elapsed} (eta {eta})")
            .expect("a valid template"),
    );
    let t0 = Instant::now();
    let (mut written, mut proven, mut gaps) = (0usize, 0usize, Vec::new());
    // Batches of one round per thread, appended in the spec's order: the file's content does not
    // depend on which thread finished first.
    for batch in todo.chunks(pool.current_num_threads().max(1)) {
        let labels: Vec<coda::Result<RoundLabel>> = pool.install(|| {
            batch
                .par_iter()
                .map(|(id, round)| {
                    let snap = match round {
                        Round::Generated(seed, servers, jobs) => {
                            spec.snapshot(*seed, *servers, *jobs, &perf)?
                        }
                        Round::Cut(s) => (**s).clone(),
                    };
                    let mut snap = snap;
                    if args.tiers {
                        coda::workload::offer_tiers(&mut snap, &perf);
                    }
                    label_round(id, &snap, &perf, &objective, &settings)
                })
                .collect()
        });
        for l in labels {
            let l = l?;
            file.append(&l)?;
            written += 1;
            proven += usize::from(l.proven);
            if l.gap.is_finite() {
                gaps.push(l.gap);
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let mean_gap = if gaps.is_empty() {
        f64::NAN
    } else {
        gaps.iter().sum::<f64>() / gaps.len() as f64
    };
    out!(
        "{written} round(s) labelled ({} already in {}), {proven} proven optimal, mean gap {:.2e}, \
         {:.1} s on {} thread(s)",
        done.len(),
        args.out.display(),
        mean_gap,
        t0.elapsed().as_secs_f64(),
        pool.current_num_threads()
    );
    Ok(ExitCode::SUCCESS)
}
