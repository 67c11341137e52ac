//! The exact solver under a deadline (`formulations/results/primal/`, `scripts/bench_primal.sh`):
//! per round and method, the primal integral over the time limit and the incumbent's gap at
//! 1/5/15/60 s, beside the ablation without the configuration program's interim masters; and
//! one plot per round of the incumbent's gap over time, drawn from `incumbents.csv`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::table::{Table, md_table, median, provenance};

/// Methods in the order shown.
const METHODS: [&str; 4] = ["heuristic-start", "policy", "policy-start", "fix-and-solve"];

/// The section, or nothing when the results are absent.
pub(super) fn primal_section(dir: &Path, stop: &Path) -> coda::Result<String> {
    let csv = dir.join("primal.csv");
    if !csv.is_file() {
        return Ok(String::new());
    }
    let with = Table::read(&csv)?;
    let without = dir
        .join("no-interim/primal.csv")
        .is_file()
        .then(|| Table::read(&dir.join("no-interim/primal.csv")))
        .transpose()?;
    // (instance, method) → primal integral, without the interim masters.
    let mut before: BTreeMap<(String, String), f64> = BTreeMap::new();
    if let Some(t) = &without {
        for r in 0..t.len() {
            let key = (
                t.str(r, "instance")?.to_string(),
                t.str(r, "method")?.to_string(),
            );
            before.insert(key, t.num(r, "primal_integral_s")?);
        }
    }
    let mut rows = Vec::new();
    // Per round, the primal integral of each method, for the ratios below.
    let mut by_round: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for m in METHODS {
        for r in (0..with.len()).filter(|&r| with.str(r, "method").ok() == Some(m)) {
            let instance = with.str(r, "instance")?;
            let pi = with.num(r, "primal_integral_s")?;
            by_round
                .entry(instance.to_string())
                .or_default()
                .insert(m.to_string(), pi);
            let gaps: Vec<String> = ["gap_1s", "gap_5s", "gap_15s", "gap_60s"]
                .iter()
                .map(|c| with.num(r, c).map(|g| format!("{:.2}", 100.0 * g)))
                .collect::<coda::Result<_>>()?;
            let old = before
                .get(&(instance.to_string(), m.to_string()))
                .map_or("–".to_string(), |v| format!("{v:.2}"));
            rows.push(vec![
                instance.to_string(),
                format!("{} × {}", with.str(r, "servers")?, with.str(r, "jobs")?),
                m.to_string(),
                format!("{pi:.2}"),
                old,
                gaps.join(" / "),
                format!("{:.3}", with.num(r, "decide_s")?),
            ]);
        }
    }
    rows.sort_by(|a, b| a[0].cmp(&b[0]));
    let ratio = |m: &str| {
        median(
            by_round
                .values()
                .filter_map(|v| Some(v.get(m)? / v.get("heuristic-start")?))
                .filter(|x| x.is_finite())
                .collect(),
        )
    };
    let below = by_round
        .values()
        .filter(|v| {
            let (Some(c), Some(p), Some(a)) = (
                v.get("policy-start"),
                v.get("policy"),
                v.get("heuristic-start"),
            ) else {
                return false;
            };
            *c <= p.min(*a) + 1e-9
        })
        .count();
    let mut s = String::new();
    let _ = write!(
        s,
        "### formulations/results/primal/primal.csv\n\nThe exact solver under a deadline: \
         each round solved for the time limit from the best heuristic's schedule \
         (`heuristic-start`) and from the learned policy's (`policy-start`, which begins once \
         the policy has decided), beside the policy alone; the primal integral (seconds of \
         relative gap to the best schedule any method found, integrated over the limit: \
         Berthold 2013; 0 = the best from the first instant) with the configuration program's \
         masters between chunks of column generation, and without them (the program before, \
         `no-interim/`), and the incumbent's gap at 1 / 5 / 15 / 60 s. Median over rounds of \
         the primal integral relative to the heuristic start's: policy-start {:.3}, policy \
         alone {:.3}; policy-start at most the better of the two on {below} of {} rounds. {}\n\n",
        ratio("policy-start"),
        ratio("policy"),
        by_round.len(),
        provenance(dir, stop)?
    );
    s.push_str(&md_table(
        &[
            "round",
            "servers × jobs",
            "method",
            "primal integral (s)",
            "without interim masters (s)",
            "gap % at 1 / 5 / 15 / 60 s",
            "policy decides (s)",
        ],
        &rows,
    ));
    Ok(s)
}

