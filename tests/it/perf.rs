//! The performance model: reproducible calibration, sane predictions, and monotone where physics
//! says it must be.

use coda::model::Architecture;
use coda::perf::{self, Estimates, PerfParams};
use coda::perf::{JobQuery, PlacementShape};
use coda::{CalibratedPerf, PerfModel};
use proptest::prelude::*;

use crate::common::datasets;
use coda::model::ServerIdx;

fn perf() -> &'static CalibratedPerf {
    CalibratedPerf::shipped()
}

#[test]
fn shipped_parameters_are_what_calibrate_produces() {
    // `coda calibrate` must rebuild models/perf_params.json exactly from datasets/.
    let fresh = coda::perf::calibrate::calibrate(&datasets(), Estimates::default()).unwrap();
    let shipped: &PerfParams = perf().params();
    let (a, b) = (
        serde_json::to_string(&fresh).unwrap(),
        serde_json::to_string(shipped).unwrap(),
    );
    if a != b {
        let at = a
            .bytes()
            .zip(b.bytes())
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        let lo = at.saturating_sub(120);
        panic!(
            "models/perf_params.json is stale (run `coda calibrate`); first difference at byte {at}:\n fresh:   {}\n shipped: {}",
            &a[lo..(at + 80).min(a.len())],
            &b[lo..(at + 80).min(b.len())]
        );
    }
}

#[test]
fn held_out_fit_quality_is_reported_for_every_model() {
    let p = perf().params();
    for (m, _) in perf().models() {
        assert!(
            p.fit_quality
                .iter()
                .any(|q| q.model == m && q.split == "kfold5"),
            "{m} has no kfold row"
        );
    }
    // Row-weighted held-out error of the two large families stays where it was measured; a
    // regression in the fitting code shows up here.
    let weighted = |pred: &dyn Fn(&str) -> bool| {
        let (mut s, mut n) = (0.0, 0usize);
        for q in p
            .fit_quality
            .iter()
            .filter(|q| q.split == "kfold5" && pred(&q.model))
        {
            s += q.mape.unwrap() * q.rows as f64;
            n += q.rows;
        }
        s / n as f64
    };
    let ps = weighted(&|m| p.ps_models.contains_key(m));
    let pollux = weighted(&|m| p.ar_models.get(m).is_some_and(|a| a.source == "pollux"));
    assert!(ps < 0.15, "PS held-out MAPE {ps}");
    assert!(pollux < 0.15, "Pollux/Sia held-out MAPE {pollux}");
}

fn q(model: &str) -> JobQuery<'_> {
    let arch = perf().architecture(model).unwrap();
    JobQuery {
        model,
        arch,
        gpus_per_worker: 1,
        local_batch: None,
        goodput: None,
    }
}

fn all_models() -> Vec<String> {
    perf().models().into_iter().map(|(m, _)| m).collect()
}

fn shape_for(model: &str, workers: u32, per_server: u32) -> PlacementShape {
    let (max_w, max_p) = perf().max_tasks(model).unwrap();
    let w = workers.min(max_w).max(1);
    let ps = if perf().architecture(model) == Some(Architecture::ParameterServer) {
        max_p.clamp(1, 2)
    } else {
        0
    };
    PlacementShape::isolated(w, ps, coda::perf::packed(w, per_server))
}

#[test]
fn every_model_prices_its_measured_range_positive_and_finite() {
    for m in all_models() {
        let (max_w, _) = perf().max_tasks(&m).unwrap();
        for gpu in ["v100", "t4", "a100", "k80", "rtx2080ti"] {
            for w in [1, 2, max_w.min(8), max_w] {
                for per in [1, 4, 8] {
                    let s = perf().speed(&q(&m), gpu, &shape_for(&m, w, per)).unwrap();
                    assert!(
                        s.iterations_per_s.is_finite() && s.iterations_per_s > 0.0,
                        "{m} {gpu} {w} {per}: {s:?}"
                    );
                    let parts = s.compute_s + s.intra_comm_s + s.inter_comm_s;
                    assert!(
                        (parts - s.step_time_s).abs() < 1e-12,
                        "{m}: parts do not add up"
                    );
                }
            }
        }
    }
}

