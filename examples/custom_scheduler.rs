//! Write your own scheduler and compare it against the baselines.
//!
//! The policy below, "least GPU-time left first", keeps every running job where it is, then starts
//! waiting jobs in order of their remaining work × submitted size, each at its submitted size
//! and consolidated on as few servers as possible (the baselines' shared packer, which never
//! over-commits a GPU, core or GiB). The simulator validates every schedule it returns.
//!
//! `cargo run --release --example custom_scheduler` (the first 300 Philly jobs on 4 × 8 V100).

use std::path::Path;

use coda::policies::{Packer, Placement, PolicyKind, PolicyOptions};
use coda::sim::{self, SimConfig, Simulator};
use coda::workload::{self, trace::TraceOptions};
use coda::{CalibratedPerf, ClusterSnapshot, PerfModel, Schedule, Scheduler};
use rand::SeedableRng;

struct LeastGpuTimeFirst<'a> {
    perf: &'a dyn PerfModel,
}

impl Scheduler for LeastGpuTimeFirst<'_> {
    fn name(&self) -> &str {
        "least-gpu-time"
    }

    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> coda::Result<Schedule> {
        let mut packer = Packer::new(snapshot, self.perf);
        // Running jobs first, where they are: moving one costs a restart.
        for job in &snapshot.jobs {
            if let Some(a) = &job.run.current {
                packer.keep(job, a);
            }
        }
        let mut waiting: Vec<_> = snapshot
            .jobs
            .iter()
            .filter(|j| j.run.current.is_none())
            .collect();
        let gpu_time =
            |j: &coda::model::Job| j.remaining_iterations() * f64::from(j.requested_or_min().0);
        waiting.sort_by(|a, b| gpu_time(a).total_cmp(&gpu_time(b)).then(a.id.cmp(&b.id)));
        // No random choice is made with the consolidated rule; the packer asks for a generator.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        for job in waiting {
            let (workers, ps) = job.requested_or_min();
            packer.place(job, workers, ps, Placement::Consolidated, &mut rng);
        }
        Ok(Schedule {
            assignments: packer.into_assignments(),
        })
    }

    /// It never moves a running job, so rounds in which no job waits can be skipped.
    fn keeps_when_none_wait(&self) -> bool {
        true
    }
}

fn main() -> coda::Result<()> {
    let perf = CalibratedPerf::shipped();
    let wl = workload::load(
        workload::TraceRef {
            name: "philly",
            datasets: Path::new("datasets"),
            cluster: Some("4x8"),
            take: Some(300),
        },
        &TraceOptions::default(),
        perf,
    )?;
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
    let mut mine = LeastGpuTimeFirst { perf };
    let mut policies: Vec<Box<dyn Scheduler + '_>> = Vec::new();
    for kind in [
        PolicyKind::Fifo,
        PolicyKind::Srtf,
        PolicyKind::Tiresias,
        PolicyKind::Pollux,
    ] {
        policies.push(kind.build(perf, &PolicyOptions::default())?);
    }
    println!("| policy | avg JCT (h) | p99 JCT (h) | restarts |\n|---|---|---|---|");
    let row = |p: &mut dyn Scheduler| -> coda::Result<()> {
        let mut s = Simulator::builder(perf, wl.cluster.clone(), wl.jobs.clone())
            .config(config)
            .build()?;
        s.run(p)?;
        let m = sim::metrics(s.records(), 0.1..0.9, wl.cluster.num_gpus());
        println!(
            "| {} | {:.2} | {:.2} | {} |",
            p.name(),
            m.avg_jct_s / 3600.0,
            m.p99_jct_s / 3600.0,
            m.restarts
        );
        Ok(())
    };
    row(&mut mine)?;
    for p in &mut policies {
        row(p.as_mut())?;
    }
    Ok(())
}
