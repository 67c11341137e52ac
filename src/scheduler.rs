//! The one `Scheduler` trait every policy implements: exact ([`crate::ilp::ExactScheduler`]),
//! heuristic ([`crate::policies`]) or learned.
//!
//! A scheduler proposes; [`crate::Schedule::validate`] decides whether the proposal can run.
//! Heuristics may change how good a schedule is, never whether it is feasible.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::{ClusterSnapshot, Schedule};

/// How a solve ended (written `optimal`, `gap_limit`, `time_limit`, `node_limit`, `infeasible`,
/// `no_solution`). Here, below every solver, so that a scheduler's round events are typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolveStatus {
    /// Proven optimal (within `mip_rel_gap` of 1e-6 or better).
    Optimal,
    /// Stopped with a feasible schedule within the requested gap, which is looser than the
    /// 1e-6 of [`SolveStatus::Optimal`].
    GapLimit,
    /// Stopped at the time limit with a feasible schedule.
    TimeLimit,
    /// Stopped at the node limit with a feasible schedule.
    NodeLimit,
    /// The model has no solution.
    Infeasible,
    /// A limit (time, nodes) stopped the solver before it found any feasible schedule: nothing
    /// is known about the round, and the empty schedule returned is not a decision.
    NoSolution,
}

impl std::fmt::Display for SolveStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SolveStatus::Optimal => "optimal",
            SolveStatus::GapLimit => "gap_limit",
            SolveStatus::TimeLimit => "time_limit",
            SolveStatus::NodeLimit => "node_limit",
            SolveStatus::Infeasible => "infeasible",
            SolveStatus::NoSolution => "no_solution",
        })
    }
}

/// What an optimising scheduler records of one round's solve ([`RoundEvent::Solved`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundSolve {
    /// The round's time (the snapshot's), seconds.
    pub time_s: f64,
    /// Jobs in the program.
    pub jobs: usize,
    /// Of those, running jobs held where they are (outside the decision window).
    pub held: usize,
    /// How the solve ended.
    pub status: SolveStatus,
    /// Objective of the schedule returned.
    pub objective: f64,
    /// Objective of the best start.
    pub start_objective: f64,
    /// Whether the start was returned (the solver did not beat it).
    pub returned_start: bool,
    /// Best proven bound (NaN if none).
    pub best_bound: f64,
    /// Relative gap of the returned schedule to the bound.
    pub gap: f64,
    /// Seconds building the program, and in the solver.
    pub build_s: f64,
    /// Seconds in the solver.
    pub solve_s: f64,
    /// Branch-and-bound nodes, if known.
    pub nodes: Option<u64>,
    /// Columns in the configuration program's final pool (`None`: the compact program solved
    /// the round).
    pub columns: Option<usize>,
    /// The configuration program's pricing-search nodes (what its work limit counts).
    pub search_nodes: Option<u64>,
}

/// Snapshot in, schedule out.
///
/// ```
/// use coda::{ClusterSnapshot, Schedule, Scheduler};
/// /// Everyone waits: valid, and useless.
/// struct Idle;
/// impl Scheduler for Idle {
///     fn name(&self) -> &str { "idle" }
///     fn schedule(&mut self, _: &ClusterSnapshot) -> coda::Result<Schedule> { Ok(Schedule::default()) }
/// }
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// assert!(coda::schedule_with(&snapshot, &mut Idle)?.assignments.is_empty());
/// # Ok::<(), coda::Error>(())
/// ```
pub trait Scheduler {
    /// A short name for reports (`ilp`, `fifo`, ...).
    fn name(&self) -> &str;

    /// The decision for one round.
    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule>;

    /// Whether, in a round where no job waits (every job of the snapshot already holds GPUs),
    /// this policy keeps every assignment as it is — so that a simulator may skip such rounds
    /// ([`crate::sim::SimConfig::skip_idle_rounds`]). False by default: only a policy that never
    /// moves, grows or shrinks a running job unless another job waits may say true.
    fn keeps_when_none_wait(&self) -> bool {
        false
    }

    /// What the scheduler has to report of the round it decided last — its solve, the jobs it
    /// back-filled, a round it kept without asking — taken out (a second call returns nothing).
    /// The loop that owns the scheduler hands it to its observers
    /// ([`crate::sim::Observe::observe_round`]). None by default; a scheduler keeps only its
    /// last round's events, and a wrapper returns its inner scheduler's followed by its own.
    fn take_events(&mut self) -> Vec<RoundEvent> {
        Vec::new()
    }
}

/// What a scheduler reports of one round ([`Scheduler::take_events`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RoundEvent {
    /// The exact program solved a round, under these limits.
    Solved {
        /// The solve's record.
        solve: RoundSolve,
        /// Its time limit, seconds.
        time_limit_s: f64,
        /// Its node limit, if any.
        node_limit: Option<u64>,
    },
    /// Back-fill placed this many waiting jobs on GPUs the round's schedule left idle.
    BackFilled(u64),
    /// The lookahead played its candidates and chose one.
    LookedAhead(LookaheadRound),
    /// The distilled policy's gate chose a proposal in a round whose proposals differed.
    Gated {
        /// The candidate whose proposal was kept (`learned`, `keep`, `pollux`...).
        chosen: &'static str,
    },
    /// A round seen by a scheduler that re-decides unchanged rounds only every `every` rounds:
    /// `kept` when this one was kept without asking.
    Revisited {
        /// Kept without asking the scheduler inside.
        kept: bool,
        /// Rounds between forced re-decisions.
        every: u32,
    },
}

