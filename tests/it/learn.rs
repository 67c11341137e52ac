//! Expert labels: the decoding into level-1 choices and level-2 steps loses nothing the
//! objective reads, labelling is deterministic, and `coda label` resumes without losing or
//! duplicating a round.

use coda::learn::{LabelSpec, label_round, labels_of, rebuild};
use coda::model::JobPos;
use coda::objective::RoundPricing;
use coda::workload::{GenerateOptions, generate};
use coda::{CalibratedPerf, Objective};
use proptest::prelude::*;

use crate::common::{coda_bin, random_valid_schedule};

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any valid schedule, decoded and rebuilt, validates and scores exactly as before; each
    /// placed job's option is one the program could choose.
    #[test]
    fn labels_rebuild_to_a_schedule_of_the_same_score(servers in 1usize..5, jobs in 1usize..9, seed in 0u64..10_000) {
        let perf = CalibratedPerf::shipped();
        let s = generate(&GenerateOptions { servers, jobs, seed, max_workers: 6, ..Default::default() }, perf).unwrap();
        let pricing = RoundPricing::new(perf, &s, Objective::default());
        for k in 0..4 {
            let schedule = random_valid_schedule(&s, seed ^ k);
            let Ok(score) = pricing.score(&schedule) else { continue };
            let Ok(labels) = labels_of(&pricing, &schedule) else { continue };
            prop_assert_eq!(labels.len(), s.jobs.len());
            for (j, l) in labels.iter().enumerate() {
                prop_assert_eq!(l.option.is_some(), schedule.assignment(l.job).is_some());
                if let Some(k) = l.option {
                    let o = &pricing.options(JobPos(j))[k];
                    let shape = l.shape.unwrap();
                    prop_assert_eq!((o.workers, o.ps, o.mode, o.gpu_type), shape);
                    let gpus: u32 = l.steps.iter().map(|st| st.gpus).sum();
                    prop_assert_eq!(gpus, o.workers * s.jobs[j].demand.gpus_per_worker);
                }
            }
            let back = rebuild(&s, &labels).unwrap();
            prop_assert!(back.validate(&s).is_empty(), "{:?}", back.validate(&s));
            let again = pricing.score(&back).unwrap();
            // A running job moved to other GPUs under the same switches pays a restart the
            // labels do not record (GPUs under one switch are interchangeable); rebuilt, it may
            // land back on its own GPUs and save it. Otherwise the score is the same.
            let back_in_place = labels.iter().any(|l| {
                let cur = s.job(l.job).and_then(|j| j.run.current.as_ref());
                !l.kept && cur.is_some() && back.assignment(l.job) == cur
            });
            if back_in_place {
                prop_assert!(again.total > score.total, "{} vs {}", again.total, score.total);
            } else {
                prop_assert!((again.total - score.total).abs() < 1e-9, "{} vs {}", again.total, score.total);
            }
        }
    }
}

#[test]
fn labels_are_deterministic_and_marked_by_how_the_solve_ended() {
    let perf = CalibratedPerf::shipped();
    let spec = LabelSpec {
        sizes: vec![(2, 4), (3, 6)],
        rounds: 2,
        seed: 9,
        running_fraction: 0.3,
        node_limit: Some(50),
        time_limit: 60.0,
        ..LabelSpec::default()
    };
    let rounds = spec.rounds();
    assert_eq!(rounds.len(), 4);
    let ids: std::collections::HashSet<_> = rounds.iter().map(|r| r.0.clone()).collect();
    assert_eq!(ids.len(), 4, "every round has its own id");
    for (id, seed, servers, jobs) in rounds {
        let snap = spec.snapshot(seed, servers, jobs, perf).unwrap();
        let a = label_round(&id, &snap, perf, &Objective::default(), &spec.settings()).unwrap();
        let b = label_round(&id, &snap, perf, &Objective::default(), &spec.settings()).unwrap();
        assert_eq!(a.schedule, b.schedule);
        assert_eq!(a.jobs, b.jobs);
        assert_eq!(a.proven, a.status == Some(coda::ilp::SolveStatus::Optimal));
        // The labels describe the expert's schedule, at its objective.
        let back = rebuild(&snap, &a.jobs).unwrap();
        let score = Objective::default().score(perf, &snap, &back).unwrap();
        assert!(
            (score.total - a.objective).abs() < 1e-6,
            "{} vs {}",
            score.total,
            a.objective
        );
    }
}

