//! The step-by-step environment (`coda::replay::env`, the Python package's `coda/Cluster-v0`):
//! random masked agents always finish with every schedule valid, a masked action is refused
//! without changing anything, and the learned policy's hints reproduce its greedy replay.

use coda::CalibratedPerf;
use coda::policies::PolicyKind;
use coda::replay::env::{GymEpisode, GymOptions, Phase};
use coda::replay::{Replay, WorkloadSpec};
use coda::workload::trace::CpuMemMode;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common::datasets;

fn spec(cluster: &str, take: usize) -> Replay {
    Replay {
        workload: WorkloadSpec {
            trace: "philly".into(),
            cluster: Some(cluster.into()),
            take: Some(take),
            cpu_mem: CpuMemMode::Fixed,
            datasets: datasets(),
            ..WorkloadSpec::default()
        },
        ..Replay::default()
    }
}

#[test]
fn random_masked_agents_finish_every_episode_with_valid_schedules() {
    // The simulator validates every round's schedule before applying it: an invalid one would
    // end the episode with an error.
    for seed in 0..3u64 {
        let opts = GymOptions {
            slots: 64,
            ..GymOptions::default()
        };
        let (mut ep, mut step) = GymEpisode::start(spec("2x8", 25), opts).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut phases = [0usize; 3];
        let mut steps = 0;
        while let Some(ask) = step.ask {
            let valid: Vec<usize> = (0..ask.mask.len()).filter(|&i| ask.mask[i]).collect();
            assert!(!valid.is_empty(), "a step with no valid slot");
            assert_eq!(ask.mask.len(), 64);
            phases[ask.phase as usize] += 1;
            step = ep.step(valid[rng.random_range(0..valid.len())]).unwrap();
            steps += 1;
            assert!(step.reward.is_finite());
        }
        let run = step.done.expect("an episode ends with its replay");
        assert_eq!(run.records.len(), 25);
        assert!(
            run.records.iter().all(|r| r.finish_s.is_some()),
            "seed {seed}"
        );
        assert!(
            phases.iter().all(|&n| n > 0),
            "every kind of step seen: {phases:?}"
        );
        assert!(steps > 25);
    }
}

#[test]
fn a_masked_action_is_refused_and_changes_nothing() {
    let (mut ep, step) = GymEpisode::start(spec("4x8", 10), GymOptions::default()).unwrap();
    let ask = step.ask.unwrap();
    assert_eq!(ask.phase, Phase::Pick);
    let masked = (0..ask.mask.len()).find(|&i| !ask.mask[i]).unwrap();
    let Err(err) = ep.step(masked).map(|_| ()) else {
        panic!("a masked action was taken");
    };
    let err = err.to_string();
    assert!(
        err.contains("action") && err.contains("not a valid slot"),
        "{err}"
    );
    assert_eq!(ep.mask().unwrap(), ask.mask.as_slice());
    assert!(
        ep.step(0).is_ok(),
        "the episode goes on after a refused action"
    );
}

#[test]
fn the_policys_hints_reproduce_its_greedy_replay() {
    let mut spec = spec("4x8", 60);
    spec.policy.policy_samples = 1;
    let opts = GymOptions {
        hints: true,
        ..GymOptions::default()
    };
    let (mut ep, mut step) = GymEpisode::start(spec.clone(), opts).unwrap();
    while let Some(ask) = step.ask {
        step = ep.step(ask.hint.expect("every step hinted")).unwrap();
    }
    let env = step.done.unwrap();
    let perf = CalibratedPerf::shipped();
    let wl = spec.workload(perf).unwrap();
    let allowance = spec.allowance(&wl, perf).unwrap();
    let replay = spec
        .run(PolicyKind::Learned, &wl, allowance, perf, &mut [])
        .unwrap();
    assert_eq!(env.records.len(), replay.records.len());
    for (a, b) in env.records.iter().zip(&replay.records) {
        assert_eq!((a.id, a.finish_s), (b.id, b.finish_s));
    }
    assert_eq!(env.summary.metrics, replay.summary.metrics);
}
