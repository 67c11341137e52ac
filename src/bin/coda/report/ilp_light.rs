//! The `ilp` policy on light load (`benches/results/ilp-light/`, `scripts/bench_ilp_light.sh`):
//! per slice, its average JCT next to FIFO, `learned` and the best baseline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use coda::Error;

use super::table::{Table, hours, md_table, provenance};

/// One replay's average JCT (s), restarts and share of JCT spent queueing.
type Run = (f64, f64, f64);

/// Policies that are not baselines.
const OURS: [&str; 2] = ["ilp", "learned"];

/// (trace, skip) → policy → its run.
type Slices = BTreeMap<(String, u64), BTreeMap<String, Run>>;

/// The runs of `dir/runs.csv`, by slice and policy.
fn read_slices(dir: &Path) -> coda::Result<Slices> {
    let t = Table::read(&dir.join("runs.csv"))?;
    let mut slices = Slices::new();
    for r in 0..t.len() {
        let key = (t.str(r, "trace")?.to_string(), t.num(r, "skip")? as u64);
        let jct = t.num(r, "avg_jct_s")?;
        slices.entry(key).or_default().insert(
            t.str(r, "policy")?.to_string(),
            (
                jct,
                t.num(r, "restarts")?,
                t.num(r, "avg_queueing_s")? / jct,
            ),
        );
    }
    Ok(slices)
}

/// A slice's best baseline: its name and run.
fn best_baseline(p: &BTreeMap<String, Run>) -> Option<(&String, &Run)> {
    p.iter()
        .filter(|(name, _)| !OURS.contains(&name.as_str()))
        .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
}

/// The sections of `light` (`benches/results/ilp-light/`): the shipped run, the restart-loss
/// estimate off and high, the variants of one setting, and the work-limited replays.
pub(super) fn ilp_light_sections(light: &Path, results: &Path) -> coda::Result<String> {
    let mut s = ilp_light_section(light, results)?;
    s.push('\n');
    // The same slices with the restart-loss estimate (`restart_s`) off and high.
    for r in ["0", "180"] {
        let dir = light.join(format!("restart-{r}"));
        if dir.join("runs.csv").is_file() {
            s.push_str(&format!("\n### With `--restart-s {r}` (shipped: 60)\n\n"));
            s.push_str(&ilp_light_section(&dir, results)?);
            s.push('\n');
        }
    }
    // Every policy with the co-location coupling estimate off and high (`COUPLING=X`): it
    // moves the simulator and every policy's pricing alike.
    for c in ["0", "0.5"] {
        let dir = light.join(format!("coupling-{c}"));
        if dir.join("runs.csv").is_file() {
            s.push_str(&format!(
                "\n### With the co-location coupling at {c} (estimate; shipped: 0.25)\n\n"
            ));
            s.push_str(&ilp_light_section(&dir, results)?);
            s.push('\n');
        }
    }
    // `ilp` alone with another in-service credit (`KAPPA=K scripts/bench_ilp_light.sh`) or
    // co-location cost (`COLOCATION=C`).
    let mut variants: Vec<(String, PathBuf)> = std::fs::read_dir(light)
        .map_err(|e| Error::io(light, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            (name.starts_with("kappa-") || name.starts_with("colocation-")).then_some(())?;
            e.path()
                .join("runs.csv")
                .is_file()
                .then(|| (name, e.path()))
        })
        .collect();
    variants.sort();
    for (name, dir) in variants {
        let v = match name.strip_prefix("kappa-") {
            Some(k) => Variant {
                flag: "--ilp-in-service-credit",
                meaning: "the in-service credit κ, measured at each job's full pace",
                shipped: format!("κ = {}", coda::policies::DEFAULT_ILP_IN_SERVICE_CREDIT),
                arg: k.to_string(),
                value: format!("κ = {k}"),
            },
            None => Variant {
                flag: "--ilp-colocation",
                meaning: "what a co-runner costs in the program's objective",
                shipped: kebab(coda::policies::DEFAULT_ILP_COLOCATION),
                arg: name.trim_start_matches("colocation-").to_string(),
                value: name.trim_start_matches("colocation-").to_string(),
            },
        };
        s.push_str(&format!(
            "\n### With `{} {}` (shipped: {})\n\n",
            v.flag, v.arg, v.shipped
        ));
        s.push_str(&ilp_variant_section(light, &dir, &v, results)?);
        s.push('\n');
    }
    let work = light.join("work-limited/sweep");
    if work.join("work.csv").is_file() {
        s.push_str("\n### Work-limited: how much of the replay is the solver's\n\n");
        s.push_str(&work_section(light, &work, results)?);
        s.push('\n');
    }
    Ok(s)
}

