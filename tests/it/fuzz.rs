//! Fuzzing harness: hostile variations of every input coda reads — instance JSON, schedule JSON,
//! trace CSVs, parameter files — and random clusters and workloads for the simulator. For every
//! case: no panic, no hang (a run ends within a bound derived from its input), no invalid
//! schedule accepted, no job lost.
//!
//! Bounded for CI (a few hundred cases per target); `CODA_FUZZ_CASES=N` runs N per target, e.g.
//! `CODA_FUZZ_CASES=5000 cargo test --release --test it fuzz -- --nocapture` (each target prints
//! its cases and time).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use coda::ilp::SolveSettings;
use coda::model::{Architecture, TaskDemand, TaskRange};
use coda::model::{Cluster, Job, JobId, Server};
use coda::policies::{self, PolicyOptions};
use coda::sim::{SimConfig, Simulator, Unplaceable};
use coda::workload::trace::{self, TraceFilter, TraceFormat, TraceOptions};
use coda::{CalibratedPerf, ClusterSnapshot, Objective, PerfModel, Schedule, Scheduler};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Cases per target: `CODA_FUZZ_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("CODA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `test` on `cases` inputs from `strategy` (seeded: the same inputs every run), and prints
/// the count and time.
fn fuzz<S: Strategy>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value))
where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        proptest::test_runner::TestRng::from_seed(
            proptest::test_runner::RngAlgorithm::ChaCha,
            &[7; 32],
        ),
    );
    let t = Instant::now();
    runner
        .run(&strategy, |v| {
            test(v);
            Ok(())
        })
        .unwrap();
    eprintln!(
        "fuzz {name}: {cases} cases in {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// Values chosen to break parsers and arithmetic: zero, negatives, huge, tiny, `u32`/`u64`
/// limits, wrong types, empty and unknown names.
fn hostile() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(0.5)),
        Just(json!(1e300)),
        Just(json!(-1e300)),
        Just(json!(1e-300)),
        Just(json!(2_000_000_000u64)),
        Just(json!(4_294_967_295u64)),
        Just(json!(18_446_744_073_709_551_615u64)),
        Just(json!("")),
        Just(json!("V100")),
        Just(json!("v100")),
        Just(json!(null)),
        Just(json!([])),
        Just(json!({})),
        Just(json!(true)),
        Just(json!([[4096]])),
    ]
}

/// Every node of a JSON value, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(x, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// One edit of a JSON document: replace node `k` (mod node count) by a hostile value, remove
/// it, or duplicate it inside its array.
#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, Value),
    Remove(usize),
    Duplicate(usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(
        prop_oneof![
            6 => (any::<usize>(), hostile()).prop_map(|(k, v)| Edit::Replace(k, v)),
            1 => any::<usize>().prop_map(Edit::Remove),
            1 => any::<usize>().prop_map(Edit::Duplicate),
        ],
        1..4,
    )
}

fn apply(mut doc: Value, edits: &[Edit]) -> Value {
    for e in edits {
        let mut all = Vec::new();
        pointers(&doc, String::new(), &mut all);
        let pick = |k: usize| all[k % all.len()].clone();
        match e {
            Edit::Replace(k, v) => {
                let p = pick(*k);
                if p.is_empty() {
                    doc = v.clone();
                } else if let Some(x) = doc.pointer_mut(&p) {
                    *x = v.clone();
                }
            }
            Edit::Remove(k) | Edit::Duplicate(k) => {
                let p = pick(*k);
                let Some((parent, last)) = p.rsplit_once('/') else {
                    continue;
                };
                let dup = matches!(e, Edit::Duplicate(_));
                match doc.pointer_mut(parent) {
                    Some(Value::Object(m)) if !dup => {
                        m.remove(last);
                    }
                    Some(Value::Array(a)) => {
                        if let Ok(i) = last.parse::<usize>()
                            && i < a.len()
                        {
                            if dup {
                                let x = a[i].clone();
                                a.insert(i, x);
                            } else {
                                a.remove(i);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    doc
}

/// Byte-level damage: `(position, op, byte)` — 0 deletes, 1 inserts, 2 overwrites, 3 truncates.
fn bytes_damage() -> impl Strategy<Value = Vec<(usize, u8, u8)>> {
    prop::collection::vec((any::<usize>(), 0u8..4, any::<u8>()), 0..4)
}

fn damage(text: &str, ops: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for &(pos, op, byte) in ops {
        if b.is_empty() {
            break;
        }
        let i = pos % b.len();
        match op {
            0 => {
                b.remove(i);
            }
            1 => b.insert(i, byte),
            2 => b[i] = byte,
            _ => b.truncate(i),
        }
    }
    b
}

fn read(p: &str) -> String {
    std::fs::read_to_string(root().join(p)).unwrap()
}

/// What must hold for any snapshot that loaded: the current placements validate, a heuristic's
/// schedule validates, and a small node-limited solve ends with a valid schedule or an error.
fn exercise(snap: &ClusterSnapshot, perf: &CalibratedPerf) {
    let current = coda::workload::current_schedule(snap);
    assert!(current.validate(snap).is_empty());
    if perf.check_snapshot(snap, "fuzz").is_err() {
        return;
    }
    let _ = Objective::default().score(perf, snap, &current);
    for name in ["fifo", "optimus"] {
        let mut p = name
            .parse::<coda::policies::PolicyKind>()
            .unwrap()
            .build(perf, &PolicyOptions::default())
            .unwrap();
        if let Ok(s) = p.schedule(snap) {
            let v = s.validate(snap);
            assert!(v.is_empty(), "{name} proposed an invalid schedule: {v:?}");
        }
    }
    if snap.cluster.servers.len() <= 4 && snap.jobs.len() <= 8 {
        let settings = SolveSettings {
            time_limit_s: 5.0,
            node_limit: Some(20),
            ..SolveSettings::default()
        };
        let solved = coda::ilp::SolveRequest::new(snap, perf, Objective::default())
            .and_then(|r| r.settings(settings.checked().unwrap()).solve());
        if let Ok(s) = solved {
            assert!(s.schedule.validate(snap).is_empty());
        }
    }
}

#[test]
fn fuzz_instance_json() {
    let perf = CalibratedPerf::shipped();
    let base: Value = serde_json::from_str(&read("examples/instances/small.json")).unwrap();
    fuzz(
        "instance_json",
        cases(150),
        (edits(), bytes_damage()),
        |(e, b)| {
            let text = serde_json::to_string_pretty(&apply(base.clone(), &e)).unwrap();
            let bytes = damage(&text, &b);
            let Ok(text) = String::from_utf8(bytes) else {
                return;
            };
            if let Ok(snap) = ClusterSnapshot::from_json_str(&text, "fuzz.json") {
                exercise(&snap, perf);
            }
        },
    );
}

#[test]
fn fuzz_schedule_json() {
    let perf = CalibratedPerf::shipped();
    let snap =
        ClusterSnapshot::from_json_file(root().join("examples/instances/small.json")).unwrap();
    let base: Value =
        serde_json::from_str(&read("examples/instances/small.schedule.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    fuzz(
        "schedule_json",
        cases(200),
        (edits(), bytes_damage()),
        |(e, b)| {
            let text = serde_json::to_string_pretty(&apply(base.clone(), &e)).unwrap();
            std::fs::write(&file, damage(&text, &b)).unwrap();
            if let Ok(s) = Schedule::from_json_file(&file)
                && s.validate(&snap).is_empty()
            {
                // A schedule that validates can be priced.
                Objective::default().score(perf, &snap, &s).unwrap();
            }
        },
    );
}

/// The first lines of each shipped trace, as fuzzing seeds.
fn trace_heads() -> Vec<(TraceFormat, String)> {
    [TraceFormat::Philly, TraceFormat::Itp, TraceFormat::Alibaba]
        .into_iter()
        .map(|f| {
            let text = read(&format!("datasets/{}", f.shipped_file()));
            let head: Vec<&str> = text.lines().take(25).collect();
            (f, head.join("\n") + "\n")
        })
        .collect()
}

/// Runs `sim` under `policy` one event at a time; panics if it has not ended after `bound`
/// events. Returns the events it took.
fn run_bounded(sim: &mut Simulator<'_>, policy: &mut dyn Scheduler, bound: u64) -> u64 {
    let mut steps = 0u64;
    while sim.step(policy).unwrap() {
        steps += 1;
        assert!(steps <= bound, "no end after {bound} events");
    }
    steps
}

/// Events a run may take: every job arrives, starts, restarts and ends a bounded number of
/// times, plus one round per `round_s` of a span in which all work is done one job at a time at
/// a hundredth of its speed alone (far beyond any slowdown the model gives).
fn event_bound(jobs: &[Job], alone_s: &[f64], round_s: f64) -> u64 {
    let last = jobs.iter().map(|j| j.arrival_s).fold(0.0, f64::max);
    let span = last + 100.0 * alone_s.iter().sum::<f64>();
    (span / round_s) as u64 * 4 + 100 * jobs.len() as u64 + 1000
}

/// What the simulator targets saw: runs refused up front, runs made, and their jobs finished,
/// left out as never runnable, and named in a stall.
#[derive(Default)]
struct Tally([AtomicU64; 6]);

impl Tally {
    fn refused(&self) {
        self.0[0].fetch_add(1, Relaxed);
    }

    fn print(&self, name: &str) {
        let v: Vec<u64> = self.0.iter().map(|x| x.load(Relaxed)).collect();
        eprintln!(
            "fuzz {name}: {} refused up front, {} runs of {} events: {} jobs finished, {} left out, \
             {} in a stall",
            v[0], v[1], v[5], v[2], v[3], v[4]
        );
    }
}

/// Checks the run's records (it took `events`): every job finished, or is reported left out or
/// stalled.
fn check_accounted(sim: &Simulator<'_>, jobs: &[Job], events: u64, tally: &Tally) {
    let skipped: Vec<JobId> = sim.unplaceable().iter().map(|(j, _)| *j).collect();
    let stalled: Vec<JobId> = sim.stall().map(|s| s.waiting.clone()).unwrap_or_default();
    assert_eq!(
        sim.records().len() + skipped.len(),
        jobs.len(),
        "a job was lost"
    );
    for r in sim.records() {
        assert!(
            r.finish_s.is_some() || stalled.contains(&r.id),
            "job {} neither finished nor reported",
            r.id
        );
    }
    let finished = sim
        .records()
        .iter()
        .filter(|r| r.finish_s.is_some())
        .count();
    for (k, n) in [
        (1, 1),
        (2, finished),
        (3, skipped.len()),
        (4, stalled.len()),
        (5, events as usize),
    ] {
        tally.0[k].fetch_add(n as u64, Relaxed);
    }
}

#[test]
fn fuzz_trace_csv() {
    let perf = CalibratedPerf::shipped();
    let heads = trace_heads();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    let tally = Tally::default();
    fuzz(
        "trace_csv",
        cases(120),
        (
            0..3usize,
            bytes_damage(),
            prop::collection::vec((any::<usize>(), 0usize..3), 0..3),
        ),
        |(which, b, cells)| {
            let (format, text) = &heads[which];
            // Cell-level damage too: a hostile number in a random cell.
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            for (k, v) in &cells {
                let row = 1 + k % (lines.len() - 1);
                let mut f: Vec<String> = lines[row].split(',').map(str::to_string).collect();
                let c = k / 7 % f.len();
                f[c] = ["1e300", "-5", "4294967296"][*v].to_string();
                lines[row] = f.join(",");
            }
            std::fs::write(&file, damage(&(lines.join("\n") + "\n"), &b)).unwrap();
            let Ok(t) = trace::load(&file, *format, &TraceFilter::default()) else {
                return;
            };
            let Ok(jobs) = trace::to_jobs(&t.jobs, &TraceOptions::default(), perf) else {
                return;
            };
            let alone: Vec<f64> = t.jobs.iter().map(|j| j.duration_s).collect();
            let config = SimConfig {
                unplaceable: Unplaceable::Skip,
                ..SimConfig::default()
            };
            let cluster = Cluster::homogeneous(4, &trace::default_server());
            let Ok(mut sim) = Simulator::builder(perf, cluster, jobs.clone())
                .config(config)
                .build()
            else {
                tally.refused();
                return;
            };
            let mut p = policies::PolicyKind::Tiresias
                .build(perf, &PolicyOptions::default())
                .unwrap();
            let events = run_bounded(&mut sim, p.as_mut(), event_bound(&jobs, &alone, 300.0));
            check_accounted(&sim, &jobs, events, &tally);
        },
    );
    tally.print("trace_csv");
}

#[test]
fn fuzz_params_json() {
    let base: Value = serde_json::from_str(&read("models/perf_params.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.json");
    fuzz("params_json", cases(60), edits(), |e| {
        std::fs::write(
            &file,
            serde_json::to_string(&apply(base.clone(), &e)).unwrap(),
        )
        .unwrap();
        let Ok(perf) = CalibratedPerf::from_file(&file) else {
            return;
        };
        // Whatever loads prices finitely, or refuses.
        for (model, arch) in perf.models().into_iter().take(40) {
            let q = coda::perf::JobQuery {
                model: &model,
                arch,
                gpus_per_worker: 1,
                local_batch: None,
                goodput: None,
            };
            let ps = u32::from(arch == Architecture::ParameterServer);
            for shape in [
                coda::perf::PlacementShape::isolated(1, ps, vec![1]),
                coda::perf::PlacementShape::isolated(4, ps, vec![2, 2]),
            ] {
                if let Ok(s) = perf.speed(&q, "v100", &shape) {
                    assert!(
                        s.iterations_per_s.is_finite() && s.iterations_per_s > 0.0,
                        "{model}: {s:?}"
                    );
                }
            }
        }
    });
}

/// A random cluster: 1–6 servers of 1–8 GPUs in 1–2 sockets, random cores and memory, known
/// GPU types (and now and then an unknown one).
fn cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec(
        (
            1u32..=2,
            1u32..=4,
            prop_oneof![
                19 => prop::sample::select(vec!["v100", "k80", "a100", "t4"]),
                1 => Just("nosuch"),
            ],
            2.0f64..96.0,
            16.0f64..768.0,
        ),
        1..=6,
    )
    .prop_map(|servers| Cluster {
        servers: servers
            .into_iter()
            .enumerate()
            .map(|(i, (sockets, per, ty, cores, mem))| {
                Server::uniform(
                    format!("s{i}"),
                    ty.to_string(),
                    [sockets, 1, per],
                    coda::model::HostResources::new(cores, mem, 25.0),
                )
            })
            .collect(),
    })
}

/// Random jobs: known models with matching architecture, random demands, ranges, requests,
/// arrivals within a day and work of minutes to hours alone. Nine jobs in ten start within the
/// range their model prices (so most runs get past the up-front checks and exercise the rounds);
/// the tenth may ask for anything.
fn workload(perf: &'static CalibratedPerf) -> impl Strategy<Value = Vec<Job>> {
    let models = perf.models();
    prop::collection::vec(
        (
            (prop::sample::select(models), prop::bool::weighted(0.9)),
            1u32..=2,
            0.5f64..8.0,
            1.0f64..64.0,
            1u32..=4,
            0u32..=4,
            0u32..=3,
            0.0f64..86_400.0,
            10.0f64..20_000.0,
        ),
        1..=12,
    )
    .prop_map(move |rows| {
        rows.into_iter()
            .enumerate()
            .map(
                |(i, (((model, arch), priced), gpw, cpu, mem, wmin, wextra, ps, arrival, work))| {
                    let (gpw, wmin, ps, asked) = match perf.max_tasks(&model) {
                        Some((w, p)) if priced => {
                            let gpw = if arch == Architecture::AllReduce {
                                gpw.min(w.max(1))
                            } else {
                                gpw
                            };
                            let w = if arch == Architecture::AllReduce {
                                w / gpw
                            } else {
                                w
                            };
                            let wmin = wmin.min(w.max(1));
                            let asked = (wmin + wextra / 2).min(w.max(wmin));
                            (gpw, wmin, ps.min(p.saturating_sub(1)), asked)
                        }
                        _ => (gpw, wmin, ps, wmin + wextra / 2),
                    };
                    let ps = match arch {
                        Architecture::AllReduce => TaskRange::new(0, 0),
                        Architecture::ParameterServer => TaskRange::new(1, 1 + ps),
                    };
                    Job {
                        tiers: Vec::new(),
                        id: JobId(i as u64),
                        arrival_s: arrival.floor(),
                        model,
                        arch,
                        total_iterations: work,
                        demand: TaskDemand {
                            gpus_per_worker: gpw,
                            cpu_per_worker: cpu,
                            mem_per_worker_gib: mem,
                            cpu_per_ps: 2.0,
                            mem_per_ps_gib: 8.0,
                        },
                        workers: TaskRange::new(wmin, wmin + wextra),
                        ps,
                        gpu_types: Vec::new(),
                        local_batch: None,
                        run: coda::model::RunState::default(),
                        requested: Some(coda::model::Request {
                            workers: asked,
                            ps: ps.min,
                        }),
                    }
                },
            )
            .collect()
    })
}

/// The property the simulator promises: on any cluster and workload it ends, and every job
/// either finishes, is reported as never runnable (left out), or is named in a reported stall.
#[test]
fn fuzz_simulator_terminates_and_accounts_for_every_job() {
    let perf = CalibratedPerf::shipped();
    let mut names: Vec<&str> = policies::PolicyKind::ALL
        .map(policies::PolicyKind::name)
        .to_vec();
    names.retain(|p| *p != "ilp");
    let tally = Tally::default();
    fuzz(
        "simulator",
        cases(400),
        (
            cluster(),
            workload(perf),
            prop::sample::select(names),
            any::<bool>(),
            prop::sample::select(vec![60.0, 300.0, 3600.0]),
            prop::bool::weighted(0.8),
        ),
        |(cluster, jobs, policy, skip, round_s, skip_idle)| {
            let config = SimConfig {
                objective: Objective::new(round_s, 30.0).unwrap(),
                skip_idle_rounds: skip_idle,
                unplaceable: if skip {
                    Unplaceable::Skip
                } else {
                    Unplaceable::Reject
                },
                ..SimConfig::default()
            };
            let mut sim = match Simulator::builder(perf, cluster.clone(), jobs.clone())
                .config(config)
                .build()
            {
                Ok(s) => s,
                Err(e) => {
                    tally.refused();
                    // Refused up front: always with a reason a person can act on.
                    let m = e.to_string();
                    assert!(
                        m.contains("can never run")
                            || m.contains("unknown GPU type")
                            || m.contains("outside the measured")
                            || m.contains("beyond the largest measured")
                            || m.contains("the cluster has no"),
                        "{m}"
                    );
                    return;
                }
            };
            // Alone, each job at its smallest allocation: work over its speed (at least the
            // floor of 1e-3 steps/s the bound needs).
            let alone: Vec<f64> = jobs
                .iter()
                .map(|j| {
                    let q = coda::perf::JobQuery::of(j);
                    let shape = coda::perf::PlacementShape::isolated(
                        j.workers.min,
                        j.ps.min,
                        vec![j.workers.min * j.demand.gpus_per_worker],
                    );
                    let ty = &cluster.servers[0].gpu_type;
                    let v = perf
                        .speed(&q, ty, &shape)
                        .map_or(1e-3, |s| s.iterations_per_s);
                    j.total_iterations / v.max(1e-3)
                })
                .collect();
            let mut p = policy
                .parse::<coda::policies::PolicyKind>()
                .unwrap()
                .build(perf, &PolicyOptions::default())
                .unwrap();
            let events = run_bounded(&mut sim, p.as_mut(), event_bound(&jobs, &alone, round_s));
            check_accounted(&sim, &jobs, events, &tally);
        },
    );
    tally.print("simulator");
}
