//! Who proposes a schedule to the lookahead (`coda::lookahead`) and to the distilled policy
//! ([`super::distilled`]): a policy as `--policy` builds it, the learned policy decoding
//! greedily, or the proposal that moves nothing.

use crate::error::Result;
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::same_assignment;
use crate::perf::PerfModel;
use crate::scheduler::Scheduler;

use super::{Backfill, PolicyKind, PolicyOptions};

/// Who proposes a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Candidate {
    /// A policy as `--policy` builds it.
    Policy(PolicyKind),
    /// The learned policy decoding greedily (one decoding a round).
    LearnedGreedy,
    /// Every running job kept where it is, idle GPUs back-filled: the proposal that restarts
    /// nothing.
    Keep,
}

impl Candidate {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Candidate::Policy(k) => k.name(),
            Candidate::LearnedGreedy => "learned-greedy",
            Candidate::Keep => "keep",
        }
    }

    /// The policy that proposes for this candidate.
    pub fn build<'a>(
        self,
        perf: &'a dyn PerfModel,
        opts: &PolicyOptions,
    ) -> Result<Box<dyn Scheduler + 'a>> {
        Ok(match self {
            Candidate::Policy(k) => k.build(perf, opts)?,
            Candidate::LearnedGreedy => PolicyKind::Learned.build(perf, &greedy(opts))?,
            Candidate::Keep => Box::new(Backfill::new(Box::new(Keep), perf, opts.objective)),
        })
    }
}

/// The lookahead's candidates, in the order its
/// [`candidates`](super::LookaheadOptions::candidates) takes them: the learned policy's decision
/// first (what a round keeps when no play beats it), the proposal that moves nothing, the
/// learned greedy decoding, then the baselines that lead the replays (Pollux, SRTF, DRF), level
/// 1 with the packer, and the rest.
pub const CANDIDATES: [Candidate; 10] = [
    Candidate::Policy(PolicyKind::Learned),
    Candidate::Keep,
    Candidate::LearnedGreedy,
    Candidate::Policy(PolicyKind::Pollux),
    Candidate::Policy(PolicyKind::Srtf),
    Candidate::Policy(PolicyKind::Drf),
    Candidate::Policy(PolicyKind::LearnedPacker),
    Candidate::Policy(PolicyKind::Tiresias),
    Candidate::Policy(PolicyKind::Optimus),
    Candidate::Policy(PolicyKind::SjfBco),
];

/// Every running job where it is, every waiting job waiting (back-filled by its wrapper).
struct Keep;

impl Scheduler for Keep {
    fn name(&self) -> &str {
        "keep"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        Ok(snap.current_schedule())
    }
}

/// `opts` with learned policies decoding greedily (a lookahead play's base, the greedy
/// candidate).
pub(crate) fn greedy(opts: &PolicyOptions) -> PolicyOptions {
    let mut o = opts.clone();
    o.learned.samples = 1;
    o
}

/// Whether two schedules put the same jobs in the same places at the same tiers.
pub(crate) fn same_schedule(a: &Schedule, b: &Schedule) -> bool {
    a.assignments.len() == b.assignments.len()
        && a.assignments.iter().all(|x| {
            b.assignment(x.job)
                .is_some_and(|y| same_assignment(x, y) && x.tier == y.tier)
        })
}
