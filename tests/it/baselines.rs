//! Every baseline, tested once for all: valid schedules on random rounds, the ILP bounds each of
//! them, and whole trace replays that are deterministic, lose nothing and stay valid every round.

use coda::policies::{self, PolicyKind, PolicyOptions};

fn all_policies() -> [&'static str; 15] {
    PolicyKind::ALL.map(PolicyKind::name)
}
use coda::ilp::SolveSettings;
use coda::sim::{self, SimConfig, Simulator};
use coda::workload::trace;
use coda::workload::{GenerateOptions, generate};
use coda::{CalibratedPerf, ClusterSnapshot, Objective, Schedule, Scheduler};
use proptest::prelude::*;

use crate::common::{datasets, philly};

/// Repeatable `ilp` settings: a node limit instead of a time limit.
fn repeatable() -> PolicyOptions {
    PolicyOptions {
        ilp: coda::policies::IlpOptions {
            solve: SolveSettings {
                time_limit_s: 1e6,
                node_limit: Some(200),
                ..SolveSettings::default()
            },
            max_jobs: 6,
            ..Default::default()
        },
        ..PolicyOptions::default()
    }
}

fn heuristics() -> impl Iterator<Item = &'static str> {
    all_policies().into_iter().filter(|p| *p != "ilp")
}

