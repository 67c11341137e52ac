//! Solve time against cluster size (`coda bench-solve`): one row per instance and a CSV (the
//! instances come from [`coda::workload::scaling_instance`]; the command line draws the plot).

use std::path::Path;

use serde::Serialize;

use coda::Result;
use coda::ilp::{SolveProgram, SolveRequest, SolveSettings, SolveStatus, relative_gap};
use coda::model::ClusterSnapshot;
use coda::objective::Objective;
use coda::perf::PerfModel;

/// One measured solve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ScalingRow {
    /// Instance name.
    pub instance: String,
    /// Servers.
    pub servers: usize,
    /// GPUs in the cluster.
    pub gpus: u64,
    /// Jobs.
    pub jobs: usize,
    /// Symmetry breaking on?
    pub symmetry_breaking: bool,
    /// Valid inequalities on co-location on?
    pub colocation_cuts: bool,
    /// The program solved: `compact` or `config`.
    pub program: SolveProgram,
    /// Columns.
    pub variables: usize,
    /// Integer columns.
    pub integer_variables: usize,
    /// Rows.
    pub constraints: usize,
    /// Build seconds.
    pub build_s: f64,
    /// Solver seconds.
    pub solve_s: f64,
    /// Outcome.
    pub status: SolveStatus,
    /// Objective.
    pub objective: f64,
    /// Utility of the same schedule with the PerfModel's compounded contention.
    pub perf_model_utility: f64,
    /// Best bound.
    pub best_bound: f64,
    /// Relative gap.
    pub gap: f64,
    /// Nodes.
    pub nodes: Option<u64>,
    /// Objective of the start the solve began from (the best of keeping the running jobs and
    /// waiting: a [`SolveRequest`] with no candidates).
    pub start_objective: f64,
    /// The root bound: for the compact program the optimum of its linear relaxation (before
    /// HiGHS' presolve and cuts), for the configuration program the configuration LP's where
    /// column generation converged; NaN if neither was reached within the limit.
    pub root_bound: f64,
    /// `(root_bound − objective) / |objective|`: how far the relaxation is from the schedule
    /// found (with the best schedule found for the instance, when rows are compared).
    pub root_gap: f64,
    /// Columns the configuration program generated (empty for the compact program).
    pub columns: Option<usize>,
    /// Its pricing-search nodes.
    pub search_nodes: Option<u64>,
    /// Solver threads (HiGHS, and the configuration program's pricing).
    pub threads: u32,
}

/// Solves one instance with `program` (`Auto` as the round's size picks it) and reports the
/// row.
pub(crate) fn measure(
    name: &str,
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    settings: &SolveSettings,
    program: SolveProgram,
) -> Result<ScalingRow> {
    let request = SolveRequest::new(snapshot, perf, Objective::default())?
        .settings(settings.checked()?)
        .program(program);
    let program = request.chosen_program();
    let compact_root = if program == SolveProgram::Compact {
        request.relaxation_bound()?.unwrap_or(f64::NAN)
    } else {
        f64::NAN
    };
    let s = request.solve()?;
    let r = s.report;
    let root_bound = match &r.columns {
        Some(c) if c.converged => c.relaxation,
        Some(_) => f64::NAN,
        None => compact_root,
    };
    Ok(ScalingRow {
        instance: name.to_string(),
        servers: snapshot.cluster.servers.len(),
        gpus: snapshot.cluster.num_gpus(),
        jobs: snapshot.jobs.len(),
        symmetry_breaking: settings.symmetry_breaking,
        colocation_cuts: settings.colocation_cuts,
        program,
        variables: r.size.variables,
        integer_variables: r.size.integer_variables,
        constraints: r.size.constraints,
        build_s: r.build_time_s,
        solve_s: r.wall_time_s,
        status: r.status,
        objective: r.objective,
        perf_model_utility: r.perf_model_utility,
        best_bound: r.best_bound,
        gap: r.gap,
        nodes: r.nodes,
        start_objective: r.start_objective,
        root_bound,
        root_gap: relative_gap(root_bound, r.objective),
        columns: r.columns.as_ref().map(|c| c.columns),
        search_nodes: r.columns.as_ref().map(|c| c.search_nodes),
        threads: settings.threads,
    })
}

/// Writes rows as CSV (atomically).
pub(crate) fn write_csv(rows: &[ScalingRow], path: &Path) -> Result<()> {
    coda::io::write_csv(path, rows)
}
