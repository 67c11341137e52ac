//! The baseline schedulers the simulator compares: every one is a [`Scheduler`] (snapshot in,
//! schedule out), reads speeds only through the [`PerfModel`], and builds its placements with
//! one shared [`Packer`], which never over-commits a resource. A policy decides *who runs, how
//! big and where*; it cannot change what is feasible — the simulator validates every schedule.
//!
//! | name | follows | allocation | placement | preempts |
//! |---|---|---|---|---|
//! | `fifo` | Blox's FIFO | requested size, arrival order; a job that does not fit is skipped | consolidated | no |
//! | `srtf` | shortest remaining time first | requested size, by remaining time alone | consolidated | yes |
//! | `drf` | Ghodsi et al., NSDI'11 | progressive filling by dominant share (GPU, CPU, memory) | consolidated | yes |
//! | `tiresias` | Gu et al., NSDI'19 | requested size; 2D-LAS queues on attained GPU-seconds (1 and 10 GPU-hours); within a queue running jobs before pending ones, then arrival; starvation promotion (`PromoteKnob` 4) | consolidated | yes |
//! | `optimus` | Peng et al., EuroSys'18 | minimum for all, then each task where it cuts remaining time most per dominant share | fewest servers, PS spread over them | yes |
//! | `sjf-bco` | Yu, Ji, Rajan and Liu, MobiHoc'22 (arXiv 2207.07817) | requested size, smallest GPU-time first | balanced: k least-loaded servers, k chosen by the in-context price | no |
//! | `pollux` | Qiao et al., OSDI'21 | greedy on the harmonic mean of speed-ups (p = −1); a running job's speed-up at a new size × 0.9 (Pollux's restart penalty) | consolidated, at most one multi-server job per server (Pollux's rule) | yes |
//! | `sia` | Jayaram Subramanya et al., SOSP'23 ([`sia`]) | one integer program (HiGHS) over every job's (GPU type, GPU count) configurations: speed-up over its slowest configuration × Pollux's re-allocation factor off its current one, to the power −0.5, plus 1.1 per job left out, minimised | consolidated on the chosen type | yes |
//! | `random` | — | requested size, arrival order | random servers and GPUs (seeded) | no |
//! | `synergy-tune` | Mohan et al., OSDI'22 (TUNE) | as `srtf`; then each job, shortest remaining time first, gets its best-case cores and memory if they fit, else its GPU-proportional demand ([`cpumem`]) | consolidated | yes |
//! | `learned` | coda's hierarchical policy ([`learned`]) | level-1 network over the program's options | level-2 network over servers, then back-filled | yes |
//! | `distilled` | the lookahead distilled ([`distilled`]) | the proposal of `learned`, `keep` (nothing moved) or a baseline, as a gate fitted to the lookahead's plays predicts is best | the proposal's | yes |
//! | `ilp` | coda's program | exact, re-solved every round on a window of `--ilp-max-jobs` jobs (the waiting ones the objective values most, half the window kept for them and more until they ask for every free GPU, and the running ones it values least; other running jobs held where they are), from the best heuristic schedule (never returning less), then back-filled | exact | yes |
//!
//! **Cores and memory.** Every baseline but `synergy-tune` gives each task its demand (the
//! GPU-proportional share, as Synergy calls it); `ilp` and the `learned` policies hand the cores
//! and memory their placement leaves free to the jobs that gain most from them
//! ([`cpumem::TierRule::Greedy`]). Jobs without tiers (`--cpu-mem fixed`) run at their demand
//! under every policy.
//!
//! Differences from the papers, said once here:
//! * Sizes are decided against cluster-wide totals (GPUs, cores, memory), and a size the packer
//!   cannot place this round waits (elastic policies first try it smaller, down to the job's
//!   minimum). Every preemptive policy keeps a job whose size did not change where it is, so a
//!   restart is paid only for a real change.
//! * **Oracle knowledge.** `srtf`, `sjf-bco` and `optimus` read each job's true remaining work
//!   and the performance model's true isolated speeds; the real systems estimate them (Optimus
//!   fits a speed model online and predicts the remaining epochs from the loss curve; SJF-BCO
//!   assumes known job sizes; SRTF is an oracle policy by definition). `pollux` reads the true
//!   isolated speeds too (Pollux fits throughput online and also adapts the batch size); with
//!   `--goodput on` those speeds are goodputs (statistical efficiency, [`crate::perf::goodput`]),
//!   as Pollux's and Sia's are, though at the job's fixed per-GPU batch. `tiresias` needs no size, as in
//!   the paper; `fifo`, `drf` and `random` need none.
//! * Tiresias' queue thresholds and `PromoteKnob` are settings ([`PolicyOptions`]); the paper
//!   tunes them per cluster.
//! * Pollux's genetic placement search is replaced by consolidated placement under its own
//!   repair rule (one multi-server job per server); its restart penalty (0.1 on the speed-up of a
//!   job whose allocation changes) and the p = −1 mean follow its code and paper.
//! * SJF-BCO's analytic contention model is replaced by the performance model's in-context price.
//! * **What favours elastic policies** (`drf`, `optimus`, `pollux`): a PS job's speed is DL2's
//!   measured curve, and several DL2 models barely speed up past a few workers, so elastic
//!   policies learn to keep them small; an all-reduce job's work is counted in GPU-steps, so its
//!   scale-up is as efficient as the measured step time says — no statistical-efficiency loss at
//!   larger global batch unless `--goodput on` adds it. Scale-up is bounded to
//!   [`crate::workload::trace::TraceOptions::max_scale_up`] × the submitted size (2×) and to the largest
//!   measured configuration.

