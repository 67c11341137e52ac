//! Bad input: every kind gives a typed error naming where it is, never a panic.

use std::io::Write;
use std::path::PathBuf;

use coda::workload::trace::{self, TraceFilter, TraceFormat};
use coda::{CalibratedPerf, ClusterSnapshot, Error, PerfModel};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p
}

fn load_philly(text: &str) -> coda::Result<trace::Trace> {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "philly.csv", text);
    trace::load(&p, TraceFormat::Philly, &TraceFilter::default())
}

const PHILLY_HEADER: &str = "timestamp,submit_offset_s,duration,num_gpus,gpu_time,cluster\n";

fn field_error(r: coda::Result<trace::Trace>, line: u64, field: &str) {
    match r {
        Err(Error::InvalidField {
            line: l,
            field: f,
            file,
            ..
        }) => {
            assert_eq!((l, f.as_str()), (line, field));
            assert!(file.ends_with(".csv"), "{file}");
        }
        other => panic!("expected InvalidField at line {line} field {field}, got {other:?}"),
    }
}

#[test]
fn negative_duration() {
    let r = load_philly(&format!(
        "{PHILLY_HEADER}2017-10-23 00:01:40,100,50,1,50,a\n2017-10-23 00:01:40,100,-5,1,50,a\n"
    ));
    field_error(r, 3, "duration");
}

#[test]
fn nan_duration() {
    let r = load_philly(&format!(
        "{PHILLY_HEADER}2017-10-23 00:01:40,100,NaN,1,50,a\n"
    ));
    field_error(r, 2, "duration");
}

#[test]
fn zero_duration() {
    let r = load_philly(&format!("{PHILLY_HEADER}2017-10-23 00:01:40,100,0,1,0,a\n"));
    field_error(r, 2, "duration");
}

#[test]
fn zero_and_fractional_gpu_counts() {
    field_error(
        load_philly(&format!("{PHILLY_HEADER}x,100,10,0,0,a\n")),
        2,
        "num_gpus",
    );
    field_error(
        load_philly(&format!("{PHILLY_HEADER}x,100,10,1.5,0,a\n")),
        2,
        "num_gpus",
    );
    field_error(
        load_philly(&format!("{PHILLY_HEADER}x,100,10,-2,0,a\n")),
        2,
        "num_gpus",
    );
}

#[test]
fn unparsable_number() {
    field_error(
        load_philly(&format!("{PHILLY_HEADER}x,soon,10,1,10,a\n")),
        2,
        "submit_offset_s",
    );
}

