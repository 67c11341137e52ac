//! What the simulator replays and the solver benchmarks on: public traces turned into jobs
//! ([`trace`]), cluster specs and the shipped workloads ([`load`], [`cluster_from_spec`]), and
//! seeded random instances ([`generate()`]).

mod clusters;
pub mod generate;
mod tiers;
pub mod trace;

pub use clusters::{
    SHIPPED_TRACES, TraceRef, TraceSource, Workload, cluster_from_spec, load, source,
};
pub use generate::{GenerateOptions, current_schedule, generate, scaling_instance};
pub use tiers::offer_tiers;
