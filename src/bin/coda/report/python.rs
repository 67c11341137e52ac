//! The Python package's section of `benches/results/README.md`: the wheel's build time, the
//! Gymnasium environment against `coda simulate`, Ray's speed-up, labelling against cores, and
//! MaskablePPO on the environment (`scripts/bench_python.sh`, `scripts/device_python.sh`).

use std::path::Path;

use super::table::{Table, md_table, provenance};

/// One CSV as a table (every column, as written), with its caption and provenance.
fn verbatim(csv: &Path, results: &Path, caption: &str) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let head: Vec<&str> = t.header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|(_, r)| r.iter().map(str::to_string).collect())
        .collect();
    let dir = csv.parent().unwrap_or(results);
    Ok(format!(
        "{caption} `{}`. {}\n\n{}",
        csv.strip_prefix(results).unwrap_or(csv).display(),
        provenance(dir, results)?,
        md_table(&head, &rows)
    ))
}

/// Every table of the section.
pub(super) fn python_section(results: &Path) -> coda::Result<String> {
    let d = results.join("python");
    let parts = [
        (
            d.join("wheel.csv"),
            "The abi3 wheel (`maturin build --release`), from an empty target folder (HiGHS and \
             every crate compiled) and after one file of the bindings changed:",
        ),
        (
            d.join("env_vs_cli.csv"),
            "The environment stepped by coda's learned policy (`info[\"hint\"]`, \
             `examples/python/learned_through_env.py`) against `coda simulate --policy learned \
             --policy-samples 1 --cpu-mem fixed` on the same jobs: `env_s` the whole episode \
             through Python (one `step` per decision), `simulate_s` the library's replay \
             (`coda.simulate`), `cli_s` the command line as a whole process; \
             `finish_times_differing` counts jobs whose finish time is not the same:",
        ),
        (
            d.join("ray.csv"),
            "`python -m coda.distributed` on Ray (task time, `ray.init` excluded; each task one \
             round or one episode on one core), and whether the output equals the 1-worker \
             run's (labels: but for `solve_s`, the solver's wall time):",
        ),
        (
            d.join("label_scaling.csv"),
            "Labelling against worker processes on one machine (`benches/python/label_scaling.py`; \
             what a Ray node of that many cores gives): 16 rounds of 3x6 and 4x8, node limit 200:",
        ),
        (
            d.join("device/label_scaling.csv"),
            "The same on the lent machine's 16 cores (`scripts/device_python.sh`; then 48 rounds \
             at 1 and 16 workers, so that 16 workers each get three):",
        ),
        (
            d.join("ppo/result.csv"),
            "sb3-contrib's MaskablePPO trained on `coda/Cluster-v0` (30 Philly jobs, 2x8) for \
             three minutes on this machine's CPU (`examples/python/maskable_ppo.py`), against a \
             random masked agent and coda's learned policy (greedy) on the same jobs:",
        ),
    ];
    let mut s = String::new();
    for (csv, caption) in parts {
        s.push_str(&verbatim(&csv, results, caption)?);
        s.push('\n');
    }
    Ok(s)
}
