//! The sections of `benches/results/README.md` (and the README's headline), one per kind of
//! results CSV.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use coda::Error;

use super::gap::gap_table;
use super::table::{Pivot, Table, hours, md_table, median, pct, provenance};

/// Every `comparison.csv` under `dir`, sorted by path.
pub(super) fn comparisons(dir: &Path, out: &mut Vec<PathBuf>) -> coda::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            comparisons(&p, out)?;
        } else if p.file_name().is_some_and(|n| n == "comparison.csv") {
            out.push(p);
        }
    }
    Ok(())
}

pub(super) fn comparison_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    let name = dir
        .strip_prefix(results)
        .unwrap_or(dir)
        .display()
        .to_string();
    let mut rows = Vec::new();
    for r in 0..t.len() {
        rows.push(vec![
            t.str(r, "policy")?.to_string(),
            hours(t.num(r, "avg_jct_s")?),
            hours(t.num(r, "median_jct_s")?),
            hours(t.num(r, "p99_jct_s")?),
            format!("{:.1}", t.num(r, "makespan_s")? / 3600.0),
            pct(t.num(r, "gpu_utilization")?),
            format!("{:.0}", t.num(r, "restarts")?),
            t.str(r, "jobs_unfinished_total")?.to_string(),
            format!("{:.2}", t.num(r, "contention_allowance")?),
        ]);
    }
    let what = if t.len() > 0 {
        format!(
            "Trace `{}`, {} jobs ({} tracked), cluster `{}` ({} GPUs), seed {}.",
            t.str(0, "trace")?,
            t.str(0, "jobs_total")?,
            t.str(0, "jobs_tracked")?,
            t.str(0, "cluster")?,
            t.str(0, "gpus")?,
            t.str(0, "seed")?
        )
    } else {
        "No rows.".into()
    };
    Ok(format!(
        "### {name}\n\n{what} {}\n\n{}\n",
        provenance(dir, results)?,
        md_table(
            &[
                "policy",
                "avg JCT (h)",
                "median JCT (h)",
                "p99 JCT (h)",
                "makespan (h)",
                "GPU util.",
                "restarts",
                "unfinished",
                "allowance",
            ],
            &rows
        )
    ))
}

/// `sensitivity.csv`: average JCT (h) per setting (rows) and policy (columns).
pub(super) fn sensitivity_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    let name = dir
        .strip_prefix(results)
        .unwrap_or(dir)
        .display()
        .to_string();
    let mut pivot = Pivot::default();
    for r in 0..t.len() {
        pivot.add(
            t.str(r, "setting")?,
            t.str(r, "policy")?,
            hours(t.num(r, "avg_jct_s")?),
        );
    }
    Ok(format!(
        "### {name}\n\nAverage JCT (h) with each named estimate at its low and high value, the \
         others shipped. {}\n\n{}\n",
        provenance(dir, results)?,
        pivot.markdown("setting")
    ))
}

/// `gap.csv`: the gap to the exact program per policy over every round, and the mean gap by
/// round size for the learned policy and the heuristics' best.
pub(super) fn gap_section(csv: &Path, results: &Path) -> coda::Result<String> {
    gap_table(
        csv,
        results,
        "### gap",
        &[
            "learned",
            "learned-greedy",
            "best-heuristic",
            "expert-l1+learned-l2",
        ],
    )
}

