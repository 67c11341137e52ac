//! Solver settings: written as [`SolveSettings`], checked once into [`CheckedSettings`], which
//! is all a solve accepts.

use serde::{Deserialize, Serialize};

use super::formulation::FormulationOptions;
use crate::error::{Error, Result};

/// The relative and absolute gap under which a solve is called optimal (HiGHS' defaults).
pub(crate) const PROVEN_GAP: f64 = 1e-6;

/// Solver settings as written (by hand, from JSON or the command line); a solve takes them only
/// once checked ([`SolveSettings::checked`]). Defaults written down here.
///
/// ```
/// // Settings are checked where they are used: a negative time limit is a typed error.
/// use coda::{CalibratedPerf, ClusterSnapshot, Objective, Scheduler};
/// use coda::ilp::{ExactScheduler, SolveSettings};
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let bad = SolveSettings { time_limit_s: -1.0, ..SolveSettings::default() };
/// assert!(matches!(bad.checked(), Err(coda::Error::InvalidSetting { .. })));
/// let ok = SolveSettings { time_limit_s: 10.0, ..SolveSettings::default() }.checked()?;
/// let mut exact = ExactScheduler::new(CalibratedPerf::shipped(), Objective::default(), ok);
/// assert!(exact.schedule(&snapshot)?.validate(&snapshot).is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolveSettings {
    /// Wall-clock limit, seconds, on building the model and solving it together (default 60).
    pub time_limit_s: f64,
    /// Stop when the relative gap is below this (default 1e-6: prove optimality).
    pub mip_rel_gap: f64,
    /// Or when the absolute gap is below this (default 1e-6, HiGHS' own): "optimal" means within
    /// this of the best possible objective.
    pub mip_abs_gap: f64,
    /// Branch-and-bound node limit, a repeatable work limit (default: none).
    pub node_limit: Option<u64>,
    /// The configuration program's repeatable work limit: pricing-search nodes over the whole
    /// solve (column generation stops at 60 % of it, enumeration and dives at 85 %, as with
    /// the time limit). With it and a node limit, and a time limit that does not bind, a
    /// solve is the same on every run and machine (default: none). The compact program ignores it.
    #[serde(default)]
    pub work_limit: Option<u64>,
    /// The work limit scaled with the round: this many pricing-search nodes per job the
    /// program decides (held jobs are not priced, so not counted), the smaller of the two where
    /// [`SolveSettings::work_limit`] is also set. One pricing pass costs about the same per
    /// job, so a fixed limit that lets a 5-job round finish leaves a 30-job round its heuristic
    /// start (`formulations/README.md`, *What a work-limited replay measures*); repeatable like
    /// the work limit (default: none).
    #[serde(default)]
    pub work_per_job: Option<u64>,
    /// Solver threads (default 1): HiGHS's, and the configuration program prices its server
    /// classes on that many (not under a work limit, which prices them in order).
    pub threads: u32,
    /// HiGHS random seed (default 0).
    pub seed: u32,
    /// Order interchangeable servers (default on).
    pub symmetry_breaking: bool,
    /// Add the valid inequalities on co-location (default off): a tighter relaxation, the same
    /// optimum, a larger program.
    #[serde(default)]
    pub colocation_cuts: bool,
    /// The configuration program solves its master between chunks of column generation, so
    /// that a caller stopped early holds the columns' schedules, not only the start (default
    /// on; off: the master only once generation ends, at 60 % of the time limit — the ablation
    /// of `coda bench-warm-start --no-interim-masters`). Never under a work limit.
    #[serde(default = "interim_default")]
    pub interim_masters: bool,
    /// The configuration program's exact pricing searches by shapes, then layouts (default
    /// on; off: over fragments, the ablation of `coda solve --no-shape-pricing`). The same
    /// columns and bounds either way; only how fast they come.
    #[serde(default = "shape_pricing_default")]
    pub shape_pricing: bool,
    /// Pricing by shapes charges each pair of jobs with workers its co-location floor in its
    /// knapsack bound (default on; off: the bound without it, the ablation of `coda solve
    /// --no-colocation-floors`). The same columns and bounds either way; only how fast.
    #[serde(default = "shape_pricing_default")]
    pub colocation_floors: bool,
    /// The configuration program's column generation prices first at duals smoothed toward
    /// the best Lagrangian bound so far (default on; off: at the relaxation's duals only, the
    /// ablation of `coda solve --no-dual-smoothing`). The same bound at convergence; only how
    /// fast it comes.
    #[serde(default = "shape_pricing_default")]
    pub dual_smoothing: bool,
    /// Print the solver log.
    pub verbose: bool,
}

/// [`SolveSettings::shape_pricing`]', [`SolveSettings::colocation_floors`]' and
/// [`SolveSettings::dual_smoothing`]'s default, for settings read without them.
fn shape_pricing_default() -> bool {
    true
}

/// [`SolveSettings::interim_masters`]' default, for settings read without it.
fn interim_default() -> bool {
    true
}

impl Default for SolveSettings {
    fn default() -> Self {
        SolveSettings {
            time_limit_s: 60.0,
            mip_rel_gap: 1e-6,
            mip_abs_gap: 1e-6,
            node_limit: None,
            work_limit: None,
            work_per_job: None,
            threads: 1,
            seed: 0,
            symmetry_breaking: true,
            colocation_cuts: false,
            interim_masters: true,
            shape_pricing: true,
            colocation_floors: true,
            dual_smoothing: true,
            verbose: false,
        }
    }
}

