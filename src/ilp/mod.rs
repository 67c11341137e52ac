//! Solving the round program: HiGHS through good_lp, with limits, seed and MIP start, and an
//! honest report; plus a brute-force reference for tiny instances.
//!
//! Outcomes are data: a time-limited solve returns its best schedule with its bound and gap; an
//! infeasible model is a [`SolveStatus`], not an error. Only bad input is an error.
//!
//! The layers, bottom to top: [`formulation`] builds the program from the round priced once
//! ([`crate::objective::RoundPricing`]), one file per constraint group of `formulations/README.md`;
//! [`codec`] maps solver values to a [`crate::Schedule`] and back (MIP starts); `solve` hands
//! the program to HiGHS; [`ExactScheduler`] puts it behind the [`crate::Scheduler`] trait and
//! [`WindowedIlp`] bounds it to a window of jobs for simulations; [`brute_force`] re-checks it
//! on tiny instances.

mod brute;
pub mod codec;
mod columns;
mod exact;
pub mod formulation;
pub mod scaling;
mod solve;
mod window;

pub use brute::{BruteForceLimits, brute_force};
pub use exact::ExactScheduler;
pub use solve::{
    FixReport, SolveReport, SolveSettings, SolveStatus, Solved, export_mps, fix_and_solve,
    relative_gap, relaxation_bound, solve, solve_from, solve_restricted,
};
pub use window::WindowedIlp;
pub(crate) use window::ranked;
