//! Replay a trace under two policies and print the comparison.
//!
//! `cargo run --release --example replay_two_policies [-- TRACE JOBS]` (default: the first 300
//! jobs of the Philly window on 4 servers of 8 V100, FIFO against Pollux-style; about a second).

use std::path::Path;

use coda::CalibratedPerf;
use coda::policies::{PolicyKind, PolicyOptions};
use coda::sim::{self, SimConfig, Simulator};
use coda::workload::{self, trace::TraceOptions};

fn main() -> coda::Result<()> {
    let mut args = std::env::args().skip(1);
    let trace = args.next().unwrap_or_else(|| "philly".into());
    let take: usize = args.next().map_or(300, |n| n.parse().unwrap_or(300));
    let perf = CalibratedPerf::shipped();
    // The trace's jobs, durations converted on the replay cluster itself (a job alone takes its
    // trace duration), models assigned from seed 0.
    let wl = workload::load(
        workload::TraceRef {
            name: &trace,
            datasets: Path::new("datasets"),
            cluster: Some("4x8"),
            take: Some(take),
        },
        &TraceOptions::default(),
        perf,
    )?;
    // The contention the trace's durations already contain, measured by a FIFO replay.
    let allowance = sim::contention_allowance(
        perf,
        SimConfig::default(),
        wl.cluster.clone(),
        wl.jobs.clone(),
    )?;
    let config = SimConfig {
        contention_allowance: allowance,
        ..SimConfig::default()
    };
    println!(
        "{trace}: {} jobs on {} GPUs, contention allowance {allowance:.2}",
        wl.jobs.len(),
        wl.cluster.num_gpus()
    );
    println!(
        "| policy | avg JCT (h) | p99 JCT (h) | makespan (h) | restarts |\n|---|---|---|---|---|"
    );
    for kind in [PolicyKind::Fifo, PolicyKind::Pollux] {
        let mut policy = kind.build(perf, &PolicyOptions::default())?;
        let mut simulator = Simulator::builder(perf, wl.cluster.clone(), wl.jobs.clone())
            .config(config)
            .build()?;
        simulator.run(policy.as_mut())?;
        let m = sim::metrics(simulator.records(), 0.1..0.9, wl.cluster.num_gpus());
        println!(
            "| {kind} | {:.2} | {:.2} | {:.1} | {} |",
            m.avg_jct_s / 3600.0,
            m.p99_jct_s / 3600.0,
            m.makespan_s / 3600.0,
            m.restarts
        );
    }
    Ok(())
}
