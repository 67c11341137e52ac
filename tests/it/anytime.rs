//! The exact solvers as a deadline-bound caller meets them: each solve's incumbent over time
//! (what the primal integral is read from), and the configuration program's pricing on more
//! than one thread.

use coda::ilp::{self, Incumbent, SolveProgram, SolveSettings};
use coda::{CalibratedPerf, ClusterSnapshot, Objective};

fn round(name: &str) -> ClusterSnapshot {
    let path = format!(
        "{}/formulations/instances/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    ClusterSnapshot::from_json_file(path).unwrap()
}

fn solve(s: &ClusterSnapshot, program: SolveProgram, settings: SolveSettings) -> ilp::Solved {
    ilp::SolveRequest::new(s, CalibratedPerf::shipped(), Objective::default())
        .unwrap()
        .settings(settings.checked().unwrap())
        .program(program)
        .solve()
        .unwrap()
}

/// A trail is what a caller stopping at any moment would hold: it starts at the start's
/// objective, rises strictly, stays within the solve's time, and ends at the objective returned
/// (the returned schedule is the best of the trail, up to the tolerance below which a solver's
/// schedule does not replace the start).
fn check_trail(name: &str, r: &ilp::SolveReport) {
    let t: &[Incumbent] = &r.incumbents;
    assert!(!t.is_empty(), "{name}: no incumbent");
    assert!(
        (t[0].objective - r.start_objective).abs() < 1e-9,
        "{name}: first {:?}, start {}",
        t[0],
        r.start_objective
    );
    for w in t.windows(2) {
        assert!(w[1].objective > w[0].objective, "{name}: {t:?}");
        assert!(w[1].time_s >= w[0].time_s, "{name}: {t:?}");
    }
    let last = t[t.len() - 1];
    assert!(
        last.time_s <= r.wall_time_s + 0.5,
        "{name}: {last:?} after {}",
        r.wall_time_s
    );
    let tol = ilp::SolveSettings::default().mip_rel_gap.max(1e-6) * r.objective.abs().max(1.0);
    assert!(
        (last.objective - r.objective).abs() <= tol,
        "{name}: last {last:?}, returned {}",
        r.objective
    );
}

#[test]
fn every_solve_reports_its_incumbent_over_time() {
    for (name, program) in [
        ("gen_s04_j08_seed1", SolveProgram::Compact),
        ("gen_s04_j08_seed1", SolveProgram::Config),
        ("gen_s06_j12_seed2", SolveProgram::Config),
    ] {
        let s = round(name);
        let settings = SolveSettings {
            time_limit_s: 30.0,
            ..Default::default()
        };
        let got = solve(&s, program, settings);
        check_trail(name, &got.report);
    }
}

#[test]
fn primal_integral_reads_the_trail() {
    let p = |time_s, objective| Incumbent { time_s, objective };
    // Nothing found: the whole horizon; the best from the start: nothing.
    assert_eq!(ilp::primal_integral(&[], 2.0, 10.0), 10.0);
    assert_eq!(ilp::primal_integral(&[p(0.0, 2.0)], 2.0, 10.0), 0.0);
    // No schedule for 1 s (gap 1), half the best for 2 s, then the best.
    let trail = [p(1.0, 1.0), p(3.0, 2.0)];
    assert!((ilp::primal_integral(&trail, 2.0, 10.0) - 2.0).abs() < 1e-12);
    // Unsorted input, the same; points past the horizon count at it.
    let late = [p(3.0, 2.0), p(1.0, 1.0), p(20.0, 3.0)];
    assert!((ilp::primal_integral(&late, 2.0, 10.0) - 2.0).abs() < 1e-12);
    // Opposite signs count as no schedule.
    assert!((ilp::primal_integral(&[p(0.0, -1.0)], 1.0, 4.0) - 4.0).abs() < 1e-12);
    assert!(ilp::incumbent_at(&trail, 0.5).is_nan());
    assert_eq!(ilp::incumbent_at(&trail, 2.0), 1.0);
    assert_eq!(ilp::incumbent_at(&trail, 3.0), 2.0);
}

/// Pricing the server classes on two threads changes nothing a work limit makes repeatable
/// (the searches then run in order); without one, a round the program proves has the same
/// optimum on one thread and on two.
#[test]
fn pricing_on_two_threads_finds_what_one_does() {
    let s = round("gen_s08_j16_seed2");
    let limited = |threads| SolveSettings {
        time_limit_s: f64::INFINITY,
        node_limit: Some(50),
        work_limit: Some(200_000),
        threads,
        ..Default::default()
    };
    let (a, b) = (
        solve(&s, SolveProgram::Config, limited(1)),
        solve(&s, SolveProgram::Config, limited(2)),
    );
    assert_eq!(a.schedule, b.schedule);
    assert_eq!(a.report.best_bound.to_bits(), b.report.best_bound.to_bits());
    let (ca, cb) = (a.report.columns.unwrap(), b.report.columns.unwrap());
    assert_eq!(
        (ca.columns, ca.iterations, ca.search_nodes),
        (cb.columns, cb.iterations, cb.search_nodes)
    );
    let s = round("gen_s04_j08_seed2");
    let free = |threads| SolveSettings {
        time_limit_s: 60.0,
        threads,
        ..Default::default()
    };
    let (one, two) = (
        solve(&s, SolveProgram::Config, free(1)),
        solve(&s, SolveProgram::Config, free(2)),
    );
    assert_eq!(
        one.report.status,
        ilp::SolveStatus::Optimal,
        "{:?}",
        one.report
    );
    assert_eq!(
        two.report.status,
        ilp::SolveStatus::Optimal,
        "{:?}",
        two.report
    );
    assert!((one.report.objective - two.report.objective).abs() < 1e-6);
    assert!(two.schedule.validate(&s).is_empty());
    // HiGHS sizes its scheduler once per OS thread: one, two, then one thread again on this
    // test's thread must all run (and prove the same optimum).
    let proven: Vec<f64> = [1, 2, 1]
        .into_iter()
        .map(|t| {
            let got = solve(&s, SolveProgram::Compact, free(t));
            assert_eq!(
                got.report.status,
                ilp::SolveStatus::Optimal,
                "{t}: {:?}",
                got.report
            );
            got.report.objective
        })
        .collect();
    assert!(
        proven
            .iter()
            .all(|o| (o - one.report.objective).abs() < 1e-6),
        "{proven:?}"
    );
}

/// The masters between chunks of column generation only take time from it: on a round whose
/// generation converges, the columns, relaxations and search nodes are those of one piece, and
/// so is the proven optimum.
#[test]
fn masters_between_chunks_leave_the_columns_as_they_were() {
    let s = round("gen_s06_j12_seed1");
    let with = |interim_masters| SolveSettings {
        time_limit_s: 60.0,
        interim_masters,
        ..Default::default()
    };
    let (a, b) = (
        solve(&s, SolveProgram::Config, with(true)),
        solve(&s, SolveProgram::Config, with(false)),
    );
    let (ca, cb) = (a.report.columns.unwrap(), b.report.columns.unwrap());
    assert!(ca.converged && cb.converged, "{ca:?} {cb:?}");
    assert_eq!(
        (ca.iterations, ca.search_nodes),
        (cb.iterations, cb.search_nodes)
    );
    assert_eq!(ca.relaxation.to_bits(), cb.relaxation.to_bits());
    assert!((a.report.objective - b.report.objective).abs() < 1e-9);
    // Without them the trail has the start and the masters after generation only.
    assert!(a.report.incumbents.len() >= b.report.incumbents.len());
}
