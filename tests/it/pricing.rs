//! The round priced once against the objective's formula computed from scratch, and the
//! simulator as an environment against the simulator driven by a scheduler.

use coda::model::Architecture;
use coda::model::{Assignment, Cluster, Server};
use coda::objective::RoundPricing;
use coda::objective::{Colocation, Mode};
use coda::sim::Simulator;
use coda::workload::{GenerateOptions, generate};
use coda::{CalibratedPerf, ClusterSnapshot, Objective, PerfModel, Schedule, Scheduler};
use proptest::prelude::*;

use crate::common::{philly, random_valid_schedule};
use coda::model::ServerIdx;

fn perf() -> &'static CalibratedPerf {
    CalibratedPerf::shipped()
}

/// The objective of the `coda::objective` module docs, computed literally: per job its option's
/// terms from `Objective::option_terms`, and the sharing counts by looking at every other
/// assignment (no occupancy index, no pricing cache).
/// `None` where an assignment takes an option the performance model cannot price.
fn reference_score(obj: &Objective, snap: &ClusterSnapshot, sched: &Schedule) -> Option<f64> {
    let p = perf();
    let slots = snap.cluster.slot_table();
    let job = |id: coda::model::JobId| snap.jobs.iter().find(|j| j.id == id).unwrap();
    let servers_of = |a: &Assignment| a.servers();
    let facts = |a: &Assignment| {
        let j = job(a.job);
        let sockets: std::collections::BTreeSet<(usize, u32)> = a
            .workers
            .iter()
            .flat_map(|w| {
                w.gpus
                    .iter()
                    .map(|&g| (w.server.0, slots[w.server.0][g as usize].socket))
            })
            .collect();
        let mode = if servers_of(a).len() > 1 {
            Mode::Multi
        } else if j.arch == Architecture::AllReduce && sockets.len() > 1 {
            Mode::CrossSocket
        } else {
            Mode::Single
        };
        let gpu = &snap.cluster.servers[a.workers[0].server].gpu_type;
        // Options are priced on the largest server of their GPU type.
        let server = snap
            .cluster
            .servers
            .iter()
            .filter(|s| &s.gpu_type == gpu)
            .map(coda::perf::ServerSize::of)
            .max_by_key(|s| (s.gpus, s.socket_gpus));
        let (w, ps) = (a.workers.len() as u32, a.ps.len() as u32);
        let o = coda::objective::OptionShape {
            workers: w,
            ps,
            mode,
            gpu_type: *gpu,
            tier: a.tier,
        };
        let t = obj.option_terms(p, j, o, server)?;
        let local: usize = a
            .workers
            .iter()
            .map(|w| a.ps.iter().filter(|q| q.server == w.server).count())
            .sum();
        Some((mode, t, local as f64))
    };
    let restart = |j: &coda::model::Job| {
        let cur = j.run.current.as_ref().unwrap();
        let (_, t, l) = facts(cur)?;
        Some(obj.restart_s / obj.round_s * (t.base + t.local_pair_slope * l))
    };
    let mut total = 0.0;
    for (i, a) in sched.assignments.iter().enumerate() {
        let j = job(a.job);
        let (mode, t, local) = facts(a)?;
        let others = sched
            .assignments
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != i);
        let mut worker_servers: Vec<usize> = a.workers.iter().map(|w| w.server.0).collect();
        worker_servers.dedup();
        worker_servers.sort_unstable();
        worker_servers.dedup();
        let mut pcol = 0.0;
        for &s in &worker_servers {
            for (_, o) in others.clone() {
                if o.workers.iter().any(|w| w.server == ServerIdx(s)) {
                    let gpu = &snap.cluster.servers[s].gpu_type;
                    let other = &job(o.job).model;
                    pcol += match obj.colocation {
                        Colocation::Pair => p.colocation_slowdown(&j.model, other, gpu) - 1.0,
                        // `progress` charges the same secant; its coefficient is the
                        // option's (`option_terms`).
                        Colocation::FullServer | Colocation::Progress => {
                            // The secant over the largest server of the type, full of like
                            // co-runners.
                            let n = snap
                                .cluster
                                .servers
                                .iter()
                                .filter(|x| x.gpu_type == *gpu)
                                .map(|x| x.num_gpus())
                                .max()
                                .unwrap()
                                .saturating_sub(1)
                                .max(1);
                            (p.colocation_slowdown_among(&j.model, other, gpu, n) - 1.0)
                                / f64::from(n)
                        }
                    };
                }
            }
        }
        let switches = |x: &Assignment| {
            let mut v: Vec<(usize, u32)> = x
                .workers
                .iter()
                .flat_map(|w| {
                    w.gpus
                        .iter()
                        .map(|&g| (w.server.0, slots[w.server.0][g as usize].switch))
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let npcie: usize = switches(a)
            .iter()
            .map(|b| {
                others
                    .clone()
                    .filter(|(_, o)| switches(o).contains(b))
                    .count()
            })
            .sum();
        let nnic: usize = if mode == Mode::Multi {
            servers_of(a)
                .iter()
                .map(|s| {
                    others
                        .clone()
                        .filter(|(_, o)| servers_of(o).len() > 1 && servers_of(o).contains(s))
                        .count()
                })
                .sum()
        } else {
            0
        };
        total += t.base + t.local_pair_slope * local
            - t.coloc_coef * pcol
            - t.pcie_coef * npcie as f64
            - t.nic_coef * nnic as f64;
        if let Some(cur) = &j.run.current
            && !coda::objective::same_assignment(cur, a)
        {
            total -= restart(j)?;
        }
    }
    for j in &snap.jobs {
        if j.run.current.is_some() && sched.assignment(j.id).is_none() {
            total -= restart(j)?;
        }
    }
    Some(total)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// A job's option is found by its identity (workers, PS, mode, GPU type, tier) at its first
    /// position in the job's list — the list's order lets the lookup search rather than scan —
    /// on clusters of two GPU types with CPU/memory tiers offered; an option the list lacks is
    /// not found.
    #[test]
    fn every_option_is_found_where_it_is_listed(servers in 1usize..6, jobs in 1usize..9, seed in 0u64..10_000) {
        let mut snap = generate(&GenerateOptions { servers, jobs, seed, gpu_types: vec!["v100".into(), "k80".into()], ..Default::default() }, perf()).unwrap();
        coda::workload::offer_tiers(&mut snap, perf());
        let pricing = RoundPricing::new(perf(), &snap, Objective::default());
        for j in 0..snap.jobs.len() {
            let options = pricing.options(coda::model::JobPos(j));
            for (k, o) in options.iter().enumerate() {
                let facts = coda::objective::OptionFacts {
                    workers: o.workers, ps: o.ps, mode: o.mode, gpu_type: o.gpu_type, tier: o.tier,
                    local_pairs: 0.0, footprint: Default::default(),
                };
                let first = options.iter().position(|p| (p.workers, p.ps, p.mode, p.gpu_type, p.tier) == (o.workers, o.ps, o.mode, o.gpu_type, o.tier));
                prop_assert_eq!(pricing.option_index(coda::model::JobPos(j), &facts), first);
                prop_assert!(first.unwrap() <= k);
            }
            let absent = coda::objective::OptionFacts {
                workers: u32::MAX, ps: 0, mode: Mode::Single, gpu_type: options.first().map_or(coda::model::GpuType::from("v100"), |o| o.gpu_type), tier: 0,
                local_pairs: 0.0, footprint: Default::default(),
            };
            prop_assert_eq!(pricing.option_index(coda::model::JobPos(j), &absent), None);
        }
    }

    #[test]
    fn priced_score_equals_the_formula(servers in 1usize..5, jobs in 1usize..9, seed in 0u64..10_000, colocation in prop::sample::select(vec![Colocation::Pair, Colocation::FullServer, Colocation::Progress])) {
        let snap = generate(
            &GenerateOptions { servers, jobs, seed, max_workers: 4, running_fraction: 0.5, ..Default::default() },
            perf(),
        ).unwrap();
        let obj = Objective::default().with_colocation(colocation);
        let pricing = RoundPricing::new(perf(), &snap, obj);
        for k in 0..4 {
            let sched = random_valid_schedule(&snap, seed ^ (k * 7919));
            let want = reference_score(&obj, &snap, &sched);
            let got = pricing.score(&sched).ok().map(|s| s.total);
            prop_assert_eq!(got.is_some(), want.is_some());
            if let (Some(got), Some(want)) = (got, want) {
                prop_assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{got} vs {want}");
                // The one-shot path reads the same pricing.
                prop_assert_eq!(obj.score(perf(), &snap, &sched).unwrap().total, got);
            }
        }
    }
}

/// Fills free GPUs first-come: every waiting job at its smallest size where it fits.
struct FirstFit;
impl Scheduler for FirstFit {
    fn name(&self) -> &str {
        "first-fit"
    }
    fn schedule(&mut self, snap: &ClusterSnapshot) -> coda::Result<Schedule> {
        coda::policies::PolicyKind::Fifo
            .build(perf(), &Default::default())?
            .schedule(snap)
    }
}

fn cluster(n: usize) -> Cluster {
    Cluster::homogeneous(
        n,
        &Server::uniform(
            "n",
            "v100",
            [2, 2, 2],
            coda::model::HostResources::new(40.0, 512.0, 400.0),
        ),
    )
}

#[test]
fn the_environment_loop_is_the_simulator_run() {
    let jobs = philly(40);
    let mut by_run = Simulator::builder(perf(), cluster(2), jobs.clone())
        .build()
        .unwrap();
    by_run.run(&mut FirstFit).unwrap();
    let mut by_step = Simulator::builder(perf(), cluster(2), jobs.clone())
        .build()
        .unwrap();
    while by_step.step(&mut FirstFit).unwrap() {}
    let mut env = Simulator::builder(perf(), cluster(2), jobs.clone())
        .build()
        .unwrap();
    let mut policy = FirstFit;
    let mut outcomes = Vec::new();
    while let Some(snap) = env.next_round().unwrap() {
        let s = policy.schedule(snap).unwrap();
        outcomes.push(env.apply(&s).unwrap());
    }
    // Same events, same decisions: the same records, bit for bit.
    assert_eq!(by_run.records(), by_step.records());
    assert_eq!(by_run.records(), env.records());
    assert_eq!(by_run.utilization(), env.utilization());
    assert!(outcomes.last().unwrap().done);
    // The outcomes add up to the run: every job's work, completions, restarts, GPU-seconds.
    let done: f64 = outcomes
        .iter()
        .flat_map(|o| &o.progress)
        .map(|p| p.fraction)
        .sum();
    assert!((done - jobs.len() as f64).abs() < 1e-6, "{done}");
    let completed: usize = outcomes.iter().map(|o| o.completed.len()).sum();
    assert_eq!(completed, jobs.len());
    let restarts: usize = outcomes.iter().map(|o| o.restarted.len()).sum();
    let recorded: u32 = env.records().iter().map(|r| r.restarts).sum();
    assert_eq!(restarts, recorded as usize);
    let held: f64 = outcomes.iter().map(|o| o.gpu_seconds).sum();
    let recorded: f64 = env.records().iter().map(|r| r.gpu_seconds).sum();
    assert!(
        (held - recorded).abs() <= 1e-6 * recorded,
        "{held} vs {recorded}"
    );
    for w in outcomes.windows(2) {
        assert!(w[0].end_s <= w[1].start_s + 1e-9);
    }
}

#[test]
fn an_invalid_action_is_an_error_and_the_round_stays_pending() {
    let jobs = philly(5);
    let mut env = Simulator::builder(perf(), cluster(1), jobs)
        .build()
        .unwrap();
    let snap = env.next_round().unwrap().unwrap().clone();
    let j = &snap.jobs[0];
    let bad = Schedule {
        assignments: vec![Assignment {
            tier: 0,
            job: j.id,
            workers: vec![coda::model::WorkerTask {
                server: ServerIdx(7),
                gpus: vec![0],
            }],
            ps: vec![],
        }],
    };
    assert!(env.apply(&bad).is_err());
    // The same round is still there, and a valid action goes through.
    assert_eq!(env.next_round().unwrap().unwrap(), &snap);
    assert!(env.apply(&Schedule::default()).is_ok());
    // Applying twice without a new round is refused.
    assert!(matches!(
        env.apply(&Schedule::default()),
        Err(coda::Error::InvalidSetting { .. })
    ));
}

/// One 8-GPU server full of like 1-GPU jobs (all compute, so the co-location term is the
/// job's whole loss): priced `full-server`, each job's co-location pressure is the PerfModel's
/// compounded slowdown of its seven co-runners, as the simulator runs them; priced `pair`, it
/// is seven pair slowdowns, which overstates the same server (the program then kept GPUs idle
/// next to a queue).
#[test]
fn full_server_colocation_is_the_perf_models_slowdown_of_a_full_server() {
    let job = |id: usize| {
        format!(
            r#"{{"id": {id}, "arrival_s": 0.0, "model": "deepspeech2", "arch": "AllReduce",
            "total_iterations": 1e9, "done_iterations": 0.0,
            "demand": {{"gpus_per_worker": 1, "cpu_per_worker": 3.0, "mem_per_worker_gib": 40.0,
                        "cpu_per_ps": 2.0, "mem_per_ps_gib": 8.0}},
            "workers": {{"min": 1, "max": 2}}, "ps": {{"min": 0, "max": 0}}}}"#
        )
    };
    let jobs: Vec<String> = (0..8).map(job).collect();
    let text = format!(
        r#"{{"time_s": 0.0, "cluster": {{"servers": [{{"name": "n0", "gpu_type": "v100",
        "topology": [[2, 2], [2, 2]], "cpu_cores": 40.0, "memory_gib": 512.0, "nic_gbps": 100.0}}]}},
        "jobs": [{}]}}"#,
        jobs.join(",")
    );
    let snap = ClusterSnapshot::from_json_str(&text, "full-server.json").unwrap();
    let on = |k: u32| Assignment {
        job: coda::model::JobId(k.into()),
        workers: vec![coda::model::WorkerTask {
            server: ServerIdx(0),
            gpus: vec![k],
        }],
        ps: vec![],
        tier: 0,
    };
    let full = Schedule {
        assignments: (0..8).map(on).collect(),
    };
    let alone = Schedule {
        assignments: vec![on(0)],
    };
    let compute = |s: &Schedule| coda::perf::speeds(perf(), &snap, s).unwrap()[0].1.compute_s;
    let slowdown = compute(&full) / compute(&alone);
    assert!(slowdown > 1.0, "{slowdown}");
    let pressure = |c: Colocation| {
        let score = Objective::default()
            .with_colocation(c)
            .score(perf(), &snap, &full)
            .unwrap();
        let j = &score.jobs[0];
        j.coloc_loss / j.isolated
    };
    let (secant, pair) = (pressure(Colocation::FullServer), pressure(Colocation::Pair));
    // `progress` charges the share of the job's progress the server takes (its pace falls by
    // the slowdown): `1 − 1/F` for a compute-bound job, where the first-order charge is `F − 1`.
    let iterations = |s: &Schedule| {
        coda::perf::speeds(perf(), &snap, s).unwrap()[0]
            .1
            .iterations_per_s
    };
    let lost = 1.0 - iterations(&full) / iterations(&alone);
    let progress = pressure(Colocation::Progress);
    assert!(
        (progress - lost).abs() < 1e-9,
        "progress {progress} vs the PerfModel's {lost}"
    );
    assert!(
        (lost - (1.0 - 1.0 / slowdown)).abs() < 1e-9,
        "{lost} vs {slowdown}"
    );
    assert!(
        (secant - (slowdown - 1.0)).abs() < 1e-9,
        "full-server {secant} vs the PerfModel's {}",
        slowdown - 1.0
    );
    let one = perf().colocation_slowdown("deepspeech2", "deepspeech2", "v100") - 1.0;
    assert!((pair - 7.0 * one).abs() < 1e-9, "{pair} vs 7 x {one}");
    assert!(pair > 1.5 * secant, "pair {pair}, full-server {secant}");
    // One co-runner: the compounded slowdown is the pair's.
    assert!(
        (perf().colocation_slowdown_among("deepspeech2", "deepspeech2", "v100", 1) - 1.0 - one)
            .abs()
            < 1e-12
    );
}

