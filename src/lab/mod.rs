//! The workbench behind the command line: fitting the performance model to `datasets/`
//! ([`calibrate`]), one trace replay as plain data ([`replay`]) and as a step-by-step environment ([`gym`]), measuring solve time against cluster size ([`scaling`]), what a simulated run
//! leaves behind ([`report`]), and training the learned policy ([`learn`]).
//!
//! Public so that the `coda` binary, the benchmarks and the tests reach it, but **not the
//! library's promise**: its items follow the experiments and may change in any release. A
//! program that schedules rounds needs none of it — the crate root, [`crate::ilp`],
//! [`crate::policies`], [`crate::sim`] and [`crate::workload`] are the library.

pub mod gym;
pub mod learn;
pub mod replay;
pub mod report;
pub mod scaling;

/// Fitting the performance model (`coda calibrate`): every fit on relative error, scored on rows
/// it did not see; see `models/README.md` for the fit quality it reports.
pub mod calibrate {
    pub use crate::perf::calibrate::{
        CALIBRATION_SEED, CLUSTER_GPU, INTERFERENCE_PROXY, PlacementCheck, calibrate,
        gavel_model_name, placement_check, placement_summary,
    };
}
