//! Shipped traces load whole, and the seeded model assignment is deterministic and faithful.

use coda::CalibratedPerf;
use coda::workload::trace::{self, TraceFilter, TraceFormat, TraceOptions};

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
        .filter(|j| j.arch == coda::model::Architecture::ParameterServer)
        .count() as f64
        / a.len() as f64;
    assert!((ps - 0.25).abs() < 0.02, "{ps}");
}

/// The trace-consistency contract: every distinct (model, allocation) among a trace's first
/// jobs, replayed alone on the trace's default cluster by FIFO (the packer's consolidated
/// placement, PS round-robin on the worker servers), runs exactly its trace duration — PS and
/// all-reduce jobs, every shipped trace.
#[test]
fn replayed_alone_every_trace_job_takes_its_trace_duration() {
    use coda::sim::Simulator;
    use coda::workload;
    let perf = CalibratedPerf::shipped();
    for (name, format, group) in [
        ("philly", TraceFormat::Philly, None),
        ("itp-cluster02", TraceFormat::Itp, Some("cluster02")),
        ("itp-cluster06", TraceFormat::Itp, Some("cluster06")),
        ("alibaba", TraceFormat::Alibaba, None),
    ] {
        let take = 1500;
        let w = workload::load(
            workload::TraceRef {
                name,
                datasets: &datasets(),
                cluster: None,
                take: Some(take),
            },
            &TraceOptions::default(),
            perf,
        )
        .unwrap();
        let rows = trace::load(
            &datasets().join(format.shipped_file()),
            format,
            &TraceFilter {
                group: group.map(str::to_string),
            },
        )
        .unwrap();
        let mut seen = std::collections::HashSet::new();
        let (mut ps, mut ar, mut multi) = (0, 0, 0);
        for (row, job) in rows.jobs.iter().zip(&w.jobs) {
            let r = job.requested.unwrap();
            if !seen.insert((job.model.clone(), r.workers, r.ps)) {
                continue;
            }
            let mut alone = job.clone();
            alone.arrival_s = 0.0;
            let mut sim = Simulator::builder(perf, w.cluster.clone(), vec![alone])
                .build()
                .unwrap();
            let mut fifo = coda::policies::PolicyKind::Fifo
                .build(perf, &coda::policies::PolicyOptions::default())
                .unwrap();
            sim.run(fifo.as_mut()).unwrap();
            let rec = &sim.records()[0];
            let ran = rec.finish_s.unwrap() - rec.first_start_s.unwrap();
            assert!(
                (ran - row.duration_s).abs() <= 1e-6 * row.duration_s + 1e-5,
                "{name}: {} with {} workers / {} PS ran {ran} s, trace {} s",
                job.model,
                r.workers,
                r.ps,
                row.duration_s
            );
            if r.ps > 0 {
                ps += 1;
            } else {
                ar += 1;
            }
            if r.workers > 1 {
                multi += 1;
            }
        }
        assert!(
            ps > 3 && ar > 3 && multi > 3,
            "{name}: {ps} PS, {ar} AR, {multi} multi-GPU"
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