/// `side_by_side.csv`: per policy, how many jobs the independent replay rule matches.
pub(super) fn side_by_side_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    let name = dir
        .strip_prefix(results)
        .unwrap_or(dir)
        .display()
        .to_string();
    // policy → (jobs, packed, packed matching, within one round, spread run ÷ duration)
    let mut by: BTreeMap<String, (usize, usize, usize, usize, Vec<f64>)> = BTreeMap::new();
    for r in 0..t.len() {
        let e = by.entry(t.str(r, "policy")?.to_string()).or_default();
        let packed = t.str(r, "packed")? == "1";
        let ok = t.str(r, "match")? == "1";
        let run = t.num(r, "coda_run_s")?;
        let dur = t.num(r, "trace_duration_s")?;
        e.0 += 1;
        e.1 += packed as usize;
        e.2 += (packed && ok) as usize;
        e.3 += ((run - dur).abs() <= 300.0) as usize;
        if !packed {
            e.4.push(run / dur);
        }
    }
    let share = |a: usize, b: usize| format!("{a} ({:.1} %)", 100.0 * a as f64 / b.max(1) as f64);
    let rows: Vec<Vec<String>> = by
        .into_iter()
        .map(|(p, (n, pk, pok, wi, mut sp))| {
            sp.sort_by(f64::total_cmp);
            let spread = if sp.is_empty() {
                "–".into()
            } else {
                format!(
                    "{:.3} / {:.3} / {:.3}",
                    sp[0],
                    sp[sp.len() / 2],
                    sp[sp.len() - 1]
                )
            };
            vec![
                p,
                n.to_string(),
                pk.to_string(),
                share(pok, pk),
                share(wi, n),
                sp.len().to_string(),
                spread,
            ]
        })
        .collect();
    Ok(format!(
        "### {name}\n\nContention off, GPU-only servers, 300 s rounds, jobs that finished without a \
         restart, against the rule \"a job that never moves runs its trace duration\". {}\n\n{}\n",
        provenance(dir, results)?,
        md_table(
            &[
                "policy",
                "jobs",
                "packed",
                "packed matching",
                "within one round",
                "spread jobs",
                "spread run ÷ duration (min / median / max)"
            ],
            &rows
        )
    ))
}

/// `decide_scaling.csv`: the learned policy's and the best heuristic's decision time against
/// cluster size (mean over seeds of each seed's median).
pub(super) fn decide_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(results);
    // (servers, GPUs, jobs) of a size point.
    type Size = (u64, u64, u64);
    let mut sizes: Vec<Size> = Vec::new();
    let mut policies: Vec<String> = Vec::new();
    // (size, policy) → (sum of medians, seeds, all valid)
    let mut cell: BTreeMap<(Size, String), (f64, usize, bool)> = BTreeMap::new();
    for r in 0..t.len() {
        let size = (
            t.num(r, "servers")? as u64,
            t.num(r, "gpus")? as u64,
            t.num(r, "jobs")? as u64,
        );
        let p = t.str(r, "policy")?.to_string();
        if !sizes.contains(&size) {
            sizes.push(size);
        }
        if !policies.contains(&p) {
            policies.push(p.clone());
        }
        let e = cell.entry((size, p)).or_insert((0.0, 0, true));
        e.0 += t.num(r, "median_s")?;
        e.1 += 1;
        e.2 &= t.str(r, "valid")? == "true";
    }
    let mut head = vec!["servers", "GPUs", "jobs"];
    let cols: Vec<String> = policies.iter().map(|p| format!("{p} (ms)")).collect();
    head.extend(cols.iter().map(String::as_str));
    head.push("all valid");
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|s| {
            let mut r = vec![s.0.to_string(), s.1.to_string(), s.2.to_string()];
            let mut valid = true;
            for p in &policies {
                r.push(cell.get(&(*s, p.clone())).map_or("–".into(), |c| {
                    valid &= c.2;
                    format!("{:.2}", 1e3 * c.0 / c.1 as f64)
                }));
            }
            r.push(if valid { "yes" } else { "no" }.into());
            r
        })
        .collect();
    Ok(format!(
        "### decide\n\nDecision time for one round (median of repeats, mean over seeds), one \
         thread. {}\n\n{}\n",
        provenance(dir, results)?,
        md_table(&head, &rows)
    ))
}

