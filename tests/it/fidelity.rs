//! Simulator fidelity: the contention allowance, the run metrics that say what happened, the
//! measured task demands, NIC sharing by communication share, the baselines' paper rules, and
//! what back-fill may take back to start a waiting job.

use coda::model::{Architecture, Request, TaskDemand, TaskRange, WorkerTask};
use coda::model::{Assignment, Cluster, Job, Server};
use coda::perf::{Estimates, PerfParams};
use coda::policies::{self, Packer, Placement, PolicyOptions};
use coda::sim::{self, SimConfig, Simulator};
use coda::workload::trace;
use coda::{CalibratedPerf, ClusterSnapshot, PerfModel};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::common::philly;
use coda::model::ServerIdx;

fn cluster(n: usize) -> Cluster {
    Cluster::homogeneous(n, &trace::default_server())
}

fn run(policy: &str, allowance: f64, jobs: &[Job], servers: usize) -> Simulator<'static> {
    let perf = CalibratedPerf::shipped();
    let cfg = SimConfig {
        contention_allowance: allowance,
        ..SimConfig::default()
    };
    let mut sim = Simulator::builder(perf, cluster(servers), jobs.to_vec())
        .config(cfg)
        .build()
        .unwrap();
    let mut p = policy
        .parse::<coda::policies::PolicyKind>()
        .unwrap()
        .build(perf, &PolicyOptions::default())
        .unwrap();
    sim.run(p.as_mut()).unwrap();
    assert!(sim.done());
    sim
}

/// The allowance is measured (≥ 1), forgives contention up to it, and never makes a job faster
/// than alone: held GPU-time only falls, useful GPU-time never exceeds held.
#[test]
fn contention_allowance_forgives_the_trace_era_level_only() {
    let perf = CalibratedPerf::shipped();
    let jobs = philly(300);
    let f =
        sim::contention_allowance(perf, SimConfig::default(), cluster(4), jobs.clone()).unwrap();
    assert!(f > 1.0, "a busy 4-server replay meets contention: {f}");
    let charged = run("fifo", 1.0, &jobs, 4);
    let forgiven = run("fifo", f, &jobs, 4);
    let held = |s: &Simulator| s.records().iter().map(|r| r.gpu_seconds).sum::<f64>();
    let useful = |s: &Simulator| {
        s.records()
            .iter()
            .map(|r| r.useful_gpu_seconds)
            .sum::<f64>()
    };
    // By definition of the allowance: held ÷ useful of the charged FIFO replay.
    assert!((held(&charged) / useful(&charged) - f).abs() < 1e-9 * f);
    assert!(held(&forgiven) < held(&charged));
    for s in [&charged, &forgiven] {
        for r in s.records() {
            assert!(
                r.useful_gpu_seconds <= r.gpu_seconds * (1.0 + 1e-9) + 1e-9,
                "{r:?}"
            );
        }
    }
    // Alone, a job runs its trace speed whatever the allowance.
    let one = vec![jobs[0].clone()];
    let a = run("fifo", 1.0, &one, 1);
    let b = run("fifo", 3.0, &one, 1);
    assert_eq!(a.records()[0].finish_s, b.records()[0].finish_s);
    // Settings below 1 are refused with the field named.
    let bad = SimConfig {
        contention_allowance: 0.5,
        ..SimConfig::default()
    };
    let e = Simulator::builder(perf, cluster(1), one)
        .config(bad)
        .build()
        .err()
        .unwrap();
    assert!(e.to_string().contains("contention_allowance"), "{e}");
}

/// Waits after a preemption count as waiting, not only the first queueing delay.
#[test]
fn waiting_includes_waits_after_preemption() {
    let jobs = philly(200);
    let s = run("tiresias", 1.0, &jobs, 2);
    let mut preempted_and_waited = 0;
    for r in s.records() {
        let q = r.first_start_s.unwrap() - r.arrival_s;
        assert!(r.waiting_s >= q - 1e-6, "{r:?}");
        if r.waiting_s > q + 1.0 {
            preempted_and_waited += 1;
        }
    }
    assert!(
        preempted_and_waited > 0,
        "Tiresias preempts on a busy 2-server cluster"
    );
    let m = sim::metrics(s.records(), 0.0..1.0, 16);
    assert!(m.avg_waiting_s >= m.avg_queueing_s);
    assert!(m.busy_utilization > 0.0 && m.busy_utilization <= 1.0 + 1e-9);
}

