//! `coda gap`: the learned policy's optimality gap on labelled rounds it never trained on, next
//! to every heuristic's, by round size, with decision times; and what each level contributes
//! (level 1 with the packer's placement; the expert's allocation with level 2's placement).

use coda::model::JobPos;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use coda::learn::{RoundLabel, read_labels};
use coda::objective::RoundPricing;
use coda::policies::learned::{Allocation, LearnedScheduler, Placer, PolicyNet};
use coda::policies::{self, Backfill, BestHeuristic, PolicyOptions};
use coda::{Objective, PerfModel, Schedule, Scheduler};
use rayon::prelude::*;

use crate::perf_model;

/// Arguments of `coda gap`.
#[derive(clap::Args)]
pub struct Args {
    /// Held-out label files (JSON lines from `coda label`), comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub labels: Vec<PathBuf>,
    /// Weights of the learned policy (default: the shipped ones).
    #[arg(long)]
    pub policy_weights: Option<PathBuf>,
    /// Also score rounds the expert did not prove optimal (their gap is then to the bound).
    #[arg(long)]
    pub include_unproven: bool,
    /// Output folder (`gap.csv` per round and policy, `gap.md` by size).
    #[arg(long, default_value = "gap")]
    pub out: PathBuf,
}

/// One policy on one round.
#[derive(Debug, Clone, serde::Serialize)]
struct Row {
    round: String,
    size: String,
    policy: String,
    objective: f64,
    reference: f64,
    proven: bool,
    gap: f64,
    /// The objective's parts: isolated progress, and the co-location, PCIe, NIC and restart
    /// losses (where a policy loses against the expert).
    isolated: f64,
    coloc_loss: f64,
    pcie_loss: f64,
    nic_loss: f64,
    restart: f64,
    /// Jobs the schedule runs.
    running: usize,
    valid: bool,
    decision_s: f64,
    expert_solve_s: f64,
}

/// What the summary of one policy on one round reads (a `gap.csv` row, in part).
pub struct Point {
    /// Round group (`gen 2x4`, `trace 8x3`...).
    pub size: String,
    /// Policy.
    pub policy: String,
    /// Relative gap to the expert.
    pub gap: f64,
    /// Whether the schedule validated (the gap counts only then).
    pub valid: bool,
    /// Seconds the policy took.
    pub decision_s: f64,
    /// Seconds the expert's solve took.
    pub expert_solve_s: f64,
}

/// A policy's gap over a group of rounds.
pub struct Summary {
    /// Rounds.
    pub n: usize,
    /// Mean, nearest-rank 95th percentile and worst gap over the valid schedules.
    pub mean: f64,
    /// See `mean`.
    pub p95: f64,
    /// See `mean`.
    pub worst: f64,
    /// Share of valid schedules.
    pub valid_share: f64,
    /// Mean decision time, milliseconds.
    pub decision_ms: f64,
    /// Mean expert solve time, seconds.
    pub expert_solve_s: f64,
}

/// The gap of every policy by round group and over all rounds (group `all`): the one rule
/// `gap.md` and `coda report` both print.
pub fn summarise(points: &[Point]) -> BTreeMap<(String, String), Summary> {
    let mut by: BTreeMap<(String, String), Vec<&Point>> = BTreeMap::new();
    for p in points {
        by.entry((p.size.clone(), p.policy.clone()))
            .or_default()
            .push(p);
        by.entry(("all".into(), p.policy.clone()))
            .or_default()
            .push(p);
    }
    by.into_iter()
        .map(|(k, ps)| {
            let gaps: Vec<f64> = ps.iter().filter(|p| p.valid).map(|p| p.gap).collect();
            let n = ps.len();
            let summary = Summary {
                n,
                mean: gaps.iter().sum::<f64>() / gaps.len().max(1) as f64,
                p95: quantile(&gaps, 0.95),
                worst: gaps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                valid_share: gaps.len() as f64 / n as f64,
                decision_ms: 1e3 * ps.iter().map(|p| p.decision_s).sum::<f64>() / n as f64,
                expert_solve_s: ps.iter().map(|p| p.expert_solve_s).sum::<f64>() / n as f64,
            };
            (k, summary)
        })
        .collect()
}

