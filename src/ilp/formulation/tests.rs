//! One test per constraint group on a tiny instance: a valid schedule, encoded, satisfies every
//! group (symmetry breaking aside, which cuts relabelled copies on purpose), and a point broken
//! in exactly the way a group forbids violates that group. A failing brute-force or objective
//! property test can then be narrowed to its group here.

use std::collections::BTreeMap;

use good_lp::Variable;

use super::{Formulation, FormulationOptions, Group, JobVars};
use crate::model::ServerIdx;
use crate::model::{
    Architecture, Assignment, Cluster, ClusterSnapshot, Job, PsTask, Schedule, Server, SwitchId,
    TaskDemand, TaskRange, WorkerTask,
};
use crate::objective::{Mode, Objective, RoundPricing, Sharing};
use crate::perf::CalibratedPerf;

/// An all-reduce and a parameter-server model the shipped performance model knows.
const AR: &str = "cifar10";
const PS: &str = "resnet-50";

fn server(name: &str, gpu: &str) -> Server {
    // 2 sockets × 2 PCIe switches × 2 GPUs, as a DGX-1.
    Server::uniform(
        name,
        gpu,
        [2, 2, 2],
        crate::model::HostResources::new(40.0, 512.0, 100.0),
    )
}

fn job(id: u64, model: &str, workers: u32, ps: u32) -> Job {
    let arch = if ps > 0 {
        Architecture::ParameterServer
    } else {
        Architecture::AllReduce
    };
    Job {
        tiers: Vec::new(),
        id: crate::model::JobId(id),
        arrival_s: 0.0,
        model: model.into(),
        arch,
        total_iterations: 1e6,
        demand: TaskDemand {
            gpus_per_worker: 1,
            cpu_per_worker: 4.0,
            mem_per_worker_gib: 32.0,
            cpu_per_ps: 4.0,
            mem_per_ps_gib: 8.0,
        },
        workers: TaskRange::new(1, workers),
        ps: TaskRange::new(ps.min(1), ps),
        gpu_types: Vec::new(),
        local_batch: None,
        run: crate::model::RunState::default(),
        requested: None,
    }
}

fn w(server: usize, gpu: u32) -> WorkerTask {
    WorkerTask {
        server: ServerIdx(server),
        gpus: vec![gpu],
    }
}

fn assign(job: u64, workers: Vec<WorkerTask>, ps: Vec<usize>) -> Assignment {
    Assignment {
        tier: 0,
        job: crate::model::JobId(job),
        workers,
        ps: ps
            .into_iter()
            .map(|server| PsTask {
                server: ServerIdx(server),
            })
            .collect(),
    }
}

/// Two idle DGX-1-like servers; job 0 all-reduce (up to 4 workers), job 1 PS (up to 2 workers,
/// 2 PS), job 2 all-reduce (up to 2 workers).
fn instance(gpu_types: [&str; 2]) -> ClusterSnapshot {
    let cluster = Cluster {
        servers: vec![server("a", gpu_types[0]), server("b", gpu_types[1])],
    };
    let jobs = vec![job(0, AR, 4, 0), job(1, PS, 2, 2), job(2, AR, 2, 0)];
    ClusterSnapshot::new(0.0, cluster, jobs).unwrap()
}

struct Built<'a> {
    pricing: RoundPricing<'a>,
    form: Formulation,
}

fn build(snapshot: &ClusterSnapshot, symmetry_breaking: bool) -> Built<'_> {
    build_with(
        snapshot,
        FormulationOptions {
            symmetry_breaking,
            ..Default::default()
        },
    )
}

fn build_with(snapshot: &ClusterSnapshot, options: FormulationOptions) -> Built<'_> {
    let pricing = RoundPricing::new(CalibratedPerf::shipped(), snapshot, Objective::default());
    let form = Formulation::from_pricing(&pricing, options).unwrap();
    Built { pricing, form }
}

