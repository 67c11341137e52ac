//! Cores and memory as a decision: the surface's promises, tiers on jobs, and the rules that
//! hand them out (valid schedules, no job slowed, nothing left that still fits).

use coda::ilp::{self, BruteForceLimits, SolveProgram, SolveStatus, brute_force};
use coda::model::Violation;
use coda::perf::{self, PerfModel};
use coda::policies::cpumem::{TierRule, assign_tiers};
use coda::workload::trace::{CpuMemMode, TraceOptions};
use coda::workload::{GenerateOptions, generate};
use coda::{CalibratedPerf, ClusterSnapshot, Objective, Schedule};
use proptest::prelude::*;

use crate::common::{datasets, random_valid_schedule};

/// A generated round on CPU-poor servers (3 cores per GPU), every all-reduce job at its
/// model's measured demand and offering its model's tiers.
fn cpu_poor_round(servers: usize, jobs: usize, seed: u64) -> ClusterSnapshot {
    cpu_poor(&GenerateOptions {
        servers,
        jobs,
        seed,
        ..Default::default()
    })
}

/// [`cpu_poor_round`] of any generated round.
fn cpu_poor(opts: &GenerateOptions) -> ClusterSnapshot {
    let perf = CalibratedPerf::shipped();
    let mut s = generate(opts, perf).expect("generated round");
    for srv in &mut s.cluster.servers {
        srv.cpu_cores = 3.0 * f64::from(srv.num_gpus());
    }
    for j in &mut s.jobs {
        let g = f64::from(j.demand.gpus_per_worker);
        let Some(d) = perf.task_demand(&j.model) else {
            continue;
        };
        // The generator's demand is its own: take the model's measured one, which the tiers
        // are levels around.
        if let Some(m) = d.mem_per_worker_gib.filter(|_| !d.tiers.is_empty()) {
            j.demand.cpu_per_worker = d.cpu_per_worker * g;
            j.demand.mem_per_worker_gib = m * g;
        }
    }
    coda::workload::offer_tiers(&mut s, perf);
    // Running jobs hold their demand: a round whose current placements no longer fit on the
    // poorer servers drops them.
    if s.check("test round").is_err() {
        for j in &mut s.jobs {
            j.run.current = None;
        }
    }
    s.reindex();
    s
}

fn speeds(s: &ClusterSnapshot, sched: &Schedule) -> Vec<f64> {
    perf::speeds(CalibratedPerf::shipped(), s, sched)
        .unwrap()
        .into_iter()
        .map(|(_, v)| v.iterations_per_s)
        .collect()
}

#[test]
fn a_tier_runs_at_the_surface_speed_and_the_demand_at_one() {
    let perf = CalibratedPerf::shipped();
    // cifar10 takes Synergy's ResNet-18 profile: 2.4× at 9 cores, 0.72× at 2 (3 cores, 62.5 GB
    // the default).
    let d = perf.task_demand("cifar10").unwrap();
    let base = (d.cpu_per_worker, d.mem_per_worker_gib.unwrap());
    assert!((perf.cpu_mem_speed("cifar10", base, base) - 1.0).abs() < 1e-12);
    assert!((perf.cpu_mem_speed("cifar10", base, (9.0, base.1)) - 2.4).abs() < 1e-9);
    assert!((perf.cpu_mem_speed("cifar10", base, (2.0, base.1)) - 0.72).abs() < 1e-9);
    // More cores never slow a job; a language model gains nothing.
    let mut last = 0.0;
    for c in [0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0, 24.0, 48.0] {
        let v = perf.cpu_mem_speed("cifar10", base, (c, base.1));
        assert!(v >= last - 1e-12);
        last = v;
    }
    let b = perf.task_demand("bert").unwrap();
    let bb = (b.cpu_per_worker, b.mem_per_worker_gib.unwrap());
    assert_eq!(perf.cpu_mem_speed("bert", bb, (24.0, 200.0)), 1.0);
    // PS models have no measured sensitivity: no tiers.
    assert!(perf.task_demand("resnet-50").unwrap().tiers.is_empty());
}

#[test]
fn fixed_jobs_offer_no_tiers_fungible_ones_do() {
    let perf = CalibratedPerf::shipped();
    let load = |cpu_mem| {
        coda::workload::load(
            coda::workload::TraceRef {
                name: "philly",
                datasets: &datasets(),
                cluster: None,
                take: Some(80),
            },
            &TraceOptions {
                cpu_mem,
                ..TraceOptions::default()
            },
            perf,
        )
        .unwrap()
    };
    let fixed = load(CpuMemMode::Fixed);
    let fungible = load(CpuMemMode::Fungible);
    assert!(fixed.jobs.iter().all(|j| j.tiers.is_empty()));
    assert!(fungible.jobs.iter().any(|j| !j.tiers.is_empty()));
    // Tiers change what a job may hold, never its work or its demand: replayed at the demand,
    // the two workloads are the same.
    for (a, b) in fixed.jobs.iter().zip(&fungible.jobs) {
        assert_eq!(a.total_iterations, b.total_iterations);
        assert_eq!(a.demand, b.demand);
    }
}

