//! Hostile and careless input, command by command: every case ends — promptly — with the exit
//! status and the words that say what was wrong (or, where the input is fine, with a result).
//! Each case is a row of the robustness table in the README.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::coda_bin;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `coda ARGS` from the repository root; asserts the exit status and that stderr (or, on
/// success, stdout) holds every one of `says`. Returns stdout.
fn expect(args: &[&str], code: i32, says: &[&str]) -> String {
    let out = Command::new(coda_bin())
        .current_dir(root())
        .args(args)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert_eq!(
        out.status.code(),
        Some(code),
        "coda {args:?}\nstdout: {stdout}\nstderr: {stderr}"
    );
    let text = format!("{stdout}{stderr}");
    for s in says {
        assert!(text.contains(s), "coda {args:?}: no `{s}` in\n{text}");
    }
    assert!(!stderr.contains("panicked"), "coda {args:?}: {stderr}");
    stdout
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn instance() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("examples/instances/small.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

#[test]
fn jobs_the_cluster_can_never_run_are_refused_up_front_or_left_out_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c").display().to_string();
    // 64-GPU requests on 32 GPUs: all named at once, with the way out.
    let common = [
        "compare",
        "--trace",
        "itp-cluster06",
        "--take",
        "300",
        "--cluster",
        "4x8",
    ];
    let mut args = common.to_vec();
    args.extend(["--policies", "fifo,tiresias", "--out", &out]);
    expect(
        &args,
        2,
        &[
            "job 119 can never run",
            "jobs 119, 191, 192, 195",
            "--skip-unplaceable",
        ],
    );
    args.push("--skip-unplaceable");
    expect(
        &args,
        0,
        &[
            "4 job(s) left out as never runnable",
            "| fifo |",
            "| tiresias |",
        ],
    );
    // A PS job needs more cores than a 1-GPU server has.
    expect(
        &[
            "simulate",
            "--trace",
            "philly",
            "--cluster",
            "1x1",
            "--take",
            "10",
            "--policy",
            "fifo",
            "--out",
            &out,
        ],
        2,
        &["can never run", "cores"],
    );
    // A trace row asking a million GPUs: converted to the largest allocation its model's
    // measurements cover, then placed (or refused) like any other job.
    let csv = write(
        dir.path(),
        "huge.csv",
        "timestamp,submit_offset_s,duration,num_gpus,gpu_time,cluster\n\
         x,0,600,1,600,a\nx,10,600,1000000,600,a\n",
    );
    let jobs = dir.path().join("jobs.json");
    let jobs_s = jobs.display().to_string();
    expect(
        &["trace", "--trace", &csv, "--out", &jobs_s],
        0,
        &["2 jobs"],
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&jobs).unwrap()).unwrap();
    let asked = v[1]["requested"]["workers"].as_u64().unwrap();
    assert!((1..=64).contains(&asked), "{asked}");
    expect(
        &[
            "simulate", "--trace", &csv, "--policy", "fifo", "--out", &out,
        ],
        0,
        &["| fifo |"],
    );
}

#[test]
fn limits_that_would_never_end_a_run_are_refused_with_the_argument_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s").display().to_string();
    let sim = |extra: &[&str], says: &[&str]| {
        let mut a = vec![
            "simulate", "--trace", "philly", "--take", "3", "--out", &out,
        ];
        a.extend(extra);
        expect(&a, 2, says);
    };
    sim(
        &["--policy", "ilp", "--ilp-node-limit", "0"],
        &["'--ilp-node-limit <ILP_NODE_LIMIT>'", ">= 1"],
    );
    sim(
        &["--policy", "fifo", "--round-s", "1e-9"],
        &["'--round-s <ROUND_S>'"],
    );
    sim(
        &["--policy", "fifo", "--round-s", "1e300"],
        &["'--round-s <ROUND_S>'"],
    );
    sim(
        &["--policy", "fifo", "--restart-s", "1000"],
        &["`--restart-s` = 1000", "at most --round-s 300"],
    );
    sim(
        &["--policy", "fifo", "--track-to", "2"],
        &["'--track-to <TRACK_TO>'", "[0, 1]"],
    );
    sim(
        &["--policy", "fifo", "--track-to", "0.05"],
        &["`--track-to` = 0.05", "above --track-from 0.1"],
    );
    // A duration of 1e300 s: refused at its line and field.
    let csv = write(
        dir.path(),
        "long.csv",
        "timestamp,submit_offset_s,duration,num_gpus,gpu_time,cluster\nx,0,1e300,1,600,a\n",
    );
    expect(
        &[
            "simulate", "--trace", &csv, "--policy", "fifo", "--out", &out,
        ],
        2,
        &[":2: field `duration`", "at most"],
    );
    // A solver stopped before it can improve on anything, every round: said plainly, the
    // start (here the heuristics' schedule) is used, and every job finishes.
    let o = expect(
        &[
            "simulate",
            "--trace",
            "philly",
            "--take",
            "3",
            "--policy",
            "ilp",
            "--ilp-time-limit",
            "0.0001",
            "--out",
            &out,
        ],
        0,
        &["round(s): the solver did not beat its start, which was used"],
    );
    assert!(!o.contains("stalled"), "{o}");
    // The `unfinished` column of the `ilp` row (the second to last).
    let row: Vec<&str> = o
        .lines()
        .find(|l| l.starts_with("| ilp |"))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(row[row.len() - 3], "0", "every job finishes: {o}");
}

