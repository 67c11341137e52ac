//! The lookahead distilled (`coda distil`, `--policy distilled`): the plays recorded on a
//! student's rounds agree with the lookahead's own decision, a gate fitted to them makes the
//! lookahead's choices where it can and is judged honestly, resuming a plays file plays nothing
//! twice, a bad plays or gate file is an error naming it, and the distilled policy is valid and
//! repeatable with any gate.

use std::collections::HashSet;

use coda::CalibratedPerf;
use coda::learn::distil::{
    BoostSettings, PlayRound, fit_gate, gate_fit, play_rounds, read_play_rounds,
};
use coda::policies::distilled::{GATE_CANDIDATES, GATE_FEATURES, Gate};
use coda::policies::{Candidate, PolicyKind};
use coda::replay::{Replay, ReplayRun};

/// The lookahead tests' congested slice (30 Philly jobs on one 8-GPU server), short plays.
fn replay(extra: &str) -> Replay {
    Replay::from_json(
        &format!(
            r#"{{"trace":"philly","skip":400,"take":30,"cluster":"1x8","datasets":"{}","track_from":0.0,"track_to":1.0,"skip_unplaceable":true,"lookahead_rounds":4{extra}}}"#,
            crate::common::datasets().display()
        ),
        "test",
    )
    .unwrap()
}

fn plays(r: &Replay, student: PolicyKind, count: usize) -> Vec<PlayRound> {
    let mut rows = Vec::new();
    play_rounds(
        r,
        CalibratedPerf::shipped(),
        student,
        1,
        count,
        &HashSet::new(),
        &mut |row| {
            rows.push(row);
            Ok(())
        },
    )
    .unwrap();
    rows
}

fn run(r: &Replay, policy: PolicyKind) -> ReplayRun {
    let perf = CalibratedPerf::shipped();
    let workload = r.workload(perf).unwrap();
    let allowance = r.allowance(&workload, perf).unwrap();
    r.run(policy, &workload, allowance, perf, &mut []).unwrap()
}

#[test]
fn plays_fit_and_judge_a_gate() {
    let r = replay("");
    let rows = plays(&r, PolicyKind::Learned, 12);
    assert!(!rows.is_empty());
    for row in &rows {
        assert_eq!(row.features.len(), GATE_CANDIDATES.len());
        assert!(row.features.iter().all(|f| f.len() == GATE_FEATURES.len()));
        // Recorded rounds are those whose proposals differ; the learned one saves nothing
        // against itself, and a candidate proposing the same schedule saves nothing either.
        assert!(row.same[0] && row.saving[0] == 0.0);
        assert!(row.same.iter().any(|s| !s), "{}", row.id);
        for k in 0..row.same.len() {
            if row.same[k] {
                assert_eq!(row.saving[k], 0.0);
                assert_eq!(row.features[k][..10], row.features[0][..10], "{}", row.id);
            }
        }
    }
    // Repeatable.
    assert_eq!(rows, plays(&r, PolicyKind::Learned, 12));
    // A gate fitted to these rounds: what it keeps is never more than the lookahead's saving,
    // and the learned proposal alone (a margin no prediction clears) keeps exactly nothing.
    let cands: Vec<Candidate> = GATE_CANDIDATES[1..].to_vec();
    let settings = BoostSettings {
        min_leaf: 2,
        ..BoostSettings::default()
    };
    let mut gate = fit_gate(
        std::slice::from_ref(&rows),
        &cands,
        &settings,
        vec!["test".into()],
    )
    .unwrap();
    let fit = gate_fit(&gate, &rows);
    assert_eq!(fit.rounds, rows.len());
    assert!(fit.kept <= fit.best + 1e-9, "{fit:?}");
    assert!(fit.best >= 0.0);
    gate.margin = f64::INFINITY;
    let none = gate_fit(&gate, &rows);
    assert_eq!((none.kept, none.switched), (0.0, 0));
    // A gate that may choose only `keep` proposes only with `learned` and `keep`.
    let keep_only = fit_gate(
        std::slice::from_ref(&rows),
        &[Candidate::Keep],
        &settings,
        vec![],
    )
    .unwrap();
    assert_eq!(
        keep_only.candidates(),
        vec![GATE_CANDIDATES[0], Candidate::Keep]
    );
}

