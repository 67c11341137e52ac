//! The lookahead's section of `benches/results/README.md` (`scripts/bench_lookahead.sh`).

use std::path::Path;

use super::table::{Table, md_table, pct, provenance};

/// `lookahead.csv` (per slice and seed: the bound, the best baseline, learned, the lookahead)
/// and `variants.csv` (every lookahead run: the ablation).
pub(super) fn lookahead_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(&dir.join("lookahead.csv"))?;
    let mut rows = Vec::new();
    for r in 0..t.len() {
        let h = |name: &str| t.num(r, name).map(|v| format!("{v:.2}"));
        let x = |name: &str| t.num(r, name).map(|v| format!("{v:.3}"));
        let share = |name: &str| t.num(r, name).map(pct);
        rows.push(vec![
            slice(&t, r, "jobs ")?,
            t.str(r, "seed")?.to_string(),
            h("bound_h")?,
            format!("{} {}", t.str(r, "best_baseline")?, h("best_baseline_h")?),
            h("learned_h")?,
            h("lookahead_h")?,
            x("lookahead_over_learned")?,
            x("lookahead_over_best_baseline")?,
            format!(
                "{} / {} / {}",
                share("best_baseline_above_bound")?,
                share("learned_above_bound")?,
                share("lookahead_above_bound")?
            ),
            format!(
                "{:.1} / {:.1}",
                t.num(r, "learned_wall_s")?,
                t.num(r, "lookahead_wall_s")?
            ),
        ]);
    }
    let head = [
        "slice",
        "seed",
        "bound, h",
        "best baseline, h",
        "learned, h",
        "lookahead, h",
        "lookahead / learned",
        "lookahead / best baseline",
        "above the bound: best baseline / learned / lookahead",
        "wall, s: learned / lookahead",
    ];
    let v = Table::read(&dir.join("variants.csv"))?;
    let mut vrows = Vec::new();
    for r in 0..v.len() {
        vrows.push(vec![
            slice(&v, r, "")?,
            v.str(r, "seed")?.to_string(),
            v.str(r, "variant")?.to_string(),
            format!("{:.3}", v.num(r, "avg_jct_h")?),
            format!("{:.3}", v.num(r, "over_learned")?),
            v.str(r, "restarts")?.to_string(),
            format!("{:.0}", v.num(r, "wall_s")?),
            v.str(r, "s_per_round_played")?.to_string(),
            v.str(r, "kept")?.to_string(),
        ]);
    }
    let vhead = [
        "slice",
        "seed",
        "variant",
        "avg JCT, h",
        "/ learned",
        "restarts",
        "wall, s",
        "s per round played",
        "proposal kept (rounds)",
    ];
    Ok(format!(
        "### lookahead\n\nThe lookahead policy (`--policy lookahead`, `src/lookahead.rs`) against \
         `learned`, every baseline but `random` and `coda bound`'s lower bound, on congested \
         slices of traces the learned policy never trained on (ITP cluster 06; Philly after its \
         first 150 jobs), the same jobs on fewer servers than their own cluster. The seed sets \
         the trace's model assignment and the policies' random choices. Average JCT of the \
         tracked jobs. {} What it changes, per class of job: \
         `lookahead/itp-cluster06-8xnd40rs-v2-0-300/decisions.md`.\n\n{}\n\nEvery lookahead run \
         (defaults: `--lookahead-rounds 24 --lookahead-candidates 6 --lookahead-base learned \
         --lookahead-follow base --lookahead-tail bound --lookahead-arrivals none`; each \
         variant changes one):\n\n{}",
        provenance(dir, results)?,
        md_table(&head, &rows),
        md_table(&vhead, &vrows)
    ))
}

/// A row's slice: trace, cluster, and `skip+take` after `jobs` (e.g. `jobs `).
fn slice(t: &Table, r: usize, jobs: &str) -> coda::Result<String> {
    Ok(format!(
        "{} {} {jobs}{}+{}",
        t.str(r, "trace")?,
        t.str(r, "cluster")?,
        t.str(r, "skip")?,
        t.str(r, "take")?
    ))
}