#[test]
fn beyond_measured_range_is_refused_not_extrapolated() {
    let (max_w, max_p) = perf().max_tasks("vgg-16").unwrap();
    assert!(
        perf()
            .speed(
                &q("vgg-16"),
                "v100",
                &PlacementShape::isolated(max_w + 1, 1, vec![max_w + 1])
            )
            .is_err()
    );
    assert!(
        perf()
            .speed(
                &q("vgg-16"),
                "v100",
                &PlacementShape::isolated(1, max_p + 1, vec![1])
            )
            .is_err()
    );
    assert!(
        perf()
            .speed(
                &q("imagenet"),
                "no-such-gpu",
                &PlacementShape::isolated(1, 0, vec![1])
            )
            .is_err()
    );
}

#[test]
fn packing_beats_spreading_on_t4_imagenet_as_measured() {
    // Pollux's aws profile: imagenet at batch 20, `4` 0.161 s vs `1111` 0.334 s measured.
    let qq = JobQuery {
        local_batch: Some(20.0),
        ..q("imagenet")
    };
    let packed = perf()
        .speed(&qq, "t4", &PlacementShape::isolated(4, 0, vec![4]))
        .unwrap();
    let spread = perf()
        .speed(&qq, "t4", &PlacementShape::isolated(4, 0, vec![1, 1, 1, 1]))
        .unwrap();
    assert!(
        spread.step_time_s > 1.2 * packed.step_time_s,
        "{packed:?} {spread:?}"
    );
    assert!(
        (packed.step_time_s - 0.161).abs() / 0.161 < 0.35,
        "{packed:?}"
    );
    assert!(
        (spread.step_time_s - 0.334).abs() / 0.334 < 0.35,
        "{spread:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Adding a co-runner, a PCIe-sharing job, a NIC-sharing job or a cross-socket split never
    /// makes a job faster; moving PS next to its workers never makes it slower.
    #[test]
    fn contention_is_monotone(
        mi in 0usize..64, oi in 0usize..64, w in 1u32..16, per in 1u32..8,
        gpu in prop::sample::select(vec!["v100", "t4", "a100", "k80", "p100", "rtx6000", "rtx2080ti"]),
        pcie in 0u32..4, nic in 0u32..4, frac in 0.0f64..1.0,
    ) {
        let models = all_models();
        let m = &models[mi % models.len()];
        let other = &models[oi % models.len()];
        let base = shape_for(m, w, per);
        let mut ctx = base.clone();
        ctx.pcie_sharing_jobs = pcie;
        ctx.nic_competing_flows = 0.5 * f64::from(nic);
        ctx.ps_colocated_fraction = frac;
        let t = |s: &PlacementShape| perf().speed(&q(m), gpu, s).unwrap().step_time_s;
        let t0 = t(&ctx);
        let mut more = ctx.clone();
        more.co_runners.push(vec![other.clone()]);
        prop_assert!(t(&more) >= t0);
        // A synchronous job runs at the pace of its worst server: co-runners on two servers
        // slow it like the worse of the two, not like their product.
        let mut one = ctx.clone();
        one.co_runners = vec![vec![other.clone()]];
        let mut two = ctx.clone();
        two.co_runners = vec![vec![other.clone()], vec![other.clone()]];
        prop_assert!((t(&one) - t(&two)).abs() <= 1e-12 * t(&one));
        let mut both = ctx.clone();
        both.co_runners = vec![vec![other.clone(), m.clone()]];
        prop_assert!(t(&both) >= t(&two));
        let mut more = ctx.clone();
        more.pcie_sharing_jobs += 1;
        prop_assert!(t(&more) >= t0);
        if base.servers() > 1 {
            let mut more = ctx.clone();
            more.nic_competing_flows += 0.25;
            prop_assert!(t(&more) >= t0);
        }
        let mut more = ctx.clone();
        more.cross_socket_servers += 1;
        prop_assert!(t(&more) >= t0);
        let mut closer = ctx.clone();
        closer.ps_colocated_fraction = (frac + 0.25).min(1.0);
        prop_assert!(t(&closer) <= t0 + 1e-12);
    }

    /// Same query, same answer (no hidden state).
    #[test]
    fn speed_is_a_pure_function(mi in 0usize..64, w in 1u32..8) {
        let models = all_models();
        let m = &models[mi % models.len()];
        let s = shape_for(m, w, 4);
        prop_assert_eq!(perf().speed(&q(m), "v100", &s).unwrap(), perf().speed(&q(m), "v100", &s).unwrap());
    }
}

#[test]
fn co_location_and_contention_read_from_a_schedule() {
    use coda::model::{Assignment, Cluster, Job, Server};
    use coda::model::{TaskDemand, TaskRange, WorkerTask};
    use coda::{ClusterSnapshot, Schedule};
    let server = Server::uniform(
        "n",
        "v100",
        [2, 2, 2],
        coda::model::HostResources::new(64.0, 512.0, 100.0),
    );
    let cluster = Cluster::homogeneous(2, &server);
    let mk = |id: u64, model: &str| Job {
        tiers: Vec::new(),
        id: coda::model::JobId(id),
        arrival_s: 0.0,
        model: model.into(),
        arch: Architecture::AllReduce,
        total_iterations: 1e4,
        demand: TaskDemand {
            gpus_per_worker: 1,
            cpu_per_worker: 1.0,
            mem_per_worker_gib: 1.0,
            cpu_per_ps: 0.0,
            mem_per_ps_gib: 0.0,
        },
        workers: TaskRange::new(1, 8),
        ps: TaskRange::new(0, 0),
        gpu_types: vec![],
        local_batch: None,
        run: coda::model::RunState::default(),
        requested: None,
    };
    let snap = ClusterSnapshot::new(
        0.0,
        cluster,
        vec![mk(0, "imagenet"), mk(1, "cifar10"), mk(2, "bert")],
    )
    .unwrap();
    let w = |server, gpu| WorkerTask {
        server,
        gpus: vec![gpu],
    };
    // Job 0: GPUs 0 (socket 0, switch 0) and 4 (socket 1) of server 0 and GPU 0 of server 1.
    // Job 1: GPU 1 of server 0 (same switch as job 0's GPU 0). Job 2: GPU 1 of server 1, distributed? no.
    let sched = Schedule {
        assignments: vec![
            Assignment {
                tier: 0,
                job: coda::model::JobId(0),
                workers: vec![w(ServerIdx(0), 0), w(ServerIdx(0), 4), w(ServerIdx(1), 0)],
                ps: vec![],
            },
            Assignment {
                tier: 0,
                job: coda::model::JobId(1),
                workers: vec![w(ServerIdx(0), 1)],
                ps: vec![],
            },
            Assignment {
                tier: 0,
                job: coda::model::JobId(2),
                workers: vec![w(ServerIdx(1), 2), w(ServerIdx(0), 6)],
                ps: vec![],
            },
        ],
    };
    assert!(sched.validate(&snap).is_empty());
    let shapes = perf::placement_shapes(perf(), &snap, &sched);
    let s0 = &shapes[0].1;
    assert_eq!(s0.gpus_per_server, vec![2, 1]);
    assert_eq!(s0.cross_socket_servers, 1);
    assert_eq!(s0.pcie_sharing_jobs, 1, "job 1 shares switch 0 of server 0");
    // Job 2 is also distributed over servers 0 and 1: it competes on the NIC for the share of
    // its step it spends in inter-server communication (phases independent by default).
    let alone2 = perf()
        .speed(
            &q("bert"),
            "v100",
            &PlacementShape::isolated(2, 0, vec![1, 1]),
        )
        .unwrap();
    let share2 = alone2.inter_comm_s / alone2.step_time_s;
    assert!(share2 > 0.0 && share2 < 1.0, "{share2}");
    assert!(
        (s0.nic_competing_flows - share2).abs() < 1e-12,
        "{} vs {share2}",
        s0.nic_competing_flows
    );
    // Co-runners per worker server: server 0 has jobs 1 and 2, server 1 has job 2.
    let names = |v: &Vec<String>| {
        let mut v = v.clone();
        v.sort();
        v
    };
    assert_eq!(
        s0.co_runners.iter().map(names).collect::<Vec<_>>(),
        vec![
            vec!["bert".to_string(), "cifar10".into()],
            vec!["bert".into()]
        ]
    );
    let s1 = &shapes[1].1;
    assert_eq!((s1.pcie_sharing_jobs, s1.nic_competing_flows), (1, 0.0));
    assert_eq!(
        s1.co_runners.iter().map(names).collect::<Vec<_>>(),
        vec![vec!["bert".to_string(), "imagenet".into()]]
    );
    let speeds = perf::speeds(perf(), &snap, &sched).unwrap();
    assert_eq!(speeds.len(), 3);
    // Job 1 alone on one GPU is faster than with its neighbours.
    let alone = perf()
        .speed(
            &q("cifar10"),
            "v100",
            &PlacementShape::isolated(1, 0, vec![1]),
        )
        .unwrap();
    assert!(speeds[1].1.step_time_s > alone.step_time_s);
}

/// Every partition of `k` GPUs into servers of at most `per` GPUs, largest part first.
fn partitions(k: u32, per: u32) -> Vec<Vec<u32>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for first in (1..=k.min(per)).rev() {
        for mut rest in partitions(k - first, first) {
            rest.insert(0, first);
            out.push(rest);
        }
    }
    out
}

