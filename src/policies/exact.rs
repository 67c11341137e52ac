//! The one recipe for "solve a round exactly" ([`ExactRound`]): the integer program on the whole
//! round, started from the best of the heuristics' schedules, the running jobs kept and the
//! caller's warm start (a schedule, or the learned policy's), never returning less than that
//! start; optionally fix-and-solve on the jobs the policy is confident about, and a back-fill
//! of the GPUs the solve left idle. [`crate::schedule`], `coda solve`, `coda label`, the
//! Python package's `solve` and `schedule(scheduler="exact")` all run it.
//!
//! The `ilp` policy of a replay is another thing: the same program on a bounded window of jobs
//! each round, back-filled and revisited ([`super::PolicyKind::Ilp`]).

use std::path::PathBuf;

use super::expert::{BestHeuristic, back_fill};
use super::learned::{LearnedScheduler, PolicyNet};
use crate::error::{Error, Expected, Result};
use crate::ilp::{SolveProgram, SolveRequest, SolveSettings, Solved};
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::Objective;
use crate::perf::PerfModel;
use crate::scheduler::{RoundEvent, RoundSolve, Scheduler};

/// A start offered besides the best heuristic's schedule and the running jobs kept (both are
/// always offered; the best of all is the start).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum WarmStart {
    /// No other start.
    #[default]
    Heuristic,
    /// This schedule (it must be a valid schedule of the round: an error otherwise).
    Schedule(Schedule),
    /// The learned policy's schedule of the round, with these weights (`None`: the shipped
    /// ones).
    Policy(Option<PathBuf>),
}

/// Fix-and-solve ([`SolveRequest::fix_then_free`]): the jobs level 1 gives at least
/// `confidence`, and that the policy's schedule treats so, held to it for `share` of the time
/// limit; then every job freed. Needs [`WarmStart::Policy`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixConfident {
    /// Level 1's probability a job must reach to be held, in [0, 1].
    pub confidence: f64,
    /// Share of the time limit of the fixed phase, strictly between 0 and 1.
    pub share: f64,
}

/// How to solve one round exactly; [`ExactRound::solve`] runs it, [`ExactRound::scheduler`]
/// puts it behind the [`Scheduler`] trait (with the back-fill if asked).
#[derive(Debug, Clone, PartialEq)]
pub struct ExactRound {
    /// Which program (default: by size).
    pub program: SolveProgram,
    /// Limits, gap, threads, seed (default: 60 s, optimality).
    pub settings: SolveSettings,
    /// What the program maximises.
    pub objective: Objective,
    /// A start besides the heuristics' (default: none).
    pub warm_start: WarmStart,
    /// Fix-and-solve (default: none).
    pub fix: Option<FixConfident>,
    /// The scheduler back-fills the GPUs the solve left idle (default: yes); [`ExactRound::solve`]
    /// never does.
    pub backfill: bool,
}

impl Default for ExactRound {
    fn default() -> Self {
        ExactRound {
            program: SolveProgram::Auto,
            settings: SolveSettings::default(),
            objective: Objective::default(),
            warm_start: WarmStart::Heuristic,
            fix: None,
            backfill: true,
        }
    }
}

impl ExactRound {
    /// The recipe with these solver settings, every other choice at its default.
    pub fn with_settings(settings: SolveSettings) -> Self {
        ExactRound {
            settings,
            ..ExactRound::default()
        }
    }

    /// The learned policy of [`WarmStart::Policy`], if that is the warm start.
    fn policy<'p>(&self, perf: &'p dyn PerfModel) -> Result<Option<LearnedScheduler<'p>>> {
        let WarmStart::Policy(weights) = &self.warm_start else {
            return Ok(None);
        };
        Ok(Some(match weights {
            Some(w) => LearnedScheduler::new(perf, self.objective, PolicyNet::load(w)?),
            None => LearnedScheduler::shipped(perf, self.objective)?,
        }))
    }

    /// Checks the choices that relate to each other: fix-and-solve needs the policy's start,
    /// and its share and confidence their ranges.
    pub fn check(&self) -> Result<()> {
        self.settings.checked()?;
        if let Some(fix) = self.fix {
            if !matches!(self.warm_start, WarmStart::Policy(_)) {
                return Err(Error::setting(
                    "exact round",
                    "fix",
                    fix.confidence,
                    "needs the policy's warm start (the policy says which jobs it is confident about)",
                ));
            }
            if !Expected::Fraction.admits(fix.confidence) {
                return Err(Error::setting(
                    "exact round",
                    "fix.confidence",
                    fix.confidence,
                    Expected::Fraction,
                ));
            }
            if !Expected::OpenFraction.admits(fix.share) {
                return Err(Error::setting(
                    "exact round",
                    "fix.share",
                    fix.share,
                    Expected::OpenFraction,
                ));
            }
        }
        Ok(())
    }

    /// Solves `snapshot`'s round as the recipe says: the best schedule found (never below the
    /// best start) and an honest report.
    pub fn solve(&self, perf: &dyn PerfModel, snapshot: &ClusterSnapshot) -> Result<Solved> {
        self.check()?;
        let policy = self.policy(perf)?;
        let start = match (&self.warm_start, &policy) {
            (WarmStart::Schedule(s), _) => Some(s.clone()),
            (_, Some(p)) => Some(p.decide(snapshot)),
            _ => None,
        };
        let heuristic = BestHeuristic::new(perf, self.objective).schedule(snapshot)?;
        let mut request = SolveRequest::new(snapshot, perf, self.objective)?
            .settings(self.settings.checked()?)
            .candidates([heuristic])
            .program(self.program);
        if let Some(start) = &start {
            request = request.warm_start(start);
        }
        if let (Some(fix), Some(policy), Some(start)) = (self.fix, &policy, &start) {
            let fixed = policy.confident_jobs(snapshot, start, fix.confidence as f32);
            request = request.fix_then_free(&fixed, fix.share)?;
        }
        request.solve()
    }

    /// The recipe as a scheduler: every round solved, back-filled if asked, its solve and
    /// back-fill reported through [`Scheduler::take_events`].
    pub fn scheduler<'p>(self, perf: &'p dyn PerfModel) -> Result<ExactRoundScheduler<'p>> {
        self.check()?;
        Ok(ExactRoundScheduler {
            recipe: self,
            perf,
            events: Vec::new(),
        })
    }
}

/// [`ExactRound`] behind the [`Scheduler`] trait ([`ExactRound::scheduler`]).
pub struct ExactRoundScheduler<'p> {
    recipe: ExactRound,
    perf: &'p dyn PerfModel,
    events: Vec<RoundEvent>,
}

impl Scheduler for ExactRoundScheduler<'_> {
    fn name(&self) -> &str {
        "exact"
    }

    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule> {
        self.events.clear();
        let solved = self.recipe.solve(self.perf, snapshot)?;
        self.events.push(RoundEvent::Solved {
            solve: RoundSolve::of(snapshot, 0, &solved.report),
            time_limit_s: self.recipe.settings.time_limit_s,
            node_limit: self.recipe.settings.node_limit,
        });
        if !self.recipe.backfill {
            return Ok(solved.schedule);
        }
        let (filled, added) =
            back_fill(self.perf, self.recipe.objective, snapshot, solved.schedule)?;
        if added > 0 {
            self.events.push(RoundEvent::BackFilled(added));
        }
        Ok(filled)
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        std::mem::take(&mut self.events)
    }
}
