//! Simulator core: determinism, conservation, valid rounds, restart cost.

use coda::model::WorkerTask;
use coda::model::{Assignment, Job};
use coda::sim::{SimConfig, Simulator, Unplaceable};
use coda::workload::trace::{self, TraceFilter, TraceFormat, TraceOptions};
use coda::{CalibratedPerf, ClusterSnapshot, Objective, Schedule, Scheduler};

use crate::common::datasets;
use coda::model::ServerIdx;

/// First-come first-served with each job's minimum allocation, first-fit over GPUs, keeping
/// running jobs where they are. (Test policy; the baselines proper are the simulator issue's.)
struct FirstFit;

impl Scheduler for FirstFit {
    fn name(&self) -> &str {
        "first-fit"
    }
    fn schedule(&mut self, s: &ClusterSnapshot) -> coda::Result<Schedule> {
        let mut free: Vec<Vec<u32>> = s
            .cluster
            .servers
            .iter()
            .map(|x| (0..x.num_gpus()).collect())
            .collect();
        let mut out = Schedule::default();
        for j in s.jobs.iter().filter_map(|j| j.run.current.as_ref()) {
            for w in &j.workers {
                free[w.server.0].retain(|g| !w.gpus.contains(g));
            }
            out.assignments.push(j.clone());
        }
        let mut waiting: Vec<&Job> = s.jobs.iter().filter(|j| j.run.current.is_none()).collect();
        waiting.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
        for j in waiting {
            if j.ps.min > 0 {
                continue; // keep the test policy to all-reduce jobs
            }
            let need = j.workers.min as usize;
            let Some(srv) = (0..free.len())
                .find(|&k| free[k].len() >= need && s.cluster.servers[k].cpu_cores >= 0.0)
            else {
                continue;
            };
            let gpus: Vec<u32> = free[srv].drain(..need).collect();
            out.assignments.push(Assignment {
                tier: 0,
                job: j.id,
                workers: gpus
                    .into_iter()
                    .map(|g| WorkerTask {
                        server: ServerIdx(srv),
                        gpus: vec![g],
                    })
                    .collect(),
                ps: vec![],
            });
        }
        Ok(out)
    }
}

/// Moves every running job to the mirror GPU each round: a restart every round.
struct Shuffler(FirstFit);

impl Scheduler for Shuffler {
    fn name(&self) -> &str {
        "shuffler"
    }
    fn schedule(&mut self, s: &ClusterSnapshot) -> coda::Result<Schedule> {
        let mut sched = self.0.schedule(s)?;
        for a in &mut sched.assignments {
            for w in &mut a.workers {
                let n = s.cluster.servers[w.server].num_gpus();
                for g in &mut w.gpus {
                    *g = n - 1 - *g;
                }
            }
        }
        Ok(sched)
    }
}

fn philly_jobs(n: usize) -> Vec<Job> {
    let t = trace::load(
        &datasets().join(TraceFormat::Philly.shipped_file()),
        TraceFormat::Philly,
        &TraceFilter::default(),
    )
    .unwrap();
    let opts = TraceOptions {
        ps_fraction: 0.0,
        ..Default::default()
    };
    let mut jobs = trace::to_jobs(&t.jobs[..n], &opts, CalibratedPerf::shipped()).unwrap();
    for j in &mut jobs {
        j.workers.min = 1;
    }
    jobs
}

fn cluster(servers: usize) -> coda::model::Cluster {
    coda::model::Cluster::homogeneous(servers, &trace::default_server())
}

#[test]
fn runs_are_deterministic_and_lose_no_job() {
    let perf = CalibratedPerf::shipped();
    let run = || {
        let mut sim = Simulator::builder(perf, cluster(2), philly_jobs(60))
            .build()
            .unwrap();
        sim.run(&mut FirstFit).unwrap();
        assert!(sim.done(), "every job finishes");
        (
            sim.records().to_vec(),
            sim.utilization().to_vec(),
            sim.events_processed(),
        )
    };
    let a = run();
    assert_eq!(a, run());
    assert_eq!(a.0.len(), 60);
    let m = coda::sim::metrics(&a.0, 0.1..0.9, 16);
    assert_eq!((m.jobs_tracked, m.jobs_unfinished), (48, 0));
    assert!(m.gpu_utilization > 0.0 && m.gpu_utilization <= 1.0, "{m:?}");
    assert!(m.p99_jct_s >= m.median_jct_s && m.avg_jct_s > 0.0);
    for r in &a.0 {
        let (start, finish) = (r.first_start_s.unwrap(), r.finish_s.unwrap());
        assert!(r.arrival_s <= start && start < finish, "{r:?}");
    }
}

