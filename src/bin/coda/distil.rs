//! `coda distil`: the lookahead distilled, into the learned policy's networks or into the
//! `distilled` policy's gate (`coda::learn::distil`). `labels` labels the rounds a student
//! visits with the lookahead's decisions, in the format of `coda label` (what `coda train
//! imitation` reads); `plays` records the lookahead's plays on those rounds; `fit` fits the gate
//! to them and judges it on plays it was not fitted on.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::learn::distil::{BoostSettings, fit_gate, gate_fit, play_rounds, read_play_rounds};
use coda::policies::PolicyKind;
use coda::replay::Replay;

use crate::label::LabelFile;
use crate::{perf_model, range};

/// `coda distil …`.
#[derive(clap::Subcommand)]
pub enum Cmd {
    /// The lookahead's decisions on the rounds a student visits, as labels (`coda label`'s
    /// format, marked `expert: lookahead`), appended (resumable): what `coda train imitation`
    /// distils the lookahead into the networks from.
    Labels(Box<LabelsArgs>),
    /// The lookahead's plays of the gate's candidates on the rounds a student visits (only
    /// rounds whose proposals differ), one JSON line per round, appended (resumable).
    Plays(Box<PlaysArgs>),
    /// The gate fitted to recorded plays (boosted regression trees per candidate), judged on held-out
    /// plays: how much of the lookahead's saving its choices keep.
    Fit(FitArgs),
}

/// Arguments of `coda distil plays`.
#[derive(clap::Args)]
pub struct PlaysArgs {
    /// The replay (`coda simulate`'s flags; the lookahead's horizon and base are its
    /// `--lookahead-*` flags).
    #[command(flatten)]
    pub replay: Replay,
    /// The policy whose decisions drive the replay: `learned` first, then `distilled` with the
    /// gate fitted so far (`--distilled-gate`): DAgger on the student's own states.
    #[arg(long, value_enum, default_value = "learned")]
    pub student: PolicyKind,
    /// Record every this-many-th round with at least two jobs.
    #[arg(long, default_value_t = 1, value_parser = range::at_least_one)]
    pub every: usize,
    /// At most this many rounds.
    #[arg(long, default_value_t = 1_000_000, value_parser = range::at_least_one)]
    pub rounds: usize,
    /// Plays file (JSON lines), appended to.
    #[arg(long)]
    pub out: PathBuf,
}

/// Arguments of `coda distil labels`.
#[derive(clap::Args)]
pub struct LabelsArgs {
    /// The replay (`coda simulate`'s flags: the student's weights are `--policy-weights`, the
    /// lookahead's settings its `--lookahead-*` flags).
    #[command(flatten)]
    pub replay: Replay,
    /// The policy whose decisions drive the replay (DAgger on the student's own states).
    #[arg(long, value_enum, default_value = "learned")]
    pub student: PolicyKind,
    /// Weights of the learned policy inside the lookahead (its candidates and the base its
    /// plays follow); default: the student's own (`--policy-weights`), so that the expert
    /// improves on the student it labels.
    #[arg(long)]
    pub expert_weights: Option<PathBuf>,
    /// Label every this-many-th round with at least two jobs.
    #[arg(long, default_value_t = 1, value_parser = range::at_least_one)]
    pub every: usize,
    /// At most this many rounds.
    #[arg(long, default_value_t = 1_000_000, value_parser = range::at_least_one)]
    pub rounds: usize,
    /// Labels file (JSON lines), appended to.
    #[arg(long)]
    pub out: PathBuf,
}

/// Arguments of `coda distil fit`.
#[derive(clap::Args)]
pub struct FitArgs {
    /// Plays files to fit on, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub plays: Vec<PathBuf>,
    /// Plays files to judge the gate on, comma-separated (never fitted on).
    #[arg(long, value_delimiter = ',')]
    pub holdout: Vec<PathBuf>,
    /// The candidates the gate may choose besides the learned policy's decision, comma-separated
    /// (of `keep`, `learned-greedy`, `pollux`, `srtf`, `drf`).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "keep,learned-greedy,pollux,srtf,drf"
    )]
    pub candidates: Vec<String>,
    /// Trees per candidate.
    #[arg(long, default_value_t = BoostSettings::default().trees, value_parser = range::at_least_one)]
    pub trees: usize,
    /// Depth of each tree.
    #[arg(long, default_value_t = BoostSettings::default().depth)]
    pub depth: usize,
    /// The features the trees may split on, comma-separated (default: every one of
    /// `coda::policies::distilled::GATE_FEATURES`).
    #[arg(long, value_delimiter = ',')]
    pub features: Vec<String>,
    /// Fewest rows in a leaf.
    #[arg(long, default_value_t = BoostSettings::default().min_leaf, value_parser = range::at_least_one)]
    pub min_leaf: usize,
    /// The gate file to write.
    #[arg(long, default_value = "models/distilled.json")]
    pub out: PathBuf,
    /// Also write the fit table (one row per plays file) to this CSV.
    #[arg(long)]
    pub table: Option<PathBuf>,
}

/// One row of the fit table.
#[derive(serde::Serialize)]
struct FitRow {
    set: &'static str,
    plays: String,
    rounds: usize,
    switched: usize,
    agree: usize,
    best: f64,
    reachable: f64,
    kept: f64,
    kept_share: f64,
    kept_of_reachable: f64,
}