mod baselines;
mod candidates;
pub mod cpumem;
pub mod distilled;
mod exact;
mod expert;
mod kind;
pub mod learned;
mod packer;
pub mod sia;
mod sizing;

use std::collections::HashMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use candidates::{CANDIDATES, Candidate};
pub(crate) use candidates::{greedy, same_schedule};
pub use exact::{ExactRound, ExactRoundScheduler, FixConfident, WarmStart};
pub(crate) use expert::back_fill;
pub use expert::{Backfill, BestHeuristic, Revisit};
pub use kind::PolicyKind;
pub use packer::{GpuChoice, Packer, Placement};

use baselines::*;
use sizing::Base;

use crate::error::{Error, Result};
use crate::ilp::{ExactScheduler, SolveSettings, WindowedIlp};
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::{Colocation, Objective};
use crate::perf::PerfModel;
use crate::scheduler::{RoundEvent, Scheduler};

/// How the policies are built: what every policy shares (seed, objective) and each policy's
/// own settings, in its own struct.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyOptions {
    /// Seed of every random choice (`random`'s placement, the learned policy's decodings).
    pub seed: u64,
    /// The objective the `ilp` and learned policies maximise each round.
    pub objective: Objective,
    /// `tiresias`.
    pub tiresias: TiresiasOptions,
    /// `ilp`.
    pub ilp: IlpOptions,
    /// `learned`, `learned-rl`, `learned-packer` (and the `ilp` policy's learned start).
    pub learned: LearnedOptions,
    /// `lookahead`.
    pub lookahead: LookaheadOptions,
}

/// Settings of the `lookahead` policy (built above the simulator, `coda::lookahead`).
#[derive(Debug, Clone, PartialEq)]
pub struct LookaheadOptions {
    /// Rounds each candidate is played forward, its own included (>= 1).
    pub rounds: u32,
    /// How many candidate policies propose a schedule each round (>= 1; the first this many of
    /// `coda::lookahead::CANDIDATES`; 1: the learned policy alone, nothing played).
    pub candidates: usize,
    /// The policy that decides every round after the candidate's, in every play (a learned
    /// base decodes greedily: one decoding a round).
    pub base: PolicyKind,
    /// What a lookahead's plays assume of the jobs still to arrive.
    pub arrivals: LookaheadArrivals,
    /// Who decides a play's later rounds.
    pub follow: LookaheadFollow,
    /// What a play adds for the jobs still present at its horizon.
    pub tail: LookaheadTail,
}

