//! Random instances: deterministic, valid, and round-trip through JSON files.

use coda::workload::{GenerateOptions, generate};
use coda::{CalibratedPerf, ClusterSnapshot, PerfModel};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn generated_instances_are_valid_and_deterministic(servers in 1usize..20, jobs in 0usize..40, seed in any::<u64>()) {
        let perf = CalibratedPerf::shipped();
        let opts = GenerateOptions { servers, jobs, seed, ..Default::default() };
        let a = generate(&opts, perf).unwrap();
        let b = generate(&opts, perf).unwrap();
        prop_assert_eq!(&a, &b);
        // The constructor's checks pass again on the JSON form, and every model is priced.
        let text = serde_json::to_string(&a).unwrap();
        let back = ClusterSnapshot::from_json_str(&text, "gen").unwrap();
        prop_assert_eq!(&back, &a);
        for j in &a.jobs {
            perf.check_job(j, "gen").unwrap();
        }
        prop_assert_eq!(a.jobs.len(), jobs);
        prop_assert_eq!(a.cluster.servers.len(), servers);
    }
}

#[test]
fn instance_files_round_trip_and_write_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("i.json");
    let s = generate(
        &GenerateOptions {
            servers: 3,
            jobs: 5,
            seed: 9,
            ..Default::default()
        },
        CalibratedPerf::shipped(),
    )
    .unwrap();
    s.to_json_file(&p).unwrap();
    assert_eq!(ClusterSnapshot::from_json_file(&p).unwrap(), s);
    assert!(!dir.path().join("i.json.tmp").exists());
}

#[test]
fn shipped_example_instances_load() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/instances");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".json") && !name.contains("schedule") {
            let s = ClusterSnapshot::from_json_file(&p).unwrap();
            for j in &s.jobs {
                CalibratedPerf::shipped().check_job(j, &name).unwrap();
            }
            n += 1;
        }
    }
    assert!(n >= 2, "expected example instances");
}
