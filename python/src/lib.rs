//! `coda._native`: the library behind the Python package `coda` (see `python/coda/__init__.py`).
//!
//! Everything crosses as JSON text (the formats the command line reads and writes), so an error
//! names the same file, line and field from Python as from the shell: every `coda::Error`
//! becomes `coda.CodaError` with its message. Calls that run the solver or the simulator release
//! the GIL (other Python threads, and Ray's, keep running).

use std::path::PathBuf;
use std::time::Instant;

use coda::ilp::SolveProgram;
use coda::ilp::SolveSettings;
use coda::learn::rl::{Decoding, Episode, JobPool, rollout};
use coda::learn::{LabelSpec, label_round, read_labels, resume_labels};
use coda::objective::RoundPricing;
use coda::policies::learned::{LearnedScheduler, PolicyNet};
use coda::policies::{ExactRound, PolicyKind, PolicyOptions};
use coda::replay::Replay;
use coda::replay::env::{Ask, GymEpisode, GymOptions, OBS_WIDTH, Phase, Step};
use coda::replay::{Comparison, RunSummary};
use coda::{CalibratedPerf, ClusterSnapshot, Objective, PerfModel, Scheduler};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::de::DeserializeOwned;

create_exception!(
    _native,
    CodaError,
    PyException,
    "An error of coda's: bad input (naming its file, line and field), a setting out of range, a solver failure."
);

fn err(e: coda::Error) -> PyErr {
    CodaError::new_err(e.to_string())
}

/// A JSON object of settings into `T`, an unknown or mistyped key named.
fn parse<T: DeserializeOwned>(text: &str, what: &str) -> PyResult<T> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de)
        .map_err(|e| CodaError::new_err(format!("{what}: field `{}`: {}", e.path(), e.inner())))
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("coda's outputs serialise")
}

fn perf() -> &'static CalibratedPerf {
    CalibratedPerf::shipped()
}

/// The shipped model, pricing goodput (statistical efficiency) when `goodput`.
fn perf_with(goodput: bool) -> &'static CalibratedPerf {
    static GOODPUT: std::sync::OnceLock<CalibratedPerf> = std::sync::OnceLock::new();
    if goodput {
        GOODPUT.get_or_init(|| CalibratedPerf::shipped().clone().with_goodput(true))
    } else {
        perf()
    }
}

fn solve_settings(time_limit: f64, node_limit: Option<u64>, seed: u32) -> SolveSettings {
    SolveSettings {
        time_limit_s: time_limit,
        node_limit,
        seed,
        ..SolveSettings::default()
    }
}

/// The scheduler named `name`: `exact` (the whole round's integer program, as
/// `coda::schedule`: [`ExactRound`]), or any policy of `coda simulate --policy` (`ilp` among
/// them: the windowed, back-filled, revisiting policy of a replay).
fn scheduler(
    name: &str,
    seed: u64,
    samples: usize,
    grow: usize,
    time_limit: f64,
    goodput: bool,
    objective: Objective,
) -> coda::Result<Box<dyn Scheduler + 'static>> {
    let perf = || perf_with(goodput);
    if name == "exact" {
        let settings = solve_settings(time_limit, None, (seed % u64::from(u32::MAX)) as u32);
        let recipe = ExactRound {
            objective,
            ..ExactRound::with_settings(settings)
        };
        return Ok(Box::new(recipe.scheduler(perf())?));
    }
    let kind: PolicyKind = name.parse()?;
    let mut opts = PolicyOptions {
        seed,
        objective,
        ..PolicyOptions::default()
    };
    opts.learned.samples = samples.max(1);
    opts.learned.grow = grow;
    if kind == PolicyKind::Lookahead {
        // A round handed in alone: its plays run under the simulator's default settings.
        return Ok(Box::new(coda::lookahead::Lookahead::new(
            perf(),
            &opts,
            coda::sim::SimConfig::default(),
        )?));
    }
    kind.build(perf(), &opts)
}