/// What a lookahead's play counts for the jobs still in the system at the end of its horizon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum LookaheadTail {
    /// Nothing: job-seconds within the horizon only (work done on a job that does not finish
    /// within it is worth nothing).
    None,
    /// A lower bound on the time they will still spend in the system (`coda bound`'s capacity
    /// bound on what is left, nothing else arriving): progress counts even when the job does
    /// not finish within the horizon.
    #[default]
    Bound,
}

/// Who decides the rounds of a lookahead's play after the candidate's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum LookaheadFollow {
    /// One base policy for every play ([`LookaheadOptions::base`]): one-step rollout
    /// improvement of the base.
    #[default]
    Base,
    /// Each candidate's own policy: the play values following that policy for the horizon, and
    /// the round takes the first decision of the best (parallel rollout, Chang, Givan and
    /// Chong 2004: no worse over the horizon than any one candidate followed throughout).
    Candidate,
}

impl Default for LookaheadOptions {
    fn default() -> Self {
        LookaheadOptions {
            rounds: 24,
            candidates: 6,
            base: PolicyKind::Learned,
            arrivals: LookaheadArrivals::None,
            follow: LookaheadFollow::Base,
            tail: LookaheadTail::Bound,
        }
    }
}

/// What a lookahead's plays assume of future arrivals. Neither sees an arrival the policy could
/// not know: the trace's future is never read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum LookaheadArrivals {
    /// No job arrives during a play.
    #[default]
    None,
    /// Jobs arrive as a Poisson process at the rate seen so far (jobs seen ÷ time since the
    /// first arrival), each a copy of a job seen so far drawn uniformly (seeded by the policy's
    /// seed and the round's time; the same draw for every candidate of a round).
    Sampled,
}

/// Settings of the `tiresias` policy.
#[derive(Debug, Clone, PartialEq)]
pub struct TiresiasOptions {
    /// Queue thresholds in attained GPU-seconds, ascending (default 1 and 10 GPU-hours, the
    /// bounds of the trace's model classes; Tiresias tunes these per cluster).
    pub thresholds_gpu_s: Vec<f64>,
    /// `PromoteKnob`: a job pending for at least this many times its executed time (since its
    /// last promotion) is promoted to the highest queue; 0 disables promotion. The paper leaves
    /// it a knob; 4 is coda's setting, not a published value.
    pub promote_knob: f64,
}

impl Default for TiresiasOptions {
    fn default() -> Self {
        TiresiasOptions {
            thresholds_gpu_s: vec![3_600.0, 36_000.0],
            promote_knob: 4.0,
        }
    }
}

/// Settings of the `ilp` policy.
#[derive(Debug, Clone, PartialEq)]
pub struct IlpOptions {
    /// Solver settings of each round (set a time or node limit for simulations; default 10 s).
    pub solve: SolveSettings,
    /// This many jobs a round ([`WindowedIlp`]): the waiting ones the objective values most
    /// (half the window kept for them, more until they ask for every free GPU, up to four
    /// windows) and the running ones it values least; other running jobs are held where they
    /// are, other waiting jobs wait unless the back-fill places them (the program grows with
    /// jobs × servers).
    pub max_jobs: usize,
    /// A round in which nothing changed since the last decision (same jobs, every one where it
    /// was put) is re-solved only every this many rounds ([`Revisit`]); 1: every round.
    pub revisit_rounds: u32,
    /// Also start each round's solve from the learned policy's schedule of the round (weights:
    /// [`LearnedOptions::weights`]), besides the best heuristic's.
    pub learned_start: bool,
    /// The in-service credit κ of the objective the policy's program, start and back-fill
    /// maximise ([`Objective::with_in_service_credit`]), in place of [`PolicyOptions::objective`]'s.
    pub in_service_credit: f64,
    /// What a co-runner costs in the objective the policy's program, start and back-fill
    /// maximise ([`Objective::with_colocation`]), in place of [`PolicyOptions::objective`]'s.
    pub colocation: Colocation,
}

