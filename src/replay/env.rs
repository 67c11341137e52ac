//! The simulator as a step-by-step environment, one decision per step, as the hierarchical policy
//! makes them (the Python package's `coda.ClusterEnv`, registered as `coda/Cluster-v0`).
//!
//! Each round ([`Simulator::next_round`](crate::sim::Simulator::next_round)) is decided in three kinds of step, every one a choice
//! among `slots` padded slots with a mask of the valid ones:
//! 1. **pick** — which job level 1 decides next: slot `i` is the `i`-th undecided job of the
//!    round (snapshot order, the first `slots - 1` shown), the last slot ends the round's level 1
//!    (every job not picked waits). The order jobs are picked in is the order they are placed in.
//! 2. **option** — the picked job's allocation: slot `k` is its `k`-th option (workers, PS,
//!    mode, GPU type; the program's `y_jk` list), the last slot is wait. Asked again when the
//!    option chosen cannot be placed (its fallback), with the options tried and those whose GPU
//!    type has fewer GPUs free than they need masked.
//! 3. **place** — level 2: the server that takes the job's next workers, among the candidates
//!    ([`crate::policies::learned::Candidates`]).
//!
//! A step with only one possible answer — a fallback with no option left that fits (wait), a
//! placement with one candidate — is a forced move, made without asking.
//!
//! The steps drive the learned policy's own decoding (`LearnedScheduler::place_by`): keep
//! pass, selection, largest first, fallbacks, masks and the shared packer — so every schedule
//! is valid whatever the actions, and the policy's greedy answers ([`GymOptions::hints`])
//! reproduce `coda simulate --policy learned --policy-samples 1`. The round's schedule is
//! back-filled as every coda policy's is ([`GymOptions::backfill`]), then applied
//! ([`Simulator::apply`](crate::sim::Simulator::apply)). One decoding per round: the sampled proposals the `learned` policy
//! compares by default (`--policy-samples 8`) are not an agent's to make. Jobs decide at their
//! demand (`cpu_mem` `fixed`): tiers are not offered.
//!
//! Observations: `slots × OBS_WIDTH` values; a slot holds the level-1 features of a job (pick),
//! of an option or wait row (option, [`crate::policies::learned::features::L1_WIDTH`]), or a
//! candidate server's level-2 row (place), padded with zeros, and the step's kind one-hot in the
//! last three columns. Rewards as `coda train rl` gives them ([`crate::learn::rl`]), paid at
//! the step that ends a round: minus the job-hours spent in the system until the next round
//! ([`Reward::Jct`]; an episode's return is minus the total time in system), or the placement
//! efficiency of every job level 2 placed ([`Reward::Efficiency`]).
//!
//! The episode runs on its own thread: the decoding asks the caller through a channel and waits
//! for the answer, so the decoding is one function for the policy and for the agent.

use std::sync::mpsc::{Receiver, RecvError, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{Replay, ReplayRun};
use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, JobId, Schedule};
use crate::objective::{Objective, RoundPricing};
use crate::perf::{self, CalibratedPerf, PerfModel};
use crate::policies::back_fill;
use crate::policies::learned::features::{self, L1_WIDTH, Level1Rows, PLACE_FEATURES};
use crate::policies::learned::{Allocation, Chooser, LearnedScheduler, Placer, PolicyNet, argmax};
use crate::workload::trace::CpuMemMode;

/// Values per observation slot: the widest row (a level-1 option row) and the step's kind.
pub const OBS_WIDTH: usize = L1_WIDTH + 3;

/// The kind of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Which job level 1 decides next (last slot: the rest wait).
    Pick = 0,
    /// The picked job's option (last slot: wait).
    Option = 1,
    /// The server for the job's next workers.
    Place = 2,
}

/// What a round's decision earns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reward {
    /// Minus the job-hours the round's jobs spend in the system until the next round.
    #[default]
    Jct,
    /// The placement efficiency (speed in context ÷ packed alone) summed over the jobs level 2
    /// placed in the round.
    Efficiency,
}

/// The environment's own settings (the replay's are a [`Replay`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GymOptions {
    /// Slots per step: the action space's size.
    pub slots: usize,
    /// The reward.
    pub reward: Reward,
    /// Back-fill each round's schedule as the `learned` policy is.
    pub backfill: bool,
    /// Give every step the shipped (or [`super::PolicySpec::policy_weights`]) policy's greedy
    /// answer.
    pub hints: bool,
}

impl Default for GymOptions {
    fn default() -> Self {
        GymOptions {
            slots: 512,
            reward: Reward::Jct,
            backfill: true,
            hints: false,
        }
    }
}

