//! Expert labels: a round ([`ClusterSnapshot`]), the exact program's schedule for it, how the
//! solve ended (an optimum, or a time-limited incumbent: an imperfect expert, marked so), and the
//! schedule decoded per job into the level-1 choice and the level-2 placement steps.
//!
//! The decoding keeps everything the [`crate::Objective`] reads: [`rebuild`] turns the labels
//! back into a schedule with the same score (GPUs under one switch are interchangeable to the
//! objective; a job that keeps its place keeps its exact GPUs).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ilp::{SolveSettings, SolveStatus};
use crate::model::JobPos;
use crate::model::ServerIdx;
use crate::model::{Assignment, ClusterSnapshot, JobId, PsTask, Schedule, WorkerTask};
use crate::objective::{Mode, Objective, RoundPricing};
use crate::perf::PerfModel;
use crate::policies::ExactRound;
use crate::workload::{GenerateOptions, generate};

/// Level 2, one step: `gpus` of the job's GPUs under PCIe switch `switch` (index in the
/// cluster's [`crate::model::Topology`]) of server `server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaceStep {
    /// Server index.
    pub server: usize,
    /// Switch index in the cluster's topology.
    pub switch: usize,
    /// GPUs under that switch.
    pub gpus: u32,
}

/// What the expert decided for one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobLabel {
    /// The job.
    pub job: JobId,
    /// Level 1: the index of the chosen option in [`RoundPricing::options`] (the order the
    /// program's `y_jk` use), `None` for wait.
    pub option: Option<usize>,
    /// The chosen option's workers, PS, mode and GPU type (for reading the file without
    /// re-pricing the round).
    pub shape: Option<(u32, u32, Mode, crate::model::GpuType)>,
    /// The job stays exactly where it runs now (its GPUs unchanged).
    pub kept: bool,
    /// Level 2: GPUs per switch, by (server, switch) ascending.
    pub steps: Vec<PlaceStep>,
    /// PS per server, by server ascending.
    pub ps: Vec<(usize, u32)>,
}

/// One labelled round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundLabel {
    /// Stable name of the round (its source and index): what resuming skips.
    pub id: String,
    /// The round.
    pub snapshot: ClusterSnapshot,
    /// The expert's schedule.
    pub schedule: Schedule,
    /// How the solve ended (`None`, JSON `null`: no solve, a [`Expert::Lookahead`] label).
    pub status: Option<SolveStatus>,
    /// The schedule's objective.
    pub objective: f64,
    /// The best bound the solver proved (NaN when it proved none; JSON `null`).
    #[serde(deserialize_with = "nan_if_null")]
    pub best_bound: f64,
    /// Relative gap of the schedule to that bound (NaN / `null` without a bound).
    #[serde(deserialize_with = "nan_if_null")]
    pub gap: f64,
    /// Whether the expert is exact here (proven optimal); a time-limited label is not.
    pub proven: bool,
    /// Solver seconds.
    pub solve_s: f64,
    /// Per job, in snapshot order (ascending id for generated rounds).
    pub jobs: Vec<JobLabel>,
    /// Who decided the round (absent in a file: the exact program).
    #[serde(default, skip_serializing_if = "is_exact")]
    pub expert: Expert,
    /// The lookahead's candidate whose proposal it kept (`learned`, `keep`, `pollux`…), in a
    /// round whose proposals differed; absent otherwise, and for the exact program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
}

/// Who labelled a round: the exact program, or the lookahead ([`super::lookahead_labels`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Expert {
    /// The exact program, solving the round alone.
    #[default]
    Exact,
    /// The lookahead policy, playing candidates forward from the round.
    Lookahead,
}

fn is_exact(e: &Expert) -> bool {
    *e == Expert::Exact
}

/// A round size as `SERVERSxJOBS` (a clap value parser).
#[cfg(feature = "cli")]
fn size(s: &str) -> std::result::Result<(usize, usize), String> {
    let bad = || format!("`{s}`: expected SERVERSxJOBS, e.g. 8x16");
    let (a, b) = s.trim().split_once('x').ok_or_else(bad)?;
    let servers: usize = a.trim().parse().map_err(|_| bad())?;
    let jobs: usize = b.trim().parse().map_err(|_| bad())?;
    if !(1..=crate::model::MAX_SERVERS).contains(&servers) {
        return Err(format!(
            "must be in [1, {}] servers",
            crate::model::MAX_SERVERS
        ));
    }
    Ok((servers, jobs))
}