#[test]
fn label_command_resumes_after_an_interrupted_line() {
    let dir = std::env::temp_dir().join(format!("coda-label-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("labels.jsonl");
    let run = || {
        let o = std::process::Command::new(coda_bin())
            .args([
                "label",
                "--sizes",
                "1x2,2x3",
                "--rounds",
                "2",
                "--node-limit",
                "50",
            ])
            .args(["--threads", "1", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    run();
    let full = std::fs::read_to_string(&out).unwrap();
    assert_eq!(full.lines().count(), 4);
    // An interrupted run: the last line cut in half.
    let lines: Vec<&str> = full.split_inclusive('\n').collect();
    let cut = format!("{}{}", lines[..3].concat(), &lines[3][..lines[3].len() / 2]);
    std::fs::write(&out, cut).unwrap();
    let said = run();
    assert!(said.starts_with("1 round(s) labelled (3 already"), "{said}");
    // The same labels, in the same order; only the measured solve times differ.
    let without_time = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("solve_s");
                v
            })
            .collect()
    };
    let resumed = std::fs::read_to_string(&out).unwrap();
    assert_eq!(resumed.lines().count(), 4);
    assert_eq!(without_time(&resumed), without_time(&full));
    assert!(resumed.starts_with(&lines[..3].concat()));
    // Nothing left to do: nothing written.
    let said = run();
    assert!(said.starts_with("0 round(s) labelled (4 already"), "{said}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), resumed);
    let full = resumed;
    // A corrupt line in the middle is an error naming it, and the file is left as it was.
    let bad = full.replacen("\"id\"", "\"id", 1);
    std::fs::write(&out, &bad).unwrap();
    let o = std::process::Command::new(coda_bin())
        .args(["label", "--sizes", "1x2,2x3", "--rounds", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("labels.jsonl:1"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), bad);
    // `--relabel` re-solves a label file's rounds: the same ids and snapshots, solved again (here
    // by the same model, so to the same schedules).
    std::fs::write(&out, &full).unwrap();
    let again = dir.join("again.jsonl");
    let o = std::process::Command::new(coda_bin())
        .args([
            "label",
            "--rounds",
            "0",
            "--node-limit",
            "50",
            "--threads",
            "1",
        ])
        .arg("--relabel")
        .arg(&out)
        .arg("--out")
        .arg(&again)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        without_time(&std::fs::read_to_string(&again).unwrap()),
        without_time(&full)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trace_rounds_hold_running_jobs_and_repeat() {
    let perf = CalibratedPerf::shipped();
    let w = coda::workload::load(
        coda::workload::TraceRef {
            name: "philly",
            datasets: &crate::common::datasets(),
            cluster: Some("2x8"),
            take: Some(60),
        },
        &Default::default(),
        perf,
    )
    .unwrap();
    let cut = || {
        coda::learn::trace_rounds(
            "philly",
            &w,
            perf,
            &Objective::default(),
            &trace_cut(coda::policies::PolicyKind::Pollux),
        )
        .unwrap()
    };
    let a = cut();
    assert_eq!(a.len(), 6);
    assert_eq!(a, cut());
    let ids: std::collections::HashSet<_> = a.iter().map(|r| r.0.clone()).collect();
    assert_eq!(ids.len(), a.len());
    assert!(
        a.iter()
            .any(|(_, s)| s.jobs.iter().any(|j| j.run.current.is_some()))
    );
    for (_, s) in &a {
        s.check("cut round").unwrap();
        let running = s.jobs.iter().filter(|j| j.run.current.is_some()).count();
        assert!(
            s.jobs.len() <= 8.max(running + 2),
            "{} jobs, {running} running",
            s.jobs.len()
        );
    }
    // The ILP is no policy to replay a trace under here.
    assert!(
        coda::learn::trace_rounds(
            "philly",
            &w,
            perf,
            &Objective::default(),
            &trace_cut(coda::policies::PolicyKind::Ilp),
        )
        .is_err()
    );
}

/// Every third round of at least two jobs, six rounds, eight jobs each.
fn trace_cut(policy: coda::policies::PolicyKind) -> coda::learn::TraceCut {
    coda::learn::TraceCut {
        policy,
        options: Default::default(),
        every: 3,
        count: 6,
        max_jobs: 8,
    }
}
