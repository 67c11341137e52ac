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
    ) + &distilled_section(dir, results)?
        + &super::distil_net::distil_net_section(&dir.join("distil-net"), results)?)
}

/// `distilled.csv` (`scripts/bench_distilled.sh`) and `gate_fit.csv` (`scripts/distil_gate.sh`),
/// when they exist: the distilled policy next to `learned` and the lookahead.
fn distilled_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let (runs, fit) = (dir.join("distilled.csv"), dir.join("gate_fit.csv"));
    if !runs.exists() || !fit.exists() {
        return Ok(String::new());
    }
    let t = Table::read(&runs)?;
    let mut rows = Vec::new();
    // Per set of slices: runs, sums of distilled / learned and lookahead / learned, wins.
    let mut sets: Vec<(String, usize, f64, f64, usize)> = Vec::new();
    for r in 0..t.len() {
        let set = t.str(r, "set")?.to_string();
        let d = t.num(r, "distilled_over_learned")?;
        let la = t.num(r, "lookahead_h")? / t.num(r, "learned_h")?;
        match sets.iter_mut().find(|s| s.0 == set) {
            Some(s) => {
                s.1 += 1;
                s.2 += d;
                s.3 += la;
                s.4 += usize::from(d < 1.0);
            }
            None => sets.push((set.clone(), 1, d, la, usize::from(d < 1.0))),
        }
        let kept = t.str(r, "gain_kept")?;
        rows.push(vec![
            set,
            slice(&t, r, "jobs ")?,
            t.str(r, "seed")?.to_string(),
            format!("{:.2}", t.num(r, "learned_h")?),
            format!("{:.2}", t.num(r, "lookahead_h")?),
            format!("{:.2}", t.num(r, "distilled_h")?),
            format!("{:.3}", t.num(r, "distilled_over_learned")?),
            if kept.is_empty() {
                "–".to_string()
            } else {
                pct(t.num(r, "gain_kept")?)
            },
            format!(
                "{} / {}",
                t.str(r, "learned_restarts")?,
                t.str(r, "distilled_restarts")?
            ),
            format!(
                "{:.1} / {:.1}",
                t.num(r, "learned_wall_s")?,
                t.num(r, "distilled_wall_s")?
            ),
            t.str(r, "kept")?.to_string(),
        ]);
    }
    let head = [
        "set",
        "slice",
        "seed",
        "learned, h",
        "lookahead, h",
        "distilled, h",
        "distilled / learned",
        "lookahead's gain kept",
        "restarts: learned / distilled",
        "wall, s: learned / distilled",
        "gate kept (rounds whose proposals differ)",
    ];
    let f = Table::read(&fit)?;
    let mut frows = Vec::new();
    for r in 0..f.len() {
        frows.push(vec![
            f.str(r, "set")?.to_string(),
            f.str(r, "plays")?.to_string(),
            f.str(r, "rounds")?.to_string(),
            f.str(r, "switched")?.to_string(),
            f.str(r, "agree")?.to_string(),
            format!("{:.0}", f.num(r, "best")?),
            format!("{:.0}", f.num(r, "reachable")?),
            format!("{:.0}", f.num(r, "kept")?),
            pct(f.num(r, "kept_share")?),
            pct(f.num(r, "kept_of_reachable")?),
        ]);
    }
    let fhead = [
        "set",
        "plays",
        "rounds",
        "gate left learned",
        "gate chose as the lookahead",
        "lookahead's saving, job-rounds",
        "its best of the gate's candidates",
        "gate's saving",
        "share",
        "share of its candidates'",
    ];
    Ok(format!(
        "\n\n#### distilled\n\nThe `distilled` policy (`src/policies/distilled.rs`): the \
         proposals of `learned`, `keep` and the learned greedy decoding, one kept by a gate \
         fitted to the lookahead's plays (`scripts/distil_gate.sh`) instead of playing them. \
         `learned` and `distilled` replayed one after the other on the same machine \
         (`scripts/bench_distilled.sh`); the lookahead's JCT is the table's above. The gain kept \
         is (learned − distilled) / (learned − lookahead). Sets: `evaluation`, the \
         lookahead's own slices (its JCT from the table above); `other`, other jobs of ITP \
         cluster 02 and Philly, the lookahead replayed there by the same script.\n\n{}\n{}\n\nThe gate's fit \
         (`gate_fit.csv`): on every round of a plays file whose proposals differ, the job-rounds \
         the lookahead's choice saves over the learned proposal's play, and those the gate's \
         choice saves.\n\n{}",
        md_table(
            &[
                "set",
                "runs",
                "mean distilled / learned",
                "mean lookahead / learned",
                "lookahead's gain kept",
                "runs distilled wins"
            ],
            &sets
                .iter()
                .map(|(set, n, d, la, wins)| {
                    let (d, la) = (d / *n as f64, la / *n as f64);
                    vec![
                        set.clone(),
                        n.to_string(),
                        format!("{d:.3}"),
                        format!("{la:.3}"),
                        if la < 1.0 {
                            pct((1.0 - d) / (1.0 - la))
                        } else {
                            "–".into()
                        },
                        format!("{wins} of {n}"),
                    ]
                })
                .collect::<Vec<_>>()
        ),
        md_table(&head, &rows),
        md_table(&fhead, &frows)
    ) + &sensitivity_tables(
        &dir.join("distilled-sensitivity"),
        results,
        "the gate was fitted at the shipped values",
    )?)
}

/// `sens/*/sensitivity.csv`: policies with each named estimate at its low and high value, one
/// table per slice (`scripts/bench_distilled.sh`: `learned` and `distilled`;
/// `scripts/bench_distil_net.sh`: `learned` and `six-dagger`), after a line saying how what
/// is compared was made (`made`).
pub(super) fn sensitivity_tables(sens: &Path, results: &Path, made: &str) -> coda::Result<String> {
    let Ok(entries) = std::fs::read_dir(sens) else {
        return Ok(String::new());
    };
    let mut csvs: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path().join("sensitivity.csv")))
        .filter(|p| p.is_file())
        .collect();
    csvs.sort();
    let mut s = format!("\n\nWhich named estimate moves the comparison (seed 0; {made}):\n\n");
    for c in &csvs {
        s.push_str(&super::results::sensitivity_section(c, results)?);
        s.push('\n');
    }
    Ok(s)
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
