//! Level 1's CPU/memory tier head: schedules validate whatever its weights, its decoding never
//! scores below the policy's decoding at the demand, its tensors round-trip in the weights file
//! (a file of other tier features is a typed error), and its examples follow the labels.

use coda::ilp::SolveSettings;
use coda::learn::{RoundLabel, label_round, tier_examples};
use coda::objective::RoundPricing;
use coda::policies::learned::{LearnedScheduler, PolicyNet, TierHead};
use coda::workload::{GenerateOptions, generate, offer_tiers};
use coda::{CalibratedPerf, ClusterSnapshot, Error, Objective};
use proptest::prelude::*;

/// A generated round (3 cores per GPU) whose jobs offer their model's tiers.
fn tiered(servers: usize, jobs: usize, seed: u64, running: f64) -> ClusterSnapshot {
    let perf = CalibratedPerf::shipped();
    let mut snap = generate(
        &GenerateOptions {
            servers,
            jobs,
            seed,
            running_fraction: running,
            ..Default::default()
        },
        perf,
    )
    .unwrap();
    offer_tiers(&mut snap, perf);
    snap
}

/// The exact program's label of [`tiered`]'s round (node-limited, so that it repeats).
fn labelled(servers: usize, jobs: usize, seed: u64, running: f64) -> (ClusterSnapshot, RoundLabel) {
    let snap = tiered(servers, jobs, seed, running);
    let settings = SolveSettings {
        time_limit_s: 20.0,
        node_limit: Some(200),
        ..Default::default()
    };
    let perf = CalibratedPerf::shipped();
    let label = label_round("t", &snap, perf, &Objective::default(), &settings).unwrap();
    (snap, label)
}

fn with_head(weights: u64, head: u64) -> PolicyNet {
    let mut net = PolicyNet::untrained(weights);
    net.tier = Some(TierHead::untrained(head));
    net
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Random weights and tier heads on random rounds with tiers: every schedule validates (the
    /// cores and memory of every tier included), the same weights give the same schedule, and
    /// the decoding with the head scores at least the decoding at the demand (it is one of the
    /// two the objective chooses between).
    #[test]
    fn tiered_schedules_validate_and_never_score_below_the_demand(
        servers in 1usize..6, jobs in 1usize..12, seed in 0u64..10_000,
        running in 0.0f64..0.8, weights in 0u64..1_000, head in 0u64..1_000,
    ) {
        let perf = CalibratedPerf::shipped();
        let snap = tiered(servers, jobs, seed, running);
        let objective = Objective::default();
        let p = LearnedScheduler::new(perf, objective, with_head(weights, head));
        let s = p.decide(&snap);
        prop_assert!(s.validate(&snap).is_empty(), "{:?}", s.validate(&snap));
        prop_assert_eq!(&s, &p.decide(&snap));
        let plain = LearnedScheduler::new(perf, objective, PolicyNet::untrained(weights));
        let d = plain.decide(&snap);
        prop_assert!(d.assignments.iter().all(|a| a.tier == 0));
        let pricing = RoundPricing::new(perf, &snap, objective);
        let (a, b) = (pricing.score(&s).unwrap().total, pricing.score(&d).unwrap().total);
        prop_assert!(a >= b, "with the head {a} < at the demand {b}");
    }
}

#[test]
fn a_tier_head_changes_tiers_on_some_round() {
    // Not a property of every round; over a few, a random head must pick some tier other than
    // the demand, or the decoding at the tiers is never reached.
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let mut tiers_used = 0;
    for seed in 0..12 {
        let snap = tiered(3, 6, seed, 0.0);
        let p = LearnedScheduler::new(perf, objective, with_head(seed, seed + 100));
        tiers_used += p
            .decide(&snap)
            .assignments
            .iter()
            .filter(|a| a.tier > 0)
            .count();
    }
    assert!(tiers_used > 0);
}

#[test]
fn tier_head_round_trips_and_other_features_are_refused() {
    let net = with_head(5, 6);
    let bytes = net.to_safetensors(&[]).unwrap();
    let back = PolicyNet::from_safetensors(&bytes, "x").unwrap();
    assert_eq!(back, net);
    assert!(back.tier.is_some());
    // A file without the head reads as before: no head.
    let plain = PolicyNet::untrained(5);
    let b = plain.to_safetensors(&[]).unwrap();
    assert!(PolicyNet::from_safetensors(&b, "x").unwrap().tier.is_none());
    // The head's feature list is checked like the levels'.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let old = "is_demand,tier_speed";
    assert!(text.contains(old));
    let edited = text.replacen(old, "is_demand,tier_sp33d", 1);
    let mut forged = bytes.clone();
    let at = text.find(old).unwrap();
    forged[at..at + old.len()].copy_from_slice(&edited.as_bytes()[at..at + old.len()]);
    match PolicyNet::from_safetensors(&forged, "forged") {
        Err(Error::ModelFile { reason, .. }) => {
            assert!(reason.contains("tier_features"), "{reason}")
        }
        other => panic!("expected a model-file error, got {other:?}"),
    }
}

#[test]
fn tier_examples_follow_the_labels() {
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let mut seen = 0;
    for seed in 0..3 {
        let (snap, label) = labelled(2, 5, seed, 0.3);
        let ex = tier_examples(perf, objective, &label);
        let expected: Vec<u8> = label
            .schedule
            .assignments
            .iter()
            .filter(|a| !snap.job(a.job).unwrap().tiers.is_empty())
            .map(|a| a.tier)
            .collect();
        assert_eq!(ex.len(), expected.len());
        let mut targets: Vec<usize> = ex.iter().map(|e| e.target).collect();
        let mut want: Vec<usize> = expected.iter().map(|&t| usize::from(t)).collect();
        targets.sort_unstable();
        want.sort_unstable();
        assert_eq!(targets, want);
        for e in &ex {
            assert!(e.target < e.rows.len());
            // Row 0 is the demand: flagged, at speed 1.
            assert_eq!(e.rows[0][0], 1.0);
            assert!((e.rows[0][1] - 1.0).abs() < 1e-6);
            assert!(e.rows[1..].iter().all(|r| r[0] == 0.0));
            // The rule the head is measured against picks the fastest row (feature 1).
            let top = TierHead::fastest().ranked(&e.rows)[0];
            assert!(e.rows.iter().all(|r| r[1] <= e.rows[usize::from(top)][1]));
        }
        seen += ex.len();
    }
    assert!(seen > 0);
}

/// Imitation lowers the head's training loss on examples from labels (the gradients reach it).
#[cfg(feature = "train")]
#[test]
fn training_the_tier_head_lowers_its_loss() {
    use coda::learn::train::tiers::{TierTrainConfig, train_tiers};
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let mut ex = Vec::new();
    for seed in 0..4 {
        let (_, label) = labelled(2, 6, seed, 0.0);
        ex.extend(tier_examples(perf, objective, &label));
    }
    let cfg = TierTrainConfig {
        epochs: 40,
        batch: 8,
        ..TierTrainConfig::default()
    };
    let (head, curve) = train_tiers(&cfg, &ex, &[], &mut |_| {}).unwrap();
    assert!(curve.last().unwrap().train_loss < curve[0].train_loss);
    let mut net = PolicyNet::untrained(1);
    net.tier = Some(head);
    let bytes = net.to_safetensors(&[]).unwrap();
    assert_eq!(PolicyNet::from_safetensors(&bytes, "x").unwrap(), net);
}
