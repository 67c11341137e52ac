//! The RL-with-a-critic section: `benches/results/rl_gae/` (`scripts/gpu_rl.sh` trained the runs
//! on a GPU machine, `scripts/bench_rl_gpu.sh` replayed them here).

use std::fmt::Write as _;
use std::path::Path;

use super::table::{Table, md_table, provenance};

/// The eight heuristic baselines (the best of them is the bar).
const BASELINES: [&str; 8] = [
    "fifo", "srtf", "drf", "tiresias", "optimus", "sjf-bco", "pollux", "random",
];

/// Per run (`gae-1`, `rollouts-2`...): its advantage, seed and curve.
fn run_of(name: &str) -> Option<(&str, &str)> {
    name.split_once('-')
        .filter(|(a, _)| *a == "gae" || *a == "rollouts")
}

/// Mean, min and max.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

pub(super) fn rl_gae_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let csv = dir.join("replays.csv");
    if !csv.is_file() {
        return Ok(String::new());
    }
    let t = Table::read(&csv)?;
    let gpu = super::read(&dir.join("gpu_machine.txt"))?;
    let gpu = gpu
        .lines()
        .next()
        .unwrap_or("not recorded")
        .trim()
        .to_string();
    let mut s = format!(
        "### rl_gae\n\nPPO with the learned critic (`--advantage gae`) and without it \
         (`--advantage rollouts`), seeds 1–3 each, trained side by side on one GPU machine \
         ({gpu}; the learners on the GPU, rollouts on its 16 cores) for 240–300 s each from \
         `policy.safetensors`, then replayed here. Average JCT (hours) against the imitation \
         start (`learned`) and the best of the eight baselines on the same trace, seed and \
         cluster; `philly-heldout` (the Philly jobs after RL's pool), ITP 02 and Alibaba were \
         never seen in training. {}\n\n",
        provenance(dir, results)?
    );
    let mut traces: Vec<String> = Vec::new();
    for r in 0..t.len() {
        let tr = t.str(r, "trace")?.to_string();
        if !traces.contains(&tr) {
            traces.push(tr);
        }
    }
    let (summary, per_run) = gae_by_trace(&t, &traces)?;
    s.push_str(&summary);
    s.push_str(&gae_by_run(dir, &traces, &per_run)?);
    s.push_str(&gae_throughput(dir)?);
    Ok(s)
}

/// A run's replay of a trace: (trace, run, average JCT ÷ the start's).
type RunRatio = (String, String, f64);

/// Per trace: the best baseline, the start, and each kind of run's ratios to both; and every
/// run's ratio to the start.
fn gae_by_trace(t: &Table, traces: &[String]) -> coda::Result<(String, Vec<RunRatio>)> {
    let mut rows = Vec::new();
    let mut per_run = Vec::new();
    for tr in traces {
        let mut best: Option<(String, f64)> = None;
        let mut start = f64::NAN;
        let mut runs: Vec<(String, f64)> = Vec::new();
        for r in 0..t.len() {
            if t.str(r, "trace")? != tr {
                continue;
            }
            let (p, jct) = (t.str(r, "policy")?, t.num(r, "avg_jct_h")?);
            if BASELINES.contains(&p) {
                if best.as_ref().is_none_or(|b| jct < b.1) {
                    best = Some((p.to_string(), jct));
                }
            } else if p == "learned" {
                start = jct;
            } else if run_of(p).is_some() {
                runs.push((p.to_string(), jct));
            }
        }
        let Some((bname, bjct)) = best else {
            continue;
        };
        let mut cells = vec![
            tr.clone(),
            format!("{bname} {bjct:.3}"),
            format!("{start:.3} ({:.3})", start / bjct),
        ];
        for adv in ["gae", "rollouts"] {
            let q: Vec<f64> = runs
                .iter()
                .filter(|(n, _)| run_of(n).is_some_and(|(a, _)| a == adv))
                .map(|(_, j)| j / start)
                .collect();
            let qb: Vec<f64> = runs
                .iter()
                .filter(|(n, _)| run_of(n).is_some_and(|(a, _)| a == adv))
                .map(|(_, j)| j / bjct)
                .collect();
            let (m, lo, hi) = spread(&q);
            cells.push(if q.is_empty() {
                "–".into()
            } else {
                format!("{m:.3} ({lo:.3} … {hi:.3}), {}", q.len())
            });
            cells.push(format!("{:.3}", spread(&qb).0));
        }
        rows.push(cells);
        for (n, j) in &runs {
            per_run.push((tr.clone(), n.clone(), *j / start));
        }
    }
    let table = md_table(
        &[
            "trace",
            "best baseline (h)",
            "learned, the start (h; ÷ best)",
            "gae ÷ start, mean (min … max), runs",
            "gae ÷ best",
            "rollouts ÷ start, mean (min … max), runs",
            "rollouts ÷ best",
        ],
        &rows,
    );
    Ok((table, per_run))
}

