//! What a co-runner costs in the objective's co-location term ([`Colocation`]).

use serde::{Deserialize, Serialize};

use crate::perf::ServerSize;

/// How the co-location term, linear in the co-runners on a job's server, reads the
/// PerfModel's slowdown, which compounds them and saturates (a server's host side takes at
/// most a share of a job's pace: [`crate::PerfModel::colocation_slowdown_among`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Colocation {
    /// Each co-runner costs its pair slowdown's excess (the tangent at one co-runner): exact
    /// for one, dearer than the PerfModel for several (on a full 8-GPU server of 1-GPU jobs,
    /// twice its loss and more), so a program avoids packing servers the simulator would fill.
    #[default]
    Pair,
    /// Each co-runner costs the average excess over a full server: `(F(n) − 1)/n` for `n`
    /// co-runners of its model, `n` the largest server of the GPU type less one GPU (the
    /// secant of the compounded slowdown `F`): exact on a full server of like co-runners,
    /// cheaper than the PerfModel for one or two.
    FullServer,
    /// Each co-runner costs the full-server secant `(F(n) − 1)/n`, and the job's coefficient is
    /// the value a full server of its own model takes from it over that server's `F(n) − 1`:
    /// a full server of like co-runners costs what the PerfModel's speeds lose there, for any
    /// compute share `c` (the PerfModel stretches compute time by `F`, so the job loses
    /// `c(F − 1)/(1 + c(F − 1))` of its progress, where the first-order coefficient charges
    /// `c(F − 1)`: at a coupling of 0.5, 0.9 of a compute-bound job's value for 0.47 lost);
    /// nothing for a job that finishes in the round even beside a full server; below the
    /// PerfModel for one or two co-runners.
    Progress,
}

/// The co-runners a full server holds beside a job: the largest server of the GPU type less
/// one GPU (`server`; at least one, and one where the cluster has none), the `n` of
/// [`Colocation::FullServer`]'s secant.
pub(crate) fn full_server_co_runners(server: Option<ServerSize>) -> u32 {
    server.map_or(1, |s| s.gpus.saturating_sub(1).max(1))
}
