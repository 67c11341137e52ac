//! `Schedule::validate`: valid schedules pass; each kind of mutation yields its own violation.

use coda::model::Violation;
use coda::model::{Architecture, PsTask};
use coda::workload::{GenerateOptions, generate};
use coda::{CalibratedPerf, ClusterSnapshot, Schedule};
use proptest::prelude::*;

use crate::common::random_valid_schedule;
use coda::model::ServerIdx;

fn instance(servers: usize, jobs: usize, seed: u64) -> ClusterSnapshot {
    let opts = GenerateOptions {
        servers,
        jobs,
        seed,
        gpu_types: vec!["v100".into(), "t4".into()],
        ..Default::default()
    };
    generate(&opts, CalibratedPerf::shipped()).expect("generated instance")
}

fn has(v: &[Violation], pred: impl Fn(&Violation) -> bool) -> bool {
    v.iter().any(pred)
}

/// Mutation kinds, each paired with the violation it must produce.
const KINDS: usize = 11;

fn mutate(
    kind: usize,
    s: &mut ClusterSnapshot,
    sched: &mut Schedule,
) -> Box<dyn Fn(&Violation) -> bool> {
    let a0 = sched.assignments[0].clone();
    let job = a0.job;
    let server = a0.workers[0].server;
    match kind {
        0 => {
            let ghost = coda::model::JobId(s.jobs.iter().map(|j| j.id.0).max().unwrap() + 1);
            sched
                .assignments
                .push(coda::model::Assignment { job: ghost, ..a0 });
            Box::new(move |v| matches!(v, Violation::UnknownJob { job: j } if *j == ghost))
        }
        1 => {
            sched.assignments.push(a0);
            Box::new(move |v| matches!(v, Violation::DuplicateJob { job: j } if *j == job))
        }
        2 => {
            let n = s.cluster.servers.len();
            sched.assignments[0].workers[0].server = ServerIdx(n);
            Box::new(
                move |v| matches!(v, Violation::UnknownServer { job: j, server: x } if *j == job && *x == ServerIdx(n)),
            )
        }
        3 => {
            let g = s.cluster.servers[server].num_gpus();
            sched.assignments[0].workers[0].gpus[0] = g;
            Box::new(
                move |v| matches!(v, Violation::UnknownGpu { job: j, gpu, .. } if *j == job && *gpu == g),
            )
        }
        4 => {
            // A second job (or a second worker of the same job) on the same GPU.
            let w = a0.workers[0].clone();
            let g = w.gpus[0];
            match sched.assignments.get_mut(1) {
                Some(b) => b.workers[0] = w,
                None => sched.assignments[0].workers.push(w),
            }
            Box::new(
                move |v| matches!(v, Violation::GpuDoubleBooked { server: x, gpu, .. } if *x == server && *gpu == g),
            )
        }
        5 => {
            sched.assignments[0].workers[0].gpus.push(1_000);
            Box::new(
                move |v| matches!(v, Violation::WrongGpusPerWorker { job: j, worker: 0, .. } if *j == job),
            )
        }
        6 => {
            sched.assignments[0].workers.clear();
            Box::new(
                move |v| matches!(v, Violation::WorkersOutOfRange { job: j, workers: 0, .. } if *j == job),
            )
        }
        7 => {
            let j = s.job(job).unwrap();
            let p = match j.arch {
                Architecture::AllReduce => 1,
                Architecture::ParameterServer => j.ps.max + 1,
            };
            sched.assignments[0].ps = vec![PsTask { server }; p as usize];
            Box::new(
                move |v| matches!(v, Violation::PsOutOfRange { job: x, ps, .. } if *x == job && *ps == p),
            )
        }
        8 => {
            s.jobs.iter_mut().find(|j| j.id == job).unwrap().gpu_types = vec!["no-such-gpu".into()];
            Box::new(
                move |v| matches!(v, Violation::IncompatibleGpuType { job: j, server: x, .. } if *j == job && *x == server),
            )
        }
        9 => {
            s.cluster.servers[server].cpu_cores = 0.0;
            Box::new(
                move |v| matches!(v, Violation::CpuOverCapacity { server: x, .. } if *x == server),
            )
        }
        _ => {
            s.cluster.servers[server].memory_gib = 0.0;
            Box::new(
                move |v| matches!(v, Violation::MemoryOverCapacity { server: x, .. } if *x == server),
            )
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A schedule built to respect every constraint (independently of `validate`) validates.
    #[test]
    fn random_valid_schedules_validate(servers in 1usize..6, jobs in 1usize..12, seed in 0u64..1_000, sseed in 0u64..1_000) {
        let s = instance(servers, jobs, seed);
        let sched = random_valid_schedule(&s, sseed);
        prop_assert!(!sched.assignments.is_empty());
        let v = sched.validate(&s);
        prop_assert!(v.is_empty(), "{v:?}");
    }

    /// Every mutation kind is caught, as its own variant, on every instance.
    #[test]
    fn each_mutation_yields_its_violation(servers in 1usize..6, jobs in 1usize..12, seed in 0u64..1_000, kind in 0usize..KINDS) {
        let mut s = instance(servers, jobs, seed);
        let mut sched = random_valid_schedule(&s, seed ^ 0x5eed);
        let expect = mutate(kind, &mut s, &mut sched);
        let v = sched.validate(&s);
        prop_assert!(has(&v, &expect), "kind {kind}: {v:?}");
    }

    /// The schedule of running jobs in a generated instance is itself valid.
    #[test]
    fn current_placements_are_valid(servers in 1usize..8, jobs in 0usize..16, seed in 0u64..1_000) {
        let s = instance(servers, jobs, seed);
        let v = coda::workload::current_schedule(&s).validate(&s);
        prop_assert!(v.is_empty(), "{v:?}");
    }
}

#[test]
fn all_violations_are_reported_not_just_the_first() {
    let s = instance(2, 4, 3);
    let mut sched = random_valid_schedule(&s, 1);
    sched.assignments[0].workers[0].server = ServerIdx(99);
    let n = s.cluster.servers.len();
    let ghost = 1_000;
    sched.assignments.push(coda::model::Assignment {
        tier: 0,
        job: coda::model::JobId(ghost),
        workers: vec![],
        ps: vec![],
    });
    let v = sched.validate(&s);
    assert!(
        has(&v, |x| matches!(
            x,
            Violation::UnknownServer {
                server: ServerIdx(99),
                ..
            }
        )),
        "{v:?}"
    );
    assert!(
        has(&v, |x| matches!(
            x,
            Violation::UnknownJob {
                job: coda::model::JobId(1_000)
            }
        )),
        "{v:?}"
    );
    assert!(n < 99);
}

#[test]
fn empty_schedule_is_valid() {
    let s = instance(3, 5, 0);
    assert!(Schedule::default().validate(&s).is_empty());
}