/// Per run: the validation it kept and, per trace, its ratio to the start.
fn gae_by_run(dir: &Path, traces: &[String], per_run: &[RunRatio]) -> coda::Result<String> {
    let mut names: Vec<String> = per_run.iter().map(|r| r.1.clone()).collect();
    names.sort();
    names.dedup();
    let mut head = vec![
        "run".to_string(),
        "iterations".into(),
        "validation: start → kept (iteration)".into(),
        "critic EV, median".into(),
    ];
    head.extend(traces.iter().map(|t| format!("{t} ÷ start")));
    let mut rows = Vec::new();
    for n in &names {
        let c = Table::read(&dir.join(format!("curves/{n}.csv")))?;
        let mut kept = (0usize, f64::INFINITY);
        let mut evs = Vec::new();
        for r in 0..c.len() {
            let v = c.num(r, "val_avg_jct_h")?;
            if v < kept.1 {
                kept = (c.num(r, "iteration")? as usize, v);
            }
            let ev = c.num(r, "explained_variance")?;
            if ev.is_finite() {
                evs.push(ev);
            }
        }
        evs.sort_by(f64::total_cmp);
        let mut cells = vec![
            n.clone(),
            c.len().to_string(),
            format!("→ {:.3} h ({})", kept.1, kept.0),
            evs.get(evs.len() / 2)
                .map_or("–".into(), |e| format!("{e:.2}")),
        ];
        for tr in traces {
            cells.push(
                per_run
                    .iter()
                    .find(|r| &r.0 == tr && &r.1 == n)
                    .map_or("–".into(), |r| format!("{:.3}", r.2)),
            );
        }
        rows.push(cells);
    }
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    Ok(format!(
        "\nPer run: iterations in its budget, the lowest validation average JCT of the checked \
         iterations (the start's is checked too: a run that never beat it keeps the start's \
         weights), the critic's median explained variance of the sampled returns, and each \
         replay ÷ the start.\n\n{}",
        md_table(&head, &rows)
    ))
}

/// Throughput: the same command with the learner on the GPU, on the GPU machine's CPU, here.
fn gae_throughput(dir: &Path) -> coda::Result<String> {
    let mut rows = Vec::new();
    for (name, what) in [
        (
            "tp-cuda",
            "GPU machine: learner on the GPU, 16 rollout threads",
        ),
        (
            "tp-cpu",
            "GPU machine: learner on its CPU (1 thread), 16 rollout threads",
        ),
        (
            "tp-local",
            "this machine: learner on the CPU (1 thread), 2 rollout threads",
        ),
    ] {
        let f = dir.join(format!("curves/throughput-{name}.csv"));
        if !f.is_file() {
            continue;
        }
        let c = Table::read(&f)?;
        let (mut n, mut rs, mut k, mut ls) = (0.0, 0.0, 0.0, 0.0);
        for r in 0..c.len() {
            n += c.num(r, "rollouts")?;
            rs += c.num(r, "rollout_s")?;
            k += c.num(r, "learner_steps")?;
            ls += c.num(r, "learn_s")?;
        }
        rows.push(vec![
            what.to_string(),
            format!("{n:.0} in {rs:.1} s"),
            format!("{:.2}", n / rs),
            format!("{k:.0} in {ls:.1} s"),
            format!("{:.1}", k / ls),
        ]);
    }
    Ok(format!(
        "\nThroughput of `coda train rl --stages t:8x8:200:2:12 --episodes 4 --rollouts 4` (two \
         iterations; the learner's seconds include batching, the critic's steps and its first \
         fit):\n\n{}",
        md_table(
            &[
                "where",
                "rollouts",
                "rollouts/s",
                "learner steps",
                "steps/s"
            ],
            &rows
        )
    ))
}