/// A scheduler that validates every schedule it passes on, so a test sees the violation itself
/// rather than the simulator's error.
struct Checked<'a>(Box<dyn Scheduler + 'a>, usize);
impl Scheduler for Checked<'_> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn schedule(&mut self, s: &ClusterSnapshot) -> coda::Result<Schedule> {
        let out = self.0.schedule(s)?;
        let v = out.validate(s);
        assert!(v.is_empty(), "{} at t = {}: {v:?}", self.0.name(), s.time_s);
        self.1 += 1;
        Ok(out)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any round, any heuristic: the schedule is valid, and running jobs are never dropped by a
    /// non-preemptive policy.
    #[test]
    fn every_heuristic_schedule_is_valid(
        seed in 0u64..10_000,
        servers in 1usize..5,
        jobs in 1usize..14,
        running in 0.0f64..0.8,
        hetero in any::<bool>(),
    ) {
        let perf = CalibratedPerf::shipped();
        let gpu_types = if hetero { vec!["v100".into(), "t4".into()] } else { vec!["v100".into()] };
        let snap = generate(&GenerateOptions {
            servers, jobs, seed, running_fraction: running, gpu_types, ..Default::default()
        }, perf).unwrap();
        for name in heuristics() {
            let mut p = name.parse::<coda::policies::PolicyKind>().unwrap().build(perf, &PolicyOptions { seed, ..Default::default() }).unwrap();
            let s = p.schedule(&snap).unwrap();
            let v = s.validate(&snap);
            prop_assert!(v.is_empty(), "{name}: {v:?}");
            if matches!(name, "fifo" | "sjf-bco" | "random") {
                for j in snap.jobs.iter().filter(|j| j.run.current.is_some()) {
                    prop_assert_eq!(s.assignment(j.id), j.run.current.as_ref(), "{} moved job {}", name, j.id);
                }
            }
            // Something runs whenever something can: the cluster is never left idle with work
            // waiting that fits on an empty cluster.
            if !snap.jobs.is_empty() {
                prop_assert!(!s.assignments.is_empty(), "{name} ran nothing");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The exact program's objective bounds every heuristic's schedule on small rounds.
    #[test]
    fn ilp_objective_bounds_every_heuristic(seed in 0u64..10_000, jobs in 1usize..5) {
        let perf = CalibratedPerf::shipped();
        let snap = generate(&GenerateOptions {
            servers: 2, jobs, seed, topology: (1, 2, 2), running_fraction: 0.3, max_workers: 4,
            ..Default::default()
        }, perf).unwrap();
        let obj = Objective::default();
        let exact = coda::ilp::SolveRequest::new(&snap, perf, obj).unwrap().solve().unwrap();
        prop_assert_eq!(exact.report.status, coda::ilp::SolveStatus::Optimal);
        for name in heuristics() {
            let mut p = name.parse::<coda::policies::PolicyKind>().unwrap().build(perf, &PolicyOptions { seed, ..Default::default() }).unwrap();
            let s = p.schedule(&snap).unwrap();
            let h = obj.score(perf, &snap, &s).unwrap().total;
            // HiGHS stops at a relative gap of 1e-6 or an absolute one of 1e-6.
            let tol = 1e-6 * exact.report.objective.abs().max(1.0) + 1e-6;
            prop_assert!(exact.report.objective >= h - tol, "{name}: {h} > ILP {}", exact.report.objective);
        }
    }
}

/// One replay: records, timeline, events, rounds seen by the checker.
type Replay = (Vec<sim::JobRecord>, Vec<(f64, u64)>, u64, usize);

fn replay(policy: &str, jobs: &[coda::model::Job], servers: usize, opts: &PolicyOptions) -> Replay {
    let perf = CalibratedPerf::shipped();
    let cluster = coda::model::Cluster::homogeneous(servers, &trace::default_server());
    let mut sim = Simulator::builder(perf, cluster, jobs.to_vec())
        .build()
        .unwrap();
    let mut p = Checked(
        policy
            .parse::<coda::policies::PolicyKind>()
            .unwrap()
            .build(perf, opts)
            .unwrap(),
        0,
    );
    sim.run(&mut p).unwrap();
    (
        sim.records().to_vec(),
        sim.utilization().to_vec(),
        sim.events_processed(),
        p.1,
    )
}

/// Every policy replays a Philly slice: same seed, identical output; every round valid; no job
/// lost; GPU-seconds accounted; non-preemptive policies never restart a job.
#[test]
fn every_policy_replays_a_trace_slice() {
    let jobs = philly(80);
    for name in all_policies() {
        let (n_jobs, servers) = if name == "ilp" { (25, 1) } else { (80, 2) };
        let jobs = &jobs[..n_jobs];
        let a = replay(name, jobs, servers, &repeatable());
        let b = replay(name, jobs, servers, &repeatable());
        assert_eq!(a, b, "{name}: same seed, same output");
        let (records, timeline, _, rounds) = &a;
        assert!(*rounds > 0, "{name}");
        assert_eq!(records.len(), n_jobs, "{name}");
        assert!(
            records.iter().all(|r| r.finish_s.is_some()),
            "{name}: every job finishes without a horizon"
        );
        let mut integral = 0.0;
        for w in timeline.windows(2) {
            integral += w[0].1 as f64 * (w[1].0 - w[0].0);
        }
        let per_job: f64 = records.iter().map(|r| r.gpu_seconds).sum();
        assert!(
            (integral - per_job).abs() <= 1e-6 * per_job,
            "{name}: {integral} vs {per_job}"
        );
        if matches!(name, "fifo" | "sjf-bco" | "random") {
            assert!(records.iter().all(|r| r.restarts == 0), "{name}");
        }
    }
}

/// A different seed changes what `random` does (and only its draws).
#[test]
fn random_placement_follows_its_seed() {
    let jobs = philly(40);
    let with = |seed| {
        replay(
            "random",
            &jobs,
            2,
            &PolicyOptions {
                seed,
                ..PolicyOptions::default()
            },
        )
        .0
    };
    assert_eq!(with(1), with(1));
    assert_ne!(with(1), with(2));
}

/// A horizon leaves jobs unfinished and says so; none disappears.
#[test]
fn a_horizon_reports_unfinished_jobs() {
    let perf = CalibratedPerf::shipped();
    let jobs = philly(60);
    let cfg = SimConfig {
        horizon_s: 20_000.0,
        // Two of the 60 ask for 16 GPUs of this 8-GPU cluster.
        unplaceable: coda::sim::Unplaceable::Skip,
        ..SimConfig::default()
    };
    let cluster = coda::model::Cluster::homogeneous(1, &trace::default_server());
    let mut sim = Simulator::builder(perf, cluster, jobs)
        .config(cfg)
        .build()
        .unwrap();
    let mut p = policies::PolicyKind::Tiresias
        .build(perf, &PolicyOptions::default())
        .unwrap();
    sim.run(p.as_mut()).unwrap();
    let m = sim::metrics(sim.records(), 0.0..1.0, 8);
    assert_eq!(m.jobs_total + sim.unplaceable().len(), 60);
    assert!(m.jobs_unfinished_total > 0);
    assert_eq!(m.jobs_finished + m.jobs_unfinished, m.jobs_tracked);
    assert!(sim.now() <= 20_000.0);
}

/// Tiresias serves a newcomer before a job that has already had its share: after one long job
/// has run a while, a later short job preempts it on a one-GPU cluster.
#[test]
fn tiresias_demotes_attained_service() {
    let perf = CalibratedPerf::shipped();
    let mut jobs = philly(200);
    jobs.retain(|j| j.requested_or_min() == (1, 0));
    let mut long = jobs[0].clone();
    long.id = coda::model::JobId(1);
    long.arrival_s = 0.0;
    long.total_iterations *= 1e3;
    let mut short = jobs[1].clone();
    short.id = coda::model::JobId(2);
    short.arrival_s = 10.0 * 3600.0; // after the long one crossed 1 GPU-hour
    let one_gpu = coda::model::Server::uniform(
        "one",
        "v100",
        [1, 1, 1],
        coda::model::HostResources::new(3.0, 62.5, 25.0),
    );
    let run = |policy: &str| {
        let cluster = coda::model::Cluster::homogeneous(1, &one_gpu);
        let mut sim = Simulator::builder(perf, cluster, vec![long.clone(), short.clone()])
            .build()
            .unwrap();
        let mut p = policy
            .parse::<coda::policies::PolicyKind>()
            .unwrap()
            .build(perf, &PolicyOptions::default())
            .unwrap();
        sim.run(p.as_mut()).unwrap();
        sim.records().to_vec()
    };
    let t = run("tiresias");
    let f = run("fifo");
    let short_jct = |r: &[sim::JobRecord]| {
        let s = r.iter().find(|x| x.id == coda::model::JobId(2)).unwrap();
        s.finish_s.unwrap() - s.arrival_s
    };
    assert!(
        t.iter()
            .find(|x| x.id == coda::model::JobId(1))
            .unwrap()
            .restarts
            >= 1
    );
    assert!(short_jct(&t) < short_jct(&f) / 2.0, "{t:?} vs {f:?}");
}

#[test]
fn unknown_policy_and_bad_options_are_typed_errors() {
    let perf = CalibratedPerf::shipped();
    let e = "lottery".parse::<PolicyKind>().err().unwrap();
    assert!(
        e.to_string().contains("lottery") && e.to_string().contains("fifo"),
        "{e}"
    );
    let bad = PolicyOptions {
        tiresias: coda::policies::TiresiasOptions {
            thresholds_gpu_s: vec![10.0, 5.0],
            ..Default::default()
        },
        ..PolicyOptions::default()
    };
    assert!(policies::PolicyKind::Tiresias.build(perf, &bad).is_err());
    let bad = PolicyOptions {
        ilp: coda::policies::IlpOptions {
            max_jobs: 0,
            ..Default::default()
        },
        ..PolicyOptions::default()
    };
    assert!(policies::PolicyKind::Ilp.build(perf, &bad).is_err());
}

#[test]
fn cluster_specs() {
    let perf = CalibratedPerf::shipped();
    let d = datasets();
    let c = coda::workload::cluster_from_spec("64x8", &d, perf).unwrap();
    assert_eq!(c.servers.len(), 64);
    // The generic 8-GPU server is the DGX-1's topology and resources without NVLink.
    assert_eq!(
        c.servers[0],
        coda::model::Server {
            name: "node-000".into(),
            nvlink: false,
            ..trace::default_server()
        }
    );
    // Named servers come from datasets/servers.csv, with their cited numbers.
    // The DGX-1 is the generic 8-GPU server with its GPUs joined by NVLink.
    let c = coda::workload::cluster_from_spec("64xdgx-1-v100", &d, perf).unwrap();
    let mut generic = coda::workload::cluster_from_spec("64x8", &d, perf).unwrap();
    assert!(generic.servers.iter().all(|s| !s.nvlink));
    generic.servers.iter_mut().for_each(|s| s.nvlink = true);
    assert_eq!(c, generic);
    assert!(c.servers[0].gpu_slots().iter().all(|g| g.socket == 0));
    let c = coda::workload::cluster_from_spec("2xnd40rs-v2", &d, perf).unwrap();
    assert_eq!(
        (
            c.num_gpus(),
            c.servers[1].cpu_cores,
            c.servers[1].memory_gib,
            c.servers[1].nic_gbps
        ),
        (16, 40.0, 672.0, 100.0)
    );
    let e = coda::workload::cluster_from_spec("4xnosuch", &d, perf).unwrap_err();
    assert!(e.to_string().contains("nd40rs-v2"), "{e}");
    let c = coda::workload::cluster_from_spec("3x4:t4", &d, perf).unwrap();
    assert_eq!((c.num_gpus(), c.servers[2].gpu_type.as_str()), (12, "t4"));
    let a = coda::workload::cluster_from_spec("alibaba-nodes", &d, perf).unwrap();
    assert!(
        a.servers
            .iter()
            .all(|s| ["t4", "p100", "v100"].contains(&s.gpu_type.as_str()))
    );
    for bad in ["0x8", "8x0", "4x8:h100", "lots", "x8"] {
        let e = coda::workload::cluster_from_spec(bad, &d, perf).unwrap_err();
        assert!(e.to_string().contains("cluster"), "{bad}: {e}");
    }
}

/// Counts its calls and answers with the running jobs kept where they are.
struct Counting<'c>(&'c std::cell::Cell<u32>);
impl Scheduler for Counting<'_> {
    fn name(&self) -> &str {
        "counting"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> coda::Result<Schedule> {
        self.0.set(self.0.get() + 1);
        Ok(snap.current_schedule())
    }
}

#[test]
fn revisit_asks_again_when_something_changes_and_every_n_rounds() {
    let perf = CalibratedPerf::shipped();
    let snap = coda::workload::generate(
        &coda::workload::GenerateOptions {
            servers: 2,
            jobs: 4,
            seed: 3,
            running_fraction: 0.5,
            ..Default::default()
        },
        perf,
    )
    .unwrap();
    assert!(snap.jobs.iter().any(|j| j.run.current.is_some()));
    let calls = std::cell::Cell::new(0);
    // What the revisiting scheduler reports, round by round, as a run's observer sees it.
    let mut log = coda::scheduler::RoundEvents::default();
    let mut r = coda::policies::Revisit::new(Box::new(Counting(&calls)), 3);
    // Nothing changes: asked in rounds 1, 4 and 7.
    for _ in 0..7 {
        assert_eq!(r.schedule(&snap).unwrap(), snap.current_schedule());
        log.0.extend(r.take_events());
    }
    assert_eq!(calls.get(), 3);
    // A job leaves: asked at once.
    let mut fewer = snap.clone();
    fewer.jobs.pop();
    r.schedule(&fewer).unwrap();
    log.0.extend(r.take_events());
    assert_eq!(calls.get(), 4);
    // A job not where the last decision put it: asked at once.
    let mut moved = fewer.clone();
    let j = moved
        .jobs
        .iter()
        .position(|j| j.run.current.is_some())
        .unwrap();
    moved.jobs[j].run.current = None;
    r.schedule(&moved).unwrap();
    log.0.extend(r.take_events());
    assert!(r.take_events().is_empty(), "events are taken once");
    assert_eq!(calls.get(), 5);
    assert!(
        log.notes().iter().any(|n| n.starts_with("4 of 9 round(s)")),
        "{:?}",
        log.notes()
    );
    // Every round when n = 1.
    let calls1 = std::cell::Cell::new(0);
    let mut every = coda::policies::Revisit::new(Box::new(Counting(&calls1)), 1);
    for _ in 0..4 {
        every.schedule(&snap).unwrap();
    }
    assert_eq!(calls1.get(), 4);
}

/// Sia gives every job a configuration when the cluster has room for each at its smallest (its
/// penalty of 1.1 on a job left out outweighs any configuration's value of at most 1).
#[test]
fn sia_runs_every_job_when_gpus_suffice() {
    let perf = CalibratedPerf::shipped();
    for seed in 0..6 {
        let snap = generate(
            &GenerateOptions {
                servers: 6,
                jobs: 5,
                seed,
                running_fraction: 0.4,
                max_workers: 4,
                ..Default::default()
            },
            perf,
        )
        .unwrap();
        let mut sia = PolicyKind::Sia
            .build(perf, &PolicyOptions::default())
            .unwrap();
        let s = sia.schedule(&snap).unwrap();
        assert!(s.validate(&snap).is_empty(), "seed {seed}");
        assert_eq!(s.assignments.len(), snap.jobs.len(), "seed {seed}");
    }
}
