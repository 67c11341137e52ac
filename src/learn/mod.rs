//! What the learned scheduler learns from: rounds solved by the exact program and decoded into
//! the two decisions the hierarchical policy makes — per job, the level-1 allocation (one of the
//! options the program's `y_jk` chooses from, or wait) and the level-2 placement (GPUs per PCIe
//! switch and PS per server, the program's own granularity) — in a fixed canonical order.
//!
//! [`lookahead_labels`] labels the states a policy visits with the lookahead's decisions
//! instead (DAgger towards a non-myopic expert).
//!
//! [`distil`] records the lookahead's plays on the rounds a student visits and fits the
//! `distilled` policy's gate to them.
//!
//! [`rl`] is reinforcement learning's environment side: episodes, rollouts of the policy in the
//! simulator, per-level rewards and baselines.
//!
//! This layer reads the solver and the workload generators. Only `train` (behind the `train`
//! feature) names the training backend.

mod dagger;
pub mod distil;
pub mod examples;
pub mod labels;
pub mod rl;
mod rounds;
#[cfg(feature = "train")]
pub mod train;

pub use dagger::{LookaheadLabelling, lookahead_labels};
pub use examples::{TierExample, tier_examples};
pub use labels::{
    Expert, JobLabel, LabelScore, LabelSpec, PlaceStep, RoundLabel, label_round, labels_of,
    read_label_sets, read_labels, rebuild, resume_labels, split_held_out,
};
pub use rounds::{TraceCut, trace_rounds};