/// Schedules one round (a `ClusterSnapshot` as JSON); returns the schedule as JSON. `round_s`
/// and `restart_s`: the objective's round length and restart loss ([`Objective::new`]).
#[pyfunction]
#[pyo3(signature = (snapshot, scheduler="learned", seed=0, samples=8, time_limit=60.0, origin="snapshot", goodput=false, round_s=300.0, restart_s=60.0, grow=0))]
#[allow(clippy::too_many_arguments)]
fn schedule(
    py: Python<'_>,
    snapshot: &str,
    scheduler: &str,
    seed: u64,
    samples: usize,
    time_limit: f64,
    origin: &str,
    goodput: bool,
    round_s: f64,
    restart_s: f64,
    grow: usize,
) -> PyResult<String> {
    let name = scheduler.to_string();
    let (snapshot, origin) = (snapshot.to_string(), origin.to_string());
    py.detach(move || {
        let snap = ClusterSnapshot::from_json_str(&snapshot, &origin)?;
        let objective = Objective::new(round_s, restart_s)?;
        let mut s = self::scheduler(&name, seed, samples, grow, time_limit, goodput, objective)?;
        let schedule = coda::schedule_with(&snap, s.as_mut())?;
        Ok(to_json(&schedule))
    })
    .map_err(err)
}

/// The objective of `schedule` on the round `snapshot` (both JSON): the value the exact program
/// maximises; an invalid schedule is an error listing every violation.
#[pyfunction]
#[pyo3(signature = (snapshot, schedule, goodput=false, round_s=300.0, restart_s=60.0))]
fn score(
    snapshot: &str,
    schedule: &str,
    goodput: bool,
    round_s: f64,
    restart_s: f64,
) -> PyResult<f64> {
    let snap = ClusterSnapshot::from_json_str(snapshot, "snapshot").map_err(err)?;
    let schedule: coda::Schedule = parse(schedule, "schedule")?;
    let violations = schedule.validate(&snap);
    if !violations.is_empty() {
        return Err(err(coda::Error::InvalidSchedule {
            context: "score".to_string(),
            violations,
        }));
    }
    Objective::new(round_s, restart_s)
        .and_then(|o| o.score(perf_with(goodput), &snap, &schedule))
        .map(|s| s.total)
        .map_err(err)
}

/// Solves one round exactly; returns `{"schedule": ..., "report": ...}` as JSON.
#[pyfunction]
#[pyo3(signature = (instance, time_limit=60.0, program="auto", node_limit=None, seed=0, origin="instance"))]
fn solve(
    py: Python<'_>,
    instance: &str,
    time_limit: f64,
    program: &str,
    node_limit: Option<u64>,
    seed: u32,
    origin: &str,
) -> PyResult<String> {
    let program = match program {
        "auto" => SolveProgram::Auto,
        "compact" => SolveProgram::Compact,
        "config" => SolveProgram::Config,
        other => {
            return Err(CodaError::new_err(format!(
                "solve: field `program`: `{other}`: expected auto, compact or config"
            )));
        }
    };
    let (instance, origin) = (instance.to_string(), origin.to_string());
    py.detach(move || {
        let perf = perf();
        let snap = ClusterSnapshot::from_json_str(&instance, &origin)?;
        let solved = ExactRound {
            program,
            ..ExactRound::with_settings(solve_settings(time_limit, node_limit, seed))
        }
        .solve(perf, &snap)?;
        Ok(to_json(&serde_json::json!({
            "schedule": solved.schedule,
            "report": solved.report,
        })))
    })
    .map_err(err)
}

