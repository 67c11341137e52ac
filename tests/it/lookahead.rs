//! The lookahead policy (`--policy lookahead`): with one candidate it is the learned policy;
//! with several it is valid (the simulator refuses an invalid schedule), repeatable, never below
//! the JCT bound; its settings are checked; and it is built only with a simulator's settings.

use coda::CalibratedPerf;
use coda::lookahead::Lookahead;
use coda::policies::{LookaheadOptions, PolicyKind, PolicyOptions};
use coda::replay::{Replay, ReplayRun};
use coda::sim::SimConfig;

/// A congested slice of the Philly window (30 jobs on one 8-GPU server) with `extra` settings.
fn replay(extra: &str) -> Replay {
    Replay::from_json(
        &format!(
            r#"{{"trace":"philly","skip":400,"take":30,"cluster":"1x8","datasets":"{}","track_from":0.0,"track_to":1.0,"skip_unplaceable":true{extra}}}"#,
            crate::common::datasets().display()
        ),
        "test",
    )
    .unwrap()
}

fn run(replay: &Replay, policy: PolicyKind) -> ReplayRun {
    let perf = CalibratedPerf::shipped();
    let workload = replay.workload(perf).unwrap();
    let allowance = replay.allowance(&workload, perf).unwrap();
    replay
        .run(policy, &workload, allowance, perf, &mut [])
        .unwrap()
}

fn finishes(run: &ReplayRun) -> Vec<(u64, Option<f64>, u32)> {
    run.records
        .iter()
        .map(|r| (r.id.0, r.finish_s, r.restarts))
        .collect()
}

#[test]
fn one_candidate_is_the_learned_policy() {
    let one = replay(r#","lookahead_candidates":1"#);
    let looked = run(&one, PolicyKind::Lookahead);
    let learned = run(&one, PolicyKind::Learned);
    assert_eq!(finishes(&looked), finishes(&learned));
    // Nothing was played: the round's only proposal is returned.
    assert!(
        looked
            .summary
            .policy_notes
            .iter()
            .all(|n| !n.contains("lookahead played"))
    );
}

#[test]
fn the_lookahead_is_valid_repeatable_and_above_the_bound() {
    let perf = CalibratedPerf::shipped();
    for extra in [
        r#","lookahead_candidates":4,"lookahead_rounds":3"#,
        r#","lookahead_candidates":5,"lookahead_rounds":4,"lookahead_arrivals":"sampled","lookahead_follow":"candidate","lookahead_tail":"none""#,
    ] {
        let r = replay(extra);
        let first = run(&r, PolicyKind::Lookahead);
        let m = &first.summary.metrics;
        assert_eq!(m.jobs_unfinished, 0, "{extra}");
        assert_eq!(
            finishes(&first),
            finishes(&run(&r, PolicyKind::Lookahead)),
            "{extra}"
        );
        let notes = first.summary.policy_notes.join("; ");
        assert!(notes.contains("lookahead played"), "{extra}: {notes}");
        let workload = r.workload(perf).unwrap();
        let bound = r.bound(&workload, perf, None).unwrap();
        assert!(
            bound.avg_jct_s <= m.avg_jct_s + 1e-6,
            "{extra}: {bound:?} vs {}",
            m.avg_jct_s
        );
    }
}

#[test]
fn bad_lookahead_settings_are_refused_by_name() {
    let perf = CalibratedPerf::shipped();
    let sim = SimConfig::default();
    let with = |lookahead: LookaheadOptions| PolicyOptions {
        lookahead,
        ..Default::default()
    };
    for (bad, field) in [
        (
            LookaheadOptions {
                rounds: 0,
                ..Default::default()
            },
            "lookahead.rounds",
        ),
        (
            LookaheadOptions {
                candidates: 0,
                ..Default::default()
            },
            "lookahead.candidates",
        ),
        (
            LookaheadOptions {
                candidates: 11,
                ..Default::default()
            },
            "lookahead.candidates",
        ),
        (
            LookaheadOptions {
                base: PolicyKind::Lookahead,
                ..Default::default()
            },
            "lookahead.base",
        ),
    ] {
        let err = Lookahead::new(perf, &with(bad), sim)
            .err()
            .expect(field)
            .to_string();
        assert!(err.contains(field), "{err}");
    }
    assert!(Lookahead::new(perf, &with(LookaheadOptions::default()), sim).is_ok());
    let err = PolicyKind::Lookahead
        .build(perf, &PolicyOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("lookahead"), "{err}");
    assert_eq!(
        "lookahead".parse::<PolicyKind>().unwrap(),
        PolicyKind::Lookahead
    );
}