impl Default for IlpOptions {
    fn default() -> Self {
        IlpOptions {
            solve: SolveSettings {
                time_limit_s: 10.0,
                ..SolveSettings::default()
            },
            max_jobs: 12,
            revisit_rounds: DEFAULT_ILP_REVISIT_ROUNDS,
            learned_start: false,
            in_service_credit: DEFAULT_ILP_IN_SERVICE_CREDIT,
            colocation: DEFAULT_ILP_COLOCATION,
        }
    }
}

/// Settings of the learned policies.
#[derive(Debug, Clone, PartialEq)]
pub struct LearnedOptions {
    /// Weights (default: the shipped `models/policy.safetensors`, or `policy-rl.safetensors`
    /// for `learned-rl`).
    pub weights: Option<std::path::PathBuf>,
    /// Decodings per round (1: greedy; see [`learned::DEFAULT_SAMPLES`]), drawn from the seed.
    pub samples: usize,
    /// The `distilled` policy's gate (default: the shipped `models/distilled.json`).
    pub gate: Option<std::path::PathBuf>,
    /// Moves of the local search ending each round (0: none; see
    /// [`learned::LearnedScheduler::with_grow`]).
    pub grow: usize,
}

impl Default for LearnedOptions {
    fn default() -> Self {
        LearnedOptions {
            weights: None,
            samples: learned::DEFAULT_SAMPLES,
            gate: None,
            grow: 0,
        }
    }
}

/// Default of [`IlpOptions::revisit_rounds`]: half an hour of 300-s rounds. On the first
/// 150 Philly jobs on 4 × 8 GPUs the `ilp` policy solved 324 of 1,650 rounds instead of all
/// 1,666, for an average JCT of 1.33 h (1.34 h solving every round).
pub(crate) const DEFAULT_ILP_REVISIT_ROUNDS: u32 = 6;

/// Default of [`IlpOptions::in_service_credit`]. A design weight, not an estimate: at 1 a round
/// at full pace is worth one round of JCT saved, the unit of the progress fraction.
/// `formulations/README.md` (*Measured, and why the `ilp` policy's default is `κ = 1`*) gives
/// what 0, 0.25 and 1 measured.
pub const DEFAULT_ILP_IN_SERVICE_CREDIT: f64 = 1.0;

/// Default of [`IlpOptions::colocation`]: a co-runner costs its share of a full server's
/// saturating slowdown, scaled to the progress that slowdown takes from the job. Priced by its
/// pair slowdown, the program kept GPUs idle next to a queue rather than fill a server (ITP
/// cluster 02 1650); priced by the slowdown alone (`full-server`), it charged a job whose step
/// is partly communication `1 + c(F - 1)` times too much, which the work-limited replays of the
/// light slices measured behind the best baseline on more slices and far more so at a higher
/// coupling estimate (`formulations/README.md`, *Co-location*).
pub const DEFAULT_ILP_COLOCATION: Colocation = Colocation::Progress;