/// One SVG per round (`incumbents_<round>.svg` beside the CSV): each method's gap to the best
/// schedule found, over the solve's time. Nothing when the results are absent.
pub(super) fn draw(dir: &Path) -> coda::Result<Vec<std::path::PathBuf>> {
    let (trails, primal) = (dir.join("incumbents.csv"), dir.join("primal.csv"));
    if !trails.is_file() || !primal.is_file() {
        return Ok(Vec::new());
    }
    let (t, p) = (Table::read(&trails)?, Table::read(&primal)?);
    // instance → (best known, horizon)
    let mut rounds: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for r in 0..p.len() {
        rounds.insert(
            p.str(r, "instance")?.to_string(),
            (p.num(r, "best_known")?, p.num(r, "horizon_s")?),
        );
    }
    let mut written = Vec::new();
    for (instance, (best, horizon)) in &rounds {
        let mut series: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
        for m in METHODS {
            let pts: Vec<(f64, f64)> = (0..t.len())
                .filter(|&r| t.str(r, "instance").ok() == Some(instance))
                .filter(|&r| t.str(r, "method").ok() == Some(m))
                .map(|r| {
                    let z = t.num(r, "objective")?;
                    Ok((
                        t.num(r, "time_s")?,
                        100.0 * coda::ilp::relative_gap(*best, z),
                    ))
                })
                .collect::<coda::Result<_>>()?;
            if !pts.is_empty() {
                series.push((m, pts));
            }
        }
        let path = dir.join(format!("incumbents_{instance}.svg"));
        coda::plots::plot_steps(
            &series,
            *horizon,
            &path,
            &format!("{instance}: the incumbent's gap to the best schedule found"),
            "gap to the best found (%)",
        )?;
        written.push(path);
    }
    Ok(written)
}

/// `threads/solve_threads.csv`: the configuration program at each solver-thread count, per
/// round: status, gap at the limit, time, relaxations solved and pricing nodes per second.
pub(super) fn threads_section(dir: &Path, stop: &Path) -> coda::Result<String> {
    let csv = dir.join("solve_threads.csv");
    if !csv.is_file() {
        return Ok(String::new());
    }
    let t = Table::read(&csv)?;
    let mut rows = Vec::new();
    for r in 0..t.len() {
        let (wall, gen_s) = (t.num(r, "wall_s")?, t.num(r, "generation_s")?);
        let status = t.str(r, "status")?;
        let shown = if status == "optimal" {
            "proven".to_string()
        } else {
            format!("gap {}", super::table::pct(t.num(r, "gap")?))
        };
        rows.push(vec![
            t.str(r, "instance")?.to_string(),
            t.str(r, "threads")?.to_string(),
            shown,
            format!("{:.4}", t.num(r, "objective")?),
            format!("{:.4}", t.num(r, "best_bound")?),
            format!("{wall:.1}"),
            t.str(r, "iterations")?.to_string(),
            t.str(r, "columns")?.to_string(),
            format!("{:.0}", t.num(r, "search_nodes")? / gen_s.max(1e-9)),
        ]);
    }
    Ok(format!(
        "### formulations/results/threads/solve_threads.csv\n\nThe configuration program at \
         each solver-thread count (HiGHS's threads, and the server classes priced side by side \
         on as many): status, objective, bound, wall time, relaxations solved, columns and \
         pricing-search nodes per second of the solve. {}\n\n{}",
        provenance(dir, stop)?,
        md_table(
            &[
                "round",
                "threads",
                "status",
                "objective",
                "bound",
                "wall (s)",
                "relaxations",
                "columns",
                "search nodes / s",
            ],
            &rows,
        )
    ))
}