impl SolveSettings {
    /// How the program is built under these settings.
    pub fn formulation(&self) -> FormulationOptions {
        FormulationOptions {
            symmetry_breaking: self.symmetry_breaking,
            colocation_cuts: self.colocation_cuts,
        }
    }

    /// These settings, checked once: the only way to a [`CheckedSettings`], which is what every
    /// solve takes. Rejects settings no solve can use, naming the field.
    pub fn checked(&self) -> Result<CheckedSettings> {
        let bad = |f: &str, v: String, why: &str| Err(Error::setting("solve settings", f, v, why));
        // Infinity is allowed: no limit (HiGHS' own default).
        if self.time_limit_s.is_nan() || self.time_limit_s <= 0.0 {
            return bad(
                "time_limit_s",
                self.time_limit_s.to_string(),
                "must be > 0 (or infinite: no limit)",
            );
        }
        if !(self.mip_rel_gap.is_finite() && self.mip_rel_gap >= 0.0) {
            return bad("mip_rel_gap", self.mip_rel_gap.to_string(), "must be >= 0");
        }
        if !(self.mip_abs_gap.is_finite() && self.mip_abs_gap >= 0.0) {
            return bad("mip_abs_gap", self.mip_abs_gap.to_string(), "must be >= 0");
        }
        for (field, limit) in [
            ("work_limit", self.work_limit),
            ("work_per_job", self.work_per_job),
        ] {
            if limit == Some(0) {
                return bad(field, "0".into(), "must be >= 1 (or absent: no limit)");
            }
        }
        if self.threads == 0 {
            return bad("threads", "0".into(), "must be >= 1");
        }
        Ok(CheckedSettings(self.clone()))
    }
}

/// Solve settings that passed [`SolveSettings::checked`]: read through `Deref`, never changed
/// in place, so a solve never meets a setting it cannot use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckedSettings(SolveSettings);

impl Default for CheckedSettings {
    /// The defaults, which pass the check.
    fn default() -> Self {
        CheckedSettings(SolveSettings::default())
    }
}

impl std::ops::Deref for CheckedSettings {
    type Target = SolveSettings;
    fn deref(&self) -> &SolveSettings {
        &self.0
    }
}

impl CheckedSettings {
    /// The same settings with another time limit, floored at 10 ms (a phase of a longer solve
    /// that finds its time spent still gets a valid, tiny, limit).
    pub(crate) fn with_time_limit(&self, time_limit_s: f64) -> CheckedSettings {
        CheckedSettings(SolveSettings {
            time_limit_s: time_limit_s.max(0.01),
            ..self.0.clone()
        })
    }

    /// The work limit of a round in which the program decides `decided` jobs: the smaller of
    /// [`SolveSettings::work_limit`] and [`SolveSettings::work_per_job`] × `decided` (at
    /// least one job's worth), `None` if neither is set.
    pub(crate) fn round_work_limit(&self, decided: usize) -> Option<u64> {
        let scaled = self
            .work_per_job
            .map(|w| w.saturating_mul(decided.max(1) as u64));
        match (self.work_limit, scaled) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The same settings with the work limit of a round deciding `decided` jobs
    /// ([`CheckedSettings::round_work_limit`]) as the whole solve's.
    pub(crate) fn for_round(&self, decided: usize) -> CheckedSettings {
        CheckedSettings(SolveSettings {
            work_limit: self.round_work_limit(decided),
            work_per_job: None,
            ..self.0.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        assert!(SolveSettings::default().checked().is_ok());
        for bad in [
            SolveSettings {
                time_limit_s: 0.0,
                ..Default::default()
            },
            SolveSettings {
                time_limit_s: f64::NAN,
                ..Default::default()
            },
            SolveSettings {
                mip_rel_gap: f64::NAN,
                ..Default::default()
            },
            SolveSettings {
                mip_abs_gap: -1.0,
                ..Default::default()
            },
            SolveSettings {
                threads: 0,
                ..Default::default()
            },
            SolveSettings {
                work_limit: Some(0),
                ..Default::default()
            },
            SolveSettings {
                work_per_job: Some(0),
                ..Default::default()
            },
        ] {
            assert!(bad.checked().is_err(), "{bad:?}");
        }
        // No limit at all is a valid limit.
        let unlimited = SolveSettings {
            time_limit_s: f64::INFINITY,
            ..Default::default()
        };
        assert!(unlimited.checked().is_ok());
    }

    #[test]
    fn the_work_limit_scales_with_the_jobs_decided() {
        let per_job = SolveSettings {
            work_per_job: Some(1_000),
            ..Default::default()
        }
        .checked()
        .unwrap();
        assert_eq!(per_job.round_work_limit(7), Some(7_000));
        // A round deciding no job (all held) still gets one job's worth.
        assert_eq!(per_job.round_work_limit(0), Some(1_000));
        let both = SolveSettings {
            work_limit: Some(5_000),
            work_per_job: Some(1_000),
            ..Default::default()
        }
        .checked()
        .unwrap();
        assert_eq!(both.round_work_limit(3), Some(3_000));
        assert_eq!(both.round_work_limit(30), Some(5_000));
        let fixed = SolveSettings {
            work_limit: Some(5_000),
            ..Default::default()
        }
        .checked()
        .unwrap();
        assert_eq!(fixed.round_work_limit(30), Some(5_000));
        assert_eq!(CheckedSettings::default().round_work_limit(30), None);
        let round = per_job.for_round(4);
        assert_eq!((round.work_limit, round.work_per_job), (Some(4_000), None));
    }
}