/// `work/work.csv` (`scripts/bench_ilp_work_sweep.sh`): the work-limited `ilp` replays of a
/// few slices under each work limit, beside the best baseline of the shipped run.
fn work_section(light: &Path, work: &Path, results: &Path) -> coda::Result<String> {
    let base = read_slices(light)?;
    let t = Table::read(&work.join("work.csv"))?;
    let mut rows = Vec::new();
    for r in 0..t.len() {
        let key = (t.str(r, "trace")?.to_string(), t.num(r, "skip")? as u64);
        let Some((best_name, best)) = base.get(&key).and_then(best_baseline) else {
            continue;
        };
        let (jct, solves) = (t.num(r, "avg_jct_s")?, t.num(r, "solves")?);
        rows.push(vec![
            format!("{} {}+150", key.0, key.1),
            // A fixed limit, or one scaled with the round (`--ilp-work-per-job`).
            match t.str(r, "work_per_job")? {
                "" => format!("{:.0}", t.num(r, "work_limit")?),
                n => format!("{n} per job"),
            },
            format!("{} ({best_name})", hours(best.0)),
            format!("{} ({:.0})", hours(jct), t.num(r, "restarts")?),
            format!("{:.3}", jct / best.0),
            format!("{:.0} of {solves:.0}", t.num(r, "returned_start")?),
        ]);
    }
    Ok(format!(
        "`ilp` replayed under a work limit (pricing-search nodes per round, or per job the \
         round's program decides; node limit 100, \
         one HiGHS thread, no binding time limit: the same replay on any machine) beside the \
         best baseline of the shipped run: average JCT in hours (restarts), and the solves that \
         returned their start, the best heuristic's schedule. {}\n\n{}",
        provenance(work, results)?,
        md_table(
            &[
                "slice",
                "work limit",
                "best baseline",
                "`ilp`",
                "`ilp` ÷ best",
                "solves that kept the start",
            ],
            &rows,
        )
    ))
}

/// The section from `runs.csv`.
pub(super) fn ilp_light_section(dir: &Path, results: &Path) -> coda::Result<String> {
    let slices = read_slices(dir)?;
    let mut rows = Vec::new();
    let (mut behind_fifo, mut behind_best) = (0, 0);
    for ((trace, skip), p) in &slices {
        let get = |name: &str| p.get(name).copied();
        let (Some(ilp), Some(fifo), Some((best_name, best))) =
            (get("ilp"), get("fifo"), best_baseline(p))
        else {
            continue;
        };
        behind_fifo += usize::from(ilp.0 > fifo.0);
        behind_best += usize::from(ilp.0 > best.0);
        rows.push(vec![
            format!("{trace} {skip}+150"),
            format!("{:.0} %", 100.0 * fifo.2),
            hours(fifo.0),
            format!("{} ({best_name})", hours(best.0)),
            get("learned").map_or("–".into(), |l| format!("{} ({:.0})", hours(l.0), l.1)),
            format!("{} ({:.0})", hours(ilp.0), ilp.1),
            format!("{:.3}", ilp.0 / best.0),
        ]);
    }
    Ok(format!(
        "150-job slices of the shipped traces on 4 × 8 GPUs under light load (FIFO's average \
         JCT under an hour, or its queueing under a third of it), every baseline beside \
         `learned` and `ilp --ilp-time-limit 2`: average JCT in hours \
         (restarts). `ilp` is behind FIFO on {behind_fifo} and behind the best baseline on \
         {behind_best} of {} slices. {}\n\n{}",
        rows.len(),
        provenance(dir, results)?,
        md_table(
            &[
                "slice",
                "FIFO's queueing share",
                "FIFO",
                "best baseline",
                "learned",
                "ilp",
                "ilp ÷ best baseline",
            ],
            &rows,
        )
    ))
}

/// One setting of the `ilp` policy that a variant directory changes: its flag, the shipped
/// value and the variant's.
pub(super) struct Variant<'a> {
    /// The flag, e.g. `--ilp-in-service-credit`.
    pub flag: &'a str,
    /// What it means, for the section's text.
    pub meaning: &'a str,
    /// The shipped value, as the text names it.
    pub shipped: String,
    /// The variant's value as the flag takes it.
    pub arg: String,
    /// The variant's value, as the text names it.
    pub value: String,
}

/// The `ilp` rows of `dir` (replayed with one setting changed, `v`) beside the shipped run's
/// `ilp` and best baseline of the same slices (`shipped/runs.csv`).
pub(super) fn ilp_variant_section(
    shipped: &Path,
    dir: &Path,
    v: &Variant<'_>,
    results: &Path,
) -> coda::Result<String> {
    let base = read_slices(shipped)?;
    let other = read_slices(dir)?;
    let mut rows = Vec::new();
    let (mut behind_best, mut better) = (0, 0);
    for (key, p) in &other {
        let (Some(ilp), Some(b)) = (p.get("ilp"), base.get(key)) else {
            continue;
        };
        let (Some(ilp0), Some((best_name, best))) = (b.get("ilp"), best_baseline(b)) else {
            continue;
        };
        behind_best += usize::from(ilp.0 > best.0);
        better += usize::from(ilp.0 < ilp0.0);
        rows.push(vec![
            format!("{} {}+150", key.0, key.1),
            format!("{} ({best_name})", hours(best.0)),
            format!("{} ({:.0})", hours(ilp0.0), ilp0.1),
            format!("{} ({:.0})", hours(ilp.0), ilp.1),
            format!("{:.3}", ilp0.0 / best.0),
            format!("{:.3}", ilp.0 / best.0),
        ]);
    }
    let (flag, shipped_v, value) = (v.flag, &v.shipped, &v.value);
    Ok(format!(
        "`ilp` with `{flag} {}` ({}) beside the shipped `{shipped_v}` and the best \
         baseline of the table above: average JCT in hours (restarts). With `{value}` `ilp` is \
         ahead of `{shipped_v}` on {better} and behind the best baseline on {behind_best} of {} \
         slices. {}\n\n{}",
        v.arg,
        v.meaning,
        rows.len(),
        provenance(dir, results)?,
        md_table(
            &[
                "slice",
                "best baseline",
                &format!("`ilp`, {shipped_v}"),
                &format!("`ilp`, {value}"),
                &format!("{shipped_v} ÷ best"),
                &format!("{value} ÷ best"),
            ],
            &rows,
        )
    ))
}

/// A value's name as its flag spells it (`full-server`): clap's own name for it.
fn kebab(c: coda::objective::Colocation) -> String {
    use clap::ValueEnum as _;
    c.to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}
