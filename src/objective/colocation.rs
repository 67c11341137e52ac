//! What a co-runner costs in the objective's co-location term ([`Colocation`]).

use serde::{Deserialize, Serialize};

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
}
