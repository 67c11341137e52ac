//! `coda::slurm` on what a real Slurm 22.05 printed (`tests/slurm/*.json`: `squeue --json` and
//! `sinfo --json` captured during a live replay, trimmed to the fields coda reads): the view,
//! the round's snapshot, and the commands a decision becomes. The live test against running
//! daemons is `scripts/slurm_live.py`, run by `.ci/run`.

use std::collections::HashSet;

use coda::model::{Cluster, JobId};
use coda::slurm::{Action, JobState, Round, RoundSettings, SlurmSpec, SlurmView, Stop};
use coda::workload::{cluster_from_spec, current_schedule};
use coda::{CalibratedPerf, Schedule};

use crate::common::datasets;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("tests/slurm/{name}.json")).expect("fixture")
}

fn spec() -> SlurmSpec {
    let perf = CalibratedPerf::shipped();
    let cluster: Cluster = cluster_from_spec("4xdgx-1-v100", &datasets(), perf).unwrap();
    SlurmSpec::new(cluster, "n[1-4]").unwrap()
}

fn view() -> SlurmView {
    SlurmView::parse(&fixture("squeue"), &fixture("sinfo")).unwrap()
}

/// Slurm job `id`'s assignment in `schedule`.
fn placed(schedule: &mut Schedule, id: u64) -> &mut coda::model::Assignment {
    let a = schedule.assignments.iter_mut().find(|a| a.job == JobId(id));
    a.expect("the job is placed")
}

const NOW: f64 = 1_795_875_600.0;

fn round(view: &SlurmView) -> Round {
    let settings = RoundSettings {
        time_scale: 240.0,
        stuck_after_s: 30.0,
    };
    Round::build(&spec(), view, NOW, CalibratedPerf::shipped(), &settings).unwrap()
}