/// The price of an all-reduce placement is bounded by what was measured: on every shipped kind
/// of server (the `servers.csv` rows, both with NVLink; the generic PCIe servers; every kind of
/// Alibaba node), for every all-reduce model and every size from 2 to 16 GPUs (within its
/// measured range), every split over servers — laid on each server's first GPUs and priced as
/// the simulator prices a job alone — costs between `spread_min` and `spread_max` of the same
/// job packed on as few of those servers as possible, the measured envelope of the profile the
/// model is fitted on. On one server the only difference from packed is the cross-socket
/// estimate, and only on PCIe servers.
#[test]
fn every_placement_is_priced_within_the_measured_envelope() {
    use coda::model::WorkerTask;
    use coda::model::{Assignment, Cluster, JobId};
    let perf = perf();
    let d = datasets();
    let mut kinds: Vec<coda::model::Server> =
        ["1xdgx-1-v100", "1xnd40rs-v2", "1x8", "1x4:t4", "1x8:a100"]
            .iter()
            .map(|s| {
                coda::workload::cluster_from_spec(s, &d, perf)
                    .unwrap()
                    .servers[0]
                    .clone()
            })
            .collect();
    for s in coda::workload::cluster_from_spec("alibaba-nodes", &d, perf)
        .unwrap()
        .servers
    {
        if !kinds
            .iter()
            .any(|k| (&k.gpu_type, &k.topology, k.nvlink) == (&s.gpu_type, &s.topology, s.nvlink))
        {
            kinds.push(s);
        }
    }
    let (mut checked, mut bounded) = (0usize, 0usize);
    for server in &kinds {
        let cluster = Cluster::homogeneous(16, server);
        let slots = cluster.slot_table();
        let per = server.num_gpus();
        let lay = |split: &[u32]| Assignment {
            tier: 0,
            job: JobId(0),
            workers: split
                .iter()
                .enumerate()
                .flat_map(|(s, &n)| {
                    (0..n).map(move |g| WorkerTask {
                        server: ServerIdx(s),
                        gpus: vec![g],
                    })
                })
                .collect(),
            ps: Vec::new(),
        };
        for (model, arch) in perf.models() {
            if arch != Architecture::AllReduce {
                continue;
            }
            let (lo, hi) = perf.spread_envelope(&model, &server.gpu_type).unwrap();
            assert!(lo <= 1.0 && hi >= 1.0, "{model}: [{lo}, {hi}]");
            let most = perf.max_tasks(&model).unwrap().0.min(16);
            for k in 2..=most {
                let q = JobQuery {
                    model: &model,
                    arch,
                    gpus_per_worker: 1,
                    local_batch: None,
                    goodput: None,
                };
                let job = perf::probe_job(&q, k, 0);
                let price = |split: &[u32]| {
                    perf::speed_alone(perf, &cluster, &slots, &job, &lay(split))
                        .unwrap()
                        .step_time_s
                };
                let packed = price(&perf::packed(k, per));
                for split in partitions(k, per) {
                    let r = price(&split) / packed;
                    let at = format!("{model} on {} ({per} GPUs), {split:?}: {r}", server.name);
                    if split.len() > 1 {
                        assert!(
                            r >= lo - 1e-9 && r <= hi + 1e-9,
                            "{at} outside [{lo}, {hi}]"
                        );
                        bounded += usize::from((r - lo).abs() < 1e-9 || (r - hi).abs() < 1e-9);
                    } else if server.nvlink
                        || lay(&split).footprint(&slots).cross_socket_servers() == 0
                    {
                        assert!((r - 1.0).abs() < 1e-12, "{at}");
                    } else {
                        assert!(r >= 1.0, "{at}");
                    }
                    checked += 1;
                }
            }
        }
    }
    // Not vacuous: most placements are priced by the fitted terms, some held at a bound.
    assert!(
        checked > 10_000 && bounded > 0 && bounded < checked,
        "{checked} / {bounded}"
    );
}