#[test]
fn missing_column() {
    match load_philly("timestamp,submit_offset_s,num_gpus,cluster\nx,1,1,a\n") {
        Err(Error::MissingColumn { column, .. }) => assert_eq!(column, "duration"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_row_wrong_field_count() {
    match load_philly(&format!("{PHILLY_HEADER}x,1,10,1,10,a\nx,1,10\n")) {
        Err(Error::MalformedRow { line, .. }) => assert_eq!(line, 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn itp_and_alibaba_bad_rows() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "itp.csv",
        "cluster,job_id,submission_time,duration,num_gpu\nc,a,1,100,1\nc,b,2,-1,1\n",
    );
    assert!(
        matches!(trace::load(&p, TraceFormat::Itp, &TraceFilter::default()),
        Err(Error::InvalidField { line: 3, ref field, .. }) if field == "duration")
    );
    let p = write(
        &dir,
        "ali.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
         p0,1000,100,1,1000,,LS,Running,0,10,0\np1,1000,100,-1,1000,,LS,Running,0,10,0\n",
    );
    assert!(
        matches!(trace::load(&p, TraceFormat::Alibaba, &TraceFilter::default()),
        Err(Error::InvalidField { line: 3, ref field, .. }) if field == "num_gpu")
    );
}

#[test]
fn unknown_trace_format_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "x.csv", "a,b\n1,2\n");
    assert!(matches!(
        TraceFormat::detect(&p),
        Err(Error::MissingColumn { .. })
    ));
}

fn snapshot_json(servers: &str, jobs: &str) -> String {
    format!(r#"{{"time_s": 0, "cluster": {{"servers": [{servers}]}}, "jobs": [{jobs}]}}"#)
}

const SERVER: &str = r#"{"name": "n0", "gpu_type": "v100", "topology": [[2, 2]], "cpu_cores": 24, "memory_gib": 256, "nic_gbps": 100}"#;

fn job(id: u64, model: &str, gpus_per_worker: u32, min_workers: u32, total: &str) -> String {
    format!(
        r#"{{"id": {id}, "arrival_s": 0, "model": "{model}", "arch": "AllReduce", "total_iterations": {total},
        "demand": {{"gpus_per_worker": {gpus_per_worker}, "cpu_per_worker": 1, "mem_per_worker_gib": 1, "cpu_per_ps": 0, "mem_per_ps_gib": 0}},
        "workers": {{"min": {min_workers}, "max": 8}}, "ps": {{"min": 0, "max": 0}}}}"#
    )
}

#[test]
fn valid_instance_parses() {
    let s = ClusterSnapshot::from_json_str(
        &snapshot_json(SERVER, &job(1, "imagenet", 1, 1, "100")),
        "t.json",
    )
    .unwrap();
    assert_eq!(s.jobs.len(), 1);
}

#[test]
fn malformed_json_names_line_and_column() {
    let text = "{\n  \"time_s\": 0,\n  \"cluster\": {\"servers\": [}\n}";
    match ClusterSnapshot::from_json_str(text, "bad.json") {
        Err(Error::Json { file, line, .. }) => {
            assert_eq!(file, "bad.json");
            assert_eq!(line, 3);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_type_names_the_field_path() {
    let text = snapshot_json(SERVER, &job(1, "imagenet", 1, 1, "\"many\""));
    match ClusterSnapshot::from_json_str(&text, "t.json") {
        Err(Error::Json { field, .. }) => assert!(field.contains("jobs[0]"), "{field}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn negative_and_zero_work_rejected_with_field() {
    for total in ["-3", "0"] {
        let text = snapshot_json(SERVER, &job(1, "imagenet", 1, 1, total));
        match ClusterSnapshot::from_json_str(&text, "t.json") {
            Err(Error::Json {
                message,
                field,
                line,
                ..
            }) => {
                assert!(message.contains("total_iterations"), "{message}");
                assert!(field.starts_with("jobs"), "{field}");
                assert!(line >= 1);
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A job's history (restarts, GPU-seconds held, seconds waited) is optional, written only
/// where it is not zero, read back as written, and a negative value is refused with its field.
#[test]
fn job_history_round_trips_and_bad_values_name_the_field() {
    let plain = ClusterSnapshot::from_json_str(
        &snapshot_json(SERVER, &job(1, "imagenet", 1, 1, "100")),
        "t.json",
    )
    .unwrap();
    assert_eq!(plain.jobs[0].run, coda::model::RunState::default());
    assert!(!serde_json::to_string(&plain).unwrap().contains("restarts"));
    let with = job(1, "imagenet", 1, 1, "100").replace(
        r#""arrival_s": 0,"#,
        r#""arrival_s": 0, "restarts": 2, "attained_gpu_s": 3600.5, "waited_s": 90,"#,
    );
    let s = ClusterSnapshot::from_json_str(&snapshot_json(SERVER, &with), "t.json").unwrap();
    let run = &s.jobs[0].run;
    assert_eq!(
        (run.restarts, run.attained_gpu_s, run.waited_s),
        (2, 3600.5, 90.0)
    );
    let back =
        ClusterSnapshot::from_json_str(&serde_json::to_string(&s).unwrap(), "back.json").unwrap();
    assert_eq!(back.jobs[0].run, *run);
    for field in ["attained_gpu_s", "waited_s"] {
        let bad = job(1, "imagenet", 1, 1, "100").replace(
            r#""arrival_s": 0,"#,
            &format!(r#""arrival_s": 0, "{field}": -1,"#),
        );
        match ClusterSnapshot::from_json_str(&snapshot_json(SERVER, &bad), "t.json") {
            Err(Error::Json { message, .. }) => assert!(message.contains(field), "{message}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn empty_cluster_rejected() {
    match ClusterSnapshot::from_json_str(&snapshot_json("", ""), "e.json") {
        Err(Error::EmptyCluster { what, .. }) => assert_eq!(what, "servers"),
        other => panic!("{other:?}"),
    }
    let no_gpu = SERVER.replace("[[2, 2]]", "[[0]]");
    match ClusterSnapshot::from_json_str(&snapshot_json(&no_gpu, ""), "e.json") {
        Err(Error::EmptyCluster { what, .. }) => assert_eq!(what, "GPUs"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn job_larger_than_any_server_rejected() {
    // 8 GPUs per worker; the only server has 4.
    match ClusterSnapshot::from_json_str(
        &snapshot_json(SERVER, &job(7, "imagenet", 8, 1, "10")),
        "big.json",
    ) {
        Err(Error::JobTooLarge { job, .. }) => assert_eq!(job, coda::model::JobId(7)),
        other => panic!("{other:?}"),
    }
    // Fits per worker, but its smallest allocation (5 workers × 1 GPU) exceeds the cluster.
    match ClusterSnapshot::from_json_str(
        &snapshot_json(SERVER, &job(8, "imagenet", 1, 5, "10")),
        "big.json",
    ) {
        Err(Error::JobTooLarge { job, .. }) => assert_eq!(job, coda::model::JobId(8)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn duplicate_job_ids_rejected() {
    let jobs = format!(
        "{},{}",
        job(1, "imagenet", 1, 1, "10"),
        job(1, "ncf", 1, 1, "10")
    );
    assert!(matches!(
        ClusterSnapshot::from_json_str(&snapshot_json(SERVER, &jobs), "d.json"),
        Err(Error::InvalidInstance { .. })
    ));
}

#[test]
fn unknown_model_rejected_by_perf_model() {
    let s = ClusterSnapshot::from_json_str(
        &snapshot_json(SERVER, &job(3, "gpt-9", 1, 1, "10")),
        "m.json",
    )
    .unwrap();
    match CalibratedPerf::shipped().check_job(&s.jobs[0], "m.json") {
        Err(Error::UnknownModel { model, context, .. }) => {
            assert_eq!(model, "gpt-9");
            assert!(
                context.contains("m.json") && context.contains("job 3"),
                "{context}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn architecture_mismatch_rejected() {
    // resnet-50 is a PS model in the calibration; declaring it all-reduce is an error.
    let s = ClusterSnapshot::from_json_str(
        &snapshot_json(SERVER, &job(3, "resnet-50", 1, 1, "10")),
        "m.json",
    )
    .unwrap();
    assert!(matches!(
        CalibratedPerf::shipped().check_job(&s.jobs[0], "m.json"),
        Err(Error::UnsupportedConfiguration { .. })
    ));
}

#[test]
fn missing_file_is_io_error() {
    assert!(matches!(
        ClusterSnapshot::from_json_file("/no/such/file.json"),
        Err(Error::Io { .. })
    ));
}

#[test]
fn requested_allocation_outside_the_ranges_rejected() {
    let j = job(1, "imagenet", 1, 1, "100");
    let ok = j.replacen(
        "\"ps\":",
        "\"requested\": {\"workers\": 4, \"ps\": 0}, \"ps\":",
        1,
    );
    let s = ClusterSnapshot::from_json_str(&snapshot_json(SERVER, &ok), "t.json").unwrap();
    assert_eq!(s.jobs[0].requested_or_min(), (4, 0));
    let bad = j.replacen(
        "\"ps\":",
        "\"requested\": {\"workers\": 9, \"ps\": 0}, \"ps\":",
        1,
    );
    match ClusterSnapshot::from_json_str(&snapshot_json(SERVER, &bad), "t.json") {
        Err(Error::Json { message, .. }) => assert!(message.contains("requested"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn content_after_the_instance_is_an_error_with_its_line() {
    let good = snapshot_json(SERVER, &job(1, "imagenet", 1, 1, "100"));
    assert!(ClusterSnapshot::from_json_str(&good, "t.json").is_ok());
    for extra in ["garbage", " {}", "\n\n[1]"] {
        let text = format!("{good}{extra}");
        let lines = text.lines().count();
        match ClusterSnapshot::from_json_str(&text, "t.json") {
            Err(Error::Json { line, message, .. }) => {
                assert!(line >= good.lines().count() && line <= lines, "{line}");
                assert!(message.contains("trailing"), "{message}");
            }
            other => panic!("{extra:?}: {other:?}"),
        }
    }
}

#[test]
fn an_absurd_topology_is_rejected_with_its_field_not_an_abort() {
    for topology in [
        "[[4294967295]]",
        "[[2000000000, 2000000000, 2000000000]]",
        "[[4097]]",
    ] {
        let server = SERVER.replace("[[2, 2]]", topology);
        let text = snapshot_json(&server, &job(1, "imagenet", 1, 1, "100"));
        match ClusterSnapshot::from_json_str(&text, "t.json") {
            Err(Error::InvalidField { field, .. }) => {
                assert_eq!(field, "cluster.servers[0].topology", "{topology}")
            }
            other => panic!("{topology}: {other:?}"),
        }
    }
    // The largest allowed server is accepted.
    let server = SERVER.replace("[[2, 2]]", "[[2048, 2048]]");
    let text = snapshot_json(&server, &job(1, "imagenet", 1, 1, "100"));
    assert!(ClusterSnapshot::from_json_str(&text, "t.json").is_ok());
}