/// `bench_sim.csv`: a replay's cost against jobs and servers, and the fitted exponents.
pub(super) fn sim_scaling_section(csv: &Path, results: &Path) -> coda::Result<String> {
    let rows = crate::bench_sim::read_rows(csv)?;
    let dir = csv.parent().unwrap_or(results);
    crate::bench_sim::plot(&rows, &dir.join("bench_sim.svg"))?;
    let opt =
        |x: Option<f64>, digits: usize| x.map_or("–".to_string(), |v| format!("{v:.digits$}"));
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.jobs.to_string(),
                r.servers.to_string(),
                r.policy.clone(),
                r.status.clone(),
                // A replay stopped at the limit ran at least that long.
                match (r.wall_s, r.status.as_str()) {
                    (None, "stopped") => format!("> {:.0}", r.process_s),
                    (w, _) => opt(w, 2),
                },
                r.rounds.map_or("–".into(), |x| x.to_string()),
                opt(r.rounds_per_s, 0),
                opt(r.peak_rss_mib, 0),
                opt(r.avg_jct_h, 2),
            ]
        })
        .collect();
    let head = [
        "jobs",
        "servers",
        "policy",
        "status",
        "wall (s)",
        "rounds",
        "rounds/s",
        "peak memory (MiB)",
        "avg JCT (h)",
    ];
    Ok(format!(
        "### sim_scaling\n\nA replay's cost against trace length and cluster size: the Philly \
         window resampled (jobs with their models, sizes and durations; inter-arrival gaps divided \
         by servers / 64, so every cluster sees the window's load per server), one process per \
         replay; `bench_sim.svg` plots wall time against jobs. {}\n\n{}\nFitted exponents \
         (least squares on log–log, finished replays):\n\n{}\n",
        provenance(dir, results)?,
        md_table(&head, &table),
        crate::bench_sim::exponents(&rows).join("\n")
    ))
}

/// `solve_scaling.csv`: the exact program's size and solve time against cluster size.
pub(super) fn solve_section(csv: &Path, stop: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(stop);
    let mut rows = Vec::new();
    for r in 0..t.len() {
        rows.push(vec![
            t.str(r, "instance")?.to_string(),
            t.str(r, "servers")?.to_string(),
            t.str(r, "gpus")?.to_string(),
            t.str(r, "jobs")?.to_string(),
            t.str(r, "symmetry_breaking")?.to_string(),
            t.str(r, "colocation_cuts")?.to_string(),
            t.str(r, "variables")?.to_string(),
            t.str(r, "constraints")?.to_string(),
            format!("{:.3}", t.num(r, "build_s")?),
            format!("{:.2}", t.num(r, "solve_s")?),
            t.str(r, "status")?.to_string(),
            pct(t.num(r, "root_gap")?),
            pct(t.num(r, "gap")?),
            t.str(r, "nodes")?.to_string(),
        ]);
    }
    Ok(format!(
        "### formulations/results/solve_scaling.csv\n\nThe exact program's size and solve time \
         against cluster size. {}\n\n{}\n",
        provenance(dir, stop)?,
        md_table(
            &[
                "instance",
                "servers",
                "GPUs",
                "jobs",
                "symmetry breaking",
                "co-location cuts",
                "variables",
                "constraints",
                "build (s)",
                "solve (s)",
                "status",
                "root gap",
                "gap",
                "nodes"
            ],
            &rows
        )
    ))
}

/// `warm_start.csv`: time to a proven optimum (or the gap at the limit) per instance and start.
pub(super) fn warm_section(csv: &Path, stop: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(stop);
    let mut pivot = Pivot::default();
    for r in 0..t.len() {
        let text = if t.str(r, "status")? == "Optimal" {
            format!("{:.2} s", t.num(r, "solve_s")?)
        } else {
            format!("gap {}", pct(t.num(r, "gap")?))
        };
        pivot.add(t.str(r, "instance")?, t.str(r, "method")?, text);
    }
    Ok(format!(
        "### formulations/results/warm_start.csv\n\nTime to a proven optimum, or the gap at the \
         time limit, from each start. {}\n\n{}\n",
        provenance(dir, stop)?,
        pivot.markdown("instance")
    ))
}