/// Job `id` on GPUs `0..n` of `server`, one worker per GPU.
fn one_gpu_workers(id: u64, server: usize, n: u32) -> Assignment {
    Assignment {
        tier: 0,
        job: coda::model::JobId(id),
        workers: (0..n)
            .map(|g| WorkerTask {
                server: ServerIdx(server),
                gpus: vec![g],
            })
            .collect(),
        ps: vec![],
    }
}

fn job(id: u64, model: &str, arch: Architecture, gpus: u32, cpu: f64) -> Job {
    Job {
        tiers: Vec::new(),
        id: coda::model::JobId(id),
        arrival_s: id as f64,
        model: model.into(),
        arch,
        total_iterations: 1e7,
        demand: TaskDemand {
            gpus_per_worker: 1,
            cpu_per_worker: cpu,
            mem_per_worker_gib: 1.0,
            cpu_per_ps: 1.0,
            mem_per_ps_gib: 1.0,
        },
        workers: TaskRange::new(1, gpus),
        ps: if arch == Architecture::ParameterServer {
            TaskRange::new(1, 1)
        } else {
            TaskRange::new(0, 0)
        },
        gpu_types: vec![],
        local_batch: None,
        run: coda::model::RunState::default(),
        requested: Some(Request {
            workers: gpus,
            ps: u32::from(arch == Architecture::ParameterServer),
        }),
    }
}

/// GPUs left idle on a server whose cores are gone are counted as stranded.
#[test]
fn stranded_gpus_are_counted() {
    let perf = CalibratedPerf::shipped();
    // 8 GPUs but 4 cores; every worker takes 2 cores: two workers fit, six GPUs are stranded.
    let server = Server::uniform(
        "n",
        "v100",
        [2, 2, 2],
        coda::model::HostResources::new(4.0, 512.0, 100.0),
    );
    let jobs: Vec<Job> = (0..4)
        .map(|i| job(i, "cifar10", Architecture::AllReduce, 1, 2.0))
        .collect();
    let mut sim = Simulator::builder(perf, Cluster::homogeneous(1, &server), jobs)
        .build()
        .unwrap();
    let mut fifo = policies::PolicyKind::Fifo
        .build(perf, &PolicyOptions::default())
        .unwrap();
    sim.run(fifo.as_mut()).unwrap();
    assert!(sim.done());
    assert!(
        (sim.stranded_gpus() - 6.0).abs() < 1e-9,
        "{}",
        sim.stranded_gpus()
    );
}

/// Task demands come from the measurements: DL2's CPU medians for PS models, Synergy's
/// fair-share profile for all-reduce models (language models need less than image models).
#[test]
fn task_demands_are_measured() {
    let perf = CalibratedPerf::shipped();
    let ps = perf.task_demand("resnet-50").unwrap();
    assert!(ps.cpu_per_worker > 0.5 && ps.cpu_per_worker < 1.0, "{ps:?}");
    assert!(ps.cpu_per_ps.unwrap() > 1.5);
    let bert = perf.task_demand("bert").unwrap();
    let imagenet = perf.task_demand("imagenet").unwrap();
    assert_eq!((bert.cpu_per_worker, imagenet.cpu_per_worker), (1.0, 3.0));
    assert!(bert.mem_per_worker_gib.unwrap() < imagenet.mem_per_worker_gib.unwrap());
    let jobs = philly(400);
    for j in &jobs {
        let d = perf.task_demand(&j.model).unwrap();
        assert_eq!(j.demand.cpu_per_worker, d.cpu_per_worker, "{}", j.model);
    }
}

fn with(f: impl Fn(&mut Estimates)) -> CalibratedPerf {
    let mut p: PerfParams = CalibratedPerf::shipped().params().clone();
    f(&mut p.estimates);
    CalibratedPerf::new(p).unwrap()
}

