//! Core speed: loading the shipped traces, validating and pricing a 1,000-server schedule, and
//! one round of each heuristic baseline on a loaded 64-server snapshot.
//! Run: `cargo bench --bench core`. Criterion reports what it measured on this machine.

use std::hint::black_box;
use std::path::PathBuf;

use coda::workload::trace::{self, TraceFilter, TraceFormat, TraceOptions};
use coda::workload::{GenerateOptions, current_schedule, generate};
use coda::{CalibratedPerf, perf};
use criterion::{Criterion, criterion_group, criterion_main};

fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets")
}

fn traces(c: &mut Criterion) {
    let perf = CalibratedPerf::shipped();
    for f in [TraceFormat::Philly, TraceFormat::Itp, TraceFormat::Alibaba] {
        let path = datasets().join(f.shipped_file());
        c.bench_function(&format!("trace_load/{f:?}"), |b| {
            b.iter(|| black_box(trace::load(&path, f, &TraceFilter::default()).unwrap()))
        });
        let t = trace::load(&path, f, &TraceFilter::default()).unwrap();
        c.bench_function(&format!("trace_to_jobs/{f:?}"), |b| {
            b.iter(|| black_box(trace::to_jobs(&t.jobs, &TraceOptions::default(), perf).unwrap()))
        });
    }
}

fn validate_large(c: &mut Criterion) {
    let perf = CalibratedPerf::shipped();
    // 1,000 servers × 8 GPUs; 6,000 jobs all running (first-fit, minimum allocation).
    let opts = GenerateOptions {
        servers: 1_000,
        jobs: 6_000,
        seed: 1,
        running_fraction: 1.0,
        ..Default::default()
    };
    let snap = generate(&opts, perf).unwrap();
    let sched = current_schedule(&snap);
    assert!(sched.validate(&snap).is_empty());
    eprintln!(
        "1,000-server schedule: {} jobs running, {} GPUs used",
        sched.assignments.len(),
        sched.gpus_used()
    );
    c.bench_function("validate/1000_servers", |b| {
        b.iter(|| black_box(sched.validate(&snap)))
    });
    c.bench_function("speeds_in_context/1000_servers", |b| {
        b.iter(|| black_box(perf::speeds(perf, &snap, &sched).unwrap()))
    });
}

fn baseline_rounds(c: &mut Criterion) {
    let perf = CalibratedPerf::shipped();
    // 64 servers × 8 GPUs, 600 jobs of which 30 % already run: a busy Philly-sized round.
    let opts = GenerateOptions {
        servers: 64,
        jobs: 600,
        seed: 1,
        running_fraction: 0.3,
        ..Default::default()
    };
    let snap = generate(&opts, perf).unwrap();
    for name in coda::policies::PolicyKind::ALL
        .into_iter()
        .filter(|p| *p != coda::policies::PolicyKind::Ilp)
    {
        let mut policy = name
            .build(perf, &coda::policies::PolicyOptions::default())
            .unwrap();
        c.bench_function(&format!("round_64x8_600jobs/{name}"), |b| {
            b.iter(|| black_box(policy.schedule(&snap).unwrap()))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = traces, validate_large, baseline_rounds
}
criterion_main!(benches);
