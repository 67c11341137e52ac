//! Simulator unit tests that read its private state.

use super::*;
use crate::perf::CalibratedPerf;
use std::collections::HashMap;

use crate::policies::{PolicyKind, PolicyOptions};

/// A completion re-prices only its neighbours ([`Simulator::reprice_around`]) and a
/// restart's end only its own job: after every event of five policies' replays, re-pricing
/// every running job (the rule before) finds every speed and pending completion unchanged.
#[test]
fn local_repricing_is_the_full_one() {
    let perf = CalibratedPerf::shipped();
    // Restarts (Pollux and Optimus resize, SRTF and Tiresias preempt): their ends re-price.
    let mut restarts = 0;
    for (policy, seed) in [
        (PolicyKind::Random, 3),
        (PolicyKind::Pollux, 5),
        (PolicyKind::Optimus, 7),
        (PolicyKind::Srtf, 9),
        (PolicyKind::Tiresias, 11),
    ] {
        // Few servers and many jobs: co-location, distributed jobs, PS tasks, restarts.
        let (cluster, jobs) = instance(seed);
        let mut sim = Simulator::builder(perf, cluster, jobs).build().unwrap();
        let popts = PolicyOptions {
            seed,
            ..Default::default()
        };
        let mut scheduler = policy.build(perf, &popts).unwrap();
        let (mut events, mut shared) = (0, 0);
        while sim.step(scheduler.as_mut()).unwrap() {
            let seen = |sim: &Simulator| -> Vec<(usize, u64, u64, Option<u64>)> {
                sim.active
                    .iter()
                    .map(|&i| {
                        let s = &sim.state[i];
                        (
                            i,
                            s.speed.to_bits(),
                            s.version,
                            s.event_speed.map(f64::to_bits),
                        )
                    })
                    .collect()
            };
            let before = seen(&sim);
            let queued = sim.events.len();
            sim.reprice().unwrap();
            assert_eq!(seen(&sim), before, "{} at t = {}", policy.name(), sim.now);
            assert_eq!(sim.events.len(), queued, "no completion re-issued");
            events += 1;
            // Rounds on which a server holds several jobs: the neighbours that matter.
            let servers: Vec<usize> = sim
                .active
                .iter()
                .filter_map(|&i| sim.state[i].assignment.as_ref())
                .flat_map(Assignment::servers)
                .collect();
            let mut distinct = servers.clone();
            distinct.sort_unstable();
            distinct.dedup();
            shared += usize::from(distinct.len() < servers.len());
        }
        assert!(sim.done(), "{}", policy.name());
        restarts += sim.records.iter().map(|r| r.restarts).sum::<u32>();
        assert!(
            events > 80 && shared > 20,
            "{}: {events} steps, {shared} shared",
            policy.name()
        );
    }
    assert!(restarts > 20, "{restarts} restarts");
}