/// Replays a trace (`spec`: `coda simulate`'s flags as a JSON object) under `policy`; returns
/// what `coda simulate --json` prints, with `jobs`: one record per job.
#[pyfunction]
fn simulate(py: Python<'_>, spec: &str, policy: &str) -> PyResult<String> {
    let spec = Replay::from_json(spec, "simulate").map_err(err)?;
    let policy = policy.to_string();
    py.detach(move || {
        spec.check("simulate")?;
        let kind: PolicyKind = policy.parse()?;
        let perf = perf();
        let workload = spec.workload(perf)?;
        let allowance = spec.allowance(&workload, perf)?;
        let run = spec.run(kind, &workload, allowance, perf, &mut [])?;
        let mut v = serde_json::to_value(&run.summary).expect("a summary serialises");
        v["jobs"] = serde_json::to_value(&run.records).expect("records serialise");
        Ok(v.to_string())
    })
    .map_err(err)
}

/// Lower bounds on a replay's average JCT that no policy beats (`spec`: `coda simulate`'s
/// flags as a JSON object); what `coda bound --json` prints (its default relaxation limits).
#[pyfunction]
fn bound(py: Python<'_>, spec: &str) -> PyResult<String> {
    let spec = Replay::from_json(spec, "bound").map_err(err)?;
    py.detach(move || {
        spec.check("bound")?;
        let perf = perf();
        let workload = spec.workload(perf)?;
        let b = spec.bound(&workload, perf, Some(coda::sim::LpLimits::default()))?;
        let mut v = serde_json::to_value(&b).expect("a bound serialises");
        v["trace"] = workload.trace.clone().into();
        v["cluster"] = workload.cluster_spec.clone().into();
        v["gpus"] = workload.cluster.num_gpus().into();
        Ok(v.to_string())
    })
    .map_err(err)
}

/// A trace's jobs on its cluster (`spec`: `coda simulate`'s flags as a JSON object): `{"trace",
/// "cluster_spec", "cluster", "jobs", "skipped"}` as JSON, the jobs as a snapshot holds them.
#[pyfunction]
fn load_trace(py: Python<'_>, spec: &str) -> PyResult<String> {
    let spec = Replay::from_json(spec, "load_trace").map_err(err)?;
    py.detach(move || {
        spec.check("load_trace")?;
        let w = spec.workload(perf())?;
        Ok(serde_json::json!({
            "trace": w.trace, "cluster_spec": w.cluster_spec, "cluster": w.cluster,
            "jobs": w.jobs, "skipped": w.skipped,
        })
        .to_string())
    })
    .map_err(err)
}

/// `coda compare`'s `comparison.csv` of run summaries (each as `simulate` returns it).
#[pyfunction]
fn comparison_csv(summaries: Vec<String>) -> PyResult<String> {
    let runs = summaries
        .iter()
        .map(|s| parse::<RunSummary>(s, "comparison_csv"))
        .collect::<PyResult<Vec<RunSummary>>>()?;
    Ok(Comparison { runs, bound: None }.csv())
}

/// Scores policies on labelled rounds (`coda label` files): per round and policy, the
/// objective, the reference (the proven optimum, or the bound with `include_unproven`) and the
/// gap `(reference - objective) / |reference|`, as `coda gap` computes it.
#[pyfunction]
#[pyo3(signature = (labels, policies, include_unproven=false))]
fn gap(
    py: Python<'_>,
    labels: Vec<PathBuf>,
    policies: Vec<String>,
    include_unproven: bool,
) -> PyResult<String> {
    py.detach(move || {
        let perf = perf();
        let objective = Objective::default();
        let mut rows = Vec::new();
        for f in &labels {
            for l in read_labels(f)? {
                let Some(reference) = l.reference(include_unproven) else {
                    continue;
                };
                let pricing = RoundPricing::new(perf, &l.snapshot, objective);
                for p in &policies {
                    let samples = coda::policies::learned::DEFAULT_SAMPLES;
                    let mut s = scheduler(p, 0, samples, 0, 60.0, false, objective)?;
                    let t = Instant::now();
                    let schedule = s.schedule(&l.snapshot)?;
                    let decision_s = t.elapsed().as_secs_f64();
                    let scored = l.score(&pricing, reference, &schedule)?;
                    rows.push(serde_json::json!({
                        "round": l.id, "policy": p, "objective": scored.objective,
                        "reference": reference, "proven": l.proven, "valid": scored.valid,
                        "decision_s": decision_s, "gap": scored.gap,
                    }));
                }
            }
        }
        Ok(serde_json::Value::Array(rows).to_string())
    })
    .map_err(err)
}

