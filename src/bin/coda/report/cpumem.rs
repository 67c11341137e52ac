//! The fungible CPU/memory section: `benches/results/cpu_mem/` (`scripts/bench_cpu_mem.sh`).

use std::fmt::Write as _;
use std::path::Path;

use coda::policies::PolicyKind;

use super::table::{Table, hours, md_table, pct, provenance};

const TRACES: [(&str, &str); 2] = [
    ("Philly window", "philly"),
    ("ITP cluster 06", "itp-cluster06"),
];
const SERVERS: [(&str, &str); 2] = [
    ("3 cores per GPU", "cpu3"),
    ("the trace's own servers", "own"),
];

/// `policy → (avg JCT s, cores held, cores stranded)` of one comparison.
fn runs(csv: &Path) -> coda::Result<Vec<(String, f64, f64, f64)>> {
    let t = Table::read(csv)?;
    (0..t.len())
        .map(|r| {
            Ok((
                t.str(r, "policy")?.to_string(),
                t.num(r, "avg_jct_s")?,
                t.num(r, "cores_held")?,
                t.num(r, "cores_stranded")?,
            ))
        })
        .collect()
}

fn jct(rows: &[(String, f64, f64, f64)], policy: &str) -> Option<f64> {
    rows.iter().find(|r| r.0 == policy).map(|r| r.1)
}

/// The best baseline's average JCT among `rows` (name, seconds).
fn best_baseline(rows: &[(String, f64, f64, f64)]) -> Option<(String, f64)> {
    rows.iter()
        .filter(|r| PolicyKind::baselines().iter().any(|k| k.name() == r.0))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|r| (r.0.clone(), r.1))
}

/// Fixed vs fungible per trace and servers, the headline ratios, and the sensitivity to
/// `cpu_mem_transfer`.
pub(super) fn cpu_mem_section(results: &Path) -> coda::Result<String> {
    let dir = results.join("cpu_mem");
    if !dir.is_dir() {
        return Ok("Not run yet (`bash scripts/bench_cpu_mem.sh`).\n".into());
    }
    let mut s = format!(
        "`--cpu-mem fixed` gives every task its demand under every policy; `fungible` lets \
         `synergy-tune`, `ilp` and the `learned` policies hand out what their placements leave \
         free (the other baselines keep the demand either way). Average JCT in hours; cores \
         held and stranded as time-averaged shares of the cluster's cores. {}\n",
        provenance(&dir, results)?
    );
    let mut head = vec![Vec::new()];
    for (tname, t) in TRACES {
        for (sname, srv) in SERVERS {
            let fixed = runs(&dir.join(format!("{t}-{srv}-fixed/comparison.csv")))?;
            let fung = runs(&dir.join(format!("{t}-{srv}-fungible/comparison.csv")))?;
            let rows: Vec<Vec<String>> = fixed
                .iter()
                .map(|f| {
                    let g = fung.iter().find(|g| g.0 == f.0);
                    vec![
                        f.0.clone(),
                        hours(f.1),
                        g.map_or("–".into(), |g| hours(g.1)),
                        g.map_or("–".into(), |g| format!("{:.3}", g.1 / f.1)),
                        format!("{} → {}", pct(f.2), g.map_or("–".into(), |g| pct(g.2))),
                        format!("{} → {}", pct(f.3), g.map_or("–".into(), |g| pct(g.3))),
                    ]
                })
                .collect();
            let _ = write!(
                s,
                "\n### {tname}, {sname}\n\n{}",
                md_table(
                    &[
                        "policy",
                        "fixed",
                        "fungible",
                        "fungible ÷ fixed",
                        "cores held",
                        "cores stranded",
                    ],
                    &rows
                )
            );
            if let Some((b, bj)) = best_baseline(&fixed) {
                let ratio =
                    |p: &str| jct(&fung, p).map_or("–".into(), |x| format!("{:.3}", x / bj));
                head.push(vec![
                    format!("{tname}, {sname}"),
                    format!("{b} ({})", hours(bj)),
                    ratio("learned"),
                    ratio("learned-rl"),
                    jct(&fixed, "learned").map_or("–".into(), |x| format!("{:.3}", x / bj)),
                    ratio("synergy-tune"),
                ]);
            }
        }
    }
    head.remove(0);
    let _ = write!(
        s,
        "\n### Against the best baseline with fixed demands\n\nAverage JCT ÷ the best baseline's \
         with every task at its demand.\n\n{}",
        md_table(
            &[
                "replay",
                "best baseline, fixed (h)",
                "learned, fungible",
                "learned-rl, fungible",
                "learned, fixed",
                "synergy-tune, fungible",
            ],
            &head
        )
    );
    s.push_str(&seeds_table(&dir, results)?);
    // Sensitivity to the share of Synergy's speed-ups that carries over.
    let mut sens = Vec::new();
    for (tname, t) in TRACES {
        for (sname, srv) in SERVERS {
            let fixed = runs(&dir.join(format!("{t}-{srv}-fixed/comparison.csv")))?;
            let Some((_, bj)) = best_baseline(&fixed) else {
                continue;
            };
            for (label, sub) in [
                ("1 (shipped)", format!("{t}-{srv}-fungible")),
                ("0.5", format!("{t}-{srv}-fungible-transfer0.5")),
                ("0", format!("{t}-{srv}-fungible-transfer0")),
            ] {
                let f = dir.join(&sub).join("comparison.csv");
                if !f.is_file() {
                    continue;
                }
                let r = runs(&f)?;
                let cell = |p: &str| {
                    jct(&r, p).map_or("–".into(), |x| format!("{} ({:.3})", hours(x), x / bj))
                };
                sens.push(vec![
                    format!("{tname}, {sname}"),
                    label.to_string(),
                    cell("pollux"),
                    cell("synergy-tune"),
                    cell("learned"),
                    cell("learned-rl"),
                ]);
            }
        }
    }
    let _ = write!(
        s,
        "\n### Sensitivity to `cpu_mem_transfer` (fungible)\n\nAverage JCT in hours (÷ the best \
         baseline with fixed demands on the same servers, which no transfer changes; 0 is the \
         fixed replay of the same policies).\n\n{}",
        md_table(
            &[
                "replay",
                "cpu_mem_transfer",
                "pollux",
                "synergy-tune",
                "learned",
                "learned-rl",
            ],
            &sens
        )
    );
    Ok(s)
}