/// Three 8-GPU servers (two sockets of two PCIe switches) and 40 jobs, one a minute, of
/// parameter-server and all-reduce models with elastic sizes, written as instance files are
/// (the simulator sits below the workload generator).
fn instance(seed: u64) -> (Cluster, Vec<Job>) {
    let server = |k: usize| {
        format!(
            r#"{{"name":"node-{k}","gpu_type":"v100","topology":[[2,2],[2,2]],"cpu_cores":24.0,"memory_gib":500.0,"nic_gbps":100.0,"nvlink":false}}"#
        )
    };
    let servers: Vec<String> = (0..3).map(server).collect();
    let cluster = format!(r#"{{"servers":[{}]}}"#, servers.join(","));
    // (model, architecture, most workers, PS from–to)
    let kinds = [
        ("vgg-16", "ParameterServer", 4, (1, 3)),
        ("gavel-lm-b40", "AllReduce", 2, (0, 0)),
        ("dssm", "ParameterServer", 2, (1, 2)),
        ("gavel-resnet-18-b64", "AllReduce", 6, (0, 0)),
        ("gavel-resnet-18-b128", "AllReduce", 3, (0, 0)),
    ];
    let jobs = (0..40u64)
        .map(|k| {
            let (model, arch, max, (ps_min, ps_max)) = kinds[((k + seed) % 5) as usize];
            let iterations = 20_000.0 + 20_000.0 * ((k * 7 + seed) % 13) as f64;
            let arrival = 60.0 * k as f64;
            let job = format!(
                r#"{{"id":{k},"arrival_s":{arrival},"model":"{model}","arch":"{arch}","total_iterations":{iterations},"done_iterations":0.0,"demand":{{"gpus_per_worker":1,"cpu_per_worker":3.0,"mem_per_worker_gib":31.25,"cpu_per_ps":2.0,"mem_per_ps_gib":8.0}},"workers":{{"min":1,"max":{max}}},"ps":{{"min":{ps_min},"max":{ps_max}}},"gpu_types":[],"local_batch":null,"current":null}}"#
            );
            serde_json::from_str(&job).unwrap()
        })
        .collect();
    (serde_json::from_str(&cluster).unwrap(), jobs)
}

/// Runs `sim` under `policy` (environment loop) until the first round after every job has
/// arrived; that round stays pending. Its snapshot.
fn cut_after_arrivals(sim: &mut Simulator, policy: &mut dyn Scheduler) -> ClusterSnapshot {
    loop {
        let snap = sim.next_round().unwrap().unwrap().clone();
        if sim.arrivals_left == 0 {
            return snap;
        }
        let s = policy.schedule(&snap).unwrap();
        sim.apply(&s).unwrap();
    }
}

/// A simulator resumed from a round's snapshot ([`Simulator::resume`]) and the run it was cut
/// from, both going on under FIFO (which never restarts, so no restart is in flight at the
/// cut), finish every job at the same time; and the time in system from 0 sums the JCTs.
#[test]
fn a_resumed_run_finishes_as_the_run_it_was_cut_from() {
    let perf = CalibratedPerf::shipped();
    for seed in [1, 2] {
        let (cluster, jobs) = instance(seed);
        let mut sim = Simulator::builder(perf, cluster, jobs).build().unwrap();
        let mut fifo = PolicyKind::Fifo
            .build(perf, &PolicyOptions::default())
            .unwrap();
        let snap = cut_after_arrivals(&mut sim, fifo.as_mut());
        assert!(snap.jobs.iter().any(|j| j.run.current.is_some()));
        assert!(snap.jobs.iter().any(|j| j.run.current.is_none()));
        let mut resumed = Simulator::resume(perf, *sim.settings(), &snap, Vec::new()).unwrap();
        sim.run(fifo.as_mut()).unwrap();
        resumed.run(fifo.as_mut()).unwrap();
        assert!(sim.done() && resumed.done());
        for job in &snap.jobs {
            let finish = |s: &Simulator| s.records[s.index_of[&job.id]].finish_s.unwrap();
            assert!(
                (finish(&sim) - finish(&resumed)).abs() < 1e-3,
                "job {}: {} vs {}",
                job.id,
                finish(&sim),
                finish(&resumed)
            );
        }
        let jcts: f64 = sim
            .records
            .iter()
            .map(|r| r.finish_s.unwrap() - r.arrival_s)
            .sum();
        let area = sim.time_in_system_s(0.0, f64::INFINITY);
        assert!((jcts - area).abs() < 1e-6 * jcts, "{jcts} vs {area}");
    }
}

/// The tail a lookahead adds ([`Simulator::remaining_time_bound_s`]) is a lower bound: from a
/// round cut from a Pollux run, no policy leaves the jobs present less time in the system.
#[test]
fn the_tail_bound_is_below_every_policy() {
    let perf = CalibratedPerf::shipped();
    let (cluster, jobs) = instance(4);
    let fast: HashMap<JobId, (f64, f64)> = jobs
        .iter()
        .map(|j| {
            let f = bound::fastest(perf, &cluster, j).unwrap();
            (j.id, (f.speed(), f.gpu_s_per_iteration()))
        })
        .collect();
    let mut sim = Simulator::builder(perf, cluster, jobs).build().unwrap();
    let mut pollux = PolicyKind::Pollux
        .build(perf, &PolicyOptions::default())
        .unwrap();
    let snap = cut_after_arrivals(&mut sim, pollux.as_mut());
    let resumed = Simulator::resume(perf, *sim.settings(), &snap, Vec::new()).unwrap();
    let bound = resumed.remaining_time_bound_s(&|id| fast.get(&id).copied());
    assert!(bound > 0.0);
    for policy in PolicyKind::ALL {
        if policy == PolicyKind::Ilp {
            continue; // A solve a round: covered by the whole-run bound tests.
        }
        let mut run = resumed.clone();
        run.run(
            policy
                .build(perf, &PolicyOptions::default())
                .unwrap()
                .as_mut(),
        )
        .unwrap();
        assert!(run.done(), "{}", policy.name());
        let left = run.time_in_system_s(snap.time_s, f64::INFINITY);
        assert!(
            bound <= left + 1e-6,
            "{}: {left} below the bound {bound}",
            policy.name()
        );
    }
}

/// Every round shows each job's history as the records keep it (restarts, GPU-seconds held,
/// seconds waited), so a policy may read it; a run resumed from a round's snapshot shows the
/// same history at its first round, and its records go on from it.
#[test]
fn snapshots_carry_the_history_the_records_keep() {
    let perf = CalibratedPerf::shipped();
    let (cluster, jobs) = instance(5);
    let mut sim = Simulator::builder(perf, cluster, jobs).build().unwrap();
    let mut pollux = PolicyKind::Pollux
        .build(perf, &PolicyOptions::default())
        .unwrap();
    let (mut restarted, mut waited) = (false, false);
    let cut = loop {
        let snap = sim.next_round().unwrap().unwrap().clone();
        for j in &snap.jobs {
            let r = &sim.records[sim.index_of[&j.id]];
            assert_eq!(
                (j.run.restarts, j.run.attained_gpu_s, j.run.waited_s),
                (r.restarts, r.gpu_seconds, r.waiting_s),
                "job {} at t = {}",
                j.id,
                snap.time_s
            );
            restarted |= j.run.restarts > 0;
            waited |= j.run.waited_s > 0.0;
        }
        if sim.arrivals_left == 0 && restarted && waited {
            break snap;
        }
        let s = pollux.schedule(&snap).unwrap();
        sim.apply(&s).unwrap();
    };
    let mut resumed = Simulator::resume(perf, *sim.settings(), &cut, Vec::new()).unwrap();
    let first = resumed.next_round().unwrap().unwrap();
    for (a, b) in first.jobs.iter().zip(&cut.jobs) {
        assert_eq!(a.id, b.id);
        assert_eq!(
            (a.run.restarts, a.run.attained_gpu_s, a.run.waited_s),
            (b.run.restarts, b.run.attained_gpu_s, b.run.waited_s)
        );
    }
}