#[test]
fn gpu_seconds_are_conserved() {
    let perf = CalibratedPerf::shipped();
    let mut sim = Simulator::builder(perf, cluster(1), philly_jobs(30))
        .build()
        .unwrap();
    sim.run(&mut FirstFit).unwrap();
    // ∫ GPUs held dt from the utilisation timeline = Σ per-job GPU-seconds.
    let u = sim.utilization();
    let mut integral = 0.0;
    for w in u.windows(2) {
        integral += w[0].1 as f64 * (w[1].0 - w[0].0);
    }
    let per_job: f64 = sim.records().iter().map(|r| r.gpu_seconds).sum();
    assert!(u.last().unwrap().1 == 0, "nothing held at the end");
    assert!(
        (integral - per_job).abs() <= 1e-6 * per_job.max(1.0),
        "{integral} vs {per_job}"
    );
}

#[test]
fn restart_cost_is_applied() {
    let perf = CalibratedPerf::shipped();
    let jobs = philly_jobs(5);
    let finish = |restart_s: f64, shuffle: bool| {
        let cfg = SimConfig {
            objective: Objective::new(300.0, restart_s).unwrap(),
            ..Default::default()
        };
        let mut sim = Simulator::builder(perf, cluster(1), jobs.clone())
            .config(cfg)
            .build()
            .unwrap();
        if shuffle {
            sim.run(&mut Shuffler(FirstFit)).unwrap();
        } else {
            sim.run(&mut FirstFit).unwrap();
        }
        let restarts: u32 = sim.records().iter().map(|r| r.restarts).sum();
        let last = sim
            .records()
            .iter()
            .map(|r| r.finish_s.unwrap())
            .fold(0.0, f64::max);
        (last, restarts)
    };
    let (calm, r0) = finish(60.0, false);
    let (moved_free, r1) = finish(0.0, true);
    let (moved, r2) = finish(60.0, true);
    assert_eq!(r0, 0);
    assert!(r1 > 0 && r2 >= r1, "{r1} {r2}");
    // Same policy, same moves: a 60 s restart delays completion by at least one restart.
    assert!(moved > moved_free + 59.0, "{moved} vs {moved_free}");
    assert!(moved > calm, "{moved} vs {calm}");
}

#[test]
fn an_invalid_schedule_is_an_error_not_a_fix() {
    struct Bad;
    impl Scheduler for Bad {
        fn name(&self) -> &str {
            "bad"
        }
        fn schedule(&mut self, s: &ClusterSnapshot) -> coda::Result<Schedule> {
            // Everyone on GPU 0 of server 0.
            Ok(Schedule {
                assignments: s
                    .jobs
                    .iter()
                    .map(|j| Assignment {
                        tier: 0,
                        job: j.id,
                        workers: vec![WorkerTask {
                            server: ServerIdx(0),
                            gpus: vec![0],
                        }],
                        ps: vec![],
                    })
                    .collect(),
            })
        }
    }
    let perf = CalibratedPerf::shipped();
    let mut jobs = philly_jobs(3);
    for j in &mut jobs {
        j.arrival_s = 0.0;
    }
    let mut sim = Simulator::builder(perf, cluster(1), jobs).build().unwrap();
    // The error carries every violation, typed: three jobs on one GPU is two double bookings.
    match sim.run(&mut Bad) {
        Err(coda::Error::InvalidSchedule {
            context,
            violations,
        }) => {
            assert!(context.contains("policy `bad`"), "{context}");
            let doubles = violations
                .iter()
                .filter(|v| matches!(v, coda::model::Violation::GpuDoubleBooked { .. }))
                .count();
            assert_eq!(doubles, 2, "{violations:?}");
        }
        other => panic!("{other:?}"),
    }
}

/// Never places anything.
struct Never;
impl Scheduler for Never {
    fn name(&self) -> &str {
        "never"
    }
    fn schedule(&mut self, _: &ClusterSnapshot) -> coda::Result<Schedule> {
        Ok(Schedule::default())
    }
}

