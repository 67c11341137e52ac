//! Shipped traces load whole, and the seeded model assignment is deterministic and faithful.

use coda::trace::{self, TraceFilter, TraceFormat, TraceOptions};
use coda::{CalibratedPerf, JobQuery, PerfModel, PlacementShape};

use crate::common::datasets;

fn load(f: TraceFormat) -> trace::Trace {
    trace::load(
        &datasets().join(f.shipped_file()),
        f,
        &TraceFilter::default(),
    )
    .unwrap()
}

#[test]
fn shipped_traces_load_with_documented_row_counts() {
    assert_eq!(load(TraceFormat::Philly).jobs.len(), 5_745);
    assert_eq!(load(TraceFormat::Itp).jobs.len(), 8_174);
    let a = load(TraceFormat::Alibaba);
    let skipped: usize = a.skipped.iter().map(|(_, n)| n).sum();
    assert_eq!(
        a.jobs.len() + skipped,
        8_152,
        "every pod is kept or counted as skipped"
    );
    let itp02 = trace::load(
        &datasets().join(TraceFormat::Itp.shipped_file()),
        TraceFormat::Itp,
        &TraceFilter {
            group: Some("cluster02".into()),
        },
    )
    .unwrap();
    assert_eq!(itp02.jobs.len(), 5_778);
}

#[test]
fn arrivals_sorted_and_start_at_zero() {
    for f in [TraceFormat::Philly, TraceFormat::Itp, TraceFormat::Alibaba] {
        let t = load(f);
        assert_eq!(t.jobs[0].arrival_s, 0.0);
        assert!(t.jobs.windows(2).all(|w| w[0].arrival_s <= w[1].arrival_s));
    }
}

#[test]
fn model_assignment_is_seeded() {
    let t = load(TraceFormat::Philly);
    let perf = CalibratedPerf::shipped();
    let jobs = |seed| {
        trace::to_jobs(
            &t.jobs,
            &TraceOptions {
                seed,
                ..Default::default()
            },
            perf,
        )
        .unwrap()
    };
    let (a, b, c) = (jobs(1), jobs(1), jobs(2));
    assert_eq!(a, b);
    assert_ne!(a, c);
    // The PS share follows the option (25 % ± 2 % over 5,745 draws).
    let ps = a
        .iter()
        .filter(|j| j.arch == coda::Architecture::ParameterServer)
        .count() as f64
        / a.len() as f64;
    assert!((ps - 0.25).abs() < 0.02, "{ps}");
}

#[test]
fn replaying_a_job_with_its_trace_allocation_takes_its_trace_duration() {
    let t = load(TraceFormat::Itp);
    let perf = CalibratedPerf::shipped();
    let opts = TraceOptions::default();
    let jobs = trace::to_jobs(&t.jobs[..500], &opts, perf).unwrap();
    for (row, job) in t.jobs.iter().zip(&jobs) {
        let (max_w, max_p) = perf.max_tasks(&job.model).unwrap();
        let w = row.num_gpus.min(max_w);
        let p = if job.ps.max > 0 { w.min(max_p) } else { 0 };
        let shape = PlacementShape::isolated(w, p, trace::packed(w, opts.gpus_per_server));
        let s = perf
            .speed(&JobQuery::of(job), &opts.reference_gpu, &shape)
            .unwrap();
        let replay = job.total_iterations / s.iterations_per_s;
        assert!(
            (replay - row.duration_s).abs() / row.duration_s < 1e-9,
            "{replay} vs {}",
            row.duration_s
        );
    }
}

#[test]
fn a_round_cut_from_a_trace_is_a_valid_instance() {
    let t = load(TraceFormat::Philly);
    let jobs =
        trace::to_jobs(&t.jobs, &TraceOptions::default(), CalibratedPerf::shipped()).unwrap();
    let s = trace::round_snapshot(&jobs, 100, 16, 8).unwrap();
    assert_eq!(s.jobs.len(), 16);
    assert_eq!(s.cluster.num_gpus(), 64);
    assert_eq!(
        s.time_s,
        s.jobs.iter().map(|j| j.arrival_s).fold(0.0, f64::max)
    );
    assert!(coda::Schedule::default().validate(&s).is_empty());
}
