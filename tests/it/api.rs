//! The library's entry points as callers see them: the replay as data (the command line's flags
//! and the Python package's keys are its fields), the simulator's observers, the one exact-round
//! recipe, and the typed values that replaced numbers and strings.

use std::process::Command;

use coda::policies::{ExactRound, FixConfident, PolicyKind, PolicyOptions, WarmStart};
use coda::replay::Replay;
use coda::scheduler::{RoundEvent, RoundEvents};
use coda::sim::{Allowance, Observe, ObserverMode, Simulator};
use coda::{CalibratedPerf, ClusterSnapshot, Error, Expected, Schedule, Scheduler};

use crate::common::datasets;

fn coda_help(cmd: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_coda"))
        .args([cmd, "--help"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_replay_field_is_a_simulate_flag_and_a_python_key() {
    let help = coda_help("simulate");
    let fields = Replay::fields();
    assert!(fields.len() >= 25, "{fields:?}");
    for f in &fields {
        let flag = format!("--{}", f.replace('_', "-"));
        assert!(
            help.contains(&flag),
            "{flag} missing from `coda simulate --help`"
        );
    }
    // The JSON the Python package sends: every field by its name, the parts side by side.
    let json = r#"{"trace": "philly", "take": 40, "cluster": "2x8", "round_s": 600,
                   "contention_allowance": 1.5, "policy_samples": 1, "every_round": true}"#;
    let r = Replay::from_json(json, "test").unwrap();
    assert_eq!(r.workload.take, Some(40));
    assert_eq!(r.sim.round_s, 600.0);
    assert_eq!(r.sim.contention_allowance, Allowance::Given(1.5));
    assert_eq!(r.policy.policy_samples, 1);
    assert!(r.sim.every_round);
    // Unset fields keep the command line's defaults.
    let d = Replay::from_json(r#"{"trace": "philly"}"#, "test").unwrap();
    assert_eq!(d, Replay::of("philly"));
    assert_eq!(d.sim.contention_allowance, Allowance::Measured);
}

#[test]
fn a_replay_key_of_no_part_is_refused_with_its_name_and_the_valid_ones() {
    let e = Replay::from_json(r#"{"trace": "philly", "tkae": 10}"#, "simulate").unwrap_err();
    match &e {
        Error::InvalidField {
            field,
            expected: Expected::OneOf(known),
            ..
        } => {
            assert_eq!(field, "tkae");
            assert!(known.iter().any(|k| k == "take"), "{known:?}");
        }
        other => panic!("{other:?}"),
    }
    // A value of the wrong type names its field too; a range is checked with the rest.
    let e = Replay::from_json(r#"{"trace": "philly", "take": "ten"}"#, "simulate").unwrap_err();
    assert!(e.to_string().contains("take"), "{e}");
    let mut r = Replay::of("philly");
    r.sim.restart_s = 600.0;
    let e = r.check("simulate").unwrap_err();
    assert!(
        matches!(&e, Error::InvalidSetting { field, expected: Expected::AtMost(name, v), .. }
            if field == "restart_s" && name == "round_s" && *v == 300.0),
        "{e:?}"
    );
}

#[test]
fn the_allowance_reads_auto_or_a_factor() {
    assert_eq!("auto".parse::<Allowance>().unwrap(), Allowance::Measured);
    assert_eq!("1.25".parse::<Allowance>().unwrap(), Allowance::Given(1.25));
    assert!("0.5".parse::<Allowance>().is_err());
    assert!("soon".parse::<Allowance>().is_err());
    for a in [Allowance::Measured, Allowance::Given(2.0)] {
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Allowance>(&text).unwrap(), a);
    }
}

/// Counts what the run loop reports.
#[derive(Default)]
struct Counts {
    every: u64,
    events: u64,
    rounds: u64,
    solves: u64,
    finals: u64,
}

impl Observe for Counts {
    fn mode(&self) -> ObserverMode {
        ObserverMode::Every(self.every)
    }
    fn observe_event(&mut self, sim: &Simulator<'_>) -> coda::Result<()> {
        assert!(sim.events_processed().is_multiple_of(self.every));
        self.events += 1;
        Ok(())
    }
    fn observe_round(
        &mut self,
        _: &Simulator<'_>,
        snapshot: &ClusterSnapshot,
        events: &[RoundEvent],
    ) -> coda::Result<()> {
        assert!(snapshot.time_s >= 0.0);
        self.rounds += 1;
        self.solves += RoundEvents(events.to_vec()).solves().len() as u64;
        Ok(())
    }
    fn observe_final(&mut self, sim: &Simulator<'_>) -> coda::Result<()> {
        assert!(sim.done());
        self.finals += 1;
        Ok(())
    }
}

#[test]
fn observers_see_every_round_and_the_policys_solves_and_change_nothing() {
    let perf = CalibratedPerf::shipped();
    let mut r = Replay::of("philly");
    r.workload.take = Some(12);
    r.workload.cluster = Some("2x8".into());
    r.workload.datasets = datasets();
    r.sim.contention_allowance = Allowance::Given(1.0);
    r.policy.ilp_node_limit = Some(50);
    r.policy.ilp_time_limit = 1000.0;
    let w = r.workload(perf).unwrap();
    let opts = r.policy_options().unwrap();
    // A plain run and an observed one are the same run.
    let mut plain = r.simulator(&w, 1.0, perf).unwrap();
    plain
        .run(PolicyKind::Ilp.build(perf, &opts).unwrap().as_mut())
        .unwrap();
    let mut watched = r.simulator(&w, 1.0, perf).unwrap();
    let mut counts = Counts {
        every: 3,
        ..Counts::default()
    };
    let mut ilp = PolicyKind::Ilp.build(perf, &opts).unwrap();
    watched
        .run_observed(ilp.as_mut(), &mut [&mut counts])
        .unwrap();
    assert_eq!(plain.records(), watched.records());
    assert_eq!(counts.finals, 1);
    assert!(
        counts.rounds > 0 && counts.solves > 0,
        "{} rounds",
        counts.rounds
    );
    assert!(counts.solves <= counts.rounds);
    assert_eq!(counts.events, watched.events_processed() / 3);
    // The replay keeps the same solves in its run.
    let run = r.run(PolicyKind::Ilp, &w, 1.0, perf, &mut []).unwrap();
    assert_eq!(run.solves.len() as u64, counts.solves);
    assert_eq!(run.records, watched.records());
}

#[test]
fn the_exact_round_recipe_is_what_schedule_runs_and_checks_its_choices() {
    let perf = CalibratedPerf::shipped();
    let snap = ClusterSnapshot::from_json_file("examples/instances/small.json").unwrap();
    let recipe = ExactRound::default();
    let solved = recipe.solve(perf, &snap).unwrap();
    assert!(solved.report.objective >= solved.report.start_objective);
    // The scheduler is the recipe back-filled, and reports its solve.
    let mut exact = recipe.clone().scheduler(perf).unwrap();
    let s = exact.schedule(&snap).unwrap();
    assert_eq!(s, coda::schedule(&snap).unwrap());
    let events = exact.take_events();
    assert_eq!(RoundEvents(events).solves().len(), 1);
    assert!(exact.take_events().is_empty(), "events are taken once");
    // A warm start that is not a schedule of the round is an error; the policy's is taken.
    let bad = Schedule::from_json_file("examples/instances/hetero.schedule.json").unwrap();
    let with = |warm_start| ExactRound {
        warm_start,
        ..ExactRound::default()
    };
    assert!(with(WarmStart::Schedule(bad)).solve(perf, &snap).is_err());
    let policy = with(WarmStart::Policy(None)).solve(perf, &snap).unwrap();
    assert!(policy.report.warm_started);
    // Fix-and-solve needs the policy's start, and its ranges.
    let fix = |share| FixConfident {
        confidence: 0.5,
        share,
    };
    let no_policy = ExactRound {
        fix: Some(fix(0.5)),
        ..ExactRound::default()
    };
    assert!(matches!(
        no_policy.check(),
        Err(Error::InvalidSetting { ref field, .. }) if field == "fix"
    ));
    let whole = ExactRound {
        fix: Some(fix(1.0)),
        ..with(WarmStart::Policy(None))
    };
    assert!(matches!(
        whole.check(),
        Err(Error::InvalidSetting {
            expected: Expected::OpenFraction,
            ..
        })
    ));
}

#[test]
fn policy_names_mean_one_thing_each() {
    // `ilp` is the replay policy (the program on a window, back-filled, revisited); the whole
    // round's program is the recipe, named `exact` by the scheduler it makes.
    let perf = CalibratedPerf::shipped();
    let ilp = PolicyKind::Ilp
        .build(perf, &PolicyOptions::default())
        .unwrap();
    assert_eq!(ilp.name(), "ilp");
    let exact = ExactRound::default().scheduler(perf).unwrap();
    assert_eq!(exact.name(), "exact");
    assert!("exact".parse::<PolicyKind>().is_err());
}

#[test]
fn servers_and_gpu_types_are_typed_and_written_as_before() {
    use coda::model::{GpuType, ServerIdx, Violation};
    let snap = ClusterSnapshot::from_json_file("examples/instances/small.json").unwrap();
    let text = std::fs::read_to_string("examples/instances/small.schedule.json").unwrap();
    let s: Schedule = serde_json::from_str(&text).unwrap();
    // The same JSON as before the types: bare numbers and names.
    let back: serde_json::Value = serde_json::to_value(&s).unwrap();
    assert_eq!(
        back,
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    );
    let mut moved = s.clone();
    moved.assignments[0].workers[0].server = ServerIdx(99);
    assert!(moved.validate(&snap).iter().any(|v| matches!(
        v,
        Violation::UnknownServer { server, .. } if *server == ServerIdx(99)
    )));
    let t = GpuType::new(snap.cluster.servers[0].gpu_type.as_str());
    assert_eq!(t, snap.cluster.servers[0].gpu_type);
    assert_eq!(t.as_str(), &*snap.cluster.servers[0].gpu_type);
}
