//! Reinforcement learning's environment side and the policy as the solver's start: sampled
//! decodings are valid, seeded and recorded as decided; a rollout's rewards add up to the time
//! its jobs spend in the system; validation replays the policy as it is deployed; fix-and-solve
//! never returns less than its start and, freed, reaches the same optimum as a plain solve.

use coda::ilp::SolveSettings;
use coda::ilp::SolveStatus;
use coda::learn::rl::{Decoding, Episode, advantages, episode_jct, replay_deployed, rollout};
use coda::policies::learned::{LearnedScheduler, PolicyNet};
use coda::{CalibratedPerf, ClusterSnapshot, Objective};

use crate::common::{philly, philly_with};

fn cluster(servers: usize) -> coda::model::Cluster {
    coda::model::Cluster::homogeneous(servers, &coda::workload::trace::default_server())
}

#[test]
fn sampled_decodings_are_valid_seeded_and_recorded_as_decided() {
    let perf = CalibratedPerf::shipped();
    let p = LearnedScheduler::shipped(perf, Objective::default()).unwrap();
    for seed in 0..6u64 {
        let snap = coda::workload::generate(
            &coda::workload::GenerateOptions {
                servers: 3,
                jobs: 8,
                seed,
                running_fraction: 0.3,
                ..Default::default()
            },
            perf,
        )
        .unwrap();
        let (s, rec) = p.clone().with_temperature(0.5).sample(&snap, seed);
        assert!(s.validate(&snap).is_empty());
        assert_eq!(
            (s.clone(), rec.clone()),
            p.clone().with_temperature(0.5).sample(&snap, seed)
        );
        assert_eq!(rec.chosen.len(), snap.jobs.len());
        for (j, &c) in rec.chosen.iter().enumerate() {
            assert!(c < rec.candidates[j].len());
        }
        // Every level-2 step chose among its candidates, for a job that was placed.
        for st in &rec.steps {
            assert!(st.chosen < st.rows.len());
            assert!(s.assignment(snap.jobs[st.job].id).is_some());
        }
        // The greedy record decodes exactly what the greedy policy decides.
        let (g, _) = p.sample_greedy(&snap);
        assert_eq!(g, p.clone().with_samples(1, 0).decide(&snap));
    }
}

#[test]
fn rollout_rewards_add_up_to_the_time_jobs_spend_in_the_system() {
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let jobs = philly(40);
    let ep = Episode::window(pool(&jobs, &cluster(2)), 5..35, perf, objective).unwrap();
    let net = LearnedScheduler::shipped(perf, objective)
        .unwrap()
        .net()
        .clone();
    let sample = Decoding::Sample {
        temperature: 0.3,
        seed: 7,
    };
    let a = rollout(perf, objective, &net, &ep, sample).unwrap();
    let b = rollout(perf, objective, &net, &ep, sample).unwrap();
    assert_eq!(a.avg_jct_h, b.avg_jct_h, "same seed, same episode");
    let (finished, n) = a.finished;
    assert_eq!(finished, n, "a 30-job window finishes within its horizon");
    // A job is in the system from its arrival; rounds see it from the first round after.
    // So the rewards' total is the total JCT less at most one round per job.
    let in_system_h: f64 = -a.rounds.iter().map(|r| r.reward).sum::<f64>();
    let jct_h = a.avg_jct_h * n as f64;
    let round_h = objective.round_s / 3600.0;
    assert!(in_system_h <= jct_h + 1e-6, "{in_system_h} > {jct_h}");
    assert!(in_system_h >= jct_h - n as f64 * round_h - 1e-6);
    // Efficiencies are ratios to the same allocation packed alone.
    for r in &a.rounds {
        assert_eq!(r.efficiency.len(), r.steps.len());
        assert!(r.efficiency.iter().all(|e| (0.0..=2.0).contains(e)));
    }
    // Baselines from other rollouts of the same episode: advantages are finite, one per round.
    let adv = advantages(&[a.clone(), b], 0.95);
    assert_eq!(adv[0].len(), a.rounds.len());
    assert!(adv.iter().flatten().all(|x| x.is_finite()));
}

fn instance(name: &str) -> ClusterSnapshot {
    ClusterSnapshot::from_json_file(format!("formulations/instances/{name}.json")).unwrap()
}