/// One decision asked of the agent.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The kind of step.
    pub phase: Phase,
    /// The job it is about (pick: none).
    pub job: Option<JobId>,
    /// The first `obs.len() / OBS_WIDTH` slots' values, row after row, the step's kind
    /// one-hot in each row's last three; the slots after them are zeros but for that one-hot.
    pub obs: Vec<f32>,
    /// Which slots are valid actions.
    pub mask: Vec<bool>,
    /// The policy's greedy answer, with [`GymOptions::hints`].
    pub hint: Option<usize>,
    /// Simulated time of the round, seconds.
    pub time_s: f64,
}

/// What a step led to.
pub struct Step {
    /// The next decision; `None` when the episode is over.
    pub ask: Option<Ask>,
    /// Reward earned since the previous step.
    pub reward: f64,
    /// The finished replay (metrics and per-job records), at the end.
    pub done: Option<Box<ReplayRun>>,
}

enum Event {
    Ask(Ask),
    Reward(f64),
    Done(Box<ReplayRun>),
    Failed(Error),
}

/// A running episode: the simulator on its thread, waiting for the next action.
pub struct GymEpisode {
    actions: Sender<usize>,
    events: Receiver<Event>,
    /// The current step's kind and mask.
    current: Option<(Phase, Vec<bool>)>,
}

impl GymEpisode {
    /// Loads the workload and starts the episode; returns it with its first decision.
    pub fn start(spec: Replay, opts: GymOptions) -> Result<(Self, Step)> {
        spec.check("env")?;
        if spec.workload.cpu_mem != CpuMemMode::Fixed {
            return Err(Error::setting(
                "env",
                "cpu_mem",
                "fungible",
                "the environment decides GPUs at the jobs' demand: `fixed`",
            ));
        }
        if opts.slots < 2 {
            return Err(Error::setting("env", "slots", opts.slots, "at least 2"));
        }
        let (actions, inbox) = channel();
        let (outbox, events) = channel();
        std::thread::spawn(move || {
            if let Err(e) = episode(&spec, &opts, &outbox, &inbox) {
                // A closed channel means the caller is gone: nobody to tell.
                let _ = outbox.send(Event::Failed(e));
            }
        });
        let mut ep = GymEpisode {
            actions,
            events,
            current: None,
        };
        let first = ep.collect()?;
        Ok((ep, first))
    }

    /// The valid slots of the decision being asked.
    pub fn mask(&self) -> Option<&[bool]> {
        self.current.as_ref().map(|c| c.1.as_slice())
    }

    /// Answers the current decision with slot `action` (a masked slot is an error that
    /// changes nothing) and runs to the next decision.
    pub fn step(&mut self, action: usize) -> Result<Step> {
        let Some((phase, mask)) = &self.current else {
            return Err(Error::setting(
                "env",
                "action",
                action,
                "the episode is over",
            ));
        };
        if !mask.get(action).copied().unwrap_or(false) {
            return Err(Error::setting(
                "env",
                "action",
                action,
                format!("not a valid slot of this {phase:?} step (action_masks() says which are)"),
            ));
        }
        self.actions
            .send(action)
            .map_err(|_| Error::setting("env", "action", action, "the episode stopped"))?;
        self.collect()
    }

    /// Events up to the next decision or the end, rewards summed.
    fn collect(&mut self) -> Result<Step> {
        let mut reward = 0.0;
        loop {
            let event = recv(&self.events).map_err(|_| {
                Error::setting("env", "episode", "", "its thread ended without a result")
            })?;
            match event {
                Event::Reward(r) => reward += r,
                Event::Ask(a) => {
                    self.current = Some((a.phase, a.mask.clone()));
                    return Ok(Step {
                        ask: Some(a),
                        reward,
                        done: None,
                    });
                }
                Event::Done(replay) => {
                    self.current = None;
                    return Ok(Step {
                        ask: None,
                        reward,
                        done: Some(replay),
                    });
                }
                Event::Failed(e) => {
                    self.current = None;
                    return Err(e);
                }
            }
        }
    }
}

/// How long a side of the channel polls before it sleeps: the other side usually answers
/// within it (a step's work is tens of microseconds), and waking a sleeping thread costs more
/// than the step (measured: 250 µs a step sleeping, see `benches/results/python`).
const SPIN: Duration = Duration::from_micros(200);

/// The next message, polled for [`SPIN`] before blocking.
fn recv<T>(rx: &Receiver<T>) -> std::result::Result<T, RecvError> {
    let start = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Disconnected) => return Err(RecvError),
            Err(TryRecvError::Empty) if start.elapsed() > SPIN => return rx.recv(),
            Err(TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
}

