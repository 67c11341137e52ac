//! The JCT lower bound (`coda bound`): never above what a policy achieves — every policy, on
//! random small traces and on slices of a real one — nor above the best average JCT an
//! exhaustive search over the simulator's decisions finds on tiny traces.

use coda::ilp::{BruteForceLimits, every_schedule};
use coda::model::{Cluster, HostResources, Job, Server};
use coda::objective::same_assignment;
use coda::perf::{JobQuery, PlacementShape};
use coda::policies::{PolicyKind, PolicyOptions};
use coda::replay::Replay;
use coda::sim::{JctBound, LpLimits, SimConfig, Simulator};
use coda::workload::generate::{GenerateOptions, generate};
use coda::{CalibratedPerf, Objective, PerfModel};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `jobs` generated jobs on `servers` servers of layout `topology` (one-GPU workers, up to
/// `max_workers`), arriving within `spread_s`, each with `min_s..max_s` seconds of work at
/// its smallest allocation.
fn trace(
    seed: u64,
    servers: usize,
    jobs: usize,
    topology: (u32, u32, u32),
    max_workers: u32,
    spread_s: f64,
    (min_s, max_s): (f64, f64),
) -> (Cluster, Vec<Job>) {
    let perf = CalibratedPerf::shipped();
    let snap = generate(
        &GenerateOptions {
            servers,
            jobs,
            seed,
            // Generated demands split a server's cores over its GPUs: at least two GPUs, so
            // that a worker leaves room for a PS.
            topology: (topology.0, topology.1, topology.2.max(2)),
            running_fraction: 0.0,
            max_workers,
            ..GenerateOptions::default()
        },
        perf,
    )
    .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xb0b);
    let gpu_type = snap.cluster.servers[0].gpu_type;
    let mut cluster = snap.cluster;
    if topology.2 == 1 {
        for s in &mut cluster.servers {
            *s = Server::uniform(
                s.name.clone(),
                gpu_type,
                [topology.0, topology.1, 1],
                HostResources::new(s.cpu_cores, s.memory_gib, 100.0),
            );
        }
    }
    let mut out = snap.jobs;
    for j in &mut out {
        j.arrival_s = (rng.random::<f64>() * spread_s).floor();
        // Room for a worker and its PS on a one-GPU server.
        j.demand.cpu_per_worker = j.demand.cpu_per_worker.min(4.0);
        j.demand.mem_per_worker_gib = j.demand.mem_per_worker_gib.min(32.0);
        let shape = PlacementShape::isolated(j.workers.min, j.ps.min, vec![j.workers.min]);
        let speed = perf.speed(&JobQuery::of(j), &gpu_type, &shape).unwrap();
        j.total_iterations = speed.iterations_per_s * rng.random_range(min_s..max_s);
    }
    (cluster, out)
}

/// The time-indexed relaxation at one-round periods on these small traces.
const LIMITS: LpLimits = LpLimits {
    max_columns: 50_000,
    time_limit_s: 60.0,
};

fn bound_of(perf: &dyn PerfModel, cluster: &Cluster, jobs: &[Job], config: SimConfig) -> JctBound {
    Simulator::builder(perf, cluster.clone(), jobs.to_vec())
        .config(config)
        .build()
        .unwrap()
        .jct_bound(0.0..1.0, Some(LIMITS))
        .unwrap()
}

/// Average JCT of `policy` on the trace (every job finishes on these traces).
fn replay(
    perf: &dyn PerfModel,
    cluster: &Cluster,
    jobs: &[Job],
    config: SimConfig,
    policy: PolicyKind,
) -> f64 {
    let mut opts = PolicyOptions {
        seed: 3,
        ..PolicyOptions::default()
    };
    opts.ilp.solve.time_limit_s = 5.0;
    opts.ilp.solve.node_limit = Some(50);
    let mut scheduler = policy.build(perf, &opts).unwrap();
    let mut sim = Simulator::builder(perf, cluster.clone(), jobs.to_vec())
        .config(config)
        .build()
        .unwrap();
    sim.run(scheduler.as_mut()).unwrap();
    let m = coda::sim::metrics(sim.records(), 0.0..1.0, cluster.num_gpus());
    assert_eq!(m.jobs_unfinished, 0, "{}", policy.name());
    m.avg_jct_s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// Every policy, on random small traces (contention charged in full, so that co-location
    /// slows jobs down as much as the model says).
    #[test]
    fn no_policy_beats_the_bound(
        seed in 0u64..10_000,
        servers in 1usize..=2,
        jobs in 3usize..=7,
        spread in prop::sample::select(vec![300.0, 1_800.0, 7_200.0]),
    ) {
        let perf = CalibratedPerf::shipped();
        let (cluster, jobs) = trace(seed, servers, jobs, (2, 2, 1), 4, spread, (300.0, 3_600.0));
        let config = SimConfig::default();
        let b = bound_of(perf, &cluster, &jobs, config);
        prop_assert!(b.avg_jct_s.is_finite() && b.avg_jct_s > 0.0);
        prop_assert!(b.bounds.capacity >= b.bounds.alone);
        prop_assert!(b.bounds.lp.is_some(), "the relaxation is solved on these traces");
        for policy in PolicyKind::ALL {
            let jct = replay(perf, &cluster, &jobs, config, policy);
            prop_assert!(
                b.avg_jct_s <= jct + 1e-6,
                "{}: avg JCT {jct} below the bound {b:?}",
                policy.name()
            );
        }
    }
}

