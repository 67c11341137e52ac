//! The headline of `benches/results/README.md` and the README: every policy's average JCT on
//! the four traces at their own clusters.

use std::collections::BTreeMap;
use std::path::Path;

use super::HEADLINE;
use super::table::{Table, hours, md_table, provenance};

/// The headline: average JCT (h) of every policy on the four traces (rows in the order of the
/// first trace's CSV), with the provenance of the runs.
pub(super) fn headline(results: &Path) -> coda::Result<String> {
    let mut policies: Vec<String> = Vec::new();
    let mut cells: BTreeMap<(String, usize), String> = BTreeMap::new();
    let mut meta = Vec::new();
    // Policies with a row in the load sweep (which then stands in the table).
    let mut from_load: Vec<String> = Vec::new();
    for (i, (_, dir)) in HEADLINE.iter().enumerate() {
        let d = results.join("rl").join(dir);
        let t = Table::read(&d.join("comparison.csv"))?;
        for r in 0..t.len() {
            let p = t.str(r, "policy")?.to_string();
            if !policies.contains(&p) {
                policies.push(p.clone());
            }
            cells.insert((p, i), hours(t.num(r, "avg_jct_s")?));
        }
        if t.len() > 0 {
            meta.push(format!(
                "{} ({} jobs on {})",
                HEADLINE[i].0,
                t.str(0, "jobs_total")?,
                t.str(0, "cluster")?
            ));
            // The load sweep's replay of the same trace on the same cluster (same settings) is
            // newer: its rows replace these (policies changed since, e.g. `learned`) and add the
            // policies added since.
            let load = results.join("load").join(format!(
                "{}-{}/comparison.csv",
                t.str(0, "trace")?,
                t.str(0, "cluster")?
            ));
            if load.is_file() {
                let l = Table::read(&load)?;
                for r in 0..l.len() {
                    let p = l.str(r, "policy")?.to_string();
                    if !from_load.contains(&p) {
                        from_load.push(p.clone());
                    }
                    cells.insert((p, i), hours(l.num(r, "avg_jct_s")?));
                }
            }
        }
    }
    for p in &from_load {
        if !policies.contains(p) {
            policies.push(p.clone());
        }
    }
    let mut head = vec!["policy"];
    head.extend(HEADLINE.iter().map(|(n, _)| *n));
    // The lowest of each column, as printed, in bold.
    let best: Vec<Option<String>> = (0..HEADLINE.len())
        .map(|i| {
            policies
                .iter()
                .filter_map(|p| cells.get(&(p.clone(), i)))
                .min_by(|a, b| {
                    let v = |x: &String| x.parse::<f64>().unwrap_or(f64::INFINITY);
                    v(a).total_cmp(&v(b))
                })
                .cloned()
        })
        .collect();
    let rows: Vec<Vec<String>> = policies
        .iter()
        .map(|p| {
            let mut r = vec![p.clone()];
            r.extend(
                (0..HEADLINE.len()).map(|i| match cells.get(&(p.clone(), i)) {
                    Some(c) if best[i].as_ref() == Some(c) => format!("**{c}**"),
                    Some(c) => c.clone(),
                    None => "–".into(),
                }),
            );
            r
        })
        .collect();
    let added = if from_load.is_empty() {
        String::new()
    } else {
        format!(
            " Rows {} come from the load sweep's replays at the same settings, newer (`load/`; \
             {})",
            from_load
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
            provenance(&results.join("load"), results)?
        )
    };
    Ok(format!(
        "Average job completion time (hours; lower is better, the lowest of each trace in bold) \
         replaying each trace on its default cluster: {}. {}{}\n\n{}",
        meta.join(", "),
        provenance(&results.join("rl"), results)?,
        added,
        md_table(&head, &rows)
    ))
}