/// Which rounds to label: `rounds` generated rounds of every `(servers, jobs)` size, each from
/// its own seed derived from `seed`, solved under the limits given. `coda label`'s flags and the
/// Python package's labelling keys (`python -m coda.distributed label`), with one set of
/// defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct LabelSpec {
    /// Round sizes as SERVERSxJOBS (8-GPU servers), comma-separated.
    #[cfg_attr(feature = "cli", arg(long, value_delimiter = ',', default_value = "2x4,3x6,4x8",
        value_parser = size))]
    pub sizes: Vec<(usize, usize)>,
    /// Rounds per size (0: trace rounds only).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = LabelSpec::default().rounds))]
    pub rounds: usize,
    /// Base seed (each round draws its own from it).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 0))]
    pub seed: u64,
    /// Fraction of each round's jobs already running (so the labels hold keep/move decisions).
    #[cfg_attr(feature = "cli", arg(long,
        default_value_t = LabelSpec::default().running_fraction,
        value_parser = |s: &str| crate::error::Expected::Fraction.parse(s)))]
    pub running_fraction: f64,
    /// Solver seconds per round (a round stopped by it is labelled as not proven).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = LabelSpec::default().time_limit,
        value_parser = |s: &str| crate::error::Expected::TimeLimit.parse(s)))]
    pub time_limit: f64,
    /// Branch-and-bound node limit per round (repeatable labels).
    #[cfg_attr(feature = "cli", arg(long, value_parser = clap::value_parser!(u64).range(1..)))]
    pub node_limit: Option<u64>,
    /// The configuration program's work limit per round, pricing-search nodes (repeatable
    /// labels of large rounds).
    #[cfg_attr(feature = "cli", arg(long, value_parser = clap::value_parser!(u64).range(1..)))]
    pub work_limit: Option<u64>,
}

impl Default for LabelSpec {
    fn default() -> Self {
        LabelSpec {
            sizes: vec![(2, 4), (3, 6), (4, 8)],
            rounds: 10,
            seed: 0,
            running_fraction: 0.3,
            time_limit: 10.0,
            node_limit: None,
            work_limit: None,
        }
    }
}

impl LabelSpec {
    /// The solver settings of every round.
    pub fn settings(&self) -> SolveSettings {
        SolveSettings {
            time_limit_s: self.time_limit,
            node_limit: self.node_limit,
            work_limit: self.work_limit,
            ..SolveSettings::default()
        }
    }

