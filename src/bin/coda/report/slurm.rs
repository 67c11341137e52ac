//! The section of `benches/results/README.md` on coda driving a real Slurm
//! (`scripts/slurm_live.py`): the live replay under Slurm's backfill and under `coda slurm`, next
//! to `coda simulate`'s prediction for the same jobs, and the fault cases.

use std::path::Path;

use super::table::{Table, md_table, provenance};

/// The runs of one `summary.csv`, as a table.
fn runs_table(dir: &Path) -> coda::Result<String> {
    let t = Table::read(&dir.join("summary.csv"))?;
    let mut rows = Vec::new();
    for r in 0..t.len() {
        let run = match t.str(r, "run")? {
            "backfill" => "Slurm's backfill alone".to_string(),
            _ => format!("`coda slurm run --policy {}`", t.str(r, "policy")?),
        };
        rows.push(vec![
            run,
            format!("{} / {}", t.str(r, "finished")?, t.str(r, "jobs")?),
            format!("{:.3}", t.num(r, "avg_jct_h")?),
            format!(
                "{:.3} (`{}`)",
                t.num(r, "simulated_h")?,
                t.str(r, "policy")?
            ),
            format!("{:.3}", t.num(r, "live_over_simulated")?),
            t.str(r, "restarts")?.to_string(),
            // Recorded since the held-time column was added; older runs show a dash.
            t.num(r, "avg_held_h")
                .map_or_else(|_| "–".to_string(), |h| format!("{h:.3}")),
            format!("{:.0}", t.num(r, "wall_s")?),
        ]);
    }
    Ok(md_table(
        &[
            "run",
            "jobs finished",
            "avg JCT (h)",
            "simulated (h)",
            "live ÷ simulated",
            "restarts",
            "avg held (h)",
            "wall (s)",
        ],
        &rows,
    )
    .trim_end()
    .to_string())
}

/// The section from `slurm/summary.csv`, `slurm/faults.csv` and, if present, the slower
/// clock's `slurm/scale60/summary.csv`.
pub(super) fn slurm_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let mut s = format!(
        "A real Slurm 22.05 on one machine (`scripts/slurm_cluster.sh`: slurmctld, 4 slurmd × 8 \
         GPUs, munge) replays `examples/slurm/workload.csv` (16 jobs) twice; each job sleeps \
         the time the performance model predicts for the GPUs it actually got (240 model \
         seconds per wall second). Average JCT in model hours; simulated: `coda simulate` of \
         the same jobs on the same servers. {}\n\n{}",
        provenance(dir, results)?,
        runs_table(dir)?
    );
    let slow = dir.join("scale60");
    if slow.join("summary.csv").is_file() {
        s.push_str(&format!(
            "\n\nThe same at 60 model seconds per wall second: Slurm's own latencies (a start, \
             a stop, the delay before a job returns to a node it was stopped on: about a wall \
             second each) weigh a quarter as much in model time. {}\n\n{}",
            provenance(&slow, results)?,
            runs_table(&slow)?
        ));
    }
    let faults = dir.join("faults.csv");
    if faults.is_file() {
        let f = Table::read(&faults)?;
        let rows = (0..f.len())
            .map(|r| {
                Ok(vec![
                    f.str(r, "fault")?.to_string(),
                    f.str(r, "outcome")?.to_string(),
                ])
            })
            .collect::<coda::Result<Vec<_>>>()?;
        s.push_str("\n\nThe fault run (`coda slurm`, the same jobs):\n\n");
        s.push_str(&md_table(&["fault", "what happened"], &rows));
    }
    Ok(s)
}