/// Nearest-rank quantile.
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() - 1) as f64 * q).round() as usize]
}

const VARIANTS: [&str; 5] = [
    "learned",
    "learned-greedy",
    "learned+backfill",
    "learned-greedy-l1+packer",
    "expert-l1+learned-l2",
];

fn size_of(l: &RoundLabel) -> String {
    let kind = if l.id.starts_with("gen-") {
        "gen"
    } else {
        "trace"
    };
    format!(
        "{kind} {}x{}",
        l.snapshot.cluster.servers.len(),
        l.snapshot.jobs.len()
    )
}

/// Level 1 as the expert decided: its option for every job it ran, kept jobs first, then by
/// the objective's priority.
fn expert_allocation(pricing: &RoundPricing, l: &RoundLabel) -> Allocation {
    let n = l.snapshot.jobs.len();
    let mut choices = vec![Vec::new(); n];
    let mut kept = vec![false; n];
    for jl in &l.jobs {
        if let (Some(j), Some(k)) = (l.snapshot.job_index(jl.job), jl.option) {
            choices[j] = vec![k];
            kept[j] = jl.kept;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        kept[b]
            .cmp(&kept[a])
            .then(
                pricing
                    .alone_value(JobPos(b))
                    .total_cmp(&pricing.alone_value(JobPos(a))),
            )
            .then(a.cmp(&b))
    });
    Allocation { choices, order }
}

fn rows_of(
    l: &RoundLabel,
    perf: &dyn PerfModel,
    objective: Objective,
    net: &PolicyNet,
    include_unproven: bool,
) -> coda::Result<Vec<Row>> {
    let Some(reference) = l.reference(include_unproven) else {
        return Ok(Vec::new());
    };
    let snap = &l.snapshot;
    let pricing = RoundPricing::new(perf, snap, objective);
    let learned = LearnedScheduler::new(perf, objective, net.clone());
    let greedy = learned.clone().with_samples(1, 0);
    let mut out: Vec<(String, Schedule, f64)> = Vec::new();
    let timed = |f: &mut dyn FnMut() -> coda::Result<Schedule>| -> coda::Result<(Schedule, f64)> {
        let t = Instant::now();
        let s = f()?;
        Ok((s, t.elapsed().as_secs_f64()))
    };
    let (s, t) = timed(&mut || Ok(learned.decide(snap)))?;
    out.push((VARIANTS[0].into(), s, t));
    let (s, t) = timed(&mut || Ok(greedy.decide(snap)))?;
    out.push((VARIANTS[1].into(), s, t));
    let mut bf = Backfill::new(Box::new(learned.clone()), perf, objective);
    let (s, t) = timed(&mut || bf.schedule(snap))?;
    out.push((VARIANTS[2].into(), s, t));
    let packer = greedy.clone().with_placer(Placer::Packer);
    let (s, t) = timed(&mut || Ok(packer.decide(snap)))?;
    out.push((VARIANTS[3].into(), s, t));
    let tiered = snap.jobs.iter().any(|j| !j.tiers.is_empty());
    if !tiered {
        // Level 2 places at the demand: with tiers, the expert's options (a tier each) are not
        // what it would place, so the split of what each level contributes is not scored there.
        let alloc = expert_allocation(&pricing, l);
        let (s, t) = timed(&mut || Ok(learned.place(&pricing, &alloc)))?;
        out.push((VARIANTS[4].into(), s, t));
    }
    if tiered {
        // Rounds with tiers: the policy at the demand with tiers handed out after placement
        // (what a policy without a tier head does); with every job's fastest tier (the rule the
        // head is measured against); with its tier head (as deployed). The greedy rule then
        // upgrades what is still free.
        use coda::policies::cpumem::{TierRule, assign_tiers};
        use coda::policies::learned::TierHead;
        let mut variants = vec![
            ("learned@demand+tiers", None),
            ("learned-fastest-tier+tiers", Some(TierHead::fastest())),
        ];
        if let Some(h) = &net.tier {
            variants.push(("learned-tier-head+tiers", Some(h.clone())));
        }
        for (name, head) in variants {
            let mut n = net.clone();
            n.tier = head;
            let keep = n.tier.is_some();
            let p = LearnedScheduler::new(perf, objective, n);
            let (s, t) = timed(&mut || {
                let mut s = p.decide(snap);
                assign_tiers(perf, snap, &mut s, TierRule::Greedy, keep)?;
                Ok(s)
            })?;
            out.push((name.into(), s, t));
        }
    }
    let opts = PolicyOptions::default();
    for &name in policies::PolicyKind::baselines() {
        let mut p = name.build(perf, &opts)?;
        let (s, t) = timed(&mut || p.schedule(snap))?;
        out.push((name.to_string(), s, t));
    }
    let mut best = BestHeuristic::new(perf, objective);
    let (s, t) = timed(&mut || best.schedule(snap))?;
    out.push(("best-heuristic".into(), s, t));
    // The expert itself: its gap is 0 on proven rounds, its time the solver's.
    out.push(("expert".into(), l.schedule.clone(), l.solve_s));
    let size = size_of(l);
    out.into_iter()
        .map(|(policy, s, t)| {
            let scored = l.score(&pricing, reference, &s)?;
            let part = |f: &dyn Fn(&coda::objective::JobScore) -> f64| {
                scored
                    .score
                    .as_ref()
                    .map_or(f64::NAN, |sc| sc.jobs.iter().map(f).sum())
            };
            Ok(Row {
                round: l.id.clone(),
                size: size.clone(),
                policy,
                objective: scored.objective,
                reference,
                proven: l.proven,
                gap: scored.gap,
                isolated: part(&|j| j.isolated),
                coloc_loss: part(&|j| j.coloc_loss),
                pcie_loss: part(&|j| j.pcie_loss),
                nic_loss: part(&|j| j.nic_loss),
                restart: part(&|j| j.restart_penalty),
                running: s.assignments.len(),
                valid: scored.valid,
                decision_s: t,
                expert_solve_s: l.solve_s,
            })
        })
        .collect()
}