    /// Every round of the spec, as (id, generator seed, servers, jobs), in a fixed order.
    pub fn rounds(&self) -> Vec<(String, u64, usize, usize)> {
        let mut out = Vec::new();
        for &(servers, jobs) in &self.sizes {
            for r in 0..self.rounds {
                // Distinct, reproducible seeds per (size, round): a SplitMix64-style mix, so
                // neighbouring base seeds do not share rounds.
                let mut z = self
                    .seed
                    .wrapping_add((servers as u64) << 40)
                    .wrapping_add((jobs as u64) << 20)
                    .wrapping_add(r as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                out.push((
                    format!("gen-s{servers}-j{jobs}-seed{}-r{r}", self.seed),
                    z,
                    servers,
                    jobs,
                ));
            }
        }
        out
    }

    /// The generated round of one entry of [`LabelSpec::rounds`].
    pub fn snapshot(
        &self,
        seed: u64,
        servers: usize,
        jobs: usize,
        perf: &dyn PerfModel,
    ) -> Result<ClusterSnapshot> {
        generate(
            &GenerateOptions {
                servers,
                jobs,
                seed,
                running_fraction: self.running_fraction,
                ..Default::default()
            },
            perf,
        )
    }
}

/// Solves one round with the exact program (started, as every solve is, from the best of the
/// running jobs kept and the best heuristic schedule) and decodes its schedule.
pub fn label_round(
    id: &str,
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    settings: &SolveSettings,
) -> Result<RoundLabel> {
    let solved = ExactRound {
        settings: settings.clone(),
        objective: *objective,
        ..ExactRound::default()
    }
    .solve(perf, snapshot)?;
    let pricing = RoundPricing::new(perf, snapshot, *objective);
    let jobs = labels_of(&pricing, &solved.schedule)?;
    let r = solved.report;
    Ok(RoundLabel {
        id: id.to_string(),
        snapshot: snapshot.clone(),
        schedule: solved.schedule,
        status: Some(r.status),
        objective: r.objective,
        best_bound: r.best_bound,
        gap: r.gap,
        proven: r.status == SolveStatus::Optimal,
        solve_s: r.wall_time_s,
        jobs,
        expert: Expert::Exact,
        choice: None,
    })
}

/// The ids already in the labels file `path` (`coda label` and `python -m coda.distributed
/// label` resume from it); a last line cut short (no newline, not JSON) is dropped from the
/// file, any other unreadable line is an error naming it.
pub fn resume_labels(path: &std::path::Path) -> Result<std::collections::HashSet<String>> {
    let mut done = std::collections::HashSet::new();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(Error::io(path, e)),
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut keep = 0usize;
    for (n, line) in lines.iter().enumerate() {
        match serde_json::from_str::<serde_json::Value>(line.trim_end()) {
            Ok(v) => {
                let id = v.get("id").and_then(|x| x.as_str()).ok_or_else(|| {
                    Error::invalid(
                        &path.display().to_string(),
                        n as u64 + 1,
                        "id",
                        "",
                        "a label without an id",
                    )
                })?;
                done.insert(id.to_string());
                keep += line.len();
            }
            Err(_) if n + 1 == lines.len() && !line.ends_with('\n') => {
                eprintln!(
                    "{}:{}: dropping a label cut short by an interrupted run",
                    path.display(),
                    n + 1
                );
            }
            Err(e) => {
                return Err(Error::invalid(
                    &path.display().to_string(),
                    n as u64 + 1,
                    "(line)",
                    "",
                    format!("not a label: {e}"),
                ));
            }
        }
    }
    if keep < text.len() {
        crate::util::write_atomic(path, &text.as_bytes()[..keep])?;
    }
    Ok(done)
}

/// The labels of `files` by id (sorted, the first of each id kept), only those proven optimal
/// with `proven_only`, and how many the files held: the order every training reads them in
/// (every `validate_every`-th is held out).
pub fn read_label_sets(
    files: &[std::path::PathBuf],
    proven_only: bool,
) -> Result<(Vec<RoundLabel>, usize)> {
    let mut labels = Vec::new();
    for f in files {
        labels.extend(read_labels(f)?);
    }
    let total = labels.len();
    if proven_only {
        labels.retain(|l| l.proven);
    }
    labels.sort_by(|a, b| a.id.cmp(&b.id));
    labels.dedup_by(|a, b| a.id == b.id);
    Ok((labels, total))
}

/// `items` (per labelled round, in [`read_label_sets`]' order) split into training and
/// validation: every `every`-th held out (`every` ≥ 1).
pub fn split_held_out<T>(items: Vec<T>, every: usize) -> (Vec<T>, Vec<T>) {
    let every = every.max(1);
    let (mut train, mut validation) = (Vec::new(), Vec::new());
    for (i, e) in items.into_iter().enumerate() {
        if i % every == every - 1 {
            validation.push(e);
        } else {
            train.push(e);
        }
    }
    (train, validation)
}

/// A policy's schedule of a labelled round, scored: whether it is valid, its score (`None`
/// when invalid), its objective (NaN when invalid) and its gap to the round's reference
/// ([`RoundLabel::gap_to`]).
#[derive(Debug, Clone)]
pub struct LabelScore {
    /// Whether the schedule runs on the round.
    pub valid: bool,
    /// Its score, term by term.
    pub score: Option<crate::objective::Score>,
    /// Its objective.
    pub objective: f64,
    /// Its gap to the reference.
    pub gap: f64,
}

impl RoundLabel {
    /// `schedule` of this round scored by `pricing` (the round priced) against `reference`
    /// ([`RoundLabel::reference`]): what `coda gap` and `coda.gap` report of every policy.
    pub fn score(
        &self,
        pricing: &RoundPricing<'_>,
        reference: f64,
        schedule: &Schedule,
    ) -> Result<LabelScore> {
        let valid = schedule.validate(&self.snapshot).is_empty();
        let score = if valid {
            Some(pricing.score(schedule)?)
        } else {
            None
        };
        let objective = score.as_ref().map_or(f64::NAN, |s| s.total);
        Ok(LabelScore {
            valid,
            score,
            objective,
            gap: RoundLabel::gap_to(reference, objective),
        })
    }

