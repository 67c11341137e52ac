//! Every file a replay leaves behind, written by one owner ([`RunWriter`]), each atomically: a
//! run interrupted or failing half-way never leaves a file cut short.

use std::path::{Path, PathBuf};

use super::run::ReplayRun;
use super::summary::{Comparison, jobs_csv, solves_csv, utilization_csv};
use crate::error::{Error, Result};
use crate::sim::JctBound;
use crate::util::write_atomic;

/// The folder of a replay, or of a comparison of replays, and everything written into it.
///
/// A run's folder ([`RunWriter::write_run`]) holds `metrics.json` (what `coda simulate --json`
/// prints), `jobs.csv` (one row per job), `utilization.csv` (GPUs held at every change),
/// `solves.csv` (when the policy solved rounds: one row per solve) and, with the `plots`
/// feature, `jct_cdf.svg` and `utilization.svg`. A comparison's folder
/// ([`RunWriter::write_comparison`]) holds one such folder per policy, `comparison.csv` and
/// `comparison.md`, `bound.json` (the lower bounds on its average JCT, when given) and the plots
/// of every run together.
#[derive(Debug, Clone)]
pub struct RunWriter {
    dir: PathBuf,
}

impl RunWriter {
    /// Writes into `dir` (created, with its parents, when the first file is written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunWriter { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn create(dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
    }

    /// A run's files; `title` heads its plots.
    pub fn write_run(&self, run: &ReplayRun, title: &str) -> Result<()> {
        Self::create(&self.dir)?;
        let json = serde_json::to_string_pretty(&run.summary).expect("a summary serialises");
        write_atomic(&self.dir.join("metrics.json"), json.as_bytes())?;
        write_atomic(
            &self.dir.join("jobs.csv"),
            jobs_csv(&run.records).as_bytes(),
        )?;
        if !run.solves.is_empty() {
            write_atomic(
                &self.dir.join("solves.csv"),
                solves_csv(&run.solves).as_bytes(),
            )?;
        }
        write_atomic(
            &self.dir.join("utilization.csv"),
            utilization_csv(&run.utilization, run.summary.gpus).as_bytes(),
        )?;
        #[cfg(feature = "plots")]
        {
            let policy = run.summary.policy.as_str();
            crate::plots::plot_jct_cdf(
                &[(policy, &run.records)],
                &self.dir.join("jct_cdf.svg"),
                &format!("JCT CDF — {title}"),
            )?;
            crate::plots::plot_utilization(
                &[(policy, &run.utilization)],
                run.summary.gpus,
                &self.dir.join("utilization.svg"),
                &format!("GPU utilisation — {title}"),
            )?;
        }
        #[cfg(not(feature = "plots"))]
        let _ = title;
        Ok(())
    }

    /// Runs of one workload (`what`: the trace and cluster, for titles): each run's folder
    /// under its policy's name, the comparison table as CSV and Markdown, and the plots of
    /// every run together. Returns the comparison.
    pub fn write_comparison(
        &self,
        runs: &[ReplayRun],
        what: &str,
        bound: Option<JctBound>,
    ) -> Result<Comparison> {
        Self::create(&self.dir)?;
        for r in runs {
            let policy = &r.summary.policy;
            RunWriter::new(self.dir.join(policy)).write_run(r, &format!("{policy} on {what}"))?;
        }
        let cmp = Comparison {
            runs: runs.iter().map(|r| r.summary.clone()).collect(),
            bound,
        };
        if let Some(b) = &cmp.bound {
            let json = serde_json::to_string_pretty(b).expect("a bound serialises");
            write_atomic(&self.dir.join("bound.json"), json.as_bytes())?;
        }
        write_atomic(&self.dir.join("comparison.csv"), cmp.csv().as_bytes())?;
        write_atomic(&self.dir.join("comparison.md"), cmp.markdown().as_bytes())?;
        #[cfg(feature = "plots")]
        {
            let series: Vec<(&str, &[crate::sim::JobRecord])> = runs
                .iter()
                .map(|r| (r.summary.policy.as_str(), r.records.as_slice()))
                .collect();
            crate::plots::plot_jct_cdf(
                &series,
                &self.dir.join("jct_cdf.svg"),
                &format!("JCT CDF — {what}"),
            )?;
            let util: Vec<(&str, &[(f64, u64)])> = runs
                .iter()
                .map(|r| (r.summary.policy.as_str(), r.utilization.as_slice()))
                .collect();
            let gpus = runs.first().map_or(0, |r| r.summary.gpus);
            crate::plots::plot_utilization(
                &util,
                gpus,
                &self.dir.join("utilization.svg"),
                &format!("GPU utilisation — {what}"),
            )?;
        }
        Ok(cmp)
    }
}