/// The ids of a label spec's rounds, in the order `coda label` writes them.
#[pyfunction]
fn label_ids(spec: &str) -> PyResult<Vec<String>> {
    let spec = parse::<LabelSpec>(spec, "label")?;
    Ok(spec.rounds().into_iter().map(|r| r.0).collect())
}

/// The ids already in a labels file, as `coda label` resumes it (a last line cut short by an
/// interrupted run is dropped from the file).
#[pyfunction]
fn resume(path: PathBuf) -> PyResult<Vec<String>> {
    let mut ids: Vec<String> = resume_labels(&path).map_err(err)?.into_iter().collect();
    ids.sort();
    Ok(ids)
}

/// Labels the rounds of `spec` whose ids are `ids`: one JSON line each (newline included),
/// byte for byte what `coda label` appends for them.
#[pyfunction]
fn label(py: Python<'_>, spec: &str, ids: Vec<String>) -> PyResult<Vec<String>> {
    let spec = parse::<LabelSpec>(spec, "label")?;
    py.detach(move || {
        let settings = spec.settings();
        settings.checked()?;
        let perf = perf();
        let objective = Objective::default();
        let rounds = spec.rounds();
        let mut out = Vec::with_capacity(ids.len());
        for id in &ids {
            let Some((_, seed, servers, jobs)) = rounds.iter().find(|r| &r.0 == id) else {
                return Err(coda::Error::setting(
                    "label",
                    "ids",
                    id,
                    "not a round of the spec",
                ));
            };
            let snap = spec.snapshot(*seed, *servers, *jobs, perf)?;
            let l = label_round(id, &snap, perf, &objective, &settings)?;
            out.push(format!("{}\n", to_json(&l)));
        }
        Ok(out)
    })
    .map_err(err)
}

/// One episode of the learned policy (`weights`: a safetensors file, default the shipped
/// imitation weights) on jobs `start .. start + len` of a trace, sampled at `temperature` from
/// `seed` (or greedy); returns `{"episode", "seed", "avg_jct_h", "finished", "jobs", "rounds",
/// "return"}` as JSON (the return: the sum of the level-1 rewards, minus job-hours).
#[pyfunction]
#[pyo3(signature = (spec, start, len, seed, temperature=1.0, greedy=false, weights=None))]
#[allow(clippy::too_many_arguments)]
fn rollout_episode(
    py: Python<'_>,
    spec: &str,
    start: usize,
    len: usize,
    seed: u64,
    temperature: f32,
    greedy: bool,
    weights: Option<PathBuf>,
) -> PyResult<String> {
    let spec = Replay::from_json(spec, "rollout").map_err(err)?;
    py.detach(move || {
        spec.check("rollout")?;
        let perf = perf();
        let objective = spec.objective("rollout")?;
        let workload = spec.workload(perf)?;
        let net = match &weights {
            Some(p) => PolicyNet::load(p)?,
            None => LearnedScheduler::shipped(perf, objective)?.net().clone(),
        };
        let pool = JobPool {
            name: &workload.trace,
            jobs: &workload.jobs,
            cluster: &workload.cluster,
        };
        let ep = Episode::window(pool, start..start + len, perf as &dyn PerfModel, objective)?;
        let decoding = if greedy {
            Decoding::Greedy
        } else {
            Decoding::Sample { temperature, seed }
        };
        let r = rollout(perf, objective, &net, &ep, decoding)?;
        let ret: f64 = r.rounds.iter().map(|x| x.reward).sum();
        Ok(serde_json::json!({
            "episode": ep.name, "seed": seed, "avg_jct_h": r.avg_jct_h,
            "finished": r.finished.0, "jobs": r.finished.1, "rounds": r.rounds.len(),
            "return": ret,
        })
        .to_string())
    })
    .map_err(err)
}

