//! The load sweep's section of `benches/results/README.md` (`scripts/bench_load.sh`).

use std::path::Path;

use super::table::{Table, md_table, pct, provenance};

/// `load_sweep.csv`: per trace and cluster, the lower bound of `coda bound` next to the best
/// baseline, `learned` and `learned-rl`.
pub(super) fn load_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    let mut rows = Vec::new();
    for r in 0..t.len() {
        let h = |name: &str| t.num(r, name).map(|v| format!("{v:.2}"));
        let share = |name: &str| t.num(r, name).map(pct);
        rows.push(vec![
            t.str(r, "trace")?.to_string(),
            format!("{} ({})", t.str(r, "cluster")?, t.str(r, "gpus")?),
            format!(
                "{} ({} / {} / {})",
                h("bound_h")?,
                h("bound_alone_h")?,
                h("bound_capacity_h")?,
                t.num(r, "bound_lp_h")
                    .map_or("–".into(), |v| if v.is_finite() {
                        format!("{v:.2}")
                    } else {
                        "–".into()
                    })
            ),
            format!("{} {}", t.str(r, "best_baseline")?, h("best_baseline_h")?),
            share("best_baseline_queueing_share")?,
            h("learned_h")?,
            h("learned-rl_h")?,
            format!(
                "{} / {} / {}",
                share("best_baseline_above_bound")?,
                share("learned_above_bound")?,
                share("learned-rl_above_bound")?
            ),
        ]);
    }
    let head = [
        "trace",
        "cluster (GPUs)",
        "bound, h (alone / capacity / LP)",
        "best baseline, h",
        "its queueing share",
        "learned, h",
        "learned-rl, h",
        "above the bound: best baseline / learned / learned-rl",
    ];
    Ok(format!(
        "### load\n\nEach trace at its own cluster and on fewer servers of the same kind (the same \
         jobs at the same times on less capacity), every baseline but `random` and both learned \
         policies (`scripts/bench_load.sh`; each folder's `comparison.md` has every policy). The \
         bound is `coda bound`'s: no policy's average JCT can be lower (proofs in \
         `formulations/README.md`). Above the bound: (JCT − bound) / JCT, the most of a \
         policy's JCT a better scheduler could save (an upper bound on the headroom: the bound \
         leaves out contention, restarts and fragmentation, so it may be loose). {}\n\n{}",
        provenance(dir, results)?,
        md_table(&head, &rows)
    ))
}

/// The load sweep with goodput off (`load/`) and on (`load-goodput/`), per trace and cluster
/// both in both: the bound, the best baseline, `learned` and `learned`'s ratio to the best
/// baseline, each both ways.
pub(super) fn goodput_section(off: &Path, on: &Path, results: &Path) -> coda::Result<String> {
    let (a, b) = (Table::read(off)?, Table::read(on)?);
    let dir = on.parent().unwrap_or(results);
    let key = |t: &Table, r: usize| -> coda::Result<(String, String)> {
        Ok((
            t.str(r, "trace")?.to_string(),
            t.str(r, "cluster")?.to_string(),
        ))
    };
    let mut rows = Vec::new();
    for r in 0..b.len() {
        let k = key(&b, r)?;
        let Some(o) = (0..a.len()).find(|&i| key(&a, i).is_ok_and(|x| x == k)) else {
            continue;
        };
        let both = |name: &str| -> coda::Result<String> {
            Ok(format!("{:.2} → {:.2}", a.num(o, name)?, b.num(r, name)?))
        };
        let ratio = |t: &Table, i: usize| -> coda::Result<f64> {
            Ok(t.num(i, "learned_h")? / t.num(i, "best_baseline_h")?)
        };
        rows.push(vec![
            k.0.clone(),
            format!("{} ({})", k.1, b.str(r, "gpus")?),
            both("bound_h")?,
            format!(
                "{} {:.2} → {} {:.2}",
                a.str(o, "best_baseline")?,
                a.num(o, "best_baseline_h")?,
                b.str(r, "best_baseline")?,
                b.num(r, "best_baseline_h")?
            ),
            both("learned_h")?,
            format!("{:.3} → {:.3}", ratio(&a, o)?, ratio(&b, r)?),
        ]);
    }
    let head = [
        "trace",
        "cluster (GPUs)",
        "bound, h",
        "best baseline, h",
        "learned, h",
        "learned / best baseline",
    ];
    Ok(format!(
        "### goodput\n\nThe load sweep again with statistical efficiency on (`GOODPUT=on \
         scripts/bench_load.sh`, `--goodput on`: a job's progress is its goodput relative to its \
         requested allocation, `src/perf/goodput.rs`), each cell goodput off → on. The \
         simulator, the bound and every policy price with the same model (the objective, the \
         baselines' sizing, the learned policy's features); the learned weights are the ones \
         trained with goodput off. {}\n\n{}",
        provenance(dir, results)?,
        md_table(&head, &rows)
    ))
}