#[test]
fn the_distilled_policy_is_valid_and_repeatable_with_any_gate() {
    let dir = tempfile::tempdir().unwrap();
    let rows = plays(&replay(""), PolicyKind::Learned, 12);
    let gate = fit_gate(
        &[rows],
        &[Candidate::Keep, Candidate::LearnedGreedy],
        &BoostSettings {
            min_leaf: 2,
            ..BoostSettings::default()
        },
        vec![],
    )
    .unwrap();
    let path = dir.path().join("gate.json");
    std::fs::write(&path, serde_json::to_string(&gate).unwrap()).unwrap();
    for extra in [
        String::new(),
        format!(r#","distilled_gate":"{}""#, path.display()),
    ] {
        let r = replay(&extra);
        let first = run(&r, PolicyKind::Distilled);
        assert_eq!(first.summary.metrics.jobs_unfinished, 0, "{extra}");
        let again = run(&r, PolicyKind::Distilled);
        let fin = |x: &ReplayRun| -> Vec<(u64, Option<f64>)> {
            x.records.iter().map(|j| (j.id.0, j.finish_s)).collect()
        };
        assert_eq!(fin(&first), fin(&again), "{extra}");
    }
    // The DAgger student: rounds the distilled policy visits, played the same way.
    let mut r = replay(&format!(r#","distilled_gate":"{}""#, path.display()));
    r.policy.lookahead_rounds = 3;
    assert!(!plays(&r, PolicyKind::Distilled, 4).is_empty());
}

#[test]
fn bad_plays_and_gate_files_are_named_and_resuming_plays_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let coda = crate::common::coda_bin();
    let out = dir.path().join("plays.jsonl");
    let args = |rounds: &str| {
        let mut a: Vec<String> = [
            "distil",
            "plays",
            "--trace",
            "philly",
            "--skip",
            "400",
            "--take",
            "30",
            "--cluster",
            "1x8",
            "--skip-unplaceable",
            "--lookahead-rounds",
            "3",
            "--rounds",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.push(rounds.into());
        a.push("--datasets".into());
        a.push(crate::common::datasets().display().to_string());
        a.push("--out".into());
        a.push(out.display().to_string());
        a
    };
    crate::common::coda_ok(args("3"));
    let three = read_play_rounds(&out).unwrap();
    assert_eq!(three.len(), 3);
    // Resumed with a larger count: the first three are not played again.
    crate::common::coda_ok(args("5"));
    let five = read_play_rounds(&out).unwrap();
    assert_eq!(five.len(), 5);
    assert_eq!(five[..3], three[..]);
    let ids: HashSet<&str> = five.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 5);
    // A row of the wrong width: the file, its line and the field.
    let mut bad = five[1].clone();
    bad.features[2].pop();
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[1] = serde_json::to_string(&bad).unwrap();
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, lines.join("\n")).unwrap();
    let e = read_play_rounds(&broken).unwrap_err().to_string();
    assert!(
        e.contains("broken.jsonl") && e.contains("features") && e.contains('2'),
        "{e}"
    );
    // Fit from the command line; a bad gate file is refused by the policy, naming it.
    let gate = dir.path().join("gate.json");
    let fit = std::process::Command::new(&coda)
        .args(["distil", "fit", "--candidates", "keep", "--plays"])
        .arg(&out)
        .arg("--out")
        .arg(&gate)
        .output()
        .unwrap();
    assert!(
        fit.status.success(),
        "{}",
        String::from_utf8_lossy(&fit.stderr)
    );
    let g = Gate::from_file(&gate).unwrap();
    assert_eq!(g.candidates(), vec![GATE_CANDIDATES[0], Candidate::Keep]);
    let unknown = std::process::Command::new(&coda)
        .args(["distil", "fit", "--candidates", "tiresias", "--plays"])
        .arg(&out)
        .arg("--out")
        .arg(dir.path().join("no.json"))
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("tiresias"));
    assert!(!dir.path().join("no.json").exists());
    std::fs::write(&gate, "{\"features\": []}").unwrap();
    let e = Gate::from_file(&gate).unwrap_err().to_string();
    assert!(e.contains("gate.json"), "{e}");
}
