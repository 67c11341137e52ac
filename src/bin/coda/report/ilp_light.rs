//! The `ilp` policy on light load (`benches/results/ilp-light/`, `scripts/bench_ilp_light.sh`):
//! per slice, its average JCT next to FIFO, `learned` and the best baseline.

use std::collections::BTreeMap;
use std::path::Path;

use super::table::{Table, hours, md_table, provenance};

/// One replay's average JCT (s), restarts and share of JCT spent queueing.
type Run = (f64, f64, f64);

/// Policies that are not baselines.
const OURS: [&str; 2] = ["ilp", "learned"];

/// The section from `runs.csv`.
pub(super) fn ilp_light_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(&dir.join("runs.csv"))?;
    // (trace, skip) → policy → its run
    let mut slices: BTreeMap<(String, u64), BTreeMap<String, Run>> = BTreeMap::new();
    for r in 0..t.len() {
        let key = (t.str(r, "trace")?.to_string(), t.num(r, "skip")? as u64);
        let jct = t.num(r, "avg_jct_s")?;
        slices.entry(key).or_default().insert(
            t.str(r, "policy")?.to_string(),
            (
                jct,
                t.num(r, "restarts")?,
                t.num(r, "avg_queueing_s")? / jct,
            ),
        );
    }
    let mut rows = Vec::new();
    let (mut behind_fifo, mut behind_best) = (0, 0);
    for ((trace, skip), p) in &slices {
        let get = |name: &str| p.get(name).copied();
        let best = p
            .iter()
            .filter(|(name, _)| !OURS.contains(&name.as_str()))
            .min_by(|a, b| a.1.0.total_cmp(&b.1.0));
        let (Some(ilp), Some(fifo), Some((best_name, best))) = (get("ilp"), get("fifo"), best)
        else {
            continue;
        };
        behind_fifo += usize::from(ilp.0 > fifo.0);
        behind_best += usize::from(ilp.0 > best.0);
        rows.push(vec![
            format!("{trace} {skip}+150"),
            format!("{:.0} %", 100.0 * fifo.2),
            hours(fifo.0),
            format!("{} ({best_name})", hours(best.0)),
            get("learned").map_or("–".into(), |l| format!("{} ({:.0})", hours(l.0), l.1)),
            format!("{} ({:.0})", hours(ilp.0), ilp.1),
            format!("{:.3}", ilp.0 / best.0),
        ]);
    }
    Ok(format!(
        "150-job slices of the shipped traces on 4 × 8 GPUs under light load (FIFO's average \
         JCT under an hour, or its queueing under a third of it), every baseline beside \
         `learned` and `ilp --ilp-time-limit 2`: average JCT in hours \
         (restarts). `ilp` is behind FIFO on {behind_fifo} and behind the best baseline on \
         {behind_best} of {} slices. {}\n\n{}",
        rows.len(),
        provenance(dir, results)?,
        md_table(
            &[
                "slice",
                "FIFO's queueing share",
                "FIFO",
                "best baseline",
                "learned",
                "ilp",
                "ilp ÷ best baseline",
            ],
            &rows,
        )
    ))
}