/// The instance's program with the co-location inequalities and without symmetry breaking.
fn with_cuts(snapshot: &ClusterSnapshot) -> Built<'_> {
    build_with(
        snapshot,
        FormulationOptions {
            symmetry_breaking: false,
            colocation_cuts: true,
        },
    )
}

impl Built<'_> {
    fn encode(&self, schedule: &Schedule) -> Vec<f64> {
        self.form.encode(&self.pricing, schedule).unwrap()
    }
    fn jv(&self, job: usize) -> &JobVars {
        &self.form.jobs[job]
    }
    fn col(&self, v: Variable) -> usize {
        self.form.model.index_of[&v]
    }
    fn violated(&self, x: &[f64]) -> BTreeMap<Group, usize> {
        self.form.violated_groups(x, 1e-7)
    }
    /// The option of job `j` with this size and mode.
    fn option(&self, j: usize, workers: u32, ps: u32, mode: Mode) -> Variable {
        let jv = self.jv(j);
        let k = jv
            .options
            .iter()
            .position(|o| o.workers == workers && o.ps == ps && o.mode == mode)
            .expect("option exists");
        jv.y[k]
    }
}

/// Job 0 on 2 GPUs under one switch, job 1 with 2 workers and a PS next to them on server 0
/// (sharing a switch with job 2), job 2 spread over both servers.
fn busy_schedule() -> Schedule {
    Schedule {
        assignments: vec![
            assign(0, vec![w(0, 0), w(0, 1)], vec![]),
            assign(1, vec![w(0, 2), w(0, 4)], vec![0]),
            assign(2, vec![w(0, 5), w(1, 0)], vec![]),
        ],
    }
}

fn assert_breaks(b: &Built<'_>, x: &[f64], group: Group) {
    let v = b.violated(x);
    assert!(
        v.contains_key(&group),
        "expected {group:?} violated, got {v:?}"
    );
}

#[test]
fn valid_schedules_satisfy_every_group_but_symmetry() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let schedules = [
        Schedule::default(),
        busy_schedule(),
        // Cross-socket all-reduce job; PS on the other server.
        Schedule {
            assignments: vec![
                assign(0, vec![w(1, 1), w(1, 6)], vec![]),
                assign(1, vec![w(0, 0)], vec![1, 0]),
            ],
        },
    ];
    let cut = with_cuts(&snap);
    for s in &schedules {
        assert!(s.validate(&snap).is_empty());
        for b in [&b, &cut] {
            let x = b.encode(s);
            assert!(b.violated(&x).is_empty(), "{s:?}: {:?}", b.violated(&x));
        }
    }
    assert!(
        cut.form
            .rows_per_group()
            .get(&Group::ColocationCuts)
            .is_some_and(|&n| n > 0)
    );
    // Every group the instance exercises has rows (symmetry is off here).
    let rows = b.form.rows_per_group();
    for g in [
        Group::OneOption,
        Group::TasksAddUp,
        Group::GpusFollowWorkers,
        Group::Presence,
        Group::MultiMode,
        Group::CrossSocketMode,
        Group::Capacity,
        Group::PsLocality,
        Group::SharingCounts,
        Group::Losses,
    ] {
        assert!(rows.get(&g).is_some_and(|&n| n > 0), "{g:?} has no rows");
    }
}

#[test]
fn group_1_one_option() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let mut x = b.encode(&busy_schedule());
    x[b.col(b.option(0, 1, 0, Mode::Single))] = 1.0;
    assert_breaks(&b, &x, Group::OneOption);
}

#[test]
fn group_2_tasks_add_up() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let mut x = b.encode(&busy_schedule());
    x[b.col(b.jv(0).m[1].unwrap())] += 1.0;
    assert_breaks(&b, &x, Group::TasksAddUp);
    let mut x = b.encode(&busy_schedule());
    x[b.col(b.jv(1).q[1].unwrap())] += 1.0;
    assert_breaks(&b, &x, Group::TasksAddUp);
}

