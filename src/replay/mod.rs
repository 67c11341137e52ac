//! One trace replay: what it runs, as plain data ([`Replay`]: the workload, the simulator's
//! settings, the policies' settings — the command line's `simulate` flags and the Python
//! package's keywords both come from it), the run under a policy with observers
//! ([`Replay::run`] → [`ReplayRun`]), what a run leaves behind (its summary, tables, CSVs and
//! plots, written by one [`RunWriter`]), and the decision-by-decision environment an agent
//! steps ([`mod@env`], the Python package's `coda/Cluster-v0`).

pub mod env;
mod run;
mod spec;
mod summary;
mod writer;

pub use run::ReplayRun;
pub use spec::{PolicySpec, ROUND_S, Replay, SimSpec, WorkloadSpec};
pub use summary::{Comparison, RunSummary};
pub use writer::RunWriter;
