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
         `synergy-tune` hand out what its placements leave free, `ilp` and the `learned` \
         policies (their tier head) choose tiers with the placement and then hand out what is \
         left (the other baselines keep the demand either way). Average JCT in hours; cores \
         held and stranded as time-averaged shares of the cluster's cores. {}\n",
        provenance(&dir, results)?
    );
    let head = per_replay(&dir, &mut s)?;
    s.push_str(&ilp_slice(&dir, results)?);
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
    s.push_str(&tier_gap(results)?);
    s.push_str(&transfer_sensitivity(&dir)?);
    Ok(s)
}

/// Per trace and servers, fixed vs fungible (appended to `s`); returns the headline rows.
fn per_replay(dir: &Path, s: &mut String) -> coda::Result<Vec<Vec<String>>> {
    let mut head = Vec::new();
    for (tname, t) in TRACES {
        for (sname, srv) in SERVERS {
            let fixed = runs(&dir.join(format!("{t}-{srv}-fixed/comparison.csv")))?;
            let fung = runs(&dir.join(format!("{t}-{srv}-fungible/comparison.csv")))?;
            let _ = write!(
                s,
                "\n### {tname}, {sname}\n\n{}",
                fixed_vs_fungible(&fixed, &fung)
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
    Ok(head)
}

/// The exact program in the loop: a slice small enough for the `ilp` policy, fixed vs fungible
/// and at `cpu_mem_transfer` 0.5 and 0 (empty when not run).
fn ilp_slice(dir: &Path, results: &Path) -> coda::Result<String> {
    let slice = |run: &str| dir.join(format!("ilp/philly150-4x8-cpu3-{run}/comparison.csv"));
    let (f, g) = (slice("fixed"), slice("fungible"));
    if !(f.is_file() && g.is_file()) {
        return Ok(String::new());
    }
    let fixed = runs(&f)?;
    let mut s = format!(
        "\n### Philly, 150 jobs on 4 × 8 GPUs, 3 cores per GPU, with `ilp`\n\n`ilp` as in \
         the replays of `benches/results/sim/philly150-4x8-ilp` (10-job windows, 30 s and \
         100 nodes a round); with `--cpu-mem fungible` the program chooses every job's tier \
         with its placement. {}\n\n{}",
        provenance(&dir.join("ilp"), results)?,
        fixed_vs_fungible(&fixed, &runs(&g)?)
    );
    // The same fungible runs with `cpu_mem_transfer` at 0.5 and 0 (0: tiers change nothing).
    let mut rows = Vec::new();
    for (p, fj, ..) in &fixed {
        let mut row = vec![p.clone()];
        for run in ["fungible", "fungible-transfer0.5", "fungible-transfer0"] {
            let file = slice(run);
            let cell = if file.is_file() {
                jct(&runs(&file)?, p).map_or("–".into(), |x| format!("{:.3}", x / fj))
            } else {
                "–".into()
            };
            row.push(cell);
        }
        rows.push(row);
    }
    let _ = write!(
        s,
        "\nFungible ÷ fixed average JCT at `cpu_mem_transfer` 1 (shipped), 0.5 and 0.\n\n{}",
        md_table(&["policy", "1", "0.5", "0"], &rows)
    );
    Ok(s)
}

/// Level 1's tier head against the exact program on held-out rounds with tiers (empty when
/// not run).
fn tier_gap(results: &Path) -> coda::Result<String> {
    let tiers = results.join("gap/tiers/gap.csv");
    if !tiers.is_file() {
        return Ok(String::new());
    }
    let mut s = super::gap::gap_table(
        &tiers,
        results,
        "\n### The learned tier choice against the exact program",
        &[
            "learned-tier-head+tiers",
            "learned@demand+tiers",
            "learned",
            "best-heuristic",
        ],
    )?;
    s.push_str(
        "`learned-tier-head+tiers`: the learned policy choosing tiers with its tier head, \
         the greedy rule then upgrading what is still free (as deployed); \
         `learned@demand+tiers`: the same levels 1 and 2 placing at the demand, tiers handed \
         out after placement; `learned`: the tier head without the greedy rule; the \
         baselines hand out tiers by their rule (`synergy-tune`: TUNE; others: none).\n",
    );
    Ok(s)
}

/// Sensitivity to the share of Synergy's speed-ups that carries over.
fn transfer_sensitivity(dir: &Path) -> coda::Result<String> {
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
    Ok(format!(
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
    ))
}

/// Per policy: average JCT fixed and fungible, their ratio, and cores held and stranded.
fn fixed_vs_fungible(
    fixed: &[(String, f64, f64, f64)],
    fung: &[(String, f64, f64, f64)],
) -> String {
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
    md_table(
        &[
            "policy",
            "fixed",
            "fungible",
            "fungible ÷ fixed",
            "cores held",
            "cores stranded",
        ],
        &rows,
    )
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

/// One solve of `solve_programs.csv`: instance, program, status, objective, seconds.
type SolveRow = (String, String, String, f64, f64);

/// `formulations/results/programs_tiers/{without,with}/solve_programs.csv`: the two exact
/// programs on every shipped round without and with CPU/memory tiers (`--tiers`), run side by
/// side; per round the status and time each way, and what the tiers add to the optimum.
pub(super) fn tiered_programs_section(formulations: &Path) -> coda::Result<String> {
    let dir = formulations.join("programs_tiers");
    let (before, after) = (
        dir.join("without/solve_programs.csv"),
        dir.join("with/solve_programs.csv"),
    );
    if !after.is_file() {
        return Ok(String::new());
    }
    let (b, a) = (Table::read(&before)?, Table::read(&after)?);
    let rows = |t: &Table| -> coda::Result<Vec<SolveRow>> {
        (0..t.len())
            .map(|r| {
                Ok((
                    t.str(r, "instance")?.to_string(),
                    t.str(r, "program")?.to_string(),
                    t.str(r, "status")?.to_string(),
                    t.num(r, "objective")?,
                    t.num(r, "wall_s")?,
                ))
            })
            .collect()
    };
    let (rb, ra) = (rows(&b)?, rows(&a)?);
    let head = [
        "round",
        "program",
        "without tiers",
        "with tiers",
        "time ×",
        "objective ×",
    ];
    let mut table: Vec<Vec<String>> = Vec::new();
    // Per program: (proved before, of those proved with tiers, time ratios of those).
    let mut kept: std::collections::BTreeMap<&str, (usize, usize, Vec<f64>)> = Default::default();
    let shown = |st: &str, s: f64| {
        if st == "optimal" {
            format!("proven, {s:.2} s")
        } else {
            format!("{st}, {s:.0} s")
        }
    };
    for (inst, prog, st_a, obj_a, s_a) in &ra {
        let Some((_, _, st_b, obj_b, s_b)) = rb.iter().find(|r| &r.0 == inst && &r.1 == prog)
        else {
            continue;
        };
        if st_b == "optimal" {
            let e = kept.entry(prog.as_str()).or_default();
            e.0 += 1;
            if st_a == "optimal" {
                e.1 += 1;
                e.2.push(s_a / s_b.max(1e-9));
            }
        }
        table.push(vec![
            inst.clone(),
            prog.clone(),
            shown(st_b, *s_b),
            shown(st_a, *s_a),
            format!("{:.1}", s_a / s_b.max(1e-9)),
            format!("{:.3}", obj_a / obj_b),
        ]);
    }
    let mut s = format!(
        "### formulations/results/programs_tiers\n\nThe shipped rounds but the 64-server one, \
         without and with every job offering its model's CPU/memory tiers (`coda solve \
         --tiers`; the rounds' servers have 3 cores per GPU): `bash scripts/bench_programs.sh` \
         with `SKIP_64=1` and `TIERS=0` (`without/`) or `TIERS=1` (`with/`), the two run side \
         by side. Status and wall time each way, the time ratio, and the optimum (or \
         incumbent) with tiers over without. {}\n\n",
        provenance(&dir.join("with"), formulations)?
    );
    for (prog, (n, proved, ratios)) in &kept {
        let mut r = ratios.clone();
        r.sort_by(f64::total_cmp);
        let within = r.iter().filter(|&&x| x <= 2.0).count();
        let _ = writeln!(
            s,
            "- `{prog}`: proves {proved} of the {n} rounds it proved without tiers; time × \
             median {:.1}, largest {:.1}; {within} of them within 2× the time.",
            r.get(r.len() / 2).copied().unwrap_or(f64::NAN),
            r.last().copied().unwrap_or(f64::NAN),
        );
    }
    s.push('\n');
    s.push_str(&md_table(&head, &table));
    Ok(s)
}