#[test]
fn group_3_gpus_follow_workers() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let mut x = b.encode(&busy_schedule());
    // Job 0 moves a GPU to another switch of its server without telling `u`.
    let (g0, _) = b.jv(0).g[&SwitchId(0)];
    let (g1, _) = b.jv(0).g[&SwitchId(1)];
    x[b.col(g0)] -= 1.0;
    x[b.col(g1)] += 1.0;
    assert_breaks(&b, &x, Group::GpusFollowWorkers);
}

#[test]
fn group_4_one_gpu_type() {
    let snap = instance(["v100", "t4"]);
    let b = build(&snap, false);
    let s = Schedule {
        assignments: vec![assign(0, vec![w(0, 0), w(0, 1)], vec![])],
    };
    let mut x = b.encode(&s);
    // Keep the v100 option but put one worker on the t4 server.
    x[b.col(b.jv(0).m[0].unwrap())] = 1.0;
    x[b.col(b.jv(0).m[1].unwrap())] = 1.0;
    assert_breaks(&b, &x, Group::OneGpuType);
}

#[test]
fn group_5_presence() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let mut x = b.encode(&busy_schedule());
    // Job 1 has workers and a PS on server 0: "any task there" cannot be off.
    x[b.col(b.jv(1).a[0].unwrap())] = 0.0;
    assert_breaks(&b, &x, Group::Presence);
}

#[test]
fn group_6_multi_mode() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let mut x = b.encode(&busy_schedule());
    // Job 2 spans two servers but claims the one-server option.
    x[b.col(b.option(2, 2, 0, Mode::Multi))] = 0.0;
    x[b.col(b.option(2, 2, 0, Mode::Single))] = 1.0;
    assert_breaks(&b, &x, Group::MultiMode);
}

#[test]
fn group_7_cross_socket_mode() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let s = Schedule {
        assignments: vec![assign(0, vec![w(1, 1), w(1, 6)], vec![])],
    };
    let mut x = b.encode(&s);
    x[b.col(b.option(0, 2, 0, Mode::CrossSocket))] = 0.0;
    x[b.col(b.option(0, 2, 0, Mode::Single))] = 1.0;
    assert_breaks(&b, &x, Group::CrossSocketMode);
}

#[test]
fn group_8_capacity() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let mut x = b.encode(&busy_schedule());
    // Job 2 takes a third GPU under switch 0 of server 0, already full with job 0.
    let (g, u) = b.jv(2).g[&SwitchId(0)];
    x[b.col(g)] = 1.0;
    x[b.col(u)] = 1.0;
    assert_breaks(&b, &x, Group::Capacity);
}

#[test]
fn group_9_ps_locality() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let l = b
        .jv(1)
        .local_pairs
        .expect("the PS model's speed depends on locality");
    let mut x = b.encode(&busy_schedule());
    // 2 workers and 1 PS on server 0: 2 local pairs, not 0.
    assert_eq!(x[b.col(l)], 2.0);
    x[b.col(l)] = 0.0;
    assert_breaks(&b, &x, Group::PsLocality);
}

#[test]
fn group_10_sharing_counts() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let x0 = b.encode(&busy_schedule());
    for kind in [Sharing::Colocation, Sharing::Pcie] {
        // Job 1 shares server 0 and switch 2 with job 2: its pressure cannot be zero.
        let pressed: Vec<Variable> = b.jv(1).pressure[kind.index()]
            .iter()
            .map(|&(_, v, _)| v)
            .filter(|&v| x0[b.col(v)] > 1e-9)
            .collect();
        assert!(!pressed.is_empty(), "{kind:?}");
        let mut x = x0.clone();
        for v in pressed {
            x[b.col(v)] = 0.0;
        }
        assert_breaks(&b, &x, Group::SharingCounts);
    }
}