impl PolicyKind {
    /// The policy, built with `opts` (checked: an invalid option is an error naming it), behind
    /// a wrapper that checks every snapshot it is handed. What it does round by round — its
    /// solves, back-filled jobs, rounds kept without a decision — it reports through
    /// [`Scheduler::take_events`].
    pub fn build<'a>(
        self,
        perf: &'a dyn PerfModel,
        opts: &PolicyOptions,
    ) -> Result<Box<dyn Scheduler + 'a>> {
        let base = Base::new(perf);
        let policy: Box<dyn Scheduler + 'a> = match self {
            PolicyKind::Fifo => Box::new(Fifo(base)),
            PolicyKind::Srtf => Box::new(Srtf(base)),
            PolicyKind::Drf => Box::new(Drf(base)),
            PolicyKind::Tiresias => Box::new(tiresias(base, &opts.tiresias)?),
            PolicyKind::Optimus => Box::new(Optimus(base)),
            PolicyKind::SjfBco => Box::new(SjfBco(base)),
            PolicyKind::Pollux => {
                let mut base = base;
                base.one_distributed_per_server = true;
                Box::new(Pollux(base))
            }
            PolicyKind::Sia => Box::new(sia::Sia {
                base,
                restart_s: opts.objective.restart_s,
                restarts: std::collections::HashMap::new(),
            }),
            PolicyKind::Random => Box::new(RandomPlacement {
                base,
                rng: ChaCha8Rng::seed_from_u64(opts.seed),
            }),
            PolicyKind::SynergyTune => Box::new(cpumem::WithTiers {
                inner: Box::new(Srtf(base)),
                perf,
                rule: cpumem::TierRule::Tune,
                joint: false,
            }),
            PolicyKind::Ilp => windowed_ilp(perf, opts)?,
            PolicyKind::Learned | PolicyKind::LearnedRl | PolicyKind::LearnedPacker => {
                learned_policy(self, perf, opts)?
            }
            PolicyKind::Distilled => Box::new(distilled::Distilled::new(perf, opts)?),
            PolicyKind::Lookahead => {
                return Err(Error::setting(
                    "policy options",
                    "policy",
                    "lookahead",
                    "a policy built from its options alone: the lookahead plays candidates in \
                     a simulator and is built with the simulator's settings \
                     (`coda::lookahead::Lookahead::new`, as a replay does)",
                ));
            }
        };
        Ok(Box::new(Checked(policy)))
    }
}

/// `tiresias`, its thresholds and knob checked.
fn tiresias<'a>(base: Base<'a>, opts: &TiresiasOptions) -> Result<Tiresias<'a>> {
    let t = &opts.thresholds_gpu_s;
    if t.iter().any(|x| !x.is_finite() || *x <= 0.0) || t.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::setting(
            "policy options",
            "tiresias.thresholds_gpu_s",
            format!("{t:?}"),
            "must be positive, finite and ascending",
        ));
    }
    if !(opts.promote_knob.is_finite() && opts.promote_knob >= 0.0) {
        return Err(Error::setting(
            "policy options",
            "tiresias.promote_knob",
            opts.promote_knob,
            "must be >= 0 (0 disables promotion)",
        ));
    }
    Ok(Tiresias {
        base,
        thresholds: t.clone(),
        promote_knob: opts.promote_knob,
        attained: HashMap::new(),
        last_time: None,
    })
}

/// `ilp`: the program on a window of jobs each round ([`WindowedIlp`]), started from the best
/// heuristic (and the learned policy, if asked), back-filled, revisited, tiers handed out.
fn windowed_ilp<'a>(
    perf: &'a dyn PerfModel,
    opts: &PolicyOptions,
) -> Result<Box<dyn Scheduler + 'a>> {
    if opts.ilp.max_jobs == 0 {
        return Err(Error::setting(
            "policy options",
            "ilp.max_jobs",
            0,
            crate::error::Expected::AtLeastOne,
        ));
    }
    let objective = opts
        .objective
        .with_in_service_credit(opts.ilp.in_service_credit)?
        .with_colocation(opts.ilp.colocation);
    let mut exact = ExactScheduler::new(perf, objective, opts.ilp.solve.checked()?)
        .with_start(Box::new(BestHeuristic::new(perf, objective)));
    if opts.ilp.learned_start {
        exact = exact.with_start(Box::new(
            learned::LearnedScheduler::new(perf, objective, learned_net(perf, opts)?)
                .with_samples(opts.learned.samples, opts.seed),
        ));
    }
    let window = WindowedIlp::new(exact, perf, objective, opts.ilp.max_jobs);
    let backfilled = Backfill::new(Box::new(window), perf, objective);
    Ok(Box::new(cpumem::WithTiers {
        inner: Box::new(Revisit::new(Box::new(backfilled), opts.ilp.revisit_rounds)),
        perf,
        rule: cpumem::TierRule::Greedy,
        joint: true,
    }))
}