#[test]
fn the_view_reads_jobs_gpus_and_nodes() {
    let v = view();
    let j = v.jobs.iter().find(|j| j.id == 377).unwrap();
    assert_eq!(j.state, JobState::Running);
    assert_eq!(j.nodes, ["n2", "n4"]);
    assert_eq!(j.gpus, [vec![0, 5, 6, 7], vec![1, 2, 3, 4, 5, 6, 7]]);
    let held: Vec<u64> = v.jobs.iter().filter(|j| j.held).map(|j| j.id).collect();
    assert_eq!(held, [366, 374, 376, 380]);
    let n4 = v.nodes.iter().find(|n| n.name == "n4").unwrap();
    assert!(n4.open && n4.alive);
    assert_eq!(n4.used_gpus, [1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn the_round_holds_running_jobs_where_slurm_runs_them() {
    let v = view();
    let r = round(&v);
    let s = &r.snapshot;
    // Every running and held tagged job, none of the finished one.
    let ids: HashSet<u64> = s.jobs.iter().map(|j| j.id.0).collect();
    assert_eq!(
        ids,
        HashSet::from([366, 368, 369, 371, 374, 376, 377, 378, 379, 380])
    );
    // Only n4's free GPU (index 0) and the GPUs of the jobs coda decides are offered.
    assert_eq!(s.cluster.num_gpus(), 32);
    let job = s.jobs.iter().find(|j| j.id == JobId(377)).unwrap();
    let a = job.run.current.as_ref().expect("running");
    assert_eq!(a.workers.len(), 11);
    assert_eq!(a.gpus_per_server(), [(1, 4), (3, 7)]);
    assert!(
        s.jobs
            .iter()
            .find(|j| j.id == JobId(374))
            .unwrap()
            .run
            .current
            .is_none()
    );
    // Checkpointed work comes from the tag.
    assert!(job.run.done_iterations > 500.0);
    // Keeping everyone where they are is valid and asks nothing of Slurm.
    let keep = current_schedule(s);
    assert!(keep.validate(s).is_empty(), "{:?}", keep.validate(s));
    assert!(r.plan(&keep).0.is_empty());
}

#[test]
fn a_decision_becomes_slurm_commands() {
    let r = round(&view());
    let mut schedule: Schedule = current_schedule(&r.snapshot);
    // Stop job 378 (2 GPUs... 4 on n1): a requeue with its tag kept.
    schedule.assignments.retain(|a| a.job != JobId(378));
    let (actions, _) = r.plan(&schedule);
    assert_eq!(actions.len(), 1);
    let Action::Preempt {
        job: 378,
        comment,
        running: true,
    } = &actions[0]
    else {
        panic!("{actions:?}")
    };
    assert!(comment.contains("submit="), "{comment}");
    let cmds = actions[0].commands();
    assert_eq!(cmds.last().unwrap(), &["scontrol", "requeuehold", "378"]);
    // Give its GPUs to held job 376 (deepspeech2): pinned to n1 with 4 GPUs, released.
    let mut a = r
        .snapshot
        .jobs
        .iter()
        .find(|j| j.id == JobId(378))
        .unwrap()
        .run
        .current
        .clone()
        .unwrap();
    a.job = JobId(376);
    a.ps.clear();
    schedule.assignments.push(a);
    let (actions, _) = r.plan(&schedule);
    let place = actions.iter().find(|a| a.job() == 376).unwrap();
    let Action::Place {
        nodes,
        gpus,
        stop,
        delay_s,
        ..
    } = place
    else {
        panic!("{place:?}")
    };
    assert_eq!(
        (nodes.as_slice(), *gpus, *stop, *delay_s),
        (&["n1".to_string()][..], 4, None, 0)
    );
    let text: Vec<String> = place.commands().iter().map(|c| c.join(" ")).collect();
    assert_eq!(
        text,
        [
            "scontrol update JobId=376 ReqNodeList=",
            "scontrol update JobId=376 NumNodes=1-1 TresPerJob=gres:gpu:4",
            "scontrol update JobId=376 ReqNodeList=n1",
            "scontrol release 376",
            "scontrol update JobId=376 StartTime=now",
        ]
    );
    // Moving a running job onto a node it runs on waits for slurmd to forget the kill.
    let mut moved = current_schedule(&r.snapshot);
    placed(&mut moved, 378).workers.truncate(2);
    let (actions, _) = r.plan(&moved);
    let Action::Place {
        stop: Some(Stop::Requeue),
        delay_s: 1,
        gpus: 2,
        ..
    } = &actions[0]
    else {
        panic!("{actions:?}")
    };
}

#[test]
fn held_jobs_with_bad_tags_are_released_and_drained_nodes_offer_nothing() {
    let mut v = view();
    let j = v.jobs.iter_mut().find(|j| j.id == 380).unwrap();
    j.comment = "coda:model=bert,gpus=two,iters=5".into();
    let n4 = v.nodes.iter_mut().find(|n| n.name == "n4").unwrap();
    n4.open = false;
    let r = round(&v);
    let release = r.actions.iter().find(|a| a.job() == 380).expect("released");
    let Action::Release { why, .. } = release else {
        panic!("{release:?}")
    };
    assert!(
        why.contains("slurm job 380") && why.contains("comment.gpus"),
        "{why}"
    );
    assert!(r.snapshot.jobs.iter().all(|j| j.id != JobId(380)));
    // n4's free GPU 0 is gone; its running job keeps its 7, which no other job may take.
    assert_eq!(r.snapshot.cluster.num_gpus(), 31);
    let mut schedule = current_schedule(&r.snapshot);
    placed(&mut schedule, 377).job = JobId(374);
    let (actions, notes) = r.plan(&schedule);
    assert!(actions.iter().all(|a| a.job() != 374), "{actions:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("job 374: decided onto drained")),
        "{notes:?}"
    );
    // A node Slurm reports down takes its jobs out of the round.
    let n2 = v.nodes.iter_mut().find(|n| n.name == "n2").unwrap();
    n2.alive = false;
    let r = round(&v);
    assert!(
        r.snapshot
            .jobs
            .iter()
            .all(|j| ![371, 377, 379].contains(&j.id.0))
    );
    assert_eq!(r.notes.len(), 3, "{:?}", r.notes);
}

#[test]
fn garbage_from_slurm_is_a_located_error() {
    let e = SlurmView::parse("{\"jobs\": [{\"job_id\": 1}]}", &fixture("sinfo")).unwrap_err();
    assert!(
        e.to_string().contains("squeue --json") && e.to_string().contains("jobs[0].job_state"),
        "{e}"
    );
    let e = SlurmView::parse(&fixture("squeue"), "not json").unwrap_err();
    assert!(e.to_string().starts_with("sinfo --json:1:"), "{e}");
}

/// A running job Slurm reports without its GPU indices (after a slurmctld restart, seen live) is
/// still priced and decided: it holds the lowest GPUs of its nodes that no other job reports,
/// as many as it asks. Priced at 0 instead, its `coda slurm job` would never finish.
#[test]
fn a_running_job_without_gpu_detail_holds_what_it_asks() {
    let mut v = view();
    let j = v.jobs.iter_mut().find(|j| j.id == 377).unwrap();
    let asked = j.req_gpus.expect("coda pinned it") as usize;
    for g in &mut j.gpus {
        g.clear();
    }
    let speeds = coda::slurm::running_speeds(&spec(), &v.jobs, CalibratedPerf::shipped()).unwrap();
    assert!(speeds.get(&377).is_some_and(|s| *s > 0.0), "{speeds:?}");
    let r = round(&v);
    let job = r.snapshot.jobs.iter().find(|j| j.id == JobId(377));
    let a = job
        .and_then(|j| j.run.current.as_ref())
        .expect("still decided, running");
    assert_eq!(a.workers.len(), asked, "{:?}", r.notes);
    // No GPU is held twice.
    let mut seen = HashSet::new();
    for a in &r.snapshot.current_schedule().assignments {
        for w in &a.workers {
            for g in &w.gpus {
                assert!(
                    seen.insert((w.server, *g)),
                    "GPU {g} of {:?} held twice",
                    w.server
                );
            }
        }
    }
}