/// `programs/solve_programs.csv`: the compact and the configuration program on every shipped
/// round, from the same starts: status, gap to the bound, time, and the columns generated.
pub(super) fn programs_section(csv: &Path, stop: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(stop);
    let mut pivot = Pivot::default();
    for r in 0..t.len() {
        let program = t.str(r, "program")?;
        let status = t.str(r, "status")?;
        let objective = t.num(r, "objective")?;
        let gap = t.num(r, "gap")?;
        let bound = t.num(r, "best_bound")?;
        let shown = if status == "optimal" {
            format!("{objective:.4} proven")
        } else if gap.is_nan() {
            format!("{objective:.4}, no bound")
        } else {
            format!("{objective:.4} ≤ {bound:.4}, gap {}", pct(gap))
        };
        let mut text = format!("{shown}, {:.1} s", t.num(r, "wall_s")?);
        if program == "config" {
            text.push_str(&format!(", {} columns", t.str(r, "columns")?));
        }
        pivot.add(t.str(r, "instance")?, program, text);
    }
    Ok(format!(
        "### formulations/results/programs/solve_programs.csv\n\nThe compact and the \
         configuration program on every shipped round (`formulations/instances`, and the 16 × 32 \
         and 64 × 128 rounds of `formulations/instances/large`), from the same starts (the \
         running jobs kept, the best heuristic's schedule), 1 HiGHS thread, 60 s (300 s at 64 \
         servers): the objective, proven optimal or with the bound and gap at the limit \
         (\"no bound\": none was certified), wall time, and for the configuration program \
         the columns generated. {}\n\n{}\n",
        provenance(dir, stop)?,
        pivot.markdown("instance")
    ))
}

/// `policy_start/policy_start.csv`: the configuration program from its default starts and
/// from the learned policy's schedule, per round, and the medians over the rounds both prove.
pub(super) fn policy_start_section(csv: &Path, stop: &Path) -> coda::Result<String> {
    let t = Table::read(csv)?;
    let dir = csv.parent().unwrap_or(stop);
    let mut pivot = Pivot::default();
    // (instance, start) → (seconds, search nodes) where proven.
    let mut proven: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for r in 0..t.len() {
        let (instance, start) = (t.str(r, "instance")?, t.str(r, "start")?);
        let (wall, nodes) = (t.num(r, "wall_s")?, t.num(r, "search_nodes")?);
        let text = if t.str(r, "status")? == "optimal" {
            proven.insert((instance.to_string(), start.to_string()), (wall, nodes));
            format!("proven, {wall:.2} s, {nodes} nodes")
        } else {
            format!("gap {}, {wall:.1} s", pct(t.num(r, "gap")?))
        };
        pivot.add(instance, start, text);
    }
    // (default, policy) of each round both prove: (seconds, search nodes) each.
    type Pair<'a> = (&'a (f64, f64), &'a (f64, f64));
    let both: Vec<Pair> = proven
        .iter()
        .filter(|((_, s), _)| s == "default")
        .filter_map(|((i, _), d)| proven.get(&(i.clone(), "policy".into())).map(|p| (d, p)))
        .collect();
    let total = |f: &dyn Fn(&Pair) -> f64| both.iter().map(f).sum::<f64>();
    let summary = format!(
        "On the {} rounds both starts prove: median {:.3} s and {:.0} search nodes from the \
         default starts, {:.3} s and {:.0} from the policy's schedule; round by round the \
         median ratio (policy / default) is {:.2} in time and {:.2} in nodes, and all rounds \
         together take {:.1} s vs {:.1} s.",
        both.len(),
        median(both.iter().map(|(d, _)| d.0).collect()),
        median(both.iter().map(|(d, _)| d.1).collect()),
        median(both.iter().map(|(_, p)| p.0).collect()),
        median(both.iter().map(|(_, p)| p.1).collect()),
        median(both.iter().map(|(d, p)| p.0 / d.0).collect()),
        median(both.iter().map(|(d, p)| p.1 / d.1.max(1.0)).collect()),
        total(&|(d, _)| d.0),
        total(&|(_, p)| p.0),
    );
    Ok(format!(
        "### formulations/results/policy_start/policy_start.csv\n\nThe configuration program \
         from its default starts and with the learned policy's schedule as warm start (its \
         columns seed column generation), 1 HiGHS thread, 60 s: proven with the time and the \
         pricing-search nodes to the proof, or the gap at the limit. {summary} {}\n\n{}\n",
        provenance(dir, stop)?,
        pivot.markdown("instance")
    ))
}