#[test]
fn sizes_are_checked_before_anything_is_allocated_by_them() {
    let dir = tempfile::tempdir().unwrap();
    expect(
        &["generate", "--servers", "4294967296", "--jobs", "3"],
        2,
        &["'--servers <SERVERS>'", "[1, 1000000]"],
    );
    expect(
        &[
            "generate",
            "--servers",
            "2",
            "--jobs",
            "2",
            "--running-fraction",
            "2",
        ],
        2,
        &["'--running-fraction <RUNNING_FRACTION>'", "[0, 1]"],
    );
    // workers.max = u32::MAX: the options, and so the build, are bounded by the cluster.
    let mut v = instance();
    v["jobs"][0]["workers"]["max"] = serde_json::json!(4294967295u64);
    let big = write(dir.path(), "big.json", &pretty(&v));
    expect(
        &["solve", "--instance", &big, "--time-limit", "30"],
        0,
        &["status      Optimal"],
    );
}

#[test]
fn solver_limits_and_statuses_mean_what_they_say() {
    let inst = root()
        .join("examples/instances/small.json")
        .display()
        .to_string();
    expect(
        &["solve", "--instance", &inst, "--node-limit", "0"],
        1,
        &[
            "(returned: the solver did not beat it)",
            "no schedule was found within the limits beyond its start",
        ],
    );
    expect(
        &["solve", "--instance", &inst, "--time-limit", "inf"],
        0,
        &["status      Optimal"],
    );
    expect(
        &["solve", "--instance", &inst, "--time-limit", "0"],
        2,
        &["'--time-limit <TIME_LIMIT>'", "`inf` for no limit"],
    );
    // A gap of 1 accepts the first schedule: optimal only if the gap is proven within 1e-6.
    let o = expect(
        &["solve", "--instance", &inst, "--gap", "1", "--json"],
        0,
        &[],
    );
    let v: serde_json::Value = serde_json::from_str(&o).unwrap();
    let gap = v["gap"].as_f64().unwrap();
    let status = v["status"].as_str().unwrap();
    assert_eq!(
        status == "optimal",
        gap <= 1e-6 * 1.0001,
        "{status} at gap {gap}"
    );
}

#[test]
fn values_out_of_range_name_the_argument() {
    for (args, says) in [
        (
            vec![
                "perf",
                "--model",
                "resnet-50",
                "--workers",
                "4",
                "--ps",
                "2",
                "--ps-local",
                "1.5",
            ],
            "'--ps-local <PS_LOCAL>'",
        ),
        (
            vec![
                "perf",
                "--model",
                "imagenet",
                "--workers",
                "4",
                "--batch",
                "0",
            ],
            "'--batch <BATCH>'",
        ),
        (
            vec!["perf", "--model", "imagenet", "--workers", "0"],
            "'--workers <WORKERS>'",
        ),
        (
            vec![
                "perf",
                "--model",
                "imagenet",
                "--workers",
                "2",
                "--cross-socket",
                "3",
            ],
            "`cross_socket`",
        ),
        (
            vec!["solve", "--instance", "x.json", "--threads", "0"],
            "'--threads <THREADS>'",
        ),
        (
            vec!["bench-solve", "--time-limit=-1"],
            "'--time-limit <TIME_LIMIT>'",
        ),
    ] {
        expect(&args, 2, &[says]);
    }
}