/// Fungible ÷ fixed average JCT of `synergy-tune` and `learned` for seeds 0 (the tables above)
/// and those of `seeds/` (`scripts/bench_cpu_mem_seeds.sh`), when run.
fn seeds_table(dir: &Path, results: &Path) -> coda::Result<String> {
    let seeds_dir = dir.join("seeds");
    if !seeds_dir.is_dir() {
        return Ok(String::new());
    }
    let seeds = [0u32, 1, 2];
    let mut rows = Vec::new();
    for (tname, t) in TRACES {
        for (sname, srv) in SERVERS {
            for policy in ["synergy-tune", "learned"] {
                let mut row = vec![format!("{tname}, {sname}"), policy.to_string()];
                let mut got = Vec::new();
                for seed in seeds {
                    let path = |mode: &str| {
                        if seed == 0 {
                            dir.join(format!("{t}-{srv}-{mode}/comparison.csv"))
                        } else {
                            seeds_dir.join(format!("{t}-{srv}-{mode}-s{seed}/comparison.csv"))
                        }
                    };
                    let (f, g) = (path("fixed"), path("fungible"));
                    let cell = if f.is_file() && g.is_file() {
                        match (jct(&runs(&f)?, policy), jct(&runs(&g)?, policy)) {
                            (Some(a), Some(b)) => {
                                got.push(b / a);
                                format!("{:.3}", b / a)
                            }
                            _ => "–".into(),
                        }
                    } else {
                        "–".into()
                    };
                    row.push(cell);
                }
                let mean = if got.is_empty() {
                    "–".into()
                } else {
                    format!("{:.3}", got.iter().sum::<f64>() / got.len() as f64)
                };
                row.push(mean);
                rows.push(row);
            }
        }
    }
    Ok(format!(
        "\n### Across seeds\n\nFungible ÷ fixed average JCT, per seed of the trace's model \
         assignment and the policies' choices (seed 0: the tables above). {}\n\n{}",
        provenance(&seeds_dir, results)?,
        md_table(
            &["replay", "policy", "seed 0", "seed 1", "seed 2", "mean"],
            &rows
        )
    ))
}