/// NIC sharing is priced by how often the sharers' transfers meet: with independent phases a
/// sharer competes for its communication share, with aligned phases always (SJF-BCO's fair
/// share), and a rarely-communicating sharer barely slows a job.
#[test]
fn nic_competition_follows_the_phase_alignment() {
    let independent = CalibratedPerf::shipped();
    let aligned = with(|e| e.nic_phase_alignment = 1.0);
    assert_eq!(independent.nic_competition(0.2), 0.2);
    assert_eq!(aligned.nic_competition(0.2), 1.0);
    let half = with(|e| e.nic_phase_alignment = 0.5);
    assert!((half.nic_competition(0.2) - 0.6).abs() < 1e-12);
    // Two 2-server jobs on the same two servers, both with inter-server time when spread
    // (imagenet on V100 has none: Sia measured it no slower over two servers than its compute).
    let jobs = vec![
        job(0, "bert", Architecture::AllReduce, 2, 1.0),
        job(1, "yolov3", Architecture::AllReduce, 2, 1.0),
    ];
    let snap = ClusterSnapshot::new(0.0, cluster(2), jobs).unwrap();
    let w = |server, g| WorkerTask {
        server,
        gpus: vec![g],
    };
    let sched = coda::Schedule {
        assignments: vec![
            Assignment {
                tier: 0,
                job: coda::model::JobId(0),
                workers: vec![w(ServerIdx(0), 0), w(ServerIdx(1), 0)],
                ps: vec![],
            },
            Assignment {
                tier: 0,
                job: coda::model::JobId(1),
                workers: vec![w(ServerIdx(0), 4), w(ServerIdx(1), 4)],
                ps: vec![],
            },
        ],
    };
    let shapes = |p: &CalibratedPerf| coda::perf::placement_shapes(p, &snap, &sched);
    let (si, sa) = (shapes(independent), shapes(&aligned));
    assert_eq!(sa[0].1.nic_competing_flows, 1.0);
    assert!(si[0].1.nic_competing_flows > 0.0 && si[0].1.nic_competing_flows < 1.0);
    let speed = |p: &CalibratedPerf| coda::perf::speeds(p, &snap, &sched).unwrap()[0].1;
    assert!(speed(independent).step_time_s < speed(&aligned).step_time_s);
}

/// Tiresias: inside one queue a running job keeps its GPUs ahead of an earlier pending one.
#[test]
fn tiresias_keeps_running_jobs_ahead_within_a_queue() {
    let perf = CalibratedPerf::shipped();
    let mut pending = job(0, "cifar10", Architecture::AllReduce, 8, 1.0);
    pending.arrival_s = 0.0;
    let mut running = job(1, "cifar10", Architecture::AllReduce, 8, 1.0);
    running.arrival_s = 10.0;
    running.run.current = Some(one_gpu_workers(1, 0, 8));
    let snap = ClusterSnapshot::new(20.0, cluster(1), vec![pending, running]).unwrap();
    let mut t = policies::PolicyKind::Tiresias
        .build(perf, &PolicyOptions::default())
        .unwrap();
    let s = t.schedule(&snap).unwrap();
    assert!(
        s.assignment(coda::model::JobId(1)).is_some()
            && s.assignment(coda::model::JobId(0)).is_none()
    );
}

/// Tiresias' starvation promotion changes who runs: with the knob off a long job that fell to a
/// lower queue waits behind every new short job; with it, it comes back sooner.
#[test]
fn tiresias_promotion_ends_starvation() {
    let perf = CalibratedPerf::shipped();
    let jobs = philly(120);
    let finish = |knob: f64| {
        // Two servers hold every job of the slice (the largest asks 16 GPUs).
        let mut sim = Simulator::builder(perf, cluster(2), jobs.clone())
            .build()
            .unwrap();
        let opts = PolicyOptions {
            tiresias: coda::policies::TiresiasOptions {
                promote_knob: knob,
                ..Default::default()
            },
            ..PolicyOptions::default()
        };
        let mut p = policies::PolicyKind::Tiresias.build(perf, &opts).unwrap();
        sim.run(p.as_mut()).unwrap();
        sim.records().to_vec()
    };
    let (off, on) = (finish(0.0), finish(4.0));
    assert_ne!(off, on, "promotion changes the schedule on a busy server");
    let worst_wait = |r: &[sim::JobRecord]| r.iter().map(|x| x.waiting_s).fold(0.0, f64::max);
    assert!(
        worst_wait(&on) <= worst_wait(&off),
        "{} vs {}",
        worst_wait(&on),
        worst_wait(&off)
    );
    let bad = PolicyOptions {
        tiresias: coda::policies::TiresiasOptions {
            promote_knob: -1.0,
            ..Default::default()
        },
        ..PolicyOptions::default()
    };
    assert!(policies::PolicyKind::Tiresias.build(perf, &bad).is_err());
}