/// The episode's thread: every round decided by the agent, back-filled, applied.
fn episode(
    spec: &Replay,
    opts: &GymOptions,
    outbox: &Sender<Event>,
    inbox: &Receiver<usize>,
) -> Result<()> {
    let perf: &'static CalibratedPerf = CalibratedPerf::shipped();
    let objective = spec.objective("env")?;
    let workload = spec.workload(perf)?;
    let allowance = spec.allowance(&workload, perf)?;
    let mut sim = spec.simulator(&workload, allowance, perf)?;
    let net = match &spec.policy.policy_weights {
        Some(p) => PolicyNet::load(p)?,
        None => LearnedScheduler::shipped(perf, objective)?.net().clone(),
    };
    let policy = LearnedScheduler::new(perf, objective, net);
    let mut agent = Agent {
        outbox,
        inbox,
        opts,
        policy: &policy,
        time_s: 0.0,
        broken: false,
    };
    let t = Instant::now();
    while let Some(snap) = sim.next_round()? {
        let snap = snap.clone();
        let (schedule, placed) = agent.decide(perf, objective, &snap)?;
        let schedule = if opts.backfill {
            back_fill(perf, objective, &snap, schedule)?.0
        } else {
            schedule
        };
        let efficiency = match opts.reward {
            Reward::Efficiency if !placed.is_empty() => {
                perf::placement_efficiencies(perf, &snap, &schedule)?
            }
            _ => Vec::new(),
        };
        let out = sim.apply(&schedule)?;
        let reward = match opts.reward {
            Reward::Jct => -out.hours_in_system(&snap),
            // Only the jobs of the schedule (a plan level 2 gave up on placed nothing).
            Reward::Efficiency => placed
                .iter()
                .filter_map(|&j| {
                    let id = snap.jobs[j].id;
                    efficiency.iter().find(|e| e.0 == id).map(|e| e.1)
                })
                .sum(),
        };
        if outbox.send(Event::Reward(reward)).is_err() {
            return Ok(());
        }
    }
    let wall = t.elapsed().as_secs_f64();
    let replay = spec.finish(
        "env",
        &workload,
        &sim,
        wall,
        &crate::scheduler::RoundEvents::default(),
    );
    let _ = outbox.send(Event::Done(Box::new(replay)));
    Ok(())
}

/// The agent's side of the channel, and the policy that gives the hints.
struct Agent<'a> {
    outbox: &'a Sender<Event>,
    inbox: &'a Receiver<usize>,
    opts: &'a GymOptions,
    policy: &'a LearnedScheduler<'a>,
    time_s: f64,
    /// Set when the caller went away mid-round: every later answer is "wait".
    broken: bool,
}

