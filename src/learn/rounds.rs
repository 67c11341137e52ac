//! Rounds cut from a trace replay, running jobs included: the states a policy visits
//! ([`visit_rounds`]) cut to label windows for the exact program ([`trace_rounds`]), and a
//! student's replay with `coda simulate`'s settings ([`StudentReplay`]) whose whole rounds the
//! lookahead plays and labels ([`super::lookahead_labels`], [`super::distil::play_rounds`]).

use crate::error::{Error, Result};
use crate::model::ClusterSnapshot;
use crate::objective::{Objective, RoundPricing};
use crate::perf::PerfModel;
use crate::policies::PolicyKind;
use crate::sim::{SimConfig, Simulator, Unplaceable};
use crate::workload::Workload;

/// How rounds are cut from a trace replay ([`trace_rounds`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceCut {
    /// The policy the trace is replayed under (any but [`PolicyKind::Ilp`]; `learned` visits
    /// the policy's own states, for DAgger).
    pub policy: PolicyKind,
    /// Its options.
    pub options: crate::policies::PolicyOptions,
    /// Every `every`-th round with at least two jobs present is cut (>= 1).
    pub every: usize,
    /// Up to this many rounds.
    pub count: usize,
    /// Jobs per round (>= 1): every running job, and waiting ones by
    /// [`RoundPricing::alone_value`] up to this many in all but at least a quarter of it.
    pub max_jobs: usize,
}

/// Rounds cut from a trace replay, running jobs included: `workload` replayed under
/// `cut.policy`, every `cut.every`-th round with at least two jobs present, up to `cut.count`
/// rounds, each cut to a label window (the `ilp` policy's before it held running jobs): every
/// running job, and waiting ones by [`RoundPricing::alone_value`] up to `cut.max_jobs` in all
/// but at least `max_jobs / 4` (so a round with many running jobs holds more than `max_jobs`).
/// Ids are `{name}-{policy}-t{round time}`. Jobs the cluster can never run are left out of the
/// replay.
pub fn trace_rounds(
    name: &str,
    workload: &Workload,
    perf: &dyn PerfModel,
    objective: &Objective,
    cut: &TraceCut,
) -> Result<Vec<(String, ClusterSnapshot)>> {
    let TraceCut {
        policy,
        every,
        max_jobs,
        ..
    } = *cut;
    if policy == PolicyKind::Ilp || every == 0 || max_jobs == 0 {
        return Err(Error::setting(
            "trace rounds",
            "policy / every / max_jobs",
            format!("{policy} / {every} / {max_jobs}"),
            "a heuristic policy, every >= 1 and max_jobs >= 1",
        ));
    }
    let mut out = Vec::new();
    visit_rounds(workload, perf, objective, cut, &mut |snap| {
        let keep = label_window(perf, objective, max_jobs, snap);
        let cut = ClusterSnapshot::from_parts(
            snap.time_s,
            snap.cluster.clone(),
            keep.iter().map(|&i| snap.jobs[i].clone()).collect(),
        );
        out.push((format!("{name}-{policy}-t{}", snap.time_s), cut));
        Ok(())
    })?;
    Ok(out)
}

/// `workload` replayed under `cut.policy` with `cut.options` (jobs the cluster can never run
/// left out): every `cut.every`-th round with at least two jobs present, up to `cut.count` of
/// them, handed to `visit` before the policy decides it. What [`trace_rounds`] cuts.
fn visit_rounds(
    workload: &Workload,
    perf: &dyn PerfModel,
    objective: &Objective,
    cut: &TraceCut,
    visit: &mut dyn FnMut(&ClusterSnapshot) -> Result<()>,
) -> Result<()> {
    let mut policy = cut.policy.build(perf, &cut.options)?;
    let config = SimConfig {
        objective: *objective,
        unplaceable: Unplaceable::Skip,
        ..SimConfig::default()
    };
    let mut sim = Simulator::builder(perf, workload.cluster.clone(), workload.jobs.clone())
        .config(config)
        .build()?;
    let (mut visited, mut seen) = (0usize, 0usize);
    while visited < cut.count {
        let Some(snap) = sim.next_round()? else {
            break;
        };
        let snap = snap.clone();
        if snap.jobs.len() >= 2 {
            if seen.is_multiple_of(cut.every) {
                visit(&snap)?;
                visited += 1;
            }
            seen += 1;
        }
        let schedule = policy.schedule(&snap)?;
        sim.apply(&schedule)?;
    }
    Ok(())
}

