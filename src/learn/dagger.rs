//! Labels from the lookahead expert on the states a student visits (DAgger): the material of
//! distilling the lookahead into the learned policy's two networks. The exact program labels a
//! round alone; the lookahead needs the whole round (its plays run every job present) and the
//! simulator's settings, so its labels come from a replay, not from generated rounds.

use std::path::PathBuf;
use std::time::Instant;

use super::labels::{Expert, RoundLabel, labels_of};
use super::rounds::StudentReplay;
use crate::error::Result;
use crate::lookahead::Lookahead;
use crate::model::ClusterSnapshot;
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;
use crate::policies::PolicyKind;
use crate::replay::Replay;
use crate::scheduler::{RoundEvent, Scheduler};

/// How a student's replay is labelled by the lookahead ([`lookahead_labels`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LookaheadLabelling {
    /// Whose decisions drive the replay: `learned` with the replay's `policy_weights` visits
    /// that network's own states.
    pub student: PolicyKind,
    /// Weights of the learned policy inside the lookahead — its first candidate, its greedy
    /// candidate and the base its plays follow. `None`: the student's own (the replay's
    /// `policy_weights`), so the expert improves on the student it labels (approximate policy
    /// iteration); a file keeps one expert however the student changes (DAgger proper).
    pub expert_weights: Option<PathBuf>,
    /// Label every this-many-th round with at least two jobs present (>= 1).
    pub every: usize,
    /// At most this many rounds (those already labelled count).
    pub count: usize,
}

/// The rounds of `replay` under `how.student`, every `how.every`-th round with at least two
/// jobs present up to `how.count` of them, each labelled with the decision of a lookahead with
/// the replay's settings (its `--lookahead-*` flags, candidates included) on the whole round
/// and handed to `visit` as it is done; the replay goes on under the student's own decision.
/// Rounds whose ids are in `done` count without being labelled (a run resumed). Ids are
/// `{trace}-{skip}+{take}-s{seed}-{student}-t{round time}`; the labels say
/// [`Expert::Lookahead`], name the candidate kept where the proposals differed
/// ([`RoundLabel::choice`]), carry no solve status or bound, and are never `proven`.
pub fn lookahead_labels(
    replay: &Replay,
    perf: &dyn PerfModel,
    how: &LookaheadLabelling,
    done: &std::collections::HashSet<String>,
    visit: &mut dyn FnMut(RoundLabel) -> Result<()>,
) -> Result<()> {
    let mut rounds = StudentReplay::new(replay, perf, how.student, "lookahead labels")?;
    let mut options = rounds.opts.clone();
    if let Some(w) = &how.expert_weights {
        options.learned.weights = Some(w.clone());
    }
    let objective = options.objective;
    let mut expert = Lookahead::new(perf, &options, rounds.settings())?;
    rounds.visit(how.every, how.count, done, &mut |id, snap| {
        visit(label(id, snap, perf, &objective, &mut expert)?)?;
        Ok(true)
    })
}

/// The lookahead's decision on `snap`, decoded as a label.
fn label(
    id: String,
    snap: &ClusterSnapshot,
    perf: &dyn PerfModel,
    objective: &Objective,
    expert: &mut Lookahead,
) -> Result<RoundLabel> {
    let t = Instant::now();
    let schedule = expert.schedule(snap)?;
    let choice = expert.take_events().into_iter().find_map(|e| match e {
        RoundEvent::LookedAhead(r) => Some(r.chosen.to_string()),
        _ => None,
    });
    let solve_s = t.elapsed().as_secs_f64();
    let pricing = RoundPricing::new(perf, snap, *objective);
    let value = pricing.score(&schedule)?.total;
    let jobs = labels_of(&pricing, &schedule)?;
    Ok(RoundLabel {
        id,
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
        choice,
    })
}
