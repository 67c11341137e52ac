//! Reinforcement learning's half that needs no training backend: episodes, rollouts of the
//! learned policy in the simulator's environment, per-level rewards and advantages. The
//! gradient step lives in `train::rl` (behind the `train` feature).
//!
//! **Rewards.** Level 1 (how many resources each job gets, or none) is rewarded for average job
//! completion time: a round's reward is minus the job-hours its snapshot's jobs spend in the
//! system until the next round (until their finish, if sooner), so an episode's return is minus
//! the total time in system of its jobs, up to the arrivals' own time before their first round,
//! which no decision changes. Level 2 (where the tasks go) is rewarded for what placement
//! controls: per job placed, its speed in context (co-runners, PCIe switches, NIC) divided by
//! the speed of the same allocation packed alone — the placement efficiency.
//!
//! **Baselines** (variance reduction without a learned critic, as Decima does): every episode
//! is rolled out several times with different sampling seeds; a round's level-1 baseline is the
//! mean return of the *other* rollouts of the same episode from the same time on (the job
//! arrival sequence is the input the baseline depends on). Level 2's baseline is the batch's
//! mean efficiency.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::learn::examples::{ChoiceExample, PlaceExample};
use crate::model::{Cluster, ClusterSnapshot, Job};
use crate::objective::Objective;
use crate::perf::{self, PerfModel};
use crate::policies::back_fill;
use crate::policies::learned::{LearnedScheduler, PolicyNet, Sampled};
use crate::sim::{SimConfig, Simulator, Unplaceable};

/// How long an episode runs after its last arrival, seconds: two days, several times the
/// average completion time of every policy on the shipped traces (a setting).
pub(crate) const EPISODE_TAIL_S: f64 = 2.0 * 86_400.0;

/// One workload on one cluster: what a rollout replays.
#[derive(Debug, Clone)]
pub struct Episode {
    /// Where it comes from (trace, window, cluster).
    pub name: String,
    /// The cluster.
    pub cluster: Cluster,
    /// The jobs, arrivals from 0.
    pub jobs: Vec<Job>,
    /// The simulator's settings (contention allowance measured for this episode).
    pub config: SimConfig,
}

/// Where episodes' jobs come from: a named pool of jobs (trace order) and the cluster they run
/// on.
#[derive(Debug, Clone, Copy)]
pub struct JobPool<'p> {
    /// A name for the episodes (`{name}[{start}..{end}]`).
    pub name: &'p str,
    /// The jobs, in trace order.
    pub jobs: &'p [Job],
    /// The cluster.
    pub cluster: &'p Cluster,
}

impl Episode {
    /// Jobs `window` of `pool` (trace order, the window clipped to the pool) on its cluster,
    /// arrivals shifted to begin at 0; the contention allowance is measured as `coda compare`
    /// measures it (a FIFO replay of the same jobs); jobs the cluster can never run are left
    /// out. The run stops two days (`EPISODE_TAIL_S`) after the last arrival (jobs left count to then): a
    /// poor sampled policy cannot make an episode, and an iteration, arbitrarily long.
    pub fn window(
        pool: JobPool<'_>,
        window: std::ops::Range<usize>,
        perf: &dyn PerfModel,
        objective: Objective,
    ) -> Result<Self> {
        let JobPool {
            name,
            jobs: pool,
            cluster,
        } = pool;
        let start = window.start;
        let end = window.end.min(pool.len());
        if start >= end {
            return Err(Error::setting(
                "episode",
                "window",
                format!("{start}..{end} of {}", pool.len()),
                "a non-empty window of the job pool",
            ));
        }
        let t0 = pool[start].arrival_s;
        let jobs: Vec<Job> = pool[start..end]
            .iter()
            .map(|j| Job {
                arrival_s: j.arrival_s - t0,
                ..j.clone()
            })
            .collect();
        let base = SimConfig {
            objective,
            unplaceable: Unplaceable::Skip,
            ..SimConfig::default()
        };
        let allowance =
            crate::sim::contention_allowance(perf, base, cluster.clone(), jobs.clone())?;
        let last = jobs.iter().map(|j| j.arrival_s).fold(0.0, f64::max);
        Ok(Episode {
            name: format!("{name}[{start}..{end}]"),
            cluster: cluster.clone(),
            jobs,
            config: SimConfig {
                contention_allowance: allowance,
                horizon_s: last + EPISODE_TAIL_S,
                ..base
            },
        })
    }