impl Agent<'_> {
    /// Asks one decision; `None` when the caller is gone.
    fn ask(
        &mut self,
        phase: Phase,
        job: Option<JobId>,
        rows: &[&[f32]],
        mask: Vec<bool>,
        hint: Option<usize>,
    ) -> Option<usize> {
        if self.broken {
            return None;
        }
        // Only the rows given are sent: the caller pads (a step's cost then does not grow
        // with the slots).
        let used = rows.len().min(self.opts.slots);
        let mut obs = vec![0.0f32; used * OBS_WIDTH];
        let hot = L1_WIDTH + phase as usize;
        for (i, r) in rows.iter().enumerate().take(used) {
            let n = r.len().min(L1_WIDTH);
            obs[i * OBS_WIDTH..i * OBS_WIDTH + n].copy_from_slice(&r[..n]);
            obs[i * OBS_WIDTH + hot] = 1.0;
        }
        let ask = Ask {
            phase,
            job,
            obs,
            mask,
            hint: if self.opts.hints { hint } else { None },
            time_s: self.time_s,
        };
        if self.outbox.send(Event::Ask(ask)).is_err() {
            self.broken = true;
            return None;
        }
        match recv(self.inbox) {
            Ok(a) => Some(a),
            Err(_) => {
                self.broken = true;
                None
            }
        }
    }

    /// An option step for job `j`, the options `allowed` refuses masked; `None`: wait. `hint`:
    /// the policy's answer (`Some(None)`: wait), with hints on. A step whose only valid slot is
    /// wait is not asked (a forced move).
    fn option(
        &mut self,
        rows: &Level1Rows,
        snap: &ClusterSnapshot,
        j: usize,
        allowed: &dyn Fn(usize) -> bool,
        hint: Option<Option<usize>>,
    ) -> Option<usize> {
        let slots = self.opts.slots;
        let (wait, options) = rows.candidates[j]
            .split_last()
            .expect("every job has a wait row");
        let shown = options.len().min(slots - 1);
        let mut mask: Vec<bool> = (0..slots - 1).map(|k| k < shown && allowed(k)).collect();
        if !mask.iter().any(|&m| m) {
            return None;
        }
        mask.push(true);
        let mut r: Vec<&[f32]> = options[..shown].iter().map(Vec::as_slice).collect();
        r.resize(slots - 1, &[]);
        r.push(wait);
        // An option beyond the slots shown cannot be hinted.
        let hint = hint.and_then(|h| match h {
            Some(k) => (k < shown).then_some(k),
            None => Some(slots - 1),
        });
        let a = self.ask(Phase::Option, Some(snap.jobs[j].id), &r, mask, hint)?;
        (a < shown).then_some(a)
    }

    /// One round: pick and option steps, then the decoding with fallbacks and level 2 asked.
    /// Returns the schedule and the jobs level 2 placed.
    fn decide(
        &mut self,
        perf: &dyn PerfModel,
        objective: Objective,
        snap: &ClusterSnapshot,
    ) -> Result<(Schedule, Vec<usize>)> {
        self.time_s = snap.time_s;
        let pricing = RoundPricing::new(perf, snap, objective);
        let rows = features::level1(&pricing);
        let alloc = self.opts.hints.then(|| {
            Allocation::of_logits(
                &self
                    .policy
                    .net()
                    .level1_logits(&rows.jobs, &rows.candidates),
            )
        });
        let n = snap.jobs.len();
        let slots = self.opts.slots;
        let mut decided = vec![false; n];
        let mut first: Vec<Option<usize>> = vec![None; n];
        let mut order = Vec::new();
        loop {
            let window: Vec<usize> = (0..n).filter(|&j| !decided[j]).take(slots - 1).collect();
            if window.is_empty() {
                break;
            }
            // The policy's next job: the likeliest to run of those with a choice left.
            let hint = alloc.as_ref().map(|a| {
                a.order
                    .iter()
                    .find(|&&j| !decided[j] && !a.choices[j].is_empty())
                    .map_or(Some(slots - 1), |j| window.iter().position(|w| w == j))
            });
            let r: Vec<&[f32]> = window.iter().map(|&j| rows.jobs[j].as_slice()).collect();
            let mut mask = vec![false; slots];
            mask[..window.len()].fill(true);
            mask[slots - 1] = true;
            let Some(a) = self.ask(Phase::Pick, None, &r, mask, hint.flatten()) else {
                break;
            };
            if a >= window.len() {
                break;
            }
            let j = window[a];
            decided[j] = true;
            let hint = alloc.as_ref().map(|al| al.choices[j].first().copied());
            first[j] = self.option(&rows, snap, j, &|_| true, hint);
            if first[j].is_some() {
                order.push(j);
            }
        }
        let policy = self.policy;
        let mut chooser = EnvChooser {
            agent: self,
            rows: &rows,
            snap,
            first,
            alloc: alloc.as_ref(),
            placed: Vec::new(),
        };
        let schedule = policy.place_by(&pricing, &order, &mut chooser, Placer::Learned, None);
        let placed = chooser.placed;
        if self.broken {
            return Err(Error::setting("env", "episode", "", "the caller went away"));
        }
        Ok((schedule, placed))
    }
}

/// The agent's answers inside the decoding: first choices from the pick and option steps,
/// fallbacks and servers asked as the decoding reaches them.
struct EnvChooser<'a, 'b> {
    agent: &'a mut Agent<'b>,
    rows: &'a Level1Rows,
    snap: &'a ClusterSnapshot,
    first: Vec<Option<usize>>,
    alloc: Option<&'a Allocation>,
    /// Jobs level 2 was asked about, in order.
    placed: Vec<usize>,
}

impl Chooser for EnvChooser<'_, '_> {
    fn option(&mut self, j: usize, tried: &[usize], fits: &dyn Fn(usize) -> bool) -> Option<usize> {
        if tried.is_empty() {
            return self.first[j];
        }
        // Options tried, and those whose GPUs are not free now, are masked: the policy's
        // decoding passes over the latter without a try, so its next attempt is the first of
        // its remaining choices that fits.
        let allowed = |k: usize| !tried.contains(&k) && fits(k);
        let hint = self
            .alloc
            .map(|a| a.choices[j].iter().copied().find(|&k| allowed(k)));
        self.agent.option(self.rows, self.snap, j, &allowed, hint)
    }

    fn server(&mut self, job: usize, rows: &[f32]) -> usize {
        if !self.placed.contains(&job) {
            self.placed.push(job);
        }
        let slots = self.agent.opts.slots;
        let r: Vec<&[f32]> = rows.chunks(PLACE_FEATURES.len()).take(slots).collect();
        if r.len() == 1 {
            return 0; // one candidate: a forced move, not asked
        }
        let mask = (0..slots).map(|i| i < r.len()).collect();
        let hint = self
            .alloc
            .map(|_| argmax(&self.agent.policy.net().level2_scores(rows)))
            .filter(|&b| b < slots);
        let id = self.snap.jobs[job].id;
        self.agent
            .ask(Phase::Place, Some(id), &r, mask, hint)
            .unwrap_or(0)
    }
}
