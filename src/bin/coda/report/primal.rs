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

/// Each (round, method)'s incumbent trail of one run's `incumbents.csv`.
type Trails = BTreeMap<(String, String), Vec<coda::ilp::Incumbent>>;

fn trails(csv: &Path) -> coda::Result<Trails> {
    let t = Table::read(csv)?;
    let mut out = Trails::new();
    for r in 0..t.len() {
        out.entry((
            t.str(r, "instance")?.to_string(),
            t.str(r, "method")?.to_string(),
        ))
        .or_default()
        .push(coda::ilp::Incumbent {
            time_s: t.num(r, "time_s")?,
            objective: t.num(r, "objective")?,
        });
    }
    Ok(out)
}

/// The section, or nothing when the results are absent. Both runs (with and without the interim
/// masters) are measured against one reference per round: the best objective either found.
pub(super) fn primal_section(dir: &Path, stop: &Path) -> coda::Result<String> {
    let csv = dir.join("primal.csv");
    if !csv.is_file() {
        return Ok(String::new());
    }
    let p = Table::read(&csv)?;
    let with = trails(&dir.join("incumbents.csv"))?;
    let ablation = dir.join("no-interim/incumbents.csv");
    let without = if ablation.is_file() {
        trails(&ablation)?
    } else {
        Trails::new()
    };
    // round → (servers × jobs, horizon, best objective of either run)
    let mut rounds: BTreeMap<String, (String, f64, f64)> = BTreeMap::new();
    for r in 0..p.len() {
        rounds.insert(
            p.str(r, "instance")?.to_string(),
            (
                format!("{} × {}", p.str(r, "servers")?, p.str(r, "jobs")?),
                p.num(r, "horizon_s")?,
                f64::NEG_INFINITY,
            ),
        );
    }
    for ((round, _), trail) in with.iter().chain(&without) {
        if let Some(e) = rounds.get_mut(round) {
            e.2 = trail.iter().map(|x| x.objective).fold(e.2, f64::max);
        }
    }
    let mut rows = Vec::new();
    // round → method → primal integral with the interim masters
    let mut by_round: BTreeMap<&str, BTreeMap<&str, f64>> = BTreeMap::new();
    for (round, (size, horizon, best)) in &rounds {
        for m in METHODS {
            let key = (round.clone(), m.to_string());
            let Some(trail) = with.get(&key) else {
                continue;
            };
            let pi = coda::ilp::primal_integral(trail, *best, *horizon);
            by_round.entry(round).or_default().insert(m, pi);
            let gaps: Vec<String> = [1.0, 5.0, 15.0, 60.0]
                .iter()
                .map(|&t| {
                    let z = coda::ilp::incumbent_at(trail, t);
                    if z.is_nan() {
                        "–".into()
                    } else {
                        format!("{:.2}", 100.0 * coda::ilp::relative_gap(*best, z))
                    }
                })
                .collect();
            let old = without.get(&key).map_or("–".to_string(), |t| {
                format!("{:.2}", coda::ilp::primal_integral(t, *best, *horizon))
            });
            rows.push(vec![
                round.clone(),
                size.clone(),
                m.to_string(),
                format!("{pi:.2}"),
                old,
                gaps.join(" / "),
            ]);
        }
    }
    let ratio = |m: &str| {
        median(
            by_round
                .values()
                .filter_map(|v| Some(v.get(m)? / v.get("heuristic-start")?))
                .filter(|x| x.is_finite())
                .collect(),
        )
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "### formulations/results/primal/primal.csv\n\nThe exact solver under a deadline: \
         each round solved for the time limit from the best heuristic's schedule \
         (`heuristic-start`) and from the learned policy's (`policy-start`, which begins once \
         the policy has decided), beside the policy alone: the primal integral (seconds of \
         relative gap to the best schedule either run found, integrated over the limit, 1 \
         before any schedule: Berthold 2013; 0 = the best from the first instant) with the \
         configuration program's masters between chunks of column generation, and without \
         them (`no-interim/`, the program before), and the incumbent's gap at 1 / 5 / 15 / \
         60 s with them. Median over rounds of the primal integral relative to the heuristic \
         start's: policy-start {:.3}, the policy alone {:.3}. {}\n\n",
        ratio("policy-start"),
        ratio("policy"),
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

/// The cells every table of configuration-program solves (`solve_threads.csv`,
/// `solve_pricing.csv`: one row per round and `variant`) starts with: round, variant, proven or
/// the gap at the limit, objective, bound, wall time, relaxations and columns.
fn solve_cells(t: &Table, r: usize, variant: &str) -> coda::Result<Vec<String>> {
    let shown = if t.str(r, "status")? == "optimal" {
        "proven".to_string()
    } else {
        format!("gap {}", super::table::pct(t.num(r, "gap")?))
    };
    Ok(vec![
        t.str(r, "instance")?.to_string(),
        t.str(r, variant)?.to_string(),
        shown,
        format!("{:.4}", t.num(r, "objective")?),
        format!("{:.4}", t.num(r, "best_bound")?),
        format!("{:.1}", t.num(r, "wall_s")?),
        t.str(r, "iterations")?.to_string(),
        t.str(r, "columns")?.to_string(),
    ])
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
        let gen_s = t.num(r, "generation_s")?;
        let mut row = solve_cells(&t, r, "threads")?;
        row.push(format!(
            "{:.0}",
            t.num(r, "search_nodes")? / gen_s.max(1e-9)
        ));
        rows.push(row);
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

/// `pricing/solve_pricing.csv`: the configuration program as shipped and its pricing
/// ablations, per round: status, gap at the limit, time, relaxations and search nodes.
pub(super) fn pricing_section(dir: &Path, stop: &Path) -> coda::Result<String> {
    let csv = dir.join("solve_pricing.csv");
    if !csv.is_file() {
        return Ok(String::new());
    }
    let t = Table::read(&csv)?;
    let mut rows = Vec::new();
    for r in 0..t.len() {
        let mut row = solve_cells(&t, r, "pricing")?;
        row.push(t.str(r, "search_nodes")?.to_string());
        row.push(t.str(r, "converged")?.to_string());
        rows.push(row);
    }
    Ok(format!(
        "### formulations/results/pricing/solve_pricing.csv\n\nThe configuration program as \
         shipped (`shapes`: exact pricing by shapes, then layouts, with co-location floors in \
         its bound, and dual smoothing), without dual smoothing (`--no-dual-smoothing`), \
         without the floors (`--no-colocation-floors`) and over fragments as before all three \
         (`--no-shape-pricing --no-dual-smoothing`): status, objective, bound, wall time, \
         relaxations solved, columns, pricing-search nodes and whether column generation \
         converged. {}\n\n{}",
        provenance(dir, stop)?,
        md_table(
            &[
                "round",
                "pricing",
                "status",
                "objective",
                "bound",
                "wall (s)",
                "relaxations",
                "columns",
                "search nodes",
                "converged",
            ],
            &rows,
        )
    ))
}