/// Runs the command.
pub fn run(args: Args, params: &crate::PerfSource) -> coda::Result<ExitCode> {
    let perf = perf_model(params)?;
    let objective = Objective::default();
    let net = match &args.policy_weights {
        Some(p) => PolicyNet::load(p)?,
        None => LearnedScheduler::shipped(&perf, objective)?.net().clone(),
    };
    std::fs::create_dir_all(&args.out).map_err(|e| coda::Error::io(&args.out, e))?;
    let mut labels = Vec::new();
    for f in &args.labels {
        labels.extend(read_labels(f)?);
    }
    // Decision times are measured one round at a time on one thread each; rounds in parallel.
    let rows: Vec<Row> = labels
        .par_iter()
        .map(|l| rows_of(l, &perf, objective, &net, args.include_unproven))
        .collect::<coda::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    coda::io::write_csv(&args.out.join("gap.csv"), &rows)?;

    let points: Vec<Point> = rows
        .iter()
        .map(|r| Point {
            size: r.size.clone(),
            policy: r.policy.clone(),
            gap: r.gap,
            valid: r.valid,
            decision_s: r.decision_s,
            expert_solve_s: r.expert_solve_s,
        })
        .collect();
    let mut md = String::from(
        "| rounds | policy | n | mean gap | p95 gap | worst gap | valid | mean decision (ms) | expert solve (s, mean) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for ((size, policy), g) in summarise(&points) {
        md.push_str(&format!(
            "| {size} | {policy} | {} | {:.2} % | {:.2} % | {:.2} % | {:.0} % | {:.2} | {:.2} |\n",
            g.n,
            100.0 * g.mean,
            100.0 * g.p95,
            100.0 * g.worst,
            100.0 * g.valid_share,
            g.decision_ms,
            g.expert_solve_s,
        ));
    }
    coda::io::write_atomic(&args.out.join("gap.md"), md.as_bytes())?;
    out!("{}", md.trim_end());
    Ok(ExitCode::SUCCESS)
}
