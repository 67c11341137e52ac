//! The configuration program (Dantzig–Wolfe over servers; its mathematics in
//! `formulations/README.md`, "The configuration program"): a column is what one server hosts,
//! priced exactly by the round's [`crate::objective::RoundPricing`]; the master chooses at most
//! one column per server (per class of identical servers, as many as it has) and one option per
//! job, and links them.
//!
//! `bound`: the knapsack bound the pricing searches prune with; `budget`: where a phase stops (deadline, or search nodes: the repeatable limit);
//! `column`: a server's configuration, its exact share of the objective, and the server classes;
//! `master`: the master over a pool of columns, integer or relaxed (with duals); `duals`: its
//! duals, reduced costs and the Lagrangian bound at any of them; `price`: a
//! class's best column at those duals by an exact search (`search` over fragments, `shape` by
//! shapes then layouts, the default), or every column within a gap; `cg`:
//! column generation at the root, whose relaxation bounds the round, and dives; `solve`: the
//! whole solve (generation, master, enumeration, dives). [`crate::ilp::SolveRequest::program`]
//! solves a round with it.

mod bound;
mod budget;
mod cg;
mod column;
mod duals;
mod master;
pub(super) mod price;
mod search;
mod shape;
mod solve;

#[cfg(test)]
pub(crate) use column::columns_of;
#[cfg(test)]
pub(crate) use master::{solve_lp, solve_master};
pub(crate) use solve::solve;

/// A shipped round (`formulations/instances/NAME.json`), for the tests of this module.
#[cfg(test)]
pub(crate) fn test_instance(name: &str) -> crate::model::ClusterSnapshot {
    let path = format!(
        "{}/formulations/instances/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    crate::model::ClusterSnapshot::from_json_file(path).unwrap()
}

/// The shipped round `name` and the compact program's proven optimum of it (60 s limit, the
/// default objective): the reference the tests of this module check the configuration
/// program against.
#[cfg(test)]
pub(crate) fn proven_optimum(
    name: &str,
) -> (crate::model::ClusterSnapshot, crate::ilp::report::Solved) {
    let perf = crate::perf::CalibratedPerf::shipped();
    let settings = crate::ilp::SolveSettings {
        time_limit_s: 60.0,
        ..Default::default()
    }
    .checked()
    .unwrap();
    let snap = test_instance(name);
    let exact = crate::ilp::SolveRequest::new(&snap, perf, crate::objective::Objective::default())
        .unwrap()
        .settings(settings)
        .solve()
        .unwrap();
    assert_eq!(
        exact.report.status,
        crate::ilp::report::SolveStatus::Optimal,
        "{name}"
    );
    (snap, exact)
}
