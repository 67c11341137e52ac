//! Statistical efficiency (`--goodput on`): trace durations kept at the requested size, the
//! efficiency priced where it should be and nowhere else, the bound still below every policy,
//! repeatable replays, and a bad measurement row named by file, line and field.

use coda::CalibratedPerf;
use coda::PerfModel;
use coda::model::Architecture;
use coda::perf::{GoodputQuery, JobQuery, PlacementShape};
use coda::policies::{PolicyKind, PolicyOptions};
use coda::replay::Replay;
use coda::sim::{LpLimits, Simulator};

use crate::common::{coda_ok, datasets};

fn goodput() -> CalibratedPerf {
    CalibratedPerf::shipped().clone().with_goodput(true)
}

/// Every fitted model has a noise ratio, and the shipped fit is the one `coda calibrate` makes.
#[test]
fn every_profiled_model_has_a_noise_ratio() {
    let p = CalibratedPerf::shipped().params();
    for m in [
        "bert",
        "cifar10",
        "deepspeech2",
        "imagenet",
        "ncf",
        "yolov3",
    ] {
        let g = p.goodput.get(m).unwrap_or_else(|| panic!("{m}"));
        // Early in training a batch 8 × the smallest is worth less per sample than late.
        let big = 8.0 * g.init_batch;
        assert!(g.efficiency(0.02, big) < g.efficiency(0.9, big), "{m}");
        assert!(
            g.efficiency(0.5, big) < 1.0 && g.efficiency(0.5, big) > 0.0,
            "{m}"
        );
    }
}

/// With goodput on, an all-reduce job's speed at its requested size is its throughput; above
/// it, less (per GPU-step of work) than the throughput says; a PS job and a query without
/// progress are priced as before.
#[test]
fn goodput_prices_allocations_away_from_the_request() {
    let (off, on) = (CalibratedPerf::shipped(), goodput());
    let q = |model, arch, reference_gpus| JobQuery {
        model,
        arch,
        gpus_per_worker: 1,
        local_batch: None,
        goodput: Some(GoodputQuery {
            progress: 0.1,
            reference_gpus,
        }),
    };
    let shape = |k: u32| PlacementShape::isolated(k, 0, vec![k]);
    for model in ["cifar10", "imagenet", "yolov3"] {
        let job = q(model, Architecture::AllReduce, 2);
        let speed =
            |p: &CalibratedPerf, k| p.speed(&job, "v100", &shape(k)).unwrap().iterations_per_s;
        assert!(
            (speed(&on, 2) - speed(off, 2)).abs() <= 1e-12 * speed(off, 2),
            "{model}"
        );
        assert!(speed(&on, 8) < speed(off, 8), "{model}");
        assert!(speed(&on, 1) > speed(off, 1), "{model}");
        let plain = JobQuery {
            goodput: None,
            ..job
        };
        assert_eq!(
            on.speed(&plain, "v100", &shape(8)).unwrap(),
            off.speed(&plain, "v100", &shape(8)).unwrap()
        );
    }
    let ps = q("resnet-50", Architecture::ParameterServer, 2);
    let ps_shape = PlacementShape::isolated(4, 2, vec![4]);
    assert_eq!(
        on.speed(&ps, "v100", &ps_shape).unwrap(),
        off.speed(&ps, "v100", &ps_shape).unwrap()
    );
    assert!(on.progress_dependent() && !off.progress_dependent());
}

/// The trace-consistency contract holds with goodput on: every distinct (model, allocation)
/// among the Philly window's first jobs, replayed alone at its requested size, runs exactly its
/// trace duration.
#[test]
fn goodput_keeps_trace_durations_at_the_requested_size() {
    use coda::workload::trace::{self, TraceFilter, TraceFormat, TraceOptions};
    let perf = goodput();
    let w = coda::workload::load(
        coda::workload::TraceRef {
            name: "philly",
            datasets: &datasets(),
            cluster: None,
            take: Some(600),
        },
        &TraceOptions::default(),
        &perf,
    )
    .unwrap();
    let rows = trace::load(
        &datasets().join(TraceFormat::Philly.shipped_file()),
        TraceFormat::Philly,
        &TraceFilter::default(),
    )
    .unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut multi = 0;
    for (row, job) in rows.jobs.iter().zip(&w.jobs) {
        let r = job.requested.unwrap();
        if job.arch != Architecture::AllReduce || !seen.insert((job.model.clone(), r.workers)) {
            continue;
        }
        let mut alone = job.clone();
        alone.arrival_s = 0.0;
        let mut sim = Simulator::builder(&perf, w.cluster.clone(), vec![alone])
            .build()
            .unwrap();
        let mut fifo = PolicyKind::Fifo
            .build(&perf, &PolicyOptions::default())
            .unwrap();
        sim.run(fifo.as_mut()).unwrap();
        let rec = &sim.records()[0];
        let ran = rec.finish_s.unwrap() - rec.first_start_s.unwrap();
        assert!(
            (ran - row.duration_s).abs() <= 1e-6 * row.duration_s + 1e-5,
            "{} on {} GPUs ran {ran} s, trace {} s",
            job.model,
            r.workers,
            row.duration_s
        );
        multi += usize::from(r.workers > 1);
    }
    assert!(multi >= 3, "{multi} multi-GPU allocations checked");
}