/// A parameter-server job spends part of its step communicating, which co-location does not
/// slow: on a full server of its own model `progress` charges exactly the value the
/// PerfModel's speeds lose (shapes built here by hand), while the first-order `full-server`
/// charge, `base · c · (F − 1)`, exceeds it — by more the larger the coupling estimate.
#[test]
fn progress_colocation_is_the_value_a_full_server_takes_at_any_compute_share() {
    use coda::objective::OptionShape;
    use coda::perf::{JobQuery, PlacementShape, ServerSize};
    let text = r#"{"time_s": 0.0, "cluster": {"servers": [{"name": "n0", "gpu_type": "v100",
        "topology": [[2, 2], [2, 2]], "cpu_cores": 40.0, "memory_gib": 512.0, "nic_gbps": 100.0}]},
        "jobs": [{"id": 0, "arrival_s": 0.0, "model": "resnet-50", "arch": "ParameterServer",
            "total_iterations": 1e9, "done_iterations": 0.0,
            "demand": {"gpus_per_worker": 1, "cpu_per_worker": 3.0, "mem_per_worker_gib": 40.0,
                       "cpu_per_ps": 2.0, "mem_per_ps_gib": 8.0},
            "workers": {"min": 1, "max": 1}, "ps": {"min": 1, "max": 1}}]}"#;
    let snap = ClusterSnapshot::from_json_str(text, "ps.json").unwrap();
    let job = &snap.jobs[0];
    let server = ServerSize::of(&snap.cluster.servers[0]);
    let o = OptionShape {
        workers: 1,
        ps: 1,
        mode: Mode::Single,
        gpu_type: "v100".into(),
        tier: 0,
    };
    // The job alone on the server (its PS beside its worker), and beside seven like jobs.
    let mut alone = PlacementShape::isolated(1, 1, vec![1]);
    alone.ps_colocated_fraction = 1.0;
    alone.server = Some(server);
    let mut full = alone.clone();
    full.co_runners = vec![vec![job.model.clone(); 7]];
    let q = JobQuery::of(job);
    let speed = |sh: &PlacementShape| perf().speed(&q, "v100", sh).unwrap();
    let (s_alone, s_full) = (speed(&alone), speed(&full));
    let compute_share = s_alone.compute_s / s_alone.step_time_s;
    assert!(compute_share < 0.99, "{compute_share}");
    let factor = perf().colocation_slowdown_among(&job.model, &job.model, "v100", 7);
    assert!(factor > 1.0, "{factor}");
    let charged = |c: Colocation| {
        let t = Objective::default()
            .with_colocation(c)
            .option_terms(perf(), job, o, Some(server))
            .unwrap();
        // Seven co-runners of the secant `(F − 1)/7` each; the value of the option as it
        // runs, its one worker–PS pair local.
        (t.coloc_coef * (factor - 1.0), t.base + t.local_pair_slope)
    };
    let (progress, base) = charged(Colocation::Progress);
    let lost = base * (1.0 - s_full.iterations_per_s / s_alone.iterations_per_s);
    assert!(
        (progress - lost).abs() <= 1e-9 * base,
        "progress {progress} vs the PerfModel's {lost}"
    );
    let (first_order, _) = charged(Colocation::FullServer);
    assert!(
        (first_order - base * compute_share * (factor - 1.0)).abs() <= 1e-9 * base,
        "{first_order}"
    );
    assert!(first_order > lost, "{first_order} vs {lost}");
}
