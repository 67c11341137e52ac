//! Build and solve time of the round program against cluster size (criterion).
//! `cargo bench --bench solve`. The CLI twin, `coda bench-solve`, writes the same as CSV + SVG
//! for sizes whose solves take too long to repeat here.

use std::hint::black_box;

use coda::ilp::SolveRequest;
use coda::{CalibratedPerf, Objective};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn build(c: &mut Criterion) {
    let perf = CalibratedPerf::shipped();
    let mut g = c.benchmark_group("build");
    for (servers, jobs) in [(2, 4), (4, 8), (8, 16), (16, 32)] {
        let snap = coda::workload::scaling_instance(servers, jobs, 1, perf).unwrap();
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("{servers}x8gpu_{jobs}jobs")),
            &snap,
            |b, s| {
                b.iter(|| {
                    // Pricing the round, checking it and building the program.
                    black_box(
                        SolveRequest::new(s, perf, Objective::default())
                            .and_then(|r| r.build())
                            .unwrap(),
                    )
                })
            },
        );
    }
    g.finish();
}

fn solve(c: &mut Criterion) {
    let perf = CalibratedPerf::shipped();
    let mut g = c.benchmark_group("build_and_solve");
    g.sample_size(10);
    for (servers, jobs) in [(1, 2), (2, 4), (3, 6)] {
        let snap = coda::workload::scaling_instance(servers, jobs, 1, perf).unwrap();
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("{servers}x8gpu_{jobs}jobs")),
            &snap,
            |b, s| {
                b.iter(|| {
                    black_box(
                        SolveRequest::new(s, perf, Objective::default())
                            .and_then(|r| r.solve())
                            .unwrap(),
                    )
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, build, solve);
criterion_main!(benches);
