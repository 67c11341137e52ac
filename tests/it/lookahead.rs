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

/// DAgger labels from the lookahead (`coda::learn::lookahead_labels`, `coda distil labels`):
/// valid schedules, decoded so that the labels rebuild a schedule of the same value, marked as
/// the lookahead's (no solve, never proven, the kept candidate named where proposals differed),
/// read back as written; the command line writes the same and resumes without labelling a
/// round twice.
#[test]
fn lookahead_labels_decode_back_to_the_lookaheads_schedule() {
    use coda::learn::{Expert, LookaheadLabelling, lookahead_labels, read_labels, rebuild};
    use coda::objective::RoundPricing;
    let perf = CalibratedPerf::shipped();
    // Without tiers: the per-job labels hold no tier (a tiered label's tiers are in its
    // schedule).
    let spec = replay(r#","cpu_mem":"fixed","lookahead_candidates":4,"lookahead_rounds":4"#);
    let how = LookaheadLabelling {
        student: PolicyKind::Learned,
        expert_weights: None,
        every: 3,
        count: 4,
    };
    let mut labels = Vec::new();
    lookahead_labels(&spec, perf, &how, &Default::default(), &mut |l| {
        labels.push(l);
        Ok(())
    })
    .unwrap();
    assert_eq!(labels.len(), 4);
    let objective = spec.objective("test").unwrap();
    let names: Vec<&str> = coda::lookahead::CANDIDATES[..4]
        .iter()
        .map(|c| c.name())
        .collect();
    for l in &labels {
        assert_eq!(l.expert, Expert::Lookahead);
        assert!(!l.proven && l.status.is_none() && l.best_bound.is_nan());
        assert!(l.id.starts_with("philly-400+30-s0-learned-t"), "{}", l.id);
        assert!(l.schedule.validate(&l.snapshot).is_empty(), "{}", l.id);
        if let Some(c) = &l.choice {
            assert!(names.contains(&c.as_str()), "{c}");
        }
        let pricing = RoundPricing::new(perf, &l.snapshot, objective);
        let rebuilt = pricing
            .score(&rebuild(&l.snapshot, &l.jobs).unwrap())
            .unwrap();
        assert!((rebuilt.total - l.objective).abs() <= 1e-9 * l.objective.abs().max(1.0));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("labels.jsonl");
    let lines: Vec<String> = labels
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let back = read_labels(&file).unwrap();
    assert_eq!(back.len(), 4);
    assert!(
        back.iter()
            .zip(&labels)
            .all(|(a, b)| a.id == b.id && a.expert == b.expert && a.choice == b.choice)
    );
    // The command line writes the same rounds, and a second run labels none of them again.
    let coda = crate::common::coda_bin();
    let out = dir.path().join("cli.jsonl");
    let cli = |extra: &[&str]| {
        std::process::Command::new(&coda)
            .args([
                "distil", "labels", "--trace", "philly", "--skip", "400", "--take", "30",
            ])
            .args([
                "--cluster",
                "1x8",
                "--skip-unplaceable",
                "--cpu-mem",
                "fixed",
            ])
            .args(["--lookahead-candidates", "4", "--lookahead-rounds", "4"])
            .args(["--every", "3", "--rounds", "2", "--out"])
            .arg(&out)
            .args(["--datasets"])
            .arg(crate::common::datasets())
            .args(extra)
            .output()
            .unwrap()
    };
    for _ in 0..2 {
        let ok = cli(&[]);
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }
    let written = read_labels(&out).unwrap();
    assert_eq!(written.len(), 2);
    for (w, l) in written.iter().zip(&labels) {
        assert_eq!(
            (&w.id, &w.schedule, &w.choice),
            (&l.id, &l.schedule, &l.choice)
        );
    }
    // The lookahead cannot be its own student.
    let refused = cli(&["--student", "lookahead"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("student"));
}
