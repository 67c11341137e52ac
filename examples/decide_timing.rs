//! Load the learned policy and time its decision for one round against cluster size.
//!
//! Generated rounds of 8-GPU V100 servers with two jobs per server (30 % running); the median of
//! three decisions per size, greedy (one decoding) and with the shipped 8 decodings. `coda
//! bench-decide` is the full benchmark (to 1,000 servers, several seeds, a CSV).
//!
//! `cargo run --release --example decide_timing [-- MAX_SERVERS]` (default 64; a few seconds).

use std::time::Instant;

use coda::policies::learned::LearnedScheduler;
use coda::workload::scaling_instance;
use coda::{CalibratedPerf, Objective, Scheduler};

fn main() -> coda::Result<()> {
    let max: usize = std::env::args()
        .nth(1)
        .map_or(64, |n| n.parse().unwrap_or(64));
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    println!(
        "| servers | jobs | greedy (ms) | 8 decodings (ms) | objective (8) |\n|---|---|---|---|---|"
    );
    let mut servers = 4;
    while servers <= max {
        let snapshot = scaling_instance(servers, 2 * servers, 1, perf)?;
        let time = |policy: &mut LearnedScheduler| -> coda::Result<(f64, f64)> {
            let mut times = Vec::new();
            let mut value = 0.0;
            for _ in 0..3 {
                let t = Instant::now();
                let s = policy.schedule(&snapshot)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
                value = objective.score(perf, &snapshot, &s)?.total;
            }
            times.sort_by(f64::total_cmp);
            Ok((times[1], value))
        };
        let mut greedy = LearnedScheduler::shipped(perf, objective)?.with_samples(1, 0);
        let mut sampled = LearnedScheduler::shipped(perf, objective)?;
        let (g, _) = time(&mut greedy)?;
        let (s, v) = time(&mut sampled)?;
        println!(
            "| {servers} | {} | {g:.2} | {s:.2} | {v:.3} |",
            snapshot.jobs.len()
        );
        servers *= 2;
    }
    Ok(())
}
