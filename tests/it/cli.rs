//! The `coda` binary: exit codes, JSON output, and files left intact on failure.

use std::process::Command;

use crate::common::coda_bin;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn validate_valid_example_exits_zero_with_speeds() {
    let out = Command::new(coda_bin())
        .current_dir(root())
        .args([
            "validate",
            "--instance",
            "examples/instances/hetero.json",
            "--schedule",
            "examples/instances/hetero.schedule.json",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["speeds"].as_array().unwrap().len(), 10);
}

#[test]
fn validate_invalid_schedule_exits_one_and_lists_violations() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(root().join("examples/instances/small.schedule.json")).unwrap();
    let mut sched: coda::Schedule = serde_json::from_str(&text).unwrap();
    let first = sched.assignments[0].clone();
    sched.assignments[1].workers[0] = first.workers[0].clone();
    let p = dir.path().join("bad.json");
    std::fs::write(&p, serde_json::to_string(&sched).unwrap()).unwrap();
    let out = Command::new(coda_bin())
        .current_dir(root())
        .args([
            "validate",
            "--instance",
            "examples/instances/small.json",
            "--schedule",
        ])
        .arg(&p)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert!(
        v["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["kind"] == "gpu_double_booked"),
        "{v}"
    );
}

#[test]
fn perf_answers_what_if_in_data_units() {
    let run = |args: &[&str]| {
        let out = Command::new(coda_bin()).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let packed = run(&[
        "perf",
        "--model",
        "imagenet",
        "--workers",
        "8",
        "--placement",
        "8",
        "--gpu",
        "v100",
        "--json",
    ]);
    let spread = run(&[
        "perf",
        "--model",
        "imagenet",
        "--workers",
        "8",
        "--placement",
        "4,2,2",
        "--gpu",
        "v100",
        "--json",
    ]);
    assert!(packed["unit"].as_str().unwrap().starts_with("step_time"));
    assert!(spread["value"].as_f64().unwrap() > 0.0 && packed["value"].as_f64().unwrap() > 0.0);
    let ps = run(&[
        "perf",
        "--model",
        "resnet-50",
        "--workers",
        "4",
        "--ps",
        "2",
        "--json",
    ]);
    assert!(ps["unit"].as_str().unwrap().starts_with("job_speed"));
}

/// `coda perf --cluster` prices a placement on named servers as the simulator does: the DGX-1
/// has NVLink (no socket term), the generic PCIe server does; the ratio to packed on the same
/// servers is within the printed envelope; a split the servers cannot hold exits 2.
#[test]
fn perf_prices_a_placement_on_real_servers() {
    let run = |args: &[&str]| {
        let out = Command::new(coda_bin())
            .current_dir(root())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let at = |placement: &str, cluster: &str| {
        run(&[
            "perf",
            "--model",
            "yolov3",
            "--workers",
            "8",
            "--placement",
            placement,
            "--cluster",
            cluster,
            "--json",
        ])
    };
    let dgx = at("8", "2xdgx-1-v100");
    let pcie = at("8", "2x8");
    assert_eq!(dgx["cross_socket_servers"], 0);
    assert_eq!(pcie["cross_socket_servers"], 1);
    assert!(pcie["step_time_s"].as_f64().unwrap() > dgx["step_time_s"].as_f64().unwrap());
    // Packed is itself.
    assert_eq!(dgx["ratio_to_packed"].as_f64().unwrap(), 1.0);
    let split = at("4,4", "2xdgx-1-v100");
    let r = split["ratio_to_packed"].as_f64().unwrap();
    let (lo, hi) = (
        split["envelope"][0].as_f64().unwrap(),
        split["envelope"][1].as_f64().unwrap(),
    );
    assert!(lo <= r && r <= hi, "{r} outside [{lo}, {hi}]");
    // Each half still all-reduces inside its server.
    assert!(split["speed"]["intra_comm_s"].as_f64().unwrap() > 0.0);
    let out = Command::new(coda_bin())
        .current_dir(root())
        .args([
            "perf",
            "--model",
            "yolov3",
            "--workers",
            "12",
            "--placement",
            "12",
            "--cluster",
            "2xdgx-1-v100",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has 8 GPUs"));
}

#[test]
fn perf_unknown_model_and_bad_placement_exit_two() {
    let out = Command::new(coda_bin())
        .args(["perf", "--model", "nope", "--workers", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown model `nope`"));
    let out = Command::new(coda_bin())
        .args([
            "perf",
            "--model",
            "imagenet",
            "--workers",
            "4",
            "--placement",
            "2,1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn failed_calibration_leaves_existing_output_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("params.json");
    std::fs::write(&out_file, "precious").unwrap();
    // A datasets folder whose DL2 table has a malformed value.
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    for f in std::fs::read_dir(root().join("datasets")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, data.join(f.file_name().unwrap())).unwrap();
    }
    let dl2 = data.join("dl2_ps_worker_speed.csv");
    let text = std::fs::read_to_string(&dl2)
        .unwrap()
        .replacen("15.783", "fast", 1);
    std::fs::write(&dl2, text).unwrap();
    let out = Command::new(coda_bin())
        .args(["calibrate", "--datasets"])
        .arg(&data)
        .arg("--out")
        .arg(&out_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dl2_ps_worker_speed.csv:2") && err.contains("job_speed"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "precious");
}

#[test]
fn generate_is_deterministic() {
    let run = || {
        Command::new(coda_bin())
            .args(["generate", "--servers", "3", "--jobs", "6", "--seed", "42"])
            .output()
            .unwrap()
            .stdout
    };
    let a = run();
    assert!(!a.is_empty());
    assert_eq!(a, run());
}

/// Runs `coda ARGS --out DIR` from the repository root.
fn coda_to(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    Command::new(coda_bin())
        .current_dir(root())
        .args(args)
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn simulate_json_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = coda_to(
        &[
            "simulate",
            "--trace",
            "philly",
            "--take",
            "60",
            "--cluster",
            "2x8",
            "--policy",
            "tiresias",
            "--json",
            "--quiet",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "avg_jct_s",
        "p99_jct_s",
        "makespan_s",
        "gpu_utilization",
        "jobs_finished",
        "jobs_unfinished",
        "events_per_s",
    ] {
        assert!(v[key].is_number(), "{key} in {v}");
    }
    assert_eq!(v["jobs_total"], 60);
    for f in [
        "metrics.json",
        "jobs.csv",
        "utilization.csv",
        "jct_cdf.svg",
        "utilization.svg",
    ] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    let jobs = std::fs::read_to_string(dir.path().join("jobs.csv")).unwrap();
    assert_eq!(jobs.lines().count(), 61);
}

#[test]
fn compare_writes_one_table_and_one_plot() {
    let dir = tempfile::tempdir().unwrap();
    let out = coda_to(
        &[
            "compare",
            "--trace",
            "itp-cluster06",
            "--take",
            "40",
            "--cluster",
            "2x8",
            "--policies",
            "fifo,optimus",
            "--quiet",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = std::fs::read_to_string(dir.path().join("comparison.csv")).unwrap();
    assert_eq!(table.lines().count(), 3);
    assert!(table.contains("\nfifo,itp-cluster06,2x8,16,") && table.contains("\noptimus,"));
    assert!(dir.path().join("jct_cdf.svg").is_file());
    assert!(dir.path().join("optimus/jobs.csv").is_file());
}

#[test]
fn simulate_rejects_unknown_policy_and_bad_cluster() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, needle) in [
        (vec!["--policy", "lottery"], "lottery"),
        (vec!["--policy", "fifo", "--cluster", "8xeight"], "cluster"),
        (
            vec![
                "--policy",
                "fifo",
                "--track-from",
                "0.9",
                "--track-to",
                "0.1",
            ],
            "above --track-from 0.9",
        ),
    ] {
        let mut args = vec!["simulate", "--trace", "philly", "--take", "5", "--quiet"];
        args.extend(&extra);
        let out = coda_to(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
    assert!(
        !dir.path().join("metrics.json").exists(),
        "nothing written on bad input"
    );
}

/// `coda bench-sim`: every replay of the sweep is a real one (its jobs finish, rounds are
/// counted, its own process's memory is read), and one CSV row per replay.
#[test]
fn bench_sim_writes_one_measured_row_per_replay() {
    let dir = tempfile::tempdir().unwrap();
    let out = coda_to(
        &[
            "bench-sim",
            "--jobs",
            "15,30",
            "--servers",
            "2",
            "--policies",
            "fifo,pollux",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.path().join("bench_sim.csv")).unwrap();
    let mut rows = csv::Reader::from_reader(text.as_bytes());
    let head = rows.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(&r[col("status")], "done");
        assert!(r[col("rounds")].parse::<u64>().unwrap() > 0);
        assert!(r[col("avg_jct_h")].parse::<f64>().unwrap() > 0.0);
        assert!(r[col("wall_s")].parse::<f64>().unwrap() > 0.0);
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(r[col("peak_rss_mib")].parse::<f64>().unwrap() > 1.0);
        }
    }
    assert!(dir.path().join("bench_sim.svg").is_file());
    // The fitted exponents are printed for each policy.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("| fifo | 2 servers (in jobs) |"),
        "{stdout}"
    );
}