/// The environment's core: a running episode (`coda.ClusterEnv` wraps it).
#[pyclass(unsendable)]
struct NativeEpisode {
    inner: GymEpisode,
}

/// A step as Python sees it: (the used slots' rows as float32 bytes, mask bytes (bool), phase,
/// job id, hint, round time, reward, finished run JSON or None).
type StepOut<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    &'static str,
    Option<u64>,
    Option<usize>,
    f64,
    f64,
    Option<String>,
);

fn step_out<'py>(py: Python<'py>, step: Step, slots: usize) -> StepOut<'py> {
    let (obs, mask, phase, job, hint, time_s) = match &step.ask {
        Some(Ask {
            phase,
            job,
            obs,
            mask,
            hint,
            time_s,
        }) => (
            // Native-endian f32s, as numpy reads them (`frombuffer(dtype=float32)`).
            bytemuck::cast_slice::<f32, u8>(obs).to_vec(),
            mask.iter().map(|&b| u8::from(b)).collect::<Vec<u8>>(),
            match phase {
                Phase::Pick => "pick",
                Phase::Option => "option",
                Phase::Place => "place",
            },
            job.map(|j| j.0),
            *hint,
            *time_s,
        ),
        None => (Vec::new(), vec![0u8; slots], "done", None, None, f64::NAN),
    };
    let done = step.done.map(|r| {
        let mut v = serde_json::to_value(&r.summary).expect("a summary serialises");
        v["jobs"] = serde_json::to_value(&r.records).expect("records serialise");
        v.to_string()
    });
    (
        PyBytes::new(py, &obs),
        PyBytes::new(py, &mask),
        phase,
        job,
        hint,
        time_s,
        step.reward,
        done,
    )
}

#[pymethods]
impl NativeEpisode {
    /// Starts an episode (`spec`: the replay's settings; `options`: the environment's) and
    /// returns it with its first step.
    #[staticmethod]
    fn start<'py>(
        py: Python<'py>,
        spec: &str,
        options: &str,
    ) -> PyResult<(NativeEpisode, StepOut<'py>)> {
        let spec = Replay::from_json(spec, "env").map_err(err)?;
        let opts: GymOptions = parse(options, "env")?;
        let slots = opts.slots;
        let (inner, first) = py
            .detach(move || GymEpisode::start(spec, opts))
            .map_err(err)?;
        Ok((NativeEpisode { inner }, step_out(py, first, slots)))
    }

    /// Answers the current step with `action`.
    fn step<'py>(&mut self, py: Python<'py>, action: usize) -> PyResult<StepOut<'py>> {
        let slots = self.inner.mask().map_or(0, <[bool]>::len);
        let step = self.inner.step(action).map_err(err)?;
        Ok(step_out(py, step, slots))
    }
}

/// Values per observation slot.
#[pyfunction]
fn obs_width() -> usize {
    OBS_WIDTH
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CodaError", m.py().get_type::<CodaError>())?;
    m.add_function(wrap_pyfunction!(schedule, m)?)?;
    m.add_function(wrap_pyfunction!(bound, m)?)?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(load_trace, m)?)?;
    m.add_function(wrap_pyfunction!(comparison_csv, m)?)?;
    m.add_function(wrap_pyfunction!(gap, m)?)?;
    m.add_function(wrap_pyfunction!(label_ids, m)?)?;
    m.add_function(wrap_pyfunction!(label, m)?)?;
    m.add_function(wrap_pyfunction!(resume, m)?)?;
    m.add_function(wrap_pyfunction!(rollout_episode, m)?)?;
    m.add_function(wrap_pyfunction!(obs_width, m)?)?;
    m.add_class::<NativeEpisode>()?;
    Ok(())
}
