//! coda on a real resource manager: Slurm.
//!
//! `coda slurm` reads the cluster and the queue from Slurm ([`SlurmView`]), hands the jobs
//! tagged for coda ([`Tag`]) to a policy as a [`crate::ClusterSnapshot`] ([`Round::build`]),
//! and carries the decision out with Slurm's own commands ([`Action`]): `scontrol update`
//! (nodes, GPU count), `release`, and `requeuehold` for a job it stops or moves. It keeps no
//! state of its own — everything it needs is in Slurm (a job's checkpointed work in its tag) —
//! so it survives its own restarts and slurmctld's. Jobs without a tag are Slurm's. What is
//! enforced and what is advisory: [`plan`]'s docs. How an operator sets it up: `examples/slurm/README.md`.

mod action;
mod hostlist;
pub mod plan;
mod tag;
mod view;

pub use action::{Action, SAME_NODE_RESTART_DELAY_S, Stop};
pub use hostlist::expand_hostlist;
pub use plan::{Round, RoundSettings, SlurmSpec, running_speeds};
pub use tag::{TAG_PREFIX, Tag};
pub use view::{JobState, JobView, NodeView, SlurmView};