#[test]
fn group_14_colocation_cuts() {
    let snap = instance(["v100", "v100"]);
    let b = with_cuts(&snap);
    let x0 = b.encode(&busy_schedule());
    // Jobs 0, 1 and 2 all have workers on server 0: three pairs there, each at 1.
    let pairs: Vec<usize> = b
        .form
        .model
        .info
        .iter()
        .enumerate()
        .filter(|(_, v)| v.name.starts_with("zc_") && v.name.ends_with("_s0"))
        .map(|(c, _)| c)
        .collect();
    assert_eq!(pairs.len(), 3);
    assert!(pairs.iter().all(|&c| (x0[c] - 1.0).abs() < 1e-9));
    // Fewer pairs than three jobs on one server make is what the clique rows forbid.
    let mut x = x0.clone();
    x[pairs[0]] = 0.0;
    assert_breaks(&b, &x, Group::ColocationCuts);
    // A running job with no server anywhere breaks the presence cover.
    let mut x = x0;
    for v in b.jv(0).v.iter().flatten() {
        x[b.col(*v)] = 0.0;
    }
    assert_breaks(&b, &x, Group::ColocationCuts);
}

#[test]
fn group_11_losses() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, false);
    let mut x = b.encode(&busy_schedule());
    let loss = b.jv(1).loss[Sharing::Colocation.index()];
    assert!(x[b.col(loss)] > 0.0);
    x[b.col(loss)] = 0.0;
    assert_breaks(&b, &x, Group::Losses);
}

#[test]
fn group_12_keep() {
    let mut snap = instance(["v100", "v100"]);
    snap.jobs[0].run.current = Some(assign(0, vec![w(0, 0), w(0, 1)], vec![]));
    let b = build(&snap, false);
    let keep = b.jv(0).keep.expect("a running job can keep its place");
    // Moved to the other server: `keep` must be off.
    let moved = Schedule {
        assignments: vec![assign(0, vec![w(1, 0), w(1, 1)], vec![])],
    };
    let mut x = b.encode(&moved);
    assert_eq!(x[b.col(keep)], 0.0);
    x[b.col(keep)] = 1.0;
    assert_breaks(&b, &x, Group::Keep);
    // Waiting: `keep` must be off too.
    let mut x = b.encode(&Schedule::default());
    x[b.col(keep)] = 1.0;
    assert_breaks(&b, &x, Group::Keep);
}

#[test]
fn group_13_symmetry() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, true);
    let on = |server: usize| Schedule {
        assignments: vec![assign(0, vec![w(server, 0), w(server, 1)], vec![])],
    };
    // The first of two interchangeable idle servers is used first; the relabelled copy is cut.
    assert!(b.violated(&b.encode(&on(0))).is_empty());
    assert_breaks(&b, &b.encode(&on(1)), Group::Symmetry);
    assert_eq!(b.violated(&b.encode(&on(1))).len(), 1);
}

#[test]
fn relabelled_starts_satisfy_symmetry_and_score_the_same() {
    let snap = instance(["v100", "v100"]);
    let b = build(&snap, true);
    // Job 0 on the second server only, under its second switch: cut by both orderings.
    let s = Schedule {
        assignments: vec![assign(0, vec![w(1, 2), w(1, 3)], vec![])],
    };
    assert_breaks(&b, &b.encode(&s), Group::Symmetry);
    let r = super::relabel(&snap, b.pricing.topology(), &s);
    assert!(r.validate(&snap).is_empty());
    assert!(b.violated(&b.encode(&r)).is_empty(), "{r:?}");
    assert_eq!(r.assignments[0].workers[0].server, ServerIdx(0));
    let score = |x: &Schedule| b.pricing.score(x).unwrap().total;
    assert!((score(&r) - score(&s)).abs() < 1e-12);
    // Every group, relabelled, on a busier schedule too.
    let busy = busy_schedule();
    let r = super::relabel(&snap, b.pricing.topology(), &busy);
    assert!(b.violated(&b.encode(&r)).is_empty());
    assert!((score(&r) - score(&busy)).abs() < 1e-12);
}