/// The last row of each training curve.
pub(super) fn curves_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    let mut s = format!(
        "### train\n\nThe last epoch or iteration of each training curve. {}\n\n",
        provenance(dir, results)?
    );
    for f in files {
        let t = Table::read(&f)?;
        let Some(last) = t.len().checked_sub(1) else {
            continue;
        };
        let mut row = Vec::new();
        for h in &t.header {
            let v = t.str(last, h)?;
            row.push(match v.parse::<f64>() {
                Ok(x) if x.fract() != 0.0 => format!("{x:.4}"),
                _ => v.to_string(),
            });
        }
        let head: Vec<&str> = t.header.iter().map(String::as_str).collect();
        let _ = write!(
            s,
            "`{}` ({} rows):\n\n{}\n",
            f.file_name().unwrap_or_default().to_string_lossy(),
            t.len(),
            md_table(&head, &[row])
        );
    }
    Ok(s)
}

/// The whole `benches/results/README.md`.
pub(super) fn results_readme(root: &Path) -> coda::Result<String> {
    let results = root.join("benches/results");
    let mut s = String::from(
        "# Measured results\n\n\
         Generated by `coda report` from the CSVs in this folder and in `formulations/results/`: \
         do not edit by hand (`cargo test` fails when this file differs from what the CSVs give). \
         Each table names the command that wrote its CSV, the commit and the machine; times are \
         wall-clock on that machine. Markdown tables next to a CSV (`comparison.md`, `gap.md`...) \
         are the writing command's own view of the same rows.\n\n## Headline\n\n",
    );
    s.push_str(&super::headline::headline(&results)?);
    s.push_str("\n## Trace replays\n\n");
    let mut csvs = Vec::new();
    for set in ["rl", "sim"] {
        comparisons(&results.join(set), &mut csvs)?;
    }
    for c in &csvs {
        s.push_str(&comparison_section(c, &results)?);
        s.push('\n');
    }
    let load = results.join("load/load_sweep.csv");
    if load.is_file() {
        s.push_str("## How much is left to win: lower bounds and a load sweep\n\n");
        s.push_str(&super::load::load_section(&load, &results)?);
        s.push('\n');
        let on = results.join("load-goodput/load_sweep.csv");
        if on.is_file() {
            s.push_str(&super::load::goodput_section(&load, &on, &results)?);
            s.push('\n');
        }
    }
    let lookahead = results.join("lookahead");
    if lookahead.join("lookahead.csv").is_file() {
        s.push_str(&super::lookahead::lookahead_section(&lookahead, &results)?);
        s.push('\n');
    }
    s.push_str("## Fungible CPU and memory\n\n");
    s.push_str(&super::cpumem::cpu_mem_section(&results)?);
    s.push_str("\n## Sensitivity to the named estimates\n\n");
    for t in ["philly", "itp-cluster06"] {
        let f = results.join(format!("sim/sensitivity-{t}/sensitivity.csv"));
        s.push_str(&sensitivity_section(&f, &results)?);
        s.push('\n');
    }
    // With goodput on (`scripts/bench_goodput.sh`): the noise ratios halved and doubled too.
    for t in ["itp-cluster06-0-300", "philly-2000-400"] {
        let f = results.join(format!("goodput/sensitivity-{t}/sensitivity.csv"));
        if f.is_file() {
            s.push_str(&sensitivity_section(&f, &results)?);
            s.push('\n');
        }
    }
    s.push_str("## Side by side with an independent replay rule\n\n");
    for t in ["philly", "itp-cluster06"] {
        let f = results.join(format!("side_by_side/{t}/side_by_side.csv"));
        s.push_str(&side_by_side_section(&f, &results)?);
        s.push('\n');
    }
    let sia_sim = results.join("sia-sim/runs.csv");
    if sia_sim.is_file() {
        s.push_str("## Inside Sia's simulator\n\n");
        s.push_str(&super::sia_sim::sia_sim_section(&sia_sim, &results)?);
        s.push('\n');
    }
    let grow = results.join("grow/grow.csv");
    if grow.is_file() {
        s.push_str("## The learned policy's local search in coda's simulator\n\n");
        s.push_str(&super::sia_sim::grow_section(&grow, &results)?);
        s.push('\n');
    }
    let slurm = results.join("slurm");
    if slurm.join("summary.csv").is_file() {
        s.push_str("## coda on a real Slurm\n\n");
        s.push_str(&super::slurm::slurm_section(&slurm, &results)?);
        s.push('\n');
    }
    let light = results.join("ilp-light");
    if light.join("runs.csv").is_file() {
        s.push_str("## The `ilp` policy on light load\n\n");
        s.push_str(&super::ilp_light::ilp_light_sections(&light, &results)?);
    }
    s.push_str("## The learned policy against the exact program\n\n");
    s.push_str(&gap_section(&results.join("gap/gap.csv"), &results)?);
    s.push('\n');
    s.push_str(&decide_section(
        &results.join("decide/decide_scaling.csv"),
        &results,
    )?);
    s.push('\n');
    let scaling = results.join("sim_scaling/bench_sim.csv");
    if scaling.is_file() {
        s.push_str(&sim_scaling_section(&scaling, &results)?);
        s.push('\n');
    }
    s.push_str(&curves_section(&results.join("train"), &results)?);
    s.push('\n');
    s.push_str(&super::rl::rl_gae_section(
        &results.join("rl_gae"),
        &results,
    )?);
    s.push('\n');
    s.push_str(&super::rl::rounds_section(
        "rl_gae/rounds",
        &results.join("rl_gae/rounds"),
        &["start", "gae-2", "gae-3", "rollouts-3"],
        &results,
    )?);
    s.push('\n');
    s.push_str(&super::rl::labels_section(
        &results.join("labels_large"),
        &results,
    )?);
    s.push_str("\n## Python, Gymnasium and Ray\n\n");
    s.push_str(&super::python::python_section(&results)?);
    s.push_str("\n## The exact program\n\n");
    let f = root.join("formulations/results");
    s.push_str(&solve_section(&f.join("solve_scaling.csv"), &f)?);
    s.push('\n');
    s.push_str(&warm_section(&f.join("warm_start.csv"), &f)?);
    s.push('\n');
    s.push_str(&programs_section(
        &f.join("programs/solve_programs.csv"),
        &f,
    )?);
    s.push('\n');
    s.push_str(&super::cpumem::tiered_programs_section(&f)?);
    s.push('\n');
    s.push_str(&policy_start_section(
        &f.join("policy_start/policy_start.csv"),
        &f,
    )?);
    s.push('\n');
    s.push_str(&super::primal::primal_section(&f.join("primal"), &f)?);
    s.push('\n');
    s.push_str(&super::primal::threads_section(&f.join("threads"), &f)?);
    s.push('\n');
    s.push_str(&super::primal::pricing_section(&f.join("pricing"), &f)?);
    Ok(s.trim_end().to_string() + "\n")
}