/// `learned`, `learned-rl` (the shipped weights refined by RL, unless weights are given) and
/// `learned-packer` (level 1 with the baselines' consolidated placement: the ablation of level
/// 2), back-filled as the `ilp` policy is, tiers chosen by the policy's tier head when its
/// weights have one and handed out by the greedy rule otherwise.
fn learned_policy<'a>(
    kind: PolicyKind,
    perf: &'a dyn PerfModel,
    opts: &PolicyOptions,
) -> Result<Box<dyn Scheduler + 'a>> {
    let net = match (kind, &opts.learned.weights) {
        (PolicyKind::LearnedRl, None) => {
            learned::LearnedScheduler::shipped_rl(perf, opts.objective)?
                .net()
                .clone()
        }
        _ => learned_net(perf, opts)?,
    };
    let placer = if kind == PolicyKind::LearnedPacker {
        learned::Placer::Packer
    } else {
        learned::Placer::Learned
    };
    Ok(deployed_learned(perf, opts, net, placer))
}

/// The learned policy of weights `net` as `learned` deploys them (`opts.learned`'s decodings
/// drawn from `opts.seed`, its local search), back-filled, tiers chosen by the tier head when
/// `net` has one and handed out by the greedy rule otherwise: what `coda simulate` replays,
/// and what RL validates weights held in memory by.
pub(crate) fn deployed_learned<'a>(
    perf: &'a dyn PerfModel,
    opts: &PolicyOptions,
    net: learned::PolicyNet,
    placer: learned::Placer,
) -> Box<dyn Scheduler + 'a> {
    // With a tier head, the policy chooses tiers itself (it sees them); without, it places at
    // the demand and the rule hands them out.
    let joint = net.tier.is_some();
    let policy = learned::LearnedScheduler::new(perf, opts.objective, net)
        .with_placer(placer)
        .with_samples(opts.learned.samples, opts.seed)
        .with_grow(opts.learned.grow);
    // GPUs the policy leaves idle while jobs wait are filled under the same pricing.
    Box::new(cpumem::WithTiers {
        inner: Box::new(Backfill::new(Box::new(policy), perf, opts.objective)),
        perf,
        rule: cpumem::TierRule::Greedy,
        joint,
    })
}

/// The learned policy's weights: [`LearnedOptions::weights`], or the shipped ones.
fn learned_net(perf: &dyn PerfModel, opts: &PolicyOptions) -> Result<learned::PolicyNet> {
    Ok(match &opts.learned.weights {
        Some(path) => learned::PolicyNet::load(path)?,
        None => learned::LearnedScheduler::shipped(perf, opts.objective)?
            .net()
            .clone(),
    })
}

/// A policy that first checks the snapshot it is handed, as an instance file is checked
/// ([`ClusterSnapshot::check`]): a snapshot built in code with NaN work, duplicate ids or a job
/// no server can host is an error naming the field, never a panic or a schedule of nonsense.
struct Checked<'a>(Box<dyn Scheduler + 'a>);

impl Scheduler for Checked<'_> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule> {
        snapshot.check(&format!("policy `{}`: its snapshot", self.0.name()))?;
        self.0.schedule(snapshot)
    }

    fn keeps_when_none_wait(&self) -> bool {
        self.0.keeps_when_none_wait()
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        self.0.take_events()
    }
}