#[test]
fn files_are_validated_at_load_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    // An unknown GPU type, at its own line.
    let mut v = instance();
    v["cluster"]["servers"][1]["gpu_type"] = serde_json::json!("V100");
    let text = pretty(&v);
    let line = 1 + text[..text.find("\"V100\"").unwrap()].matches('\n').count();
    let p = write(dir.path(), "v100.json", &text);
    expect(
        &["solve", "--instance", &p],
        2,
        &[
            &format!("v100.json:{line}: field `cluster.servers[1].gpu_type` = \"V100\""),
            "unknown GPU type (known: a100",
        ],
    );
    // A server's bad field: its own line, not line 0.
    let mut v = instance();
    v["cluster"]["servers"][0]["cpu_cores"] = serde_json::json!(-1.0);
    let text = pretty(&v);
    let line = 1 + text[..text.find("-1.0").unwrap()].matches('\n').count();
    let p = write(dir.path(), "cpu.json", &text);
    expect(
        &["validate", "--instance", &p, "--schedule", &p],
        2,
        &[&format!(
            "cpu.json:{line}: field `cluster.servers[0].cpu_cores`"
        )],
    );
    // Trailing content after the instance.
    let p = write(
        dir.path(),
        "trail.json",
        &format!("{}\n{{}}", pretty(&instance())),
    );
    expect(&["solve", "--instance", &p], 2, &["(after the value)"]);
    // Parameter files: a negative θ, a zero bandwidth.
    let params: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("models/perf_params.json")).unwrap(),
    )
    .unwrap();
    let model = params["ps_models"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    for (field, value, says) in [
        (
            "theta",
            serde_json::json!([-1.0, 0.0, 0.0, 0.0, 0.0]),
            "theta[0]",
        ),
        (
            "inter_server_bw_mbps",
            serde_json::json!(0.0),
            "inter_server_bw_mbps",
        ),
    ] {
        let mut p = params.clone();
        p["ps_models"][&model][field] = value;
        let f = write(dir.path(), "params.json", &pretty(&p));
        expect(
            &["--params", &f, "perf", "--list"],
            2,
            &[&format!("field `ps_models.{model}.{says}`"), "must be in"],
        );
    }
}

#[test]
fn names_are_consistent_across_commands_and_wrong_ones_list_the_right_ones() {
    expect(&["trace", "--trace", "itp-cluster06"], 0, &["2396 jobs"]);
    expect(
        &["trace", "--trace", "itp-cluster6"],
        2,
        &[
            "unknown trace `itp-cluster6`",
            "philly, itp-cluster02, itp-cluster06, itp, alibaba",
        ],
    );
    expect(
        &["trace", "--trace", "itp", "--group", "nosuch"],
        2,
        &["unknown group `nosuch`", "cluster02, cluster06"],
    );
}

#[test]
fn outputs_that_cannot_be_written_fail_before_the_work_and_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let inst = root()
        .join("examples/instances/small.json")
        .display()
        .to_string();
    let bad = dir
        .path()
        .join("no/such/folder/s.json")
        .display()
        .to_string();
    let out = expect(&["solve", "--instance", &inst, "--out", &bad], 2, &[&bad]);
    // Failed before the solve: nothing of it printed.
    assert!(!out.contains("status"), "{out}");
    expect(
        &["generate", "--servers", "2", "--jobs", "2", "--out", &bad],
        2,
        &[&bad],
    );
    let empty = tempfile::tempdir().unwrap();
    let folder = empty.path().display().to_string();
    expect(
        &["bench-solve", "--instances", &folder, "--out", &folder],
        2,
        &["no *.json instance"],
    );
    assert!(!empty.path().join("solve_scaling.csv").exists());
    let _ = std::fs::remove_dir_all(dir.path());
}

/// A snapshot built in code is checked by every entry point as a file is: a policy handed
/// duplicate ids or NaN work answers with an error naming the problem, not a panic or a schedule.
#[test]
fn entry_points_check_snapshots_built_in_code() {
    let perf = coda::CalibratedPerf::shipped();
    let good = coda::ClusterSnapshot::from_json_file(root().join("examples/instances/small.json"))
        .unwrap();
    let mut dup = good.clone();
    let copy = dup.jobs[0].clone();
    dup.jobs.push(copy);
    dup.reindex();
    let mut nan = good.clone();
    nan.jobs[1].total_iterations = f64::NAN;
    for name in coda::policies::PolicyKind::ALL.map(coda::policies::PolicyKind::name) {
        let mut p = name
            .parse::<coda::policies::PolicyKind>()
            .unwrap()
            .build(perf, &coda::policies::PolicyOptions::default())
            .unwrap();
        let e = p.schedule(&dup).unwrap_err().to_string();
        assert!(e.contains("duplicate job id"), "{name}: {e}");
        let e = p.schedule(&nan).unwrap_err().to_string();
        assert!(e.contains("jobs[1].total_iterations"), "{name}: {e}");
    }
    let e = coda::Objective::default()
        .score(perf, &nan, &coda::Schedule::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("jobs[1].total_iterations"), "{e}");
}