    /// A simulator at the episode's start: its cluster, jobs and settings.
    pub fn simulator<'p>(&self, perf: &'p dyn PerfModel) -> Result<Simulator<'p>> {
        Simulator::builder(perf, self.cluster.clone(), self.jobs.clone())
            .config(self.config)
            .build()
    }
}

/// One round of a rollout: what was sampled and what it earned.
#[derive(Debug, Clone)]
pub struct RoundSample {
    /// The round's time, seconds from the episode's start.
    pub time_s: f64,
    /// Level 1: the round's rows and, as targets, the rows sampled.
    pub choice: ChoiceExample,
    /// Level 2: each step's candidates and, as target, the server sampled.
    pub steps: Vec<PlaceExample>,
    /// Per step, the placement efficiency of the job it placed.
    pub efficiency: Vec<f64>,
    /// Level-1 reward: minus the job-hours in the system until the next round.
    pub reward: f64,
}

/// A whole episode under the sampling policy.
#[derive(Debug, Clone)]
pub struct Rollout {
    /// The rounds, in time order.
    pub rounds: Vec<RoundSample>,
    /// Average completion time of the episode's jobs, hours (unfinished ones counted to the
    /// end of the run).
    pub avg_jct_h: f64,
    /// Jobs finished, and jobs in the run.
    pub finished: (usize, usize),
}

/// How a rollout decodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decoding {
    /// Sampled from both levels at this temperature, seeded.
    Sample {
        /// `softmax(scores / temperature)`.
        temperature: f32,
        /// Seed of the draws.
        seed: u64,
    },
    /// The argmax (the samples recorded are the greedy choices).
    Greedy,
}

/// The policy with weights `net` replays `episode`, decoding as `decoding` says, back-filled
/// as the `learned` policy is; every round's samples and rewards are kept.
pub fn rollout(
    perf: &dyn PerfModel,
    objective: Objective,
    net: &PolicyNet,
    episode: &Episode,
    decoding: Decoding,
) -> Result<Rollout> {
    let mut sim = episode.simulator(perf)?;
    let (temperature, seed) = match decoding {
        Decoding::Sample { temperature, seed } => (temperature, seed),
        Decoding::Greedy => (1.0, 0),
    };
    let policy = LearnedScheduler::new(perf, objective, net.clone()).with_temperature(temperature);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rounds = Vec::new();
    while let Some(snap) = sim.next_round()? {
        let snap = snap.clone();
        let (schedule, sampled) = match decoding {
            Decoding::Greedy => policy.sample_greedy(&snap),
            Decoding::Sample { .. } => policy.sample(&snap, rng.random()),
        };
        let (schedule, _) = back_fill(perf, objective, &snap, schedule)?;
        // Only level 2's steps read efficiencies: a round without one skips the pricing.
        let efficiency = if sampled.steps.is_empty() {
            Vec::new()
        } else {
            perf::placement_efficiencies(perf, &snap, &schedule)?
        };
        let out = sim.apply(&schedule)?;
        rounds.push(round_sample(
            &snap,
            sampled,
            &efficiency,
            -out.hours_in_system(&snap),
        ));
    }
    let (avg_jct_h, finished) = episode_jct(&sim);
    Ok(Rollout {
        rounds,
        avg_jct_h,
        finished,
    })
}

