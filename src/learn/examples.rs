//! Labels turned into what the networks are trained on, through the very feature functions the
//! policy decides with ([`crate::policies::learned::features`]).
//!
//! Level 1: per round, every job's rows and the index of the expert's choice (its option, or
//! the wait row). Level 2, teacher-forced: the expert's schedule is replayed job by job — jobs
//! the expert kept first, then the others largest first, as the policy places them — and every
//! server it put workers on (most workers first) is one step whose candidates are the servers
//! the policy would have been offered in that state.

use crate::error::Result;
use crate::learn::labels::RoundLabel;
use crate::model::Assignment;
use crate::model::JobPos;
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;
use crate::policies::Packer;
use crate::policies::learned::features::{self, Occupants, PlaceTask};
use crate::policies::learned::{Candidates, keep_mode, plan_of};

/// Level-1 example: one round.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceExample {
    /// Per job, its features.
    pub jobs: Vec<Vec<f32>>,
    /// Per job, its candidate rows (options, then wait).
    pub candidates: Vec<Vec<Vec<f32>>>,
    /// Per job, the row the expert chose (`None`: a choice outside the option list, not
    /// trained on).
    pub targets: Vec<Option<usize>>,
}

/// Level-2 example: one placement step.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaceExample {
    /// One row per candidate server.
    pub rows: Vec<Vec<f32>>,
    /// The expert's server among them.
    pub target: usize,
}

/// Both levels' examples of one labelled round.
pub fn examples(
    perf: &dyn PerfModel,
    objective: Objective,
    label: &RoundLabel,
) -> Result<(ChoiceExample, Vec<PlaceExample>)> {
    let snap = &label.snapshot;
    let pricing = RoundPricing::new(perf, snap, objective);
    let rows = features::level1(&pricing);
    let mut targets = vec![None; snap.jobs.len()];
    let mut expert: Vec<Option<&Assignment>> = vec![None; snap.jobs.len()];
    for a in &label.schedule.assignments {
        if let Some(j) = snap.job_index(a.job) {
            expert[j] = Some(a);
        }
    }
    for jl in &label.jobs {
        let Some(j) = snap.job_index(jl.job) else {
            continue;
        };
        let wait = pricing.options(JobPos(j)).len();
        targets[j] = match (jl.option, expert[j]) {
            (Some(k), _) => Some(k),
            (None, None) => Some(wait),
            (None, Some(_)) => None,
        };
    }
    let choice = ChoiceExample {
        jobs: rows.jobs,
        candidates: rows.candidates,
        targets,
    };

    let mut packer = Packer::new(snap, perf);
    let mut occ = Occupants::new(snap.cluster.servers.len(), snap.jobs.len());
    let kept: Vec<bool> = snap
        .jobs
        .iter()
        .map(|job| label.jobs.iter().any(|l| l.job == job.id && l.kept))
        .collect();
    let mut order: Vec<usize> = (0..snap.jobs.len())
        .filter(|&j| expert[j].is_some())
        .collect();
    // As the policy places: kept jobs first, then the largest first.
    let gpus = |j: usize| expert[j].map_or(0, |a| a.workers.iter().map(|w| w.gpus.len()).sum());
    order.sort_by(|&a, &b| {
        kept[b]
            .cmp(&kept[a])
            .then(gpus(b).cmp(&gpus(a)))
            .then(
                pricing
                    .alone_value(JobPos(b))
                    .total_cmp(&pricing.alone_value(JobPos(a))),
            )
            .then(a.cmp(&b))
    });
    let mut index = Candidates::new(snap, &packer);
    let mut steps = Vec::new();
    for j in order {
        let a = expert[j].expect("filtered");
        let job = &snap.jobs[j];
        let facts = pricing.option_of(JobPos(j), a);
        let coloc_coef = pricing
            .option_index(JobPos(j), &facts)
            .map_or(0.0, |k| pricing.options(JobPos(j))[k].terms.coloc_coef);
        if !kept[j] {
            let mut plan = plan_of(a);
            plan.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            let task = PlaceTask {
                job: j,
                workers: a.workers.len() as u32,
                mode: facts.mode,
                coloc_coef,
            };
            let mut done: Vec<(usize, u32)> = Vec::new();
            let mut rest = task.workers;
            for &(s, k) in &plan {
                let cands = keep_mode(
                    &pricing,
                    &packer,
                    task,
                    done.len(),
                    index.offer(&packer, job, a.workers[0].server.0, rest, &done),
                );
                if let Some(target) = cands.iter().position(|&c| c == s) {
                    let rows = cands
                        .iter()
                        .map(|&c| {
                            let mut row = Vec::with_capacity(features::PLACE_FEATURES.len());
                            let view = features::PlaceView {
                                pricing: &pricing,
                                packer: &packer,
                                occupants: &occ,
                            };
                            let offer = features::Offer {
                                server: c,
                                rest,
                                step: done.len(),
                                candidates: cands.len(),
                            };
                            features::place_row(view, task, offer, &mut row);
                            row
                        })
                        .collect();
                    steps.push(PlaceExample { rows, target });
                }
                done.push((s, k));
                rest -= k;
            }
        }
        // The expert's exact GPUs, so the next job sees the state the expert built.
        if packer.keep(job, a) {
            let plan = plan_of(a);
            occ.add(j, &plan, coloc_coef);
            index.update(&packer, plan.iter().map(|p| p.0));
        }
    }
    Ok((choice, steps))
}

/// Tier example: one job the expert ran on a round whose jobs offer tiers.
#[derive(Debug, Clone, PartialEq)]
pub struct TierExample {
    /// One row per tier of the job (the tier head's features, `policies/learned/tiers.rs`), tier 0
    /// first, for the option the expert ran it with.
    pub rows: Vec<Vec<f32>>,
    /// The expert's tier.
    pub target: usize,
}

/// The tier head's examples of one labelled round (none if its jobs offer no tiers): the
/// context is the expert's own allocation at the demand (teacher forcing), as level 1's first
/// choices are at decision time.
pub fn tier_examples(
    perf: &dyn PerfModel,
    objective: Objective,
    label: &RoundLabel,
) -> Vec<TierExample> {
    use crate::policies::learned::tiers::{TierContext, tier_rows};
    let snap = &label.snapshot;
    if snap.jobs.iter().all(|j| j.tiers.is_empty()) {
        return Vec::new();
    }
    let demand = snap.at_demand();
    let pd = RoundPricing::new(perf, &demand, objective);
    let mut chosen = vec![None; snap.jobs.len()];
    let mut tier = vec![0u8; snap.jobs.len()];
    for a in &label.schedule.assignments {
        let Some(j) = snap.job_index(a.job) else {
            continue;
        };
        let mut at_demand = a.clone();
        at_demand.tier = 0;
        chosen[j] = pd.option_index(JobPos(j), &pd.option_of(JobPos(j), &at_demand));
        tier[j] = a.tier;
    }
    let ctx = TierContext::new(perf, snap, &pd, &chosen);
    (0..snap.jobs.len())
        .filter(|&j| !snap.jobs[j].tiers.is_empty())
        .filter_map(|j| {
            let k = chosen[j]?;
            Some(TierExample {
                rows: tier_rows(perf, snap, &ctx, j, &pd.options(JobPos(j))[k]),
                target: usize::from(tier[j]),
            })
        })
        .collect()
}