#[test]
fn fix_and_solve_reaches_the_optimum_and_never_returns_less_than_its_start() {
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let settings = SolveSettings {
        time_limit_s: 60.0,
        ..SolveSettings::default()
    }
    .checked()
    .unwrap();
    for name in [
        "gen_s02_j04_seed1",
        "gen_s02_j06_seed2",
        "gen_s03_j06_seed1",
    ] {
        let snap = instance(name);
        let p = LearnedScheduler::shipped(perf, objective).unwrap();
        let start = p.decide(&snap);
        let round = coda::ilp::SolveRequest::new(&snap, perf, objective)
            .unwrap()
            .settings(settings.clone())
            .warm_start(&start);
        let plain = round.solve().unwrap();
        assert_eq!(plain.report.status, SolveStatus::Optimal, "{name}");
        // Every job fixed: the restricted program is the start itself.
        let all: Vec<_> = snap.jobs.iter().map(|j| j.id).collect();
        let r = round.hold(&all).solve().unwrap();
        let start_score = coda::objective::RoundPricing::new(perf, &snap, objective)
            .score(&start)
            .unwrap()
            .total;
        assert!((r.report.objective - start_score.max(r.report.start_objective)).abs() < 1e-6);
        for fixed in [all.clone(), p.confident_jobs(&snap, &start, 0.5), vec![]] {
            let s = coda::ilp::SolveRequest::new(&snap, perf, objective)
                .unwrap()
                .settings(settings.clone())
                .warm_start(&start)
                .fix_then_free(&fixed, 0.5)
                .unwrap()
                .solve()
                .unwrap();
            let rep = s.phases.clone().unwrap();
            assert_eq!(rep.fixed, fixed.len());
            assert!(s.schedule.validate(&snap).is_empty());
            assert!(s.report.objective >= start_score - 1e-9, "{name}");
            // Freed, the whole program is proven: the same optimum, an honest zero gap.
            assert_eq!(s.report.status, SolveStatus::Optimal, "{name}");
            assert!(
                (s.report.objective - plain.report.objective).abs() < 1e-6,
                "{name}"
            );
        }
    }
}

#[test]
fn an_untrained_policy_rolls_out_and_its_episodes_are_typed() {
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let jobs = philly(12);
    // An empty window is refused with the field named.
    let e = Episode::window(pool(&jobs, &cluster(1)), 12..17, perf, objective).unwrap_err();
    assert!(e.to_string().contains("window"), "{e}");
    let ep = Episode::window(pool(&jobs, &cluster(1)), 0..12, perf, objective).unwrap();
    let r = rollout(
        perf,
        objective,
        &PolicyNet::untrained(3),
        &ep,
        Decoding::Greedy,
    )
    .unwrap();
    assert!(!r.rounds.is_empty());
    assert!(r.avg_jct_h > 0.0);
}

#[test]
fn validation_replays_the_policy_as_a_replay_deploys_it() {
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    // CPU and memory at the demand, as RL's episodes are (`coda train rl`): no tiers to choose.
    let jobs = philly_with(
        60,
        &coda::workload::trace::TraceOptions {
            cpu_mem: coda::workload::trace::CpuMemMode::Fixed,
            ..Default::default()
        },
    );
    let c = cluster(2);
    let ep = Episode::window(pool(&jobs, &c), 0..60, perf, objective).unwrap();
    let net = LearnedScheduler::shipped(perf, objective)
        .unwrap()
        .net()
        .clone();
    let samples = coda::policies::learned::DEFAULT_SAMPLES;
    let deployed = replay_deployed(perf, objective, &net, &ep, samples, 0).unwrap();
    // The same episode under the `learned` policy a replay builds by name (the shipped weights,
    // its default decodings, seed 0), counted as an episode counts its jobs.
    let mut sim = ep.simulator(perf).unwrap();
    let opts = coda::policies::PolicyOptions {
        objective,
        ..Default::default()
    };
    let mut policy = coda::policies::PolicyKind::Learned
        .build(perf, &opts)
        .unwrap();
    sim.run(policy.as_mut()).unwrap();
    let avg_h = episode_jct(&sim).0;
    assert!((deployed - avg_h).abs() < 1e-9, "{deployed} vs {avg_h}");
    // One decoding a round is the greedy rollout (back-filled alike): the earlier validation.
    let one = replay_deployed(perf, objective, &net, &ep, 1, 0).unwrap();
    let greedy = rollout(perf, objective, &net, &ep, Decoding::Greedy).unwrap();
    assert!(
        (one - greedy.avg_jct_h).abs() < 1e-9,
        "{one} vs {}",
        greedy.avg_jct_h
    );
}

/// The Philly jobs as an episode pool on `cluster`.
fn pool<'p>(
    jobs: &'p [coda::model::Job],
    cluster: &'p coda::model::Cluster,
) -> coda::learn::rl::JobPool<'p> {
    coda::learn::rl::JobPool {
        name: "philly",
        jobs,
        cluster,
    }
}
