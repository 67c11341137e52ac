//! Labels from the lookahead expert on the states a policy visits (DAgger): the material of
//! distilling the lookahead into the learned policy. The exact program labels a round alone;
//! the lookahead needs the whole round (its plays run every job present) and the simulator's
//! settings, so its labels come from a replay, not from generated rounds.

use std::time::Instant;

use super::labels::{Expert, RoundLabel, labels_of};
use super::rounds::{TraceCut, visit_rounds};
use crate::error::{Error, Result};
use crate::lookahead::Lookahead;
use crate::model::ClusterSnapshot;
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;
use crate::policies::{LookaheadOptions, PolicyKind};
use crate::scheduler::Scheduler;
use crate::sim::SimConfig;
use crate::workload::Workload;

/// `workload` replayed under `cut.policy` (the student: `learned` visits its own states) with
/// `cut.options`; every `cut.every`-th round with at least two jobs present, up to `cut.count`,
/// is labelled with the decision of a lookahead with the settings `lookahead` on the whole
/// round (`cut.max_jobs` is not used: a play needs every job). The replay goes on under the
/// student's own decision. Ids are `{name}-{policy}-lookahead-t{round time}`; the labels say
/// [`Expert::Lookahead`], carry no solve status or bound, and are never `proven`.
pub fn lookahead_labels(
    name: &str,
    workload: &Workload,
    perf: &dyn PerfModel,
    objective: &Objective,
    cut: &TraceCut,
    lookahead: &LookaheadOptions,
) -> Result<Vec<RoundLabel>> {
    if cut.policy == PolicyKind::Ilp || cut.policy == PolicyKind::Lookahead || cut.every == 0 {
        return Err(Error::setting(
            "lookahead labels",
            "policy / every",
            format!("{} / {}", cut.policy, cut.every),
            "a policy built from its options alone, not `ilp`, and every >= 1",
        ));
    }
    let mut options = cut.options.clone();
    options.objective = *objective;
    options.lookahead = lookahead.clone();
    // The plays run with the replay's own settings (those `visit_rounds` simulates with).
    let sim = SimConfig {
        objective: *objective,
        ..SimConfig::default()
    };
    let mut expert = Lookahead::new(perf, &options, sim)?;
    let mut out = Vec::new();
    visit_rounds(workload, perf, objective, cut, &mut |snap| {
        out.push(label(name, cut.policy, snap, perf, objective, &mut expert)?);
        Ok(())
    })?;
    Ok(out)
}

/// The lookahead's decision on `snap`, decoded as a label.
fn label(
    name: &str,
    policy: PolicyKind,
    snap: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    expert: &mut Lookahead,
) -> Result<RoundLabel> {
    let t = Instant::now();
    let schedule = expert.schedule(snap)?;
    expert.take_events();
    let solve_s = t.elapsed().as_secs_f64();
    let pricing = RoundPricing::new(perf, snap, *objective);
    let value = pricing.score(&schedule)?.total;
    let jobs = labels_of(&pricing, &schedule)?;
    Ok(RoundLabel {
        id: format!("{name}-{policy}-lookahead-t{}", snap.time_s),
        snapshot: snap.clone(),
        schedule,
        status: None,
        objective: value,
        best_bound: f64::NAN,
        gap: f64::NAN,
        proven: false,
        solve_s,
        jobs,
        expert: Expert::Lookahead,
    })
}