/// Per-round quality of several weights files side by side (`runs`, each with
/// `gap-<run>/gap.csv`, `large-<run>/gap.csv` and `ladder-<run>.csv` in `dir`): the mean gap of
/// `learned` to the exact program by round size (held-out rounds: to proven optima; large: to
/// the certified bound), then the size ladder's objective over the best heuristic's (mean over
/// seeds; above 1: better). The best heuristic's own gap is the last column.
pub(super) fn rounds_section(
    title: &str,
    dir: &Path,
    runs: &[&str],
    results: &Path,
) -> coda::Result<String> {
    if !runs
        .iter()
        .all(|r| dir.join(format!("ladder-{r}.csv")).is_file())
    {
        return Ok(String::new());
    }
    // (size, run) → gaps; the best heuristic's from the first run's files.
    let mut sizes: Vec<String> = Vec::new();
    let mut cells: std::collections::BTreeMap<(String, String), Vec<f64>> = Default::default();
    for (k, run) in runs.iter().enumerate() {
        for f in [format!("gap-{run}/gap.csv"), format!("large-{run}/gap.csv")] {
            let t = Table::read(&dir.join(f))?;
            for r in 0..t.len() {
                let p = t.str(r, "policy")?;
                let who = match p {
                    "learned" => run.to_string(),
                    "best-heuristic" if k == 0 => p.to_string(),
                    _ => continue,
                };
                let size = t.str(r, "size")?.to_string();
                if !sizes.contains(&size) {
                    sizes.push(size.clone());
                }
                cells.entry((size, who)).or_default().push(t.num(r, "gap")?);
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut head = vec!["rounds".to_string(), "n".into()];
    head.extend(runs.iter().map(|r| format!("{r}: mean gap")));
    head.push("best heuristic".into());
    let mut rows = Vec::new();
    for size in &sizes {
        let n = cells
            .get(&(size.clone(), "best-heuristic".into()))
            .map_or(0, Vec::len);
        let mut row = vec![size.clone(), n.to_string()];
        for who in runs
            .iter()
            .map(|r| r.to_string())
            .chain(["best-heuristic".into()])
        {
            row.push(
                cells
                    .get(&(size.clone(), who))
                    .map_or("–".into(), |v| format!("{:.2} %", 100.0 * mean(v))),
            );
        }
        rows.push(row);
    }
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut s = format!(
        "### {title}\n\nMean gap of the learned policy to the exact program by round size (`gen`: \
         generated, `trace`: cut from a replay; 2–8 servers to proven optima, 16 and 64 servers \
         to the configuration program's certified bound). {}\n\n{}",
        provenance(dir, results)?,
        md_table(&head, &rows)
    );
    let mut ladder: std::collections::BTreeMap<u64, Vec<Vec<f64>>> = Default::default();
    for (k, run) in runs.iter().enumerate() {
        let t = Table::read(&dir.join(format!("ladder-{run}.csv")))?;
        let mut by: std::collections::BTreeMap<(u64, String), (f64, f64)> = Default::default();
        for r in 0..t.len() {
            let key = (t.num(r, "servers")? as u64, t.str(r, "seed")?.to_string());
            let e = by.entry(key).or_insert((f64::NAN, f64::NAN));
            match t.str(r, "policy")? {
                "learned" => e.0 = t.num(r, "objective")?,
                "best-heuristic" => e.1 = t.num(r, "objective")?,
                _ => {}
            }
        }
        for ((servers, _), (l, b)) in by {
            let v = ladder
                .entry(servers)
                .or_insert_with(|| vec![Vec::new(); runs.len()]);
            v[k].push(l / b);
        }
    }
    let mut head = vec!["servers (jobs = 2 × servers)".to_string()];
    head.extend(runs.iter().map(|r| format!("{r} ÷ best heuristic")));
    let rows: Vec<Vec<String>> = ladder
        .iter()
        .map(|(servers, v)| {
            let mut row = vec![servers.to_string()];
            row.extend(v.iter().map(|x| format!("{:.3}", mean(x))));
            row
        })
        .collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let _ = write!(
        s,
        "\nThe size ladder (`coda bench-decide`, one generated round per seed and size, 30 % of \
         the jobs running): the learned policy's objective over the best heuristic's, mean over \
         seeds.\n\n{}",
        md_table(&head, &rows)
    );
    Ok(s)
}

/// Labels of large rounds (`labels.jsonl` in `dir`, `coda label` with the configuration
/// program): per round size, how many, how fast (labels per CPU-hour: one HiGHS thread per
/// round) and how far from certified.
pub(super) fn labels_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let file = dir.join("labels.jsonl");
    if !file.is_file() {
        return Ok(String::new());
    }
    // (servers, jobs — 0 for trace rounds, whose job counts vary —, source) → (solve seconds,
    // gaps, proven, job counts)
    type Group = (Vec<f64>, Vec<f64>, usize, Vec<usize>);
    let mut by: std::collections::BTreeMap<(usize, usize, String), Group> = Default::default();
    for l in coda::learn::read_labels(&file)? {
        let (servers, jobs) = (l.snapshot.cluster.servers.len(), l.snapshot.jobs.len());
        let source = if l.id.starts_with("gen-") {
            "generated"
        } else {
            "trace"
        };
        let key = if source == "trace" { 0 } else { jobs };
        let e = by.entry((servers, key, source.to_string())).or_default();
        e.3.push(jobs);
        e.0.push(l.solve_s);
        e.1.push(l.gap);
        e.2 += usize::from(l.proven);
    }
    let mut rows = Vec::new();
    for ((servers, _, source), (solve, gaps, proven, jobs)) in &by {
        let (lo, hi) = (
            jobs.iter().min().copied().unwrap_or(0),
            jobs.iter().max().copied().unwrap_or(0),
        );
        let jobs = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        };
        let mean = solve.iter().sum::<f64>() / solve.len() as f64;
        let mut g: Vec<f64> = gaps.iter().copied().filter(|x| x.is_finite()).collect();
        g.sort_by(f64::total_cmp);
        rows.push(vec![
            format!("{servers} × {jobs} ({source})"),
            solve.len().to_string(),
            proven.to_string(),
            format!("{mean:.1}"),
            format!("{:.0}", 3600.0 / mean),
            g.get(g.len() / 2)
                .map_or("–".into(), |x| format!("{:.1} %", 100.0 * x)),
            g.last()
                .map_or("–".into(), |x| format!("{:.1} %", 100.0 * x)),
        ]);
    }
    Ok(format!(
        "### labels_large\n\nExpert labels of rounds of 16 to 32 servers (`coda label`, the \
         configuration program by size, 60 s per round, one HiGHS thread per round): labels per \
         CPU-hour and the certified gap of each label to the bound its solve proved. {}\n\n{}",
        provenance(dir, results)?,
        md_table(
            &[
                "servers × jobs",
                "labels",
                "proven",
                "solve s, mean",
                "labels / CPU-hour",
                "certified gap, median",
                "worst",
            ],
            &rows
        )
    ))
}