/// A finished episode's average completion time, hours (jobs never placeable left out,
/// unfinished ones counted to the end of the run), and its jobs finished and in the run: how
/// rollouts and validation count an episode.
pub fn episode_jct(sim: &Simulator<'_>) -> (f64, (usize, usize)) {
    let end = sim.now();
    let mut total = 0.0;
    let mut finished = 0;
    let mut n = 0;
    for r in sim.records() {
        if sim.unplaceable().iter().any(|u| u.0 == r.id) {
            continue;
        }
        n += 1;
        if r.finish_s.is_some() {
            finished += 1;
        }
        total += r.finish_s.unwrap_or(end) - r.arrival_s;
    }
    let avg = if n > 0 {
        total / n as f64 / 3600.0
    } else {
        0.0
    };
    (avg, (finished, n))
}

/// The policy with weights `net` replays `episode` as the `learned` policy is deployed
/// (`samples` decodings a round drawn from `seed`, the best under `objective`, back-filled,
/// tiers handed out: [`crate::policies::PolicyKind::build`]'s `learned` with these weights); its
/// average completion time, hours, counted as [`rollout`] counts it. Unlike a greedy rollout,
/// this is the policy a replay judges.
pub fn replay_deployed(
    perf: &dyn PerfModel,
    objective: Objective,
    net: &PolicyNet,
    episode: &Episode,
    samples: usize,
    seed: u64,
) -> Result<f64> {
    let mut sim = episode.simulator(perf)?;
    let opts = crate::policies::PolicyOptions {
        seed,
        objective,
        learned: crate::policies::LearnedOptions {
            samples,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut policy = crate::policies::deployed_learned(
        perf,
        &opts,
        net.clone(),
        crate::policies::learned::Placer::Learned,
    );
    sim.run(policy.as_mut())?;
    Ok(episode_jct(&sim).0)
}

fn round_sample(
    snap: &ClusterSnapshot,
    sampled: Sampled,
    efficiency: &[(crate::model::JobId, f64)],
    reward: f64,
) -> RoundSample {
    let eff_of = |j: usize| {
        efficiency
            .iter()
            .find(|e| e.0 == snap.jobs[j].id)
            .map_or(1.0, |e| e.1)
    };
    let effs = sampled.steps.iter().map(|s| eff_of(s.job)).collect();
    RoundSample {
        time_s: snap.time_s,
        choice: ChoiceExample {
            jobs: sampled.jobs,
            candidates: sampled.candidates,
            targets: sampled.chosen.into_iter().map(Some).collect(),
        },
        steps: sampled
            .steps
            .into_iter()
            .map(|s| PlaceExample {
                rows: s.rows,
                target: s.chosen,
            })
            .collect(),
        efficiency: effs,
        reward,
    }
}

/// Level-1 advantages of a group of rollouts of the same episode: per rollout, per round, the
/// discounted return from that round on minus the mean return of the other rollouts from the
/// same time on (0 for a rollout already over then). `gamma` discounts per round.
pub fn advantages(group: &[Rollout], gamma: f64) -> Vec<Vec<f64>> {
    let returns: Vec<Vec<f64>> = group
        .iter()
        .map(|r| discounted_returns(r, 1.0, gamma))
        .collect();
    let at = |k: usize, t: f64| -> f64 {
        let i = group[k].rounds.partition_point(|r| r.time_s < t - 1e-6);
        returns[k].get(i).copied().unwrap_or(0.0)
    };
    group
        .iter()
        .enumerate()
        .map(|(k, r)| {
            r.rounds
                .iter()
                .enumerate()
                .map(|(i, round)| {
                    let others: Vec<f64> = (0..group.len())
                        .filter(|&o| o != k)
                        .map(|o| at(o, round.time_s))
                        .collect();
                    let base = if others.is_empty() {
                        0.0
                    } else {
                        others.iter().sum::<f64>() / others.len() as f64
                    };
                    returns[k][i] - base
                })
                .collect()
        })
        .collect()
}

/// Per round of `rollout`, the return from that round on: the rewards, each divided by `scale`,
/// discounted by `gamma` per round.
pub(crate) fn discounted_returns(rollout: &Rollout, scale: f64, gamma: f64) -> Vec<f64> {
    let mut g = vec![0.0; rollout.rounds.len()];
    let mut acc = 0.0;
    for (i, round) in rollout.rounds.iter().enumerate().rev() {
        acc = round.reward / scale + gamma * acc;
        g[i] = acc;
    }
    g
}

/// Generalised advantage estimation (Schulman et al., 2016) over one rollout's rounds:
/// `rewards[t]` and the critic's `values[t]` (the value after the last round is 0: the episode
/// has ended, nothing is left to earn). Returns per round the advantage
/// `Σ_l (γλ)^l δ_{t+l}` with `δ_t = r_t + γ V_{t+1} − V_t`, and the λ-return `A_t + V_t` the
/// critic is fitted to. `λ = 1` is the discounted return minus the value; `λ = 0` the one-step
/// temporal difference.
pub fn gae(rewards: &[f64], values: &[f64], gamma: f64, lambda: f64) -> (Vec<f64>, Vec<f64>) {
    let n = rewards.len().min(values.len());
    let mut adv = vec![0.0; n];
    let mut acc = 0.0;
    for t in (0..n).rev() {
        let next = if t + 1 < n { values[t + 1] } else { 0.0 };
        let delta = rewards[t] + gamma * next - values[t];
        acc = delta + gamma * lambda * acc;
        adv[t] = acc;
    }
    let ret = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    (adv, ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout_of(times: &[f64], rewards: &[f64]) -> Rollout {
        Rollout {
            rounds: times
                .iter()
                .zip(rewards)
                .map(|(&t, &r)| RoundSample {
                    time_s: t,
                    choice: ChoiceExample {
                        jobs: vec![],
                        candidates: vec![],
                        targets: vec![],
                    },
                    steps: vec![],
                    efficiency: vec![],
                    reward: r,
                })
                .collect(),
            avg_jct_h: 0.0,
            finished: (0, 0),
        }
    }

    #[test]
    fn advantages_are_returns_minus_the_other_rollouts_returns_at_the_same_time() {
        let a = rollout_of(&[0.0, 300.0, 600.0], &[-1.0, -2.0, -3.0]);
        let b = rollout_of(&[0.0, 300.0], &[-1.0, -1.0]);
        let adv = advantages(&[a, b], 1.0);
        // a's returns: -6, -5, -3; b's: -2, -1 (and 0 once over).
        assert_eq!(adv[0], vec![-6.0 + 2.0, -5.0 + 1.0, -3.0 - 0.0]);
        assert_eq!(adv[1], vec![-2.0 + 6.0, -1.0 + 5.0]);
        // Alone, no baseline; discounting per round.
        let c = rollout_of(&[0.0, 300.0], &[-1.0, -1.0]);
        assert_eq!(advantages(&[c], 0.5), vec![vec![-1.5, -1.0]]);
    }

    #[test]
    fn gae_spans_one_step_differences_and_discounted_returns() {
        let (r, v) = ([-1.0, -2.0, -4.0], [-3.0, -5.0, -1.0]);
        // λ = 1: discounted returns (γ = 0.5: -3, -4, -4) minus the values.
        let (adv, ret) = gae(&r, &v, 0.5, 1.0);
        assert_eq!(adv, vec![0.0, 1.0, -3.0]);
        assert_eq!(ret, vec![-3.0, -4.0, -4.0]);
        // λ = 0: one-step differences r + γ V' − V (the last round has no next value).
        let (adv, ret) = gae(&r, &v, 0.5, 0.0);
        assert_eq!(adv, vec![-1.0 - 2.5 + 3.0, -2.0 - 0.5 + 5.0, -4.0 + 1.0]);
        assert_eq!(ret, vec![-3.5, -2.5, -4.0]);
        // A critic that is exact leaves no advantage at any λ.
        let (adv, _) = gae(&r, &[-3.0, -4.0, -4.0], 0.5, 0.7);
        assert!(adv.iter().all(|a| a.abs() < 1e-12), "{adv:?}");
    }
}
