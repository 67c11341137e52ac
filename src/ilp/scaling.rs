//! Solve time against cluster size (`coda bench-solve`): one row per instance and a CSV (the
//! instances come from [`crate::workload::scaling_instance`]; the command line draws the plot).

use std::path::Path;

use serde::Serialize;

use super::{SolveSettings, SolveStatus, solve};
use crate::error::{Error, Result};
use crate::model::ClusterSnapshot;
use crate::objective::Objective;
use crate::perf::PerfModel;

/// One measured solve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScalingRow {
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
}

/// Solves one instance and reports the row.
pub fn measure(
    name: &str,
    snapshot: &ClusterSnapshot,
    perf: &dyn PerfModel,
    settings: &SolveSettings,
) -> Result<ScalingRow> {
    let s = solve(snapshot, perf, &Objective::default(), settings, None)?;
    let r = s.report;
    Ok(ScalingRow {
        instance: name.to_string(),
        servers: snapshot.cluster.servers.len(),
        gpus: snapshot.cluster.num_gpus(),
        jobs: snapshot.jobs.len(),
        symmetry_breaking: settings.symmetry_breaking,
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
    })
}

/// Writes rows as CSV (atomically).
pub fn write_csv(rows: &[ScalingRow], path: &Path) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)
            .map_err(|e| Error::io(path, std::io::Error::other(e.to_string())))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| Error::io(path, std::io::Error::other(e.to_string())))?;
    crate::util::write_atomic(path, &bytes)
}