/// Runs the command.
pub fn run(cmd: Cmd, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    match cmd {
        Cmd::Labels(args) => labels(*args, params),
        Cmd::Plays(args) => plays(*args, params),
        Cmd::Fit(args) => fit(args),
    }
}

fn labels(args: LabelsArgs, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    args.replay
        .check_named("command line", &|f| format!("--{}", f.replace('_', "-")))?;
    let t0 = Instant::now();
    let done = coda::learn::resume_labels(&args.out)?;
    let mut file = LabelFile::open(&args.out)?;
    let (mut written, mut chosen) = (0usize, std::collections::BTreeMap::new());
    let how = coda::learn::LookaheadLabelling {
        student: args.student,
        expert_weights: args.expert_weights.clone(),
        every: args.every,
        count: args.rounds,
    };
    coda::learn::lookahead_labels(&args.replay, &perf, &how, &done, &mut |label| {
        written += 1;
        if let Some(c) = &label.choice {
            *chosen.entry(c.clone()).or_insert(0usize) += 1;
        }
        file.append(&label)
    })?;
    let chosen: Vec<String> = chosen.iter().map(|(c, n)| format!("{c} {n}")).collect();
    out!(
        "{written} round(s) labelled by the lookahead ({} already in {}; where proposals \
         differed it kept: {}), {:.1} s",
        done.len(),
        args.out.display(),
        if chosen.is_empty() {
            "-".to_string()
        } else {
            chosen.join(", ")
        },
        t0.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn plays(args: PlaysArgs, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    args.replay
        .check_named("command line", &|f| format!("--{}", f.replace('_', "-")))?;
    let t0 = Instant::now();
    let done: HashSet<String> = if args.out.exists() {
        read_play_rounds(&args.out)?
            .into_iter()
            .map(|r| r.id)
            .collect()
    } else {
        HashSet::new()
    };
    let mut file = LabelFile::open(&args.out)?;
    let mut written = 0usize;
    play_rounds(
        &args.replay,
        &perf,
        args.student,
        args.every,
        args.rounds,
        &done,
        &mut |row| {
            written += 1;
            file.append(&row)
        },
    )?;
    out!(
        "{written} round(s) played ({} already in {}), {:.1} s",
        done.len(),
        args.out.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn fit(args: FitArgs) -> coda::Result<ExitCode> {
    let name = |p: &PathBuf| {
        p.file_name().map_or(p.display().to_string(), |f| {
            f.to_string_lossy().into_owned()
        })
    };
    let mut train = Vec::new();
    let mut sets = Vec::new();
    for p in &args.plays {
        let rows = read_play_rounds(p)?;
        train.push(rows.clone());
        sets.push(("fit", name(p), rows));
    }
    for p in &args.holdout {
        sets.push(("holdout", name(p), read_play_rounds(p)?));
    }
    let mut candidates = Vec::new();
    for c in &args.candidates {
        let found = coda::policies::distilled::GATE_CANDIDATES[1..]
            .iter()
            .find(|g| g.name() == c)
            .ok_or_else(|| coda::Error::UnknownName {
                what: "gate candidate (--candidates)".into(),
                name: c.clone(),
                reason: "known: keep, learned-greedy, pollux, srtf, drf".into(),
            })?;
        candidates.push(*found);
    }
    let all = coda::policies::distilled::GATE_FEATURES;
    let mut features = Vec::new();
    for f in &args.features {
        features.push(
            all.iter()
                .position(|a| a == f)
                .ok_or_else(|| coda::Error::UnknownName {
                    what: "gate feature (--features)".into(),
                    name: f.clone(),
                    reason: format!("known: {}", all.join(", ")),
                })?,
        );
    }
    let settings = BoostSettings {
        features,
        trees: args.trees,
        depth: args.depth,
        min_leaf: args.min_leaf,
        ..BoostSettings::default()
    };
    let gate = fit_gate(
        &train,
        &candidates,
        &settings,
        args.plays.iter().map(name).collect(),
    )?;
    // One line: thousands of tree nodes, read by programs (`coda report` renders the fit).
    let text = serde_json::to_string(&gate).expect("a gate serialises");
    coda::io::write_atomic(&args.out, format!("{text}\n").as_bytes())?;
    let rows: Vec<FitRow> = sets
        .iter()
        .map(|(set, plays, rows)| {
            let fit = gate_fit(&gate, rows);
            FitRow {
                set,
                plays: plays.clone(),
                rounds: fit.rounds,
                switched: fit.switched,
                agree: fit.agree,
                best: fit.best,
                reachable: fit.reachable,
                kept: fit.kept,
                kept_share: share(fit.kept, fit.best),
                kept_of_reachable: share(fit.kept, fit.reachable),
            }
        })
        .collect();
    out!(
        "gate written to {} (margin {} job-rounds)\n| set | plays | rounds | switched | agree | \
         lookahead's saving | its candidates' | gate's | share | of its candidates' |\n\
         |---|---|---|---|---|---|---|---|---|---|",
        args.out.display(),
        gate.margin
    );
    for r in &rows {
        out!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} |",
            r.set,
            r.plays,
            r.rounds,
            r.switched,
            r.agree,
            r.best,
            r.reachable,
            r.kept,
            r.kept_share,
            r.kept_of_reachable
        );
    }
    if let Some(t) = &args.table {
        coda::io::write_csv(t, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `part / whole`, 0 when there is nothing to share.
fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}