    /// A policy's gap to a round's [`RoundLabel::reference`]: `(reference − value) /
    /// |reference|`, what `coda gap` and `coda.gap` report. Relative to the reference (the
    /// optimum), so every policy of a round is scored on one scale, and signed: a policy may
    /// beat an unproven incumbent. (A solve's own gap, [`crate::ilp::relative_gap`], is relative
    /// to its incumbent, as MIP solvers report it.)
    pub fn gap_to(reference: f64, value: f64) -> f64 {
        (reference - value) / reference.abs().max(1e-9)
    }

    /// What a policy is scored against: the proven optimum, or with `include_unproven` the
    /// bound of a round the solver did not close; `None` for a round left out.
    pub fn reference(&self, include_unproven: bool) -> Option<f64> {
        let r = if self.proven {
            self.objective
        } else {
            self.best_bound
        };
        ((self.proven || include_unproven) && r.is_finite()).then_some(r)
    }
}

/// Decodes a valid schedule of the priced round into one [`JobLabel`] per job (snapshot order).
pub fn labels_of(pricing: &RoundPricing<'_>, schedule: &Schedule) -> Result<Vec<JobLabel>> {
    let snapshot = pricing.snapshot();
    // Scoring rejects invalid schedules and shapes the model cannot price.
    pricing.score(schedule)?;
    let topology = pricing.topology();
    let mut out = Vec::with_capacity(snapshot.jobs.len());
    for (j, job) in snapshot.jobs.iter().enumerate() {
        let Some(a) = schedule.assignment(job.id) else {
            out.push(JobLabel {
                job: job.id,
                option: None,
                shape: None,
                kept: false,
                steps: Vec::new(),
                ps: Vec::new(),
            });
            continue;
        };
        let f = pricing.option_of(JobPos(j), a);
        let option = pricing.option_index(JobPos(j), &f);
        if option.is_none() {
            return Err(Error::InvalidInstance {
                context: "label".into(),
                reason: format!(
                    "job {}: {:?} is not one of its priced options",
                    job.id,
                    (f.workers, f.ps, f.mode, &f.gpu_type)
                ),
            });
        }
        let mut per_switch: BTreeMap<(usize, usize), u32> = BTreeMap::new();
        for w in &a.workers {
            for &g in &w.gpus {
                let (b, _) = topology
                    .switch_of(w.server.0, g)
                    .expect("a scored schedule names real GPUs");
                *per_switch.entry((w.server.0, b.0)).or_default() += 1;
            }
        }
        let mut ps: BTreeMap<usize, u32> = BTreeMap::new();
        for p in &a.ps {
            *ps.entry(p.server.0).or_default() += 1;
        }
        out.push(JobLabel {
            job: job.id,
            option,
            shape: Some((f.workers, f.ps, f.mode, f.gpu_type)),
            kept: job.run.current.as_ref() == Some(a),
            steps: per_switch
                .into_iter()
                .map(|((server, switch), gpus)| PlaceStep {
                    server,
                    switch,
                    gpus,
                })
                .collect(),
            ps: ps.into_iter().collect(),
        });
    }
    Ok(out)
}

/// The schedule the labels describe: kept jobs on their current GPUs, then every other placed
/// job, in label order, on the lowest free GPUs under each of its switches, grouped into workers
/// server by server. Scores exactly as the schedule the labels came from, unless that schedule
/// moved a running job to other GPUs under the same switches (a restart for nothing, which the
/// program never chooses): rebuilt, such a job may land back on its own GPUs.
pub fn rebuild(snapshot: &ClusterSnapshot, labels: &[JobLabel]) -> Result<Schedule> {
    let topology = crate::model::Topology::of(&snapshot.cluster);
    let mut used: Vec<Vec<bool>> = snapshot
        .cluster
        .servers
        .iter()
        .map(|s| vec![false; s.num_gpus() as usize])
        .collect();
    let bad = |why: String| Error::InvalidInstance {
        context: "labels".into(),
        reason: why,
    };
    let mut out = Vec::new();
    for l in labels.iter().filter(|l| l.kept) {
        let job = snapshot
            .job(l.job)
            .ok_or_else(|| bad(format!("job {} is not in the round", l.job)))?;
        let cur = job
            .run
            .current
            .clone()
            .ok_or_else(|| bad(format!("job {} is kept but does not run", l.job)))?;
        for w in &cur.workers {
            for &g in &w.gpus {
                used[w.server.0][g as usize] = true;
            }
        }
        out.push(cur);
    }
    for l in labels.iter().filter(|l| !l.kept && !l.steps.is_empty()) {
        let job = snapshot
            .job(l.job)
            .ok_or_else(|| bad(format!("job {} is not in the round", l.job)))?;
        let gpw = job.demand.gpus_per_worker.max(1) as usize;
        let mut by_server: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for st in &l.steps {
            let sw = topology
                .switches()
                .get(st.switch)
                .filter(|sw| sw.server == st.server)
                .ok_or_else(|| bad(format!("job {}: no switch {}", l.job, st.switch)))?;
            let free: Vec<u32> = sw
                .gpus
                .iter()
                .copied()
                .filter(|&g| !used[st.server][g as usize])
                .take(st.gpus as usize)
                .collect();
            if free.len() < st.gpus as usize {
                return Err(bad(format!(
                    "job {}: switch {} has {} free GPUs, {} asked",
                    l.job,
                    st.switch,
                    free.len(),
                    st.gpus
                )));
            }
            for &g in &free {
                used[st.server][g as usize] = true;
            }
            by_server.entry(st.server).or_default().extend(free);
        }
        let mut workers = Vec::new();
        for (server, mut gpus) in by_server {
            gpus.sort_unstable();
            if gpus.len() % gpw != 0 {
                return Err(bad(format!(
                    "job {}: {} GPUs on server {server} are not whole workers of {gpw}",
                    l.job,
                    gpus.len()
                )));
            }
            workers.extend(gpus.chunks(gpw).map(|c| WorkerTask {
                server: ServerIdx(server),
                gpus: c.to_vec(),
            }));
        }
        let ps =
            l.ps.iter()
                .flat_map(|&(server, n)| {
                    (0..n).map(move |_| PsTask {
                        server: ServerIdx(server),
                    })
                })
                .collect();
        out.push(Assignment {
            tier: 0,
            job: l.job,
            workers,
            ps,
        });
    }
    out.sort_by_key(|a| a.job);
    Ok(Schedule { assignments: out })
}

/// JSON writes a NaN as `null`; it reads back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Every label of a JSON-lines file (what `coda label` writes), in file order; a line that is
/// not a label is an error naming the file, line and field.
pub fn read_labels(path: &std::path::Path) -> Result<Vec<RoundLabel>> {
    read_json_lines(path)
}

/// One `T` per non-empty line of the JSON-lines file at `path`; a bad line is an error naming
/// the file, the line and the field.
pub(crate) fn read_json_lines<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
) -> Result<Vec<T>> {
    Ok(read_numbered_json_lines(path)?
        .into_iter()
        .map(|(_, t)| t)
        .collect())
}

/// [`read_json_lines`], each `T` with its line number (1-based), for a check after parsing
/// that names the line.
pub(crate) fn read_numbered_json_lines<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
) -> Result<Vec<(usize, T)>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let origin = path.display().to_string();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut de = serde_json::Deserializer::from_str(line);
        let label: T = serde_path_to_error::deserialize(&mut de).map_err(|e| Error::Json {
            file: origin.clone(),
            line: n + 1,
            column: e.inner().column(),
            field: e.path().to_string(),
            message: e.inner().to_string(),
        })?;
        out.push((n + 1, label));
    }
    Ok(out)
}