/// What the lookahead policy did in one round in which it played more than one proposal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LookaheadRound {
    /// The candidate whose proposal was kept (`learned`, `keep`, `pollux`...).
    pub chosen: &'static str,
    /// Distinct proposals played.
    pub distinct: u32,
    /// Job-seconds over the horizon the kept proposal saves against the first candidate's (0
    /// when the first was kept).
    pub saved_s: f64,
    /// Seconds the round took: proposals and plays.
    pub wall_s: f64,
}

/// Every event of a run, in order: what the observer of a replay keeps
/// keeps, and what its summary says of the rounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundEvents(pub Vec<RoundEvent>);

impl RoundEvents {
    /// Every exact solve, one per round solved.
    pub fn solves(&self) -> Vec<RoundSolve> {
        self.0
            .iter()
            .filter_map(|e| match e {
                RoundEvent::Solved { solve, .. } => Some(solve.clone()),
                _ => None,
            })
            .collect()
    }

    /// What the run's summary says of the rounds: solves a limit stopped before any schedule,
    /// solves whose start won, jobs back-filled, rounds kept without a decision. Empty when
    /// nothing of note happened.
    pub fn notes(&self) -> Vec<String> {
        let (mut solved, mut no_solution, mut start_kept, mut limits) = (0u64, 0u64, 0u64, None);
        let (mut filled, mut seen, mut kept, mut every) = (0u64, 0u64, 0u64, 1u32);
        let mut looked: Vec<&LookaheadRound> = Vec::new();
        let mut gated: Vec<&str> = Vec::new();
        for e in &self.0 {
            match e {
                RoundEvent::Solved {
                    solve,
                    time_limit_s,
                    node_limit,
                } => {
                    solved += 1;
                    if solve.status == SolveStatus::NoSolution {
                        no_solution += 1;
                    } else if solve.returned_start {
                        start_kept += 1;
                    }
                    limits = Some((*time_limit_s, *node_limit));
                }
                RoundEvent::BackFilled(n) => filled += n,
                RoundEvent::LookedAhead(r) => looked.push(r),
                RoundEvent::Gated { chosen } => gated.push(chosen),
                RoundEvent::Revisited { kept: k, every: n } => {
                    seen += 1;
                    kept += u64::from(*k);
                    every = *n;
                }
            }
        }
        let mut notes = Vec::new();
        if let (true, Some((time, nodes))) = (no_solution > 0, limits) {
            notes.push(format!(
                "{no_solution} of {solved} round(s) stopped at the solver's limit (time {time} s, \
                 nodes {}) before any schedule; the start (the running jobs kept, or a \
                 heuristic's schedule) was used",
                nodes.map_or("none".to_string(), |n| n.to_string())
            ));
        }
        if start_kept > 0 {
            notes.push(format!(
                "{start_kept} of {solved} round(s): the solver did not beat its start, which was \
                 used"
            ));
        }
        if filled > 0 {
            notes.push(format!(
                "back-fill placed {filled} waiting job(s) on GPUs the schedule left idle"
            ));
        }
        if !looked.is_empty() {
            notes.push(lookahead_note(&looked));
        }
        if !gated.is_empty() {
            notes.push(format!(
                "distilled gate, {} round(s) with differing proposals; kept: {}",
                gated.len(),
                kept_counts(gated)
            ));
        }
        if kept > 0 {
            notes.push(format!(
                "{kept} of {seen} round(s) unchanged since the last decision kept it without \
                 a solve (re-solved at least every {every} rounds)"
            ));
        }
        notes
    }
}

/// The summary's line on a lookahead's rounds: how many it played, how often and for whom it
/// left the first candidate, what that saved and what the rounds cost.
fn lookahead_note(rounds: &[&LookaheadRound]) -> String {
    let n = rounds.len() as f64;
    let distinct: f64 = rounds.iter().map(|r| f64::from(r.distinct)).sum::<f64>() / n;
    let saved_h: f64 = rounds.iter().map(|r| r.saved_s).sum::<f64>() / 3600.0;
    let wall: f64 = rounds.iter().map(|r| r.wall_s).sum();
    format!(
        "lookahead played {} round(s) ({distinct:.1} distinct proposals on average, {:.3} s a \
         round); kept: {}; {saved_h:.1} job-hours saved over the plays' horizons against the \
         first candidate",
        rounds.len(),
        wall / n,
        kept_counts(rounds.iter().map(|r| r.chosen).collect())
    )
}

/// `learned 3464, keep 943, …`: how often each candidate was kept, most often first (ties by
/// name): the lookahead's and the distilled gate's summaries.
fn kept_counts(mut chosen: Vec<&str>) -> String {
    chosen.sort_unstable();
    let mut by: Vec<(&str, usize)> = Vec::new();
    for c in chosen {
        match by.last_mut() {
            Some((n, k)) if *n == c => *k += 1,
            _ => by.push((c, 1)),
        }
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    by.iter()
        .map(|(c, k)| format!("{c} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}
