//! Simulator unit tests that read its private state.

use super::*;
use crate::model::RunState;
use crate::perf::CalibratedPerf;
use crate::policies::{PolicyKind, PolicyOptions};
use crate::workload::{GenerateOptions, generate};

/// A completion re-prices only its neighbours ([`Simulator::reprice_around`]) and a
/// restart's end only its own job: after every event, re-pricing every running job
/// (the rule before) finds every speed and every pending completion event unchanged.
#[test]
fn local_repricing_is_the_full_one() {
    let perf = CalibratedPerf::shipped();
    for (policy, seed) in [(PolicyKind::Random, 3), (PolicyKind::Pollux, 5)] {
        // Few servers and many jobs: co-location, distributed jobs, PS tasks, restarts.
        let opts = GenerateOptions {
            servers: 3,
            jobs: 40,
            seed,
            max_workers: 6,
            ..Default::default()
        };
        let g = generate(&opts, perf).unwrap();
        let jobs = g
            .jobs
            .into_iter()
            .enumerate()
            .map(|(k, mut j)| {
                j.run = RunState::default();
                j.arrival_s = 200.0 * k as f64;
                j
            })
            .collect();
        let mut sim = Simulator::builder(perf, g.cluster, jobs).build().unwrap();
        let popts = PolicyOptions {
            seed,
            ..Default::default()
        };
        let mut scheduler = policy.build(perf, &popts).unwrap();
        let (mut events, mut shared) = (0, 0);
        while sim.step(scheduler.as_mut()).unwrap() {
            let seen = |sim: &Simulator| -> Vec<(usize, u64, u64, Option<u64>)> {
                sim.active
                    .iter()
                    .map(|&i| {
                        let s = &sim.state[i];
                        (
                            i,
                            s.speed.to_bits(),
                            s.version,
                            s.event_speed.map(f64::to_bits),
                        )
                    })
                    .collect()
            };
            let before = seen(&sim);
            let queued = sim.events.len();
            sim.reprice().unwrap();
            assert_eq!(seen(&sim), before, "{} at t = {}", policy.name(), sim.now);
            assert_eq!(sim.events.len(), queued, "no completion re-issued");
            events += 1;
            // Rounds on which a server holds several jobs: the neighbours that matter.
            let servers: Vec<usize> = sim
                .active
                .iter()
                .filter_map(|&i| sim.state[i].assignment.as_ref())
                .flat_map(Assignment::servers)
                .collect();
            let mut distinct = servers.clone();
            distinct.sort_unstable();
            distinct.dedup();
            shared += usize::from(distinct.len() < servers.len());
        }
        assert!(sim.done(), "{}", policy.name());
        assert!(
            events > 80 && shared > 20,
            "{}: {events} steps, {shared} shared",
            policy.name()
        );
    }
}