#[test]
fn an_unknown_tier_is_a_violation_and_a_bad_tier_a_located_error() {
    let s = cpu_poor_round(2, 6, 3);
    let mut sched = random_valid_schedule(&s, 1);
    assert!(!sched.assignments.is_empty());
    sched.assignments[0].tier = 200;
    assert!(
        sched
            .validate(&s)
            .iter()
            .any(|v| matches!(v, Violation::UnknownTier { tier: 200, .. }))
    );
    let mut bad = serde_json::to_value(&s).unwrap();
    bad["jobs"][0]["tiers"] =
        serde_json::json!([{ "cpu_per_worker": -1.0, "mem_per_worker_gib": 4.0 }]);
    let err = serde_json::from_value::<ClusterSnapshot>(bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("tiers[0].cpu_per_worker"), "{err}");
}

#[test]
fn a_new_tier_takes_effect_in_place_without_a_restart() {
    let perf = CalibratedPerf::shipped();
    let w = coda::workload::load(
        coda::workload::TraceRef {
            name: "philly",
            datasets: &datasets(),
            cluster: Some("2x8"),
            take: Some(60),
        },
        &TraceOptions {
            server_cpu_per_gpu: Some(3.0),
            ..TraceOptions::default()
        },
        perf,
    )
    .unwrap();
    let mut sim = coda::sim::Simulator::builder(perf, w.cluster.clone(), w.jobs.clone())
        .build()
        .unwrap();
    // SRTF places jobs at their demand round after round, until the running jobs leave cores
    // to hand out; that round keeps every job where it is, with the tiers the greedy rule gives.
    let mut srtf = coda::policies::PolicyKind::Srtf
        .build(perf, &coda::policies::PolicyOptions::default())
        .unwrap();
    let mut shown = false;
    for _ in 0..500 {
        let Some(snap) = sim.next_round().unwrap().cloned() else {
            break;
        };
        let placed = snap.current_schedule();
        let mut sched = placed.clone();
        assign_tiers(perf, &snap, &mut sched, TierRule::Greedy, false).unwrap();
        let (before, after) = (speeds(&snap, &placed), speeds(&snap, &sched));
        if before == after {
            sim.apply(&srtf.schedule(&snap).unwrap()).unwrap();
            continue;
        }
        let out = sim.apply(&sched).unwrap();
        shown = true;
        assert!(out.restarted.is_empty(), "{:?}", out.restarted);
        // Work done follows the tier's speed (jobs that finished in the interval aside).
        for (b, a) in after.iter().zip(&sched.assignments) {
            if out.completed.iter().any(|(j, _)| *j == a.job) {
                continue;
            }
            let done = out
                .progress
                .iter()
                .find(|p| p.job == a.job)
                .unwrap()
                .iterations;
            let want = b * (out.end_s - out.start_s);
            assert!(
                (done - want).abs() <= 1e-6 * want.max(1.0),
                "job {}: {done} iterations, {want} at its tier's speed",
                a.job
            );
        }
        break;
    }
    assert!(
        shown,
        "no round had cores to hand out: the test showed nothing"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Both rules: the schedule stays valid, no job runs slower than at its demand, and no
    /// upgrade the rule would take still fits (greedy: none at all; TUNE: no job's best case).
    #[test]
    fn handing_out_tiers_keeps_schedules_valid_and_leaves_nothing_that_fits(
        servers in 1usize..5, jobs in 2usize..14, seed in 0u64..1000, pick in 0u64..1000
    ) {
        let s = cpu_poor_round(servers, jobs, seed);
        let placed = random_valid_schedule(&s, pick);
        prop_assert!(placed.validate(&s).is_empty());
        let base = speeds(&s, &placed);
        let perf = CalibratedPerf::shipped();
        for rule in [TierRule::Greedy, TierRule::Tune] {
            let mut sched = placed.clone();
            assign_tiers(perf, &s, &mut sched, rule, false).unwrap();
            prop_assert!(sched.validate(&s).is_empty(), "{:?}: {:?}", rule, sched.validate(&s));
            let after = speeds(&s, &sched);
            for (i, (a, b)) in base.iter().zip(&after).enumerate() {
                prop_assert!(*b >= a * (1.0 - 1e-12), "{rule:?}: job {i} slowed {a} → {b}");
            }
            for i in 0..sched.assignments.len() {
                let job = s.job(sched.assignments[i].job).unwrap();
                let now = perf::tier_speed(perf, job, sched.assignments[i].tier);
                let tiers = 1..=job.tiers.len() as u8;
                let wanted: Vec<u8> = match rule {
                    TierRule::Greedy => tiers.filter(|&t| perf::tier_speed(perf, job, t) > now).collect(),
                    TierRule::Tune if sched.assignments[i].tier == 0 => tiers
                        .max_by(|&x, &y| perf::tier_speed(perf, job, x).total_cmp(&perf::tier_speed(perf, job, y)))
                        .filter(|&t| perf::tier_speed(perf, job, t) > 1.0)
                        .into_iter()
                        .collect(),
                    TierRule::Tune => Vec::new(),
                };
                for t in wanted {
                    let mut more = sched.clone();
                    more.assignments[i].tier = t;
                    prop_assert!(
                        !more.validate(&s).is_empty(),
                        "{rule:?}: job {} could still take tier {t}", job.id
                    );
                }
            }
        }
    }
}

/// A tiny CPU-poor round (1–2 servers of 2 one-GPU switches, jobs of 1–2 workers) that brute
/// force can enumerate at every tier.
fn tiny_tiered(servers: usize, jobs: usize, seed: u64) -> ClusterSnapshot {
    let mut s = cpu_poor(&GenerateOptions {
        servers,
        jobs,
        seed,
        topology: (1, 2, 1),
        max_workers: 2,
        ..Default::default()
    });
    // Tasks without tiers keep the generator's demand, made to fit these small servers.
    let srv = s.cluster.servers[0].clone();
    for j in &mut s.jobs {
        let d = &mut j.demand;
        d.cpu_per_ps = d.cpu_per_ps.min(srv.cpu_cores / 2.0);
        d.mem_per_ps_gib = d.mem_per_ps_gib.min(srv.memory_gib / 4.0);
        if j.tiers.is_empty() {
            d.cpu_per_worker = d.cpu_per_worker.min(srv.cpu_cores / 2.0);
            d.mem_per_worker_gib = d.mem_per_worker_gib.min(srv.memory_gib / 4.0);
        }
    }
    if s.check("test round").is_err() {
        for j in &mut s.jobs {
            j.run.current = None;
        }
    }
    s.reindex();
    s
}

/// Both exact programs on a round, with the objective `obj`: (compact, configuration).
fn exact_both(s: &ClusterSnapshot, obj: Objective) -> (ilp::Solved, ilp::Solved) {
    let perf = CalibratedPerf::shipped();
    let solve = |p| {
        ilp::SolveRequest::new(s, perf, obj)
            .unwrap()
            .program(p)
            .solve()
            .unwrap()
    };
    (solve(SolveProgram::Compact), solve(SolveProgram::Config))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// With CPU/memory tiers on CPU-poor servers, the compact program's and the configuration
    /// program's optimum equal the best of every valid schedule at every tier, enumerated; each
    /// decoded schedule is valid and scores what its program reports.
    #[test]
    fn tiered_optimum_equals_brute_force(servers in 1usize..3, jobs in 1usize..4, seed in 0u64..1000, credit in prop::sample::select(vec![0.0, 0.5])) {
        let s = tiny_tiered(servers, jobs, seed);
        let perf = CalibratedPerf::shipped();
        let obj = Objective::default().with_in_service_credit(credit).unwrap();
        let brute = brute_force(&s, perf, &obj, BruteForceLimits::default());
        prop_assume!(brute.is_ok());
        let (best, _, _) = brute.unwrap();
        let (compact, config) = exact_both(&s, obj);
        for (name, got) in [("compact", &compact), ("configuration", &config)] {
            prop_assert_eq!(got.report.status, SolveStatus::Optimal, "{}", name);
            prop_assert!((got.report.objective - best).abs() <= 1e-6 + 1e-9, "{} program {} vs brute force {}", name, got.report.objective, best);
            prop_assert!(got.schedule.validate(&s).is_empty(), "{}: {:?}", name, got.schedule.validate(&s));
            let score = obj.score(perf, &s, &got.schedule).unwrap().total;
            prop_assert!((score - got.report.objective).abs() <= 1e-6 + 1e-9, "{} decoded {} vs reported {}", name, score, got.report.objective);
        }
    }
}

/// The programs do choose tiers: on some tiny CPU-poor rounds the optimum gives a job other
/// cores than its demand, and it beats the best schedule at the demand alone (brute force over
/// the same round without tiers).
#[test]
fn the_exact_optimum_uses_tiers_where_they_pay() {
    let perf = CalibratedPerf::shipped();
    let obj = Objective::default();
    let mut tiered_rounds = 0;
    let mut gains = 0;
    for seed in 0..40 {
        let s = tiny_tiered(2, 3, seed);
        let Ok((best, sched, _)) = brute_force(&s, perf, &obj, BruteForceLimits::default()) else {
            continue;
        };
        if sched.assignments.iter().all(|a| a.tier == 0) {
            continue;
        }
        tiered_rounds += 1;
        let (compact, _) = exact_both(&s, obj);
        assert!(
            (compact.report.objective - best).abs() <= 1e-6 + 1e-9,
            "seed {seed}"
        );
        let mut fixed = s.clone();
        for j in &mut fixed.jobs {
            j.tiers.clear();
        }
        let (at_demand, _, _) =
            brute_force(&fixed, perf, &obj, BruteForceLimits::default()).unwrap();
        assert!(
            best >= at_demand - 1e-12,
            "seed {seed}: tiers lowered the optimum"
        );
        if best > at_demand + 1e-9 {
            gains += 1;
        }
    }
    assert!(
        tiered_rounds > 0 && gains > 0,
        "{tiered_rounds} rounds with tiers chosen, {gains} gaining"
    );
}
