//! The lookahead distilled into the networks: `lookahead/distil-net/runs.csv`
//! (`scripts/bench_distil_net.sh`) rendered under the lookahead's section.

use std::collections::BTreeMap;
use std::path::Path;

use super::table::{Table, md_table, pct, provenance};

/// One replay's row: average JCT in hours and restarts.
type Run = (f64, f64);

/// The section, when `runs.csv` exists: per set of slices and policy, the mean JCT over
/// `learned`'s, the share of the lookahead's gain kept, wins and restarts; then per slice the
/// same means over its seeds.
pub(super) fn distil_net_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let csv = dir.join("runs.csv");
    if !csv.exists() {
        return Ok(String::new());
    }
    let t = Table::read(&csv)?;
    // (set, slice, seed) → policy → run; policies in order of first appearance.
    let mut runs: BTreeMap<(String, String, String), BTreeMap<String, Run>> = BTreeMap::new();
    let mut policies: Vec<String> = Vec::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for r in 0..t.len() {
        let set = t.str(r, "set")?.to_string();
        let slice = format!(
            "{} {} jobs {}+{}",
            t.str(r, "trace")?,
            t.str(r, "cluster")?,
            t.str(r, "skip")?,
            t.str(r, "take")?
        );
        let p = t.str(r, "policy")?.to_string();
        if !policies.contains(&p) {
            policies.push(p.clone());
        }
        if !order.contains(&(set.clone(), slice.clone())) {
            order.push((set.clone(), slice.clone()));
        }
        runs.entry((set, slice, t.str(r, "seed")?.to_string()))
            .or_default()
            .insert(p, (t.num(r, "avg_jct_s")? / 3600.0, t.num(r, "restarts")?));
    }
    let students: Vec<&String> = policies
        .iter()
        .filter(|p| *p != "learned" && *p != "lookahead")
        .collect();
    // Per (set or slice, policy): ratios to learned, and the lookahead's ratios beside them.
    let ratios = |keep: &dyn Fn(&(String, String, String)) -> bool, p: &str| {
        let (mut mine, mut look, mut restarts, mut base_restarts) = (vec![], vec![], 0.0, 0.0);
        for (_, by) in runs.iter().filter(|(k, _)| keep(k)) {
            if let (Some(l), Some(x)) = (by.get("learned"), by.get(p)) {
                mine.push(x.0 / l.0);
                restarts += x.1;
                base_restarts += l.1;
                if let Some(la) = by.get("lookahead") {
                    look.push(la.0 / l.0);
                }
            }
        }
        (mine, look, restarts / base_restarts.max(1.0))
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let kept = |mine: &[f64], look: &[f64]| {
        let (m, l) = (mean(mine), mean(look));
        if look.len() == mine.len() && l < 1.0 {
            pct((1.0 - m) / (1.0 - l))
        } else {
            "–".to_string()
        }
    };
    let mut summary = Vec::new();
    for set in ["evaluation", "other"] {
        for p in policies.iter().filter(|p| *p != "learned") {
            let (mine, look, restarts) = ratios(&|k| k.0 == set, p);
            if mine.is_empty() {
                continue;
            }
            summary.push(vec![
                set.to_string(),
                p.clone(),
                mine.len().to_string(),
                format!("{:.3}", mean(&mine)),
                format!(
                    "{:.3}–{:.3}",
                    mine.iter().copied().fold(f64::INFINITY, f64::min),
                    mine.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                ),
                if p == "lookahead" {
                    "–".to_string()
                } else {
                    kept(&mine, &look)
                },
                format!(
                    "{} of {}",
                    mine.iter().filter(|&&x| x < 1.0).count(),
                    mine.len()
                ),
                format!("{restarts:.2}"),
            ]);
        }
    }
    let mut per_slice = Vec::new();
    for (set, slice) in &order {
        let keep = |k: &(String, String, String)| &k.0 == set && &k.1 == slice;
        let learned: Vec<f64> = runs
            .iter()
            .filter(|(k, _)| keep(k))
            .filter_map(|(_, by)| by.get("learned").map(|r| r.0))
            .collect();
        let mut row = vec![
            set.clone(),
            slice.clone(),
            learned.len().to_string(),
            format!("{:.2}", mean(&learned)),
        ];
        for p in policies.iter().filter(|p| *p != "learned") {
            let (mine, _, _) = ratios(&keep, p);
            row.push(if mine.is_empty() {
                "–".into()
            } else {
                format!("{:.3}", mean(&mine))
            });
        }
        per_slice.push(row);
    }
    let mut slice_head: Vec<String> = ["set", "slice", "seeds", "learned, h"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    slice_head.extend(
        policies
            .iter()
            .filter(|p| *p != "learned")
            .map(|p| format!("{p} / learned")),
    );
    let slice_head: Vec<&str> = slice_head.iter().map(String::as_str).collect();
    Ok(format!(
        "\n\n#### The lookahead distilled into the networks\n\nStudents \
         (`scripts/distil_net.sh`; {}): the shipped weights fine-tuned on the lookahead's \
         decisions on the states a policy visits on the training slices (`coda distil labels`, \
         `coda train imitation --init`; a name with `-rl`: then refined by PPO, `coda train \
         rl`), replayed as `learned` with their weights (`scripts/bench_distil_net.sh`) beside today's `learned` and the lookahead itself, on \
         the same two sets of unseen slices as `distilled` (both replayed again here: the \
         tables above predate `learned`'s stay proposal, which cut its JCT on these slices by \
         up to 20 % and most of the lookahead's lead with it). Ratios are per replay over \
         `learned`'s, averaged; the gain kept is (1 − student) / (1 − lookahead) of those \
         means; restarts are the student's over `learned`'s, summed over the runs. {}\n\n{}\n\n\
         Per slice, the mean over its seeds:\n\n{}",
        students
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", "),
        provenance(dir, results)?,
        md_table(
            &[
                "set",
                "policy",
                "runs",
                "mean / learned",
                "range",
                "lookahead's gain kept",
                "runs below learned",
                "restarts / learned's",
            ],
            &summary
        ),
        md_table(&slice_head, &per_slice)
    ) + &super::lookahead::sensitivity_tables(
        &dir.join("sensitivity"),
        results,
        "the students were trained at the shipped values",
    )?)
}
