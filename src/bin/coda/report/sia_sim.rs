//! The section of `benches/results/README.md` on replays inside Sia's own simulator
//! (`scripts/sia_sim.sh`): every run as written, and per policy its average JCT against Sia's on
//! the same workload; and the section on the learned policy's local search, which those replays
//! motivated, in coda's own simulator (`scripts/bench_grow.sh`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::table::{Table, md_table, median, provenance};

/// A policy's runs: (policy, round, goodput) → (avg JCT over Sia's, restarts per job, workloads).
type PerPolicy = BTreeMap<(String, String, String), (Vec<f64>, Vec<f64>, Vec<String>)>;

/// The section from `sia-sim/runs.csv`.
pub(super) fn sia_sim_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    let mut sia: BTreeMap<String, f64> = BTreeMap::new();
    for r in 0..t.len() {
        if t.str(r, "policy")? == "sia" {
            sia.insert(t.str(r, "workload")?.to_string(), t.num(r, "avg_jct_s")?);
        }
    }
    let mut rows = Vec::new();
    let mut per = PerPolicy::new();
    for r in 0..t.len() {
        let w = t.str(r, "workload")?.to_string();
        let avg = t.num(r, "avg_jct_s")?;
        let ratio = sia.get(&w).map(|s| avg / s);
        rows.push(vec![
            w.clone(),
            t.str(r, "policy")?.to_string(),
            t.str(r, "interval_s")?.to_string(),
            t.str(r, "goodput")?.to_string(),
            format!("{avg:.0}"),
            ratio.map_or("–".into(), |x| format!("{x:.3}")),
            format!("{:.0}", t.num(r, "median_jct_s")?),
            format!("{:.0}", t.num(r, "makespan_s")?),
            format!("{:.2}", t.num(r, "restarts_per_job")?),
            t.str(r, "policy_s")?.to_string(),
            format!("{:.0}", t.num(r, "wall_s")?),
        ]);
        let key = (
            t.str(r, "policy")?.to_string(),
            t.str(r, "interval_s")?.to_string(),
            t.str(r, "goodput")?.to_string(),
        );
        let e = per.entry(key).or_default();
        if let Some(x) = ratio {
            e.0.push(x);
        }
        e.1.push(t.num(r, "restarts_per_job")?);
        e.2.push(w.trim_start_matches("philly/workload-").to_string());
    }
    let summary: Vec<Vec<String>> = per
        .into_iter()
        .map(|((p, i, g), (ratios, restarts, ws))| {
            vec![
                p,
                i,
                g,
                ws.join(" "),
                if ratios.is_empty() {
                    "–".into()
                } else {
                    format!("{:.3}", median(ratios))
                },
                format!("{:.2}", median(restarts)),
            ]
        })
        .collect();
    Ok(format!(
        "Inside Sia's own simulator (SOSP'23 artifact, `sia-simulator/`: its jobs, throughput and \
         gradient-noise traces, batch-size tuning, restart delays and clock; its heterogeneous \
         cluster of 6 × 4 T4, 2 × 8 A100 and 3 × 8 RTX 2080 Ti) on its Philly workloads \
         (`{}`). Sia, Pollux and Gavel run Sia's own code with its `run_experiment.sh` flags; \
         coda's policies decide every round through the Python package (`coda.schedule`, \
         `scripts/sia_sim.py` states the conversion and what it loses). Times in seconds of \
         Sia's clock; `vs Sia` is the average JCT over Sia's on the same workload; `policy_s` \
         the time in coda's decisions (Python conversion excluded). {}\n\n{}\n\
         Per policy, the median over the workloads it ran of its average JCT over Sia's, and of \
         its restarts per job:\n\n{}",
        csv.strip_prefix(results).unwrap_or(csv).display(),
        provenance(dir, results)?,
        md_table(
            &[
                "workload",
                "policy",
                "round (s)",
                "goodput",
                "avg JCT",
                "vs Sia",
                "median JCT",
                "makespan",
                "restarts/job",
                "policy_s",
                "wall (s)",
            ],
            &rows
        ),
        md_table(
            &[
                "policy",
                "round (s)",
                "goodput",
                "workloads",
                "avg JCT vs Sia (median)",
                "restarts/job (median)",
            ],
            &summary
        ),
    ))
}

/// The section from `grow/grow.csv` (`scripts/bench_grow.sh`): the learned policy with and
/// without its local search, on the load sweep's traces and clusters.
pub(super) fn grow_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    let mut rows = Vec::new();
    for r in 0..t.len() {
        rows.push(vec![
            t.str(r, "goodput")?.to_string(),
            t.str(r, "trace")?.to_string(),
            t.str(r, "cluster")?.to_string(),
            t.str(r, "gpus")?.to_string(),
            format!("{:.3}", t.num(r, "learned_h")?),
            format!("{:.3}", t.num(r, "grow_h")?),
            format!("{:.3}", t.num(r, "ratio")?),
            t.str(r, "learned_restarts")?.to_string(),
            t.str(r, "grow_restarts")?.to_string(),
            format!("{:.0}", t.num(r, "learned_wall_s")?),
            format!("{:.0}", t.num(r, "grow_wall_s")?),
        ]);
    }
    let mut made = String::new();
    for g in ["off", "on"] {
        let d = dir.join(g);
        if d.join("machine.txt").is_file() {
            let _ = write!(made, " Goodput {g}: {}", provenance(&d, results)?);
        }
    }
    Ok(format!(
        "`learned` with `--policy-grow 8` (a local search of up to 8 moves on the objective \
         ending each round, `models/POLICY.md`) against `learned` without it (the load sweep's \
         rows), on the load sweep's traces and clusters (`{}`); ratio: average JCT with the \
         search over without.{made}\n\n{}",
        csv.strip_prefix(results).unwrap_or(csv).display(),
        md_table(
            &[
                "goodput",
                "trace",
                "cluster",
                "GPUs",
                "learned avg JCT (h)",
                "with the search (h)",
                "ratio",
                "restarts",
                "with the search",
                "replay wall (s)",
                "with the search",
            ],
            &rows
        ),
    ))
}