#[test]
fn a_run_no_job_can_progress_in_stops_and_says_why() {
    let perf = CalibratedPerf::shipped();
    let jobs = philly_jobs(6);
    let mut sim = Simulator::builder(perf, cluster(1), jobs.clone())
        .build()
        .unwrap();
    sim.run(&mut Never).unwrap();
    let stall = sim.stall().expect("the run stalled");
    assert_eq!(stall.waiting.len(), jobs.len());
    assert!(!sim.done());
    assert!(sim.records().iter().all(|r| r.finish_s.is_none()));
    // It stopped at the first round after the last arrival, not at some later tick.
    let last = jobs.iter().map(|j| j.arrival_s).fold(0.0, f64::max);
    assert!(stall.time_s >= last && stall.time_s < last + 300.0 + 1e-6);

    // A job whose requested size exceeds the cluster (what FIFO would give it) is refused up
    // front, with the way out; skipped, it is reported and every other job runs.
    let mut jobs = philly_jobs(6);
    jobs[2].workers.max = 16;
    jobs[2].requested = Some(coda::model::Request { workers: 16, ps: 0 });
    let e = Simulator::builder(perf, cluster(1), jobs.clone())
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("job 2 can never run: it requests 16 workers"),
        "{e}"
    );
    assert!(e.contains("Unplaceable::Skip"), "{e}");
    let config = SimConfig {
        unplaceable: Unplaceable::Skip,
        ..SimConfig::default()
    };
    let mut fifo = coda::policies::PolicyKind::Fifo
        .build(perf, &Default::default())
        .unwrap();
    let mut sim = Simulator::builder(perf, cluster(1), jobs.clone())
        .config(config)
        .build()
        .unwrap();
    sim.run(fifo.as_mut()).unwrap();
    assert!(sim.stall().is_none());
    assert_eq!(sim.unplaceable().len(), 1);
    assert_eq!(sim.unplaceable()[0].0, jobs[2].id);
    assert!(sim.done());
    assert_eq!(sim.records().len(), jobs.len() - 1);
}

/// Skipping rounds in which no job waits changes nothing but the time taken: every policy that
/// claims it keeps assignments then gives the same records with and without skipping (to float
/// rounding of the accumulated work: the same sums over fewer, longer intervals), and skipping
/// does happen (fewer events).
#[test]
fn skipping_idle_rounds_changes_no_result() {
    let perf = CalibratedPerf::shipped();
    for (jobs, servers) in [(philly_jobs(120), 2), (philly_jobs(40), 8)] {
        for &name in coda::policies::PolicyKind::ALL
            .map(coda::policies::PolicyKind::name)
            .iter()
            .filter(|p| **p != "ilp")
        {
            let run = |skip: bool| {
                let config = SimConfig {
                    skip_idle_rounds: skip,
                    unplaceable: Unplaceable::Skip,
                    ..SimConfig::default()
                };
                let mut p = name
                    .parse::<coda::policies::PolicyKind>()
                    .unwrap()
                    .build(perf, &Default::default())
                    .unwrap();
                let mut sim = Simulator::builder(perf, cluster(servers), jobs.clone())
                    .config(config)
                    .build()
                    .unwrap();
                sim.run(p.as_mut()).unwrap();
                let keeps = p.keeps_when_none_wait();
                (sim.records().to_vec(), sim.events_processed(), keeps)
            };
            let (a, events_a, keeps) = run(true);
            let (b, events_b, _) = run(false);
            assert_eq!(a.len(), b.len());
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(1.0);
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(
                    (x.id, x.restarts, x.first_start_s),
                    (y.id, y.restarts, y.first_start_s),
                    "{name}"
                );
                assert!(
                    close(x.finish_s.unwrap(), y.finish_s.unwrap()),
                    "{name}: {x:?} {y:?}"
                );
                assert!(close(x.gpu_seconds, y.gpu_seconds), "{name}");
                assert!(close(x.useful_gpu_seconds, y.useful_gpu_seconds), "{name}");
                assert!(close(x.waiting_s, y.waiting_s), "{name}");
            }
            if keeps && servers == 8 {
                assert!(events_a < events_b, "{name}: {events_a} vs {events_b}");
            } else if !keeps {
                assert_eq!(events_a, events_b, "{name}");
            }
        }
    }
}

#[test]
fn a_job_whose_smallest_allocation_exceeds_the_cluster_is_rejected_up_front() {
    let perf = CalibratedPerf::shipped();
    // One server with 3 cores; a PS job whose worker needs 2 and whose PS needs 3: each task fits
    // alone, the job never can.
    let mut server = trace::default_server();
    server.cpu_cores = 3.0;
    let cluster = coda::model::Cluster::homogeneous(1, &server);
    let mut job = philly_jobs(1).remove(0);
    job.model = "resnet-50".into();
    job.arch = coda::model::Architecture::ParameterServer;
    job.workers = coda::model::TaskRange::new(1, 1);
    job.ps = coda::model::TaskRange::new(1, 1);
    job.requested = None;
    job.demand.cpu_per_worker = 2.0;
    job.demand.cpu_per_ps = 3.0;
    let Err(err) = Simulator::builder(perf, cluster, vec![job]).build() else {
        panic!("an impossible job was accepted");
    };
    assert!(matches!(err, coda::Error::JobTooLarge { .. }), "{err}");
    assert!(err.to_string().contains("5 cores"), "{err}");
}