/// The jobs (indices in `snap.jobs`, sorted) a label round holds: every running job — a label
/// decides every job of its round, so none is held where it runs as the `ilp` policy's bounded
/// window holds some ([`crate::ilp::WindowedIlp::window`]) — and the waiting jobs the objective
/// values most, up to `max_jobs` in all but at least `max_jobs / 4` of them. The shipped labels
/// and the models trained on them were drawn with this window.
fn label_window(
    perf: &dyn PerfModel,
    objective: &Objective,
    max_jobs: usize,
    snap: &ClusterSnapshot,
) -> Vec<usize> {
    if snap.jobs.len() <= max_jobs {
        return (0..snap.jobs.len()).collect();
    }
    let pricing = RoundPricing::new(perf, snap, *objective);
    let (mut keep, waiting) = crate::ilp::ranked(&pricing);
    let reserve = (max_jobs / 4).max(1);
    let room = max_jobs.saturating_sub(keep.len()).max(reserve);
    keep.extend(waiting.into_iter().take(room));
    keep.sort_unstable();
    keep
}

/// A replay driven by a student's own decisions (DAgger: the states the student visits), seen
/// one round at a time: [`StudentReplay::next_round`] hands out each round with at least two
/// jobs present (the student decides the others itself), [`StudentReplay::follow`] applies the
/// student's decision to it. The replay runs with `coda simulate`'s settings for the same
/// flags (its contention allowance, cluster, slice and seed), so the states are the ones an
/// evaluation replay of the student visits. What the lookahead's plays
/// ([`super::distil::play_rounds`]) and labels ([`super::lookahead_labels`]) are drawn from.
pub(super) struct StudentReplay<'p> {
    sim: Simulator<'p>,
    /// Who replays (named by errors).
    who: String,
    student: Box<dyn crate::scheduler::Scheduler + 'p>,
    /// The replay's policy settings (the student's, and what an expert is built from).
    pub(super) opts: crate::policies::PolicyOptions,
    /// `{trace}-{skip}+{take}-s{seed}-{student}`: what round ids start with.
    pub(super) prefix: String,
}

impl<'p> StudentReplay<'p> {
    /// `replay` under `student` (any policy built from its options: not the lookahead).
    pub(super) fn new(
        replay: &crate::replay::Replay,
        perf: &'p dyn PerfModel,
        student: PolicyKind,
        who: &str,
    ) -> Result<Self> {
        if student == PolicyKind::Lookahead {
            return Err(Error::setting(
                who,
                "student",
                student,
                "a policy built from its options alone",
            ));
        }
        let workload = replay.workload(perf)?;
        let allowance = replay.allowance(&workload, perf)?;
        let sim = replay.simulator(&workload, allowance, perf)?;
        let opts = replay.policy_options()?;
        let w = &replay.workload;
        Ok(StudentReplay {
            who: who.to_string(),
            student: student.build(perf, &opts)?,
            sim,
            opts,
            prefix: format!(
                "{}-{}+{}-s{}-{student}",
                w.trace,
                w.skip,
                w.take.unwrap_or(0),
                w.seed
            ),
        })
    }

    /// The simulator's settings (what a lookahead playing from its rounds must share).
    pub(super) fn settings(&self) -> SimConfig {
        *self.sim.settings()
    }

    /// The whole replay, the student deciding every round: every `every`-th round with at least
    /// two jobs present whose id is not in `done` goes to `visit` (its id and the round) before
    /// the student decides it, until `count` rounds have counted — a round in `done` counts
    /// without a visit (a run resumed), a visited one when `visit` says so.
    pub(super) fn visit(
        &mut self,
        every: usize,
        count: usize,
        done: &std::collections::HashSet<String>,
        visit: &mut dyn FnMut(String, &ClusterSnapshot) -> Result<bool>,
    ) -> Result<()> {
        if every == 0 {
            return Err(Error::setting(&self.who, "every", every, "must be >= 1"));
        }
        let (mut counted, mut seen) = (0usize, 0usize);
        while counted < count {
            let Some(snap) = self.next_round()? else {
                break;
            };
            let id = self.id(&snap);
            if done.contains(&id) || (seen.is_multiple_of(every) && visit(id, &snap)?) {
                counted += 1;
            }
            seen += 1;
            self.follow(&snap)?;
        }
        Ok(())
    }

    /// The next round with at least two jobs present, or `None` when the replay is over.
    fn next_round(&mut self) -> Result<Option<ClusterSnapshot>> {
        loop {
            let Some(snap) = self.sim.next_round()? else {
                return Ok(None);
            };
            let snap = snap.clone();
            if snap.jobs.len() >= 2 {
                return Ok(Some(snap));
            }
            self.follow(&snap)?;
        }
    }

    /// The id of `snap`'s round: the prefix and the round's time.
    fn id(&self, snap: &ClusterSnapshot) -> String {
        format!("{}-t{}", self.prefix, snap.time_s)
    }

    /// The student decides `snap`'s round and the replay goes on from its decision.
    fn follow(&mut self, snap: &ClusterSnapshot) -> Result<()> {
        let schedule = self.student.schedule(snap)?;
        self.student.take_events();
        self.sim.apply(&schedule).map(|_| ())
    }
}