/// Pollux's repair rule: a placement over several servers avoids servers that already hold
/// another multi-server job.
#[test]
fn pollux_packer_keeps_one_distributed_job_per_server() {
    let perf = CalibratedPerf::shipped();
    let jobs = vec![
        job(0, "cifar10", Architecture::AllReduce, 12, 1.0),
        job(1, "cifar10", Architecture::AllReduce, 6, 1.0),
        job(2, "cifar10", Architecture::AllReduce, 10, 1.0),
    ];
    let snap = ClusterSnapshot::new(0.0, cluster(4), jobs).unwrap();
    let place = |exclusive: bool| {
        let mut p = Packer::new(&snap, perf);
        if exclusive {
            p.one_distributed_job_per_server();
        }
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for (j, w) in [(0, 12), (1, 6), (2, 10)] {
            assert!(p.place(&snap.jobs[j], w, 0, Placement::Consolidated, &mut rng));
        }
        p.into_assignments()
    };
    let servers = |a: &Assignment| {
        let mut v: Vec<usize> = a.workers.iter().map(|w| w.server.0).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let shared = |v: &[Assignment]| {
        let (x, z) = (servers(&v[0]), servers(&v[2]));
        x.iter().any(|s| z.contains(s))
    };
    assert!(
        shared(&place(false)),
        "without the rule the two spread jobs meet"
    );
    let ex = place(true);
    assert!(
        !shared(&ex),
        "{:?} vs {:?}",
        servers(&ex[0]),
        servers(&ex[2])
    );
    assert!(
        coda::Schedule { assignments: ex }
            .validate(&snap)
            .is_empty()
    );
}

/// With every contention estimate off no neighbour changes a speed, so the allowance is 1
/// without a replay — and a FIFO replay, had it run, measures exactly that.
#[test]
fn contention_free_models_skip_the_allowance_replay() {
    let off = with(|e| {
        e.colocation_coupling = 0.0;
        e.pcie_share_comm_penalty = 0.0;
        e.nic_bandwidth_fraction = 0.0;
    });
    assert!(off.contention_free());
    assert!(!CalibratedPerf::shipped().contention_free());
    // Any one effect left on is contention.
    assert!(!with(|e| e.nic_bandwidth_fraction = 0.0).contention_free());
    let jobs = philly(300);
    let f =
        sim::contention_allowance(&off, SimConfig::default(), cluster(4), jobs.clone()).unwrap();
    assert_eq!(f, 1.0);
    let mut replay = Simulator::builder(&off, cluster(4), jobs).build().unwrap();
    let mut fifo = policies::PolicyKind::Fifo
        .build(&off, &PolicyOptions::default())
        .unwrap();
    replay.run(fifo.as_mut()).unwrap();
    let held: f64 = replay.records().iter().map(|r| r.gpu_seconds).sum();
    let useful: f64 = replay.records().iter().map(|r| r.useful_gpu_seconds).sum();
    assert!((held / useful - 1.0).abs() < 1e-9, "{held} / {useful}");
}

/// Co-runners on one server compound their measured pair throughputs and the job feels the
/// coupling share of that loss: one co-runner is exactly the pair slowdown, many saturate at
/// `1 / (1 − κ)` (seven copies of the worst pair once cost 6 ×).
#[test]
fn co_location_saturates_at_the_coupling_share() {
    let perf = CalibratedPerf::shipped();
    let kappa = perf.params().estimates.colocation_coupling;
    let q = coda::perf::JobQuery {
        model: "imagenet",
        arch: Architecture::AllReduce,
        gpus_per_worker: 1,
        local_batch: None,
        goodput: None,
    };
    let t = |co: Vec<&str>| {
        let mut s = coda::perf::PlacementShape::isolated(1, 0, vec![1]);
        s.co_runners = vec![co.into_iter().map(String::from).collect()];
        perf.speed(&q, "v100", &s).unwrap().compute_s
    };
    let alone = t(vec![]);
    let pair = perf.colocation_slowdown("imagenet", "bert", "v100");
    assert!(pair > 1.0);
    assert!((t(vec!["bert"]) / alone - pair).abs() < 1e-12);
    let seven = t(vec!["bert"; 7]) / alone;
    assert!(
        seven > pair && seven <= 1.0 / (1.0 - kappa) + 1e-12,
        "{seven}"
    );
    assert!(
        seven < pair.powi(7),
        "{seven} vs compounded {}",
        pair.powi(7)
    );
}

/// A DGX-1's GPUs talk over NVLink: an 8-GPU job on one is not cross-socket and runs as fast
/// as its measured one-server step; on a PCIe server of the same topology it pays the
/// cross-socket estimate.
#[test]
fn nvlink_servers_have_no_cross_socket_placements() {
    let perf = CalibratedPerf::shipped();
    let job = job(0, "yolov3", Architecture::AllReduce, 8, 1.0);
    let a = one_gpu_workers(0, 0, 8);
    let on = |server: &Server| {
        let c = Cluster::homogeneous(1, server);
        let slots = c.slot_table();
        (
            a.footprint(&slots).cross_socket_servers(),
            coda::perf::speed_alone(perf, &c, &slots, &job, &a).unwrap(),
        )
    };
    let dgx = trace::default_server();
    assert!(dgx.nvlink);
    let pcie = Server {
        nvlink: false,
        ..dgx.clone()
    };
    let (x_dgx, s_dgx) = on(&dgx);
    let (x_pcie, s_pcie) = on(&pcie);
    assert_eq!((x_dgx, x_pcie), (0, 1));
    let e = perf.params().estimates.cross_socket_comm_factor;
    assert!((s_pcie.intra_comm_s - e * s_dgx.intra_comm_s).abs() < 1e-12);
    let q = coda::perf::JobQuery::of(&job);
    let measured = perf
        .speed(
            &q,
            "v100",
            &coda::perf::PlacementShape::isolated(8, 0, vec![8]),
        )
        .unwrap();
    assert_eq!(s_dgx.step_time_s, measured.step_time_s);
}

/// Back-fill sheds what a schedule gave beyond the ask before it leaves a job waiting: a job
/// starting this round with every GPU of the server (it asked for one) gives up the rest to a
/// waiting job, parameter servers holding the memory a waiting job needs give it up, and a
/// running job keeps what it has (cutting it would restart it).
#[test]
fn back_fill_sheds_what_a_schedule_gave_beyond_the_ask() {
    use coda::model::JobId;
    use coda::policies::Backfill;
    use coda::{Objective, Schedule, Scheduler};
    struct Given(Schedule);
    impl Scheduler for Given {
        fn name(&self) -> &str {
            "given"
        }
        fn schedule(&mut self, _: &ClusterSnapshot) -> coda::Result<Schedule> {
            Ok(self.0.clone())
        }
    }
    let perf = CalibratedPerf::shipped();
    let objective = Objective::default();
    let fill = |snap: &ClusterSnapshot, given: &Schedule| {
        let mut bf = Backfill::new(Box::new(Given(given.clone())), perf, objective);
        let filled = bf.schedule(snap).unwrap();
        assert!(filled.validate(snap).is_empty(), "{filled:?}");
        let score = |s| objective.score(perf, snap, s).unwrap().total;
        assert!(
            score(&filled) >= score(given),
            "back-fill never lowers the round's objective"
        );
        filled
    };
    // Workers: job 0 asked for one GPU and is given the server's eight; job 1, short, waits.
    let mut wide = job(0, "cifar10", Architecture::AllReduce, 8, 1.0);
    wide.requested = Some(Request { workers: 1, ps: 0 });
    let mut short = job(1, "cifar10", Architecture::AllReduce, 1, 1.0);
    short.total_iterations = 100.0;
    let given = coda::Schedule {
        assignments: vec![one_gpu_workers(0, 0, 8)],
    };
    let snap = ClusterSnapshot::new(0.0, cluster(1), vec![wide.clone(), short.clone()]).unwrap();
    let filled = fill(&snap, &given);
    assert!(filled.assignment(JobId(1)).is_some(), "{filled:?}");
    assert_eq!(filled.assignment(JobId(0)).unwrap().workers.len(), 1);
    // The same job already running on the eight: it keeps them, and job 1 waits.
    wide.run.current = Some(one_gpu_workers(0, 0, 8));
    let snap = ClusterSnapshot::new(0.0, cluster(1), vec![wide, short.clone()]).unwrap();
    assert_eq!(fill(&snap, &given), given);
    // Memory: job 0 (one worker, one parameter server asked) is given nine parameter servers of
    // 8 GiB on a 80-GiB server, and job 1's worker needs 20 GiB.
    let server = Server::uniform(
        "n",
        "v100",
        [2, 2, 2],
        coda::model::HostResources::new(32.0, 80.0, 100.0),
    );
    let mut ps = job(0, "resnet-50", Architecture::ParameterServer, 1, 1.0);
    ps.ps = TaskRange::new(1, 9);
    ps.demand.mem_per_ps_gib = 8.0;
    short.demand.mem_per_worker_gib = 20.0;
    let snap =
        ClusterSnapshot::new(0.0, Cluster::homogeneous(1, &server), vec![ps, short]).unwrap();
    let mut many = one_gpu_workers(0, 0, 1);
    many.ps = vec![
        coda::model::PsTask {
            server: ServerIdx(0)
        };
        9
    ];
    let given = coda::Schedule {
        assignments: vec![many],
    };
    let filled = fill(&snap, &given);
    assert!(filled.assignment(JobId(1)).is_some(), "{filled:?}");
    assert_eq!(filled.assignment(JobId(0)).unwrap().ps.len(), 1);
}
