//! Solving the round program: HiGHS through good_lp, with limits, seed and MIP start, and an
//! honest report; plus a brute-force reference for tiny instances.
//!
//! Outcomes are data: a time-limited solve returns its best schedule with its bound and gap; an
//! infeasible model is a [`SolveStatus`], not an error. Only bad input is an error.
//!
//! The layers, bottom to top: `formulation` builds the program from the round priced once
//! ([`crate::objective::RoundPricing`]), one file per constraint group of `formulations/README.md`,
//! over one column map (`columns`) that `codec` reads to map solver values to a
//! [`crate::Schedule`] and back (MIP starts); [`SolveRequest`] names a round's settings
//! ([`CheckedSettings`]), starts and held jobs and hands the program to a `backend` (HiGHS, the
//! only file that speaks it); [`ExactScheduler`] puts it behind the [`crate::Scheduler`] trait and
//! [`WindowedIlp`] bounds it to a window of jobs for simulations; [`brute_force`] re-checks it
//! on tiny instances.

mod backend;
mod brute;
mod codec;
mod columns;
mod config;
mod exact;
mod formulation;
mod report;
mod settings;
mod solve;
mod window;

pub use brute::{BruteForceLimits, brute_force, every_schedule};
pub use exact::ExactScheduler;
pub use formulation::ModelSize;
pub use report::{
    ColumnStats, FixReport, Incumbent, SolveProgram, SolveReport, SolveStatus, Solved,
    incumbent_at, primal_integral, relative_gap,
};
pub use settings::{CheckedSettings, SolveSettings};
pub use solve::SolveRequest;
pub use window::WindowedIlp;
pub(crate) use window::ranked;