/// Slices of the Philly window (real models, CPU/memory tiers, a measured contention
/// allowance) on a small cluster: every policy at or above the bound.
#[test]
fn no_policy_beats_the_bound_on_trace_slices() {
    let perf = CalibratedPerf::shipped();
    for (skip, take, cluster) in [(0, 25, "1x8"), (400, 30, "2x8"), (1_000, 20, "1x8")] {
        let replay = Replay::from_json(
            &format!(
                r#"{{"trace":"philly","skip":{skip},"take":{take},"cluster":"{cluster}","datasets":"{}","track_from":0.0,"track_to":1.0,"skip_unplaceable":true,"ilp_time_limit":5,"ilp_node_limit":50}}"#,
                crate::common::datasets().display()
            ),
            "test",
        )
        .unwrap();
        let workload = replay.workload(perf).unwrap();
        let b = replay.bound(&workload, perf, Some(LIMITS)).unwrap();
        let allowance = replay.allowance(&workload, perf).unwrap();
        for policy in PolicyKind::ALL {
            let run = replay
                .run(policy, &workload, allowance, perf, &mut [])
                .unwrap();
            let m = &run.summary.metrics;
            assert_eq!(m.jobs_unfinished, 0, "{}", policy.name());
            assert!(
                b.avg_jct_s <= m.avg_jct_s + 1e-6,
                "{} on philly {skip}+{take}: {} below the bound {b:?}",
                policy.name(),
                m.avg_jct_s
            );
        }
    }
}

/// What makes two assignments of a job alike on one single-switch server: the job, its
/// workers, PS and tier, and whether it keeps its GPUs.
type Class = (u64, usize, usize, u8, bool);

/// The best average JCT over every sequence of decisions the simulator admits, by depth-first
/// search from `sim` (before its first round), pruned by the best found so far: each branch's
/// jobs have spent at least the time so far in the system.
struct Search<'p> {
    perf: &'p dyn PerfModel,
    objective: Objective,
    best: f64,
    leaves: u64,
}

impl Search<'_> {
    fn run(&mut self, mut sim: Simulator<'_>) {
        let Some(snap) = sim.next_round().unwrap().cloned() else {
            // A run that stalled (nothing runs, nothing arrives, the decision placed no one)
            // finishes no job more: not a schedule of every job.
            let jct: Option<Vec<f64>> = sim
                .records()
                .iter()
                .map(|r| r.finish_s.map(|f| f - r.arrival_s))
                .collect();
            if let Some(jct) = jct {
                self.best = self.best.min(jct.iter().sum());
                self.leaves += 1;
            }
            return;
        };
        // Time in system so far: finished jobs' JCT, the others' time since arrival.
        let so_far: f64 = sim
            .records()
            .iter()
            .map(|r| r.finish_s.unwrap_or(sim.now()).max(r.arrival_s) - r.arrival_s)
            .sum();
        if so_far >= self.best {
            return;
        }
        let all = every_schedule(
            &snap,
            self.perf,
            &self.objective,
            BruteForceLimits::default(),
        )
        .unwrap();
        // On one server whose GPUs share one PCIe switch, schedules that differ only in which
        // GPUs a job holds run alike; whether a job keeps its exact GPUs still differs (a move
        // restarts it): one schedule per class.
        let mut seen: Vec<Vec<Class>> = Vec::new();
        for s in all {
            let mut key: Vec<Class> = s
                .assignments
                .iter()
                .map(|a| {
                    let job = snap.job(a.job).unwrap();
                    let kept = job
                        .run
                        .current
                        .as_ref()
                        .is_some_and(|c| same_assignment(c, a));
                    (a.job.0, a.workers.len(), a.ps.len(), a.tier, kept)
                })
                .collect();
            key.sort_unstable();
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let mut next = sim.clone();
            next.apply(&s).unwrap();
            self.run(next);
        }
    }
}

/// Tiny traces searched exhaustively: the bound is at most the best average JCT any sequence
/// of decisions reaches, and on a trace whose jobs must queue for the one GPU the capacity
/// bound is above the alone bound (the check can fail both ways).
#[test]
fn the_bound_is_below_the_best_any_decisions_reach() {
    let perf = CalibratedPerf::shipped();
    let config = SimConfig::default();
    let mut capacity_binds = 0;
    for seed in 0..24u64 {
        // One server, one PCIe switch of `gpus` GPUs; two to four jobs of one to three rounds.
        let gpus = 1 + (seed % 2) as u32;
        let jobs = 2 + (seed % 3) as usize;
        let (cluster, jobs) = trace(seed, 1, jobs, (1, 1, gpus), 2, 600.0, (200.0, 800.0));
        let b = bound_of(perf, &cluster, &jobs, config);
        let sim = Simulator::builder(perf, cluster.clone(), jobs.clone())
            .config(config)
            .build()
            .unwrap();
        // Start from FIFO's total, so that pruning bites from the first branch.
        let fifo = replay(perf, &cluster, &jobs, config, PolicyKind::Fifo) * jobs.len() as f64;
        let mut search = Search {
            perf,
            objective: config.objective,
            best: fifo * (1.0 + 1e-9),
            leaves: 0,
        };
        search.run(sim);
        let best = search.best / jobs.len() as f64;
        assert!(search.leaves > 0, "seed {seed}: no complete run found");
        assert!(
            b.avg_jct_s <= best + 1e-6,
            "seed {seed}: bound {b:?} above the best average JCT {best}"
        );
        capacity_binds += usize::from(b.bounds.capacity > b.bounds.alone + 1.0);
    }
    assert!(
        capacity_binds > 0,
        "the capacity bound never rose above the alone bound"
    );
}