fn slice(skip: usize, take: usize, cluster: &str) -> Replay {
    Replay::from_json(
        &format!(
            r#"{{"trace":"philly","skip":{skip},"take":{take},"cluster":"{cluster}","datasets":"{}","track_from":0.0,"track_to":1.0,"skip_unplaceable":true,"ilp_time_limit":5,"ilp_node_limit":50}}"#,
            datasets().display()
        ),
        "test",
    )
    .unwrap()
}

/// The JCT bound with goodput on (each GPU count at the most the rest of a job's training
/// can make of it) stays below every policy on slices of the Philly window, and goodput
/// changes the replays.
#[test]
fn no_policy_beats_the_bound_with_goodput() {
    let (perf, off) = (goodput(), CalibratedPerf::shipped());
    let limits = LpLimits {
        max_columns: 50_000,
        time_limit_s: 60.0,
    };
    let mut moved = 0;
    for (skip, take, cluster) in [(400, 30, "2x8")] {
        let replay = slice(skip, take, cluster);
        let workload = replay.workload(&perf).unwrap();
        let b = replay.bound(&workload, &perf, Some(limits)).unwrap();
        let allowance = replay.allowance(&workload, &perf).unwrap();
        for policy in PolicyKind::ALL {
            let run = replay
                .run(policy, &workload, allowance, &perf, &mut [])
                .unwrap();
            let m = &run.summary.metrics;
            assert_eq!(m.jobs_unfinished, 0, "{}", policy.name());
            assert!(
                b.avg_jct_s <= m.avg_jct_s + 1e-6,
                "{} on philly {skip}+{take}: {} below the bound {b:?}",
                policy.name(),
                m.avg_jct_s
            );
            let plain = replay
                .run(policy, &workload, allowance, off, &mut [])
                .unwrap();
            moved += usize::from(plain.summary.metrics.avg_jct_s != m.avg_jct_s);
        }
    }
    assert!(moved > 0, "goodput changed no replay");
}

/// Same replay, same result, with goodput on (the CLI switch).
#[test]
fn goodput_replays_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let run = |g: &str| {
        let out = coda_ok([
            "simulate",
            "--out",
            dir.path().to_str().unwrap(),
            "--trace",
            "philly",
            "--cluster",
            "2x8",
            "--take",
            "60",
            "--skip-unplaceable",
            "--policy",
            "learned",
            "--goodput",
            g,
            "--json",
            "--quiet",
            "--datasets",
            datasets().to_str().unwrap(),
        ]);
        let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        m["avg_jct_s"].as_f64().unwrap()
    };
    let on = run("on");
    assert_eq!(on, run("on"));
    assert_ne!(on, run("off"));
}

/// A bad gradient statistic stops calibration with the file, line and field named.
#[test]
fn a_bad_efficiency_row_names_its_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(datasets()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
    }
    let f = dir.path().join("pollux_statistical_efficiency.csv");
    let text = std::fs::read_to_string(&f).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let cols: Vec<&str> = lines[0].split(',').collect();
    let at = cols.iter().position(|c| *c == "grad_var").unwrap();
    let mut row: Vec<String> = lines[5].split(',').map(str::to_string).collect();
    row[at] = "lots".into();
    lines[5] = row.join(",");
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    let err = coda::perf::calibrate::calibrate(dir.path(), coda::perf::Estimates::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("pollux_statistical_efficiency.csv")
            && err.contains('6')
            && err.contains("grad_var"),
        "{err}"
    );
}
