//! The gap tables of the report: a `gap.csv` summarised as `coda gap` summarises it.

use std::path::Path;

use super::table::{Table, md_table, provenance};
use crate::gap::{Point, summarise};

/// A `gap.csv` under `title`: every policy's gap over all rounds, and by round size for `cols`.
pub(super) fn gap_table(
    csv: &Path,
    results: &Path,
    title: &str,
    cols: &[&str],
) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    let mut points = Vec::with_capacity(t.len());
    let mut sizes: Vec<String> = Vec::new();
    let mut rounds = std::collections::BTreeSet::new();
    let mut proven = 0usize;
    for r in 0..t.len() {
        let size = t.str(r, "size")?.to_string();
        if rounds.insert(t.str(r, "round")?.to_string()) && t.str(r, "proven")? == "true" {
            proven += 1;
        }
        if !sizes.contains(&size) {
            sizes.push(size.clone());
        }
        points.push(Point {
            size,
            policy: t.str(r, "policy")?.to_string(),
            gap: t.num(r, "gap")?,
            valid: t.str(r, "valid")? == "true",
            decision_s: t.num(r, "decision_s")?,
            expert_solve_s: t.num(r, "expert_solve_s")?,
        });
    }
    // The same summary `coda gap` prints in `gap.md`.
    let by = summarise(&points);
    let rows: Vec<Vec<String>> = by
        .iter()
        .filter(|((size, _), _)| size == "all")
        .map(|((_, p), g)| {
            vec![
                p.clone(),
                g.n.to_string(),
                format!("{:.2} %", 100.0 * g.mean),
                format!("{:.2} %", 100.0 * g.p95),
                format!("{:.2} %", 100.0 * g.worst),
                format!("{:.0} %", 100.0 * g.valid_share),
                format!("{:.2}", g.decision_ms),
            ]
        })
        .collect();
    let mut head = vec!["rounds"];
    head.extend(cols);
    let size_rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|s| {
            let mut r = vec![s.clone()];
            r.extend(cols.iter().map(|p| {
                match by.get(&(s.clone(), p.to_string())) {
                    Some(g) if g.valid_share > 0.0 => {
                        // `+ 0.0` prints a rounding-level negative mean as 0.00, not -0.00.
                        let mean = (100.0 * g.mean * 100.0).round() / 100.0 + 0.0;
                        format!("{mean:.2} %")
                    }
                    _ => "–".into(),
                }
            }));
            r
        })
        .collect();
    Ok(format!(
        "{title}\n\nGap to the exact program's solution on {} held-out rounds ({proven} of them \
         proven optimal, the others scored against the solver's incumbent). {}\n\n{}\nMean gap \
         by round size:\n\n{}\n",
        rounds.len(),
        provenance(dir, results)?,
        md_table(
            &[
                "policy",
                "rounds",
                "mean gap",
                "p95 gap",
                "worst gap",
                "valid",
                "mean decision (ms)"
            ],
            &rows
        ),
        md_table(&head, &size_rows)
    ))
}
