//! The hierarchical learned policy: level 1 chooses each job's option (the same `(workers, PS,
//! mode, GPU type)` list the integer program's `y_jk` choose from, or wait), level 2 places the
//! chosen jobs server by server. Both are small networks ([`PolicyNet`]) evaluated in plain Rust.
//!
//! **The networks propose; masks decide what is possible.** Level 1 only tries options whose
//! GPUs are free in the cluster; level 2 only offers servers with room for another worker; the
//! shared [`Packer`](crate::policies::Packer) commits a plan only if every GPU, core and GiB (PS included) is free. So
//! every schedule this policy emits validates, whatever the weights — a property test decodes
//! with random weights to show it.
//!
//! Decoding, one round:
//! 1. Level 1 scores every (job, option) row and the job's wait row; a job's choices are the
//!    options scoring above its wait, best first; jobs are ordered by their probability of
//!    running.
//! 2. A job whose first choice is the option it runs now keeps its exact GPUs if still free.
//! 3. In that order, each job's first choice is selected while its GPU type has that many GPUs
//!    left (a count); the selected jobs are then placed largest first (small jobs placed first
//!    fragment the servers a large one needs), each falling back to its later choices; then the
//!    jobs not yet placed try theirs in level 1's order.
//! 4. Level 2 places a job server by server among candidates ([`Candidates`]: a few servers of
//!    the option's GPU type per free GPU count, and the job's current servers;
//!    servers untouched this round share one row): the first server must keep the option's mode
//!    (`keep_mode`); it takes as many of the remaining workers as fit (a multi-server option
//!    leaves one for another server); GPUs within a server go under PCIe switches no one uses
//!    when there is room ([`GpuChoice::OwnSwitches`](crate::policies::GpuChoice::OwnSwitches)), the PS by the packer's rule. A choice that
//!    cannot be placed falls to the next; a job with none left waits.
//! 5. With samples (the default, [`DEFAULT_SAMPLES`]), steps 1–4 are repeated with level 1's
//!    scores perturbed by seeded Gumbel noise (sampling from its distribution; level 2's too in
//!    every other decoding), three more are made from the greedy scores (waiting jobs offered
//!    their options last; level 2 replaced by the packer; every running job's current option
//!    ranked first, so that staying is always proposed), and the decoding the objective
//!    scores highest is returned — the networks propose, the objective the expert maximises
//!    chooses among the proposals.
//!
//! 6. When asked ([`LearnedScheduler::with_grow`]), from the winning decoding and from the
//!    stay proposal, a local search on the objective (`grow`): while GPUs are idle, jobs are
//!    offered the options the idle GPUs and their own can hold (also after stopping a job that
//!    earns little per GPU), placed by the packer beside everyone else kept where they are,
//!    and the move the objective scores highest is made if it gains. On a lightly loaded
//!    cluster level 1's proposals leave GPUs idle that the exact program would hand out; this
//!    is where they go.
//!
//! 7. On a round whose jobs offer CPU/memory tiers, level 1's tier head (when the weights hold
//!    one) chooses each job's tier for its first choice, and steps 1–6 run twice — at the demand
//!    and at those tiers — the objective keeping the better ([`TierHead`]).
//!
//! Files: this one the scheduler (weights, settings, level 1's scores, the round's decision);
//! `decode` steps 2–5 (`candidates` level 2's servers); `grow` step 6; `features` the three
//! feature sets; `net` the networks, `layers` what they are made of; `tiers` step 7.

mod candidates;
mod choices;
mod decode;
pub mod features;
mod grow;
mod layers;
mod net;
pub(crate) mod tiers;

pub use candidates::{CANDIDATES_PER_BUCKET, Candidates};
use choices::{Choices, Ranked, allocation};
pub(crate) use decode::{Chooser, argmax, keep_mode, plan_of};
use decode::{PlaceState, gumbel};
pub use decode::{Sampled, SampledStep};
pub use grow::GROW_MOVES;
pub use layers::Dense;
#[cfg(feature = "train")]
pub(crate) use layers::{EMBED, HIDDEN};
pub use net::{FORMAT_VERSION, PolicyNet};
pub use tiers::TierHead;

use std::sync::OnceLock;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::Result;
use crate::model::JobPos;
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::{Objective, PricingCache, RoundPricing};
use crate::perf::PerfModel;
use crate::scheduler::Scheduler;

/// The weights shipped in `models/policy.safetensors` (see `models/POLICY.md`): imitation of the
/// exact program.
const SHIPPED: &[u8] = include_bytes!("../../../models/policy.safetensors");

/// The same refined by reinforcement learning on job completion time (`coda train rl`),
/// `models/policy-rl.safetensors`.
const SHIPPED_RL: &[u8] = include_bytes!("../../../models/policy-rl.safetensors");

/// Built-in weights, parsed the first time they are asked for and copied after: a lookahead
/// builds a fresh learned policy for every play of every round.
fn parsed_once(cell: &OnceLock<PolicyNet>, bytes: &[u8], origin: &str) -> Result<PolicyNet> {
    if let Some(net) = cell.get() {
        return Ok(net.clone());
    }
    let net = PolicyNet::from_safetensors(bytes, origin)?;
    Ok(cell.get_or_init(|| net).clone())
}

/// How level 2 places the jobs level 1 sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placer {
    /// The level-2 network.
    Learned,
    /// The consolidated rule of the baselines (best-fitting server, else most room first):
    /// what level 1 is worth on its own.
    Packer,
}

/// Level 1's decision for one round: per job (snapshot order), the options to try, best first
/// (empty: wait), and the order in which jobs are placed.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// Per job, option indices in [`RoundPricing::options`] order.
    pub choices: Vec<Vec<usize>>,
    /// Snapshot indices, first placed first.
    pub order: Vec<usize>,
}

impl Allocation {
    /// Level 1's greedy decision from its logits (per job, one per option, then wait): per job
    /// the options scoring above its wait, best first; jobs ordered by their probability of
    /// running.
    pub fn of_logits(logits: &[Vec<f32>]) -> Self {
        allocation(logits)
    }
}

/// The learned policy as a [`Scheduler`].
#[derive(Clone)]
pub struct LearnedScheduler<'a> {
    perf: &'a dyn PerfModel,
    objective: Objective,
    net: PolicyNet,
    placer: Placer,
    samples: usize,
    seed: u64,
    temperature: f32,
    /// Every job's options, kept from round to round (a waiting job's do not change).
    kept: PricingCache,
    /// Moves of the local search after the proposals (step 6; 0: none).
    grow: usize,
}

/// Decodings per round of a new [`LearnedScheduler`]: the greedy one and seven sampled from
/// level 1's distribution, the best under the objective returned. A setting, not a measured
/// constant (`coda gap` reports greedy and sampled side by side).
pub const DEFAULT_SAMPLES: usize = 8;

impl<'a> LearnedScheduler<'a> {
    /// The policy with the given weights.
    pub fn new(perf: &'a dyn PerfModel, objective: Objective, net: PolicyNet) -> Self {
        LearnedScheduler {
            perf,
            objective,
            net,
            placer: Placer::Learned,
            samples: DEFAULT_SAMPLES,
            seed: 0,
            temperature: 1.0,
            kept: PricingCache::default(),
            grow: 0,
        }
    }

    /// The same policy ending each round with a local search of up to `moves` moves on the
    /// objective (step 6 of the module docs; 0: none, the default — see [`GROW_MOVES`]).
    pub fn with_grow(mut self, moves: usize) -> Self {
        self.grow = moves;
        self
    }

    /// The same policy decoding `samples` times per round (at least once: 1 is greedy only),
    /// the sampled decodings drawn from `seed` and the round's time.
    pub fn with_samples(mut self, samples: usize, seed: u64) -> Self {
        self.samples = samples.max(1);
        self.seed = seed;
        self
    }

    /// The same policy sampling from `softmax(scores / temperature)` at both levels (1: the
    /// networks' own distributions; towards 0: towards greedy). Reinforcement learning explores
    /// at a low temperature: at 1 a round's sampled decisions flip jobs in and out so often that
    /// restarts dominate what the episode measures.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = temperature;
        self
    }

    /// The policy with the shipped weights.
    pub fn shipped(perf: &'a dyn PerfModel, objective: Objective) -> Result<Self> {
        static NET: OnceLock<PolicyNet> = OnceLock::new();
        let net = parsed_once(&NET, SHIPPED, "models/policy.safetensors (built in)")?;
        Ok(Self::new(perf, objective, net))
    }

    /// The policy with the shipped weights refined by reinforcement learning.
    pub fn shipped_rl(perf: &'a dyn PerfModel, objective: Objective) -> Result<Self> {
        static NET: OnceLock<PolicyNet> = OnceLock::new();
        let net = parsed_once(&NET, SHIPPED_RL, "models/policy-rl.safetensors (built in)")?;
        Ok(Self::new(perf, objective, net))
    }

    /// The same policy with another level 2.
    pub fn with_placer(mut self, placer: Placer) -> Self {
        self.placer = placer;
        self
    }

    /// The weights.
    pub fn net(&self) -> &PolicyNet {
        &self.net
    }

    /// Level 1 on a priced round: its logits, per job (options, then wait).
    pub fn logits(&self, pricing: &RoundPricing) -> Vec<Vec<f32>> {
        self.net.level1_logits_flat(&features::level1_flat(pricing))
    }

    /// The jobs of `schedule` (a schedule of `snapshot`, typically this policy's) that level 1
    /// is confident about: its most probable row has probability at least `threshold` and
    /// `schedule` does with the job what that row says (runs it with that option, or leaves it
    /// waiting). What fix-and-solve holds fixed ([`crate::ilp::SolveRequest::fix_then_free`]).
    pub fn confident_jobs(
        &self,
        snapshot: &ClusterSnapshot,
        schedule: &Schedule,
        threshold: f32,
    ) -> Vec<crate::model::JobId> {
        let pricing = RoundPricing::new(self.perf, snapshot, self.objective);
        let logits = self.logits(&pricing);
        let mut out = Vec::new();
        for (j, l) in logits.iter().enumerate() {
            let best = argmax(l);
            let z: f32 = l.iter().map(|x| (x - l[best]).exp()).sum();
            if 1.0 / z < threshold {
                continue;
            }
            let job = &snapshot.jobs[j];
            let row = match schedule.assignment(job.id) {
                Some(a) => pricing.option_index(JobPos(j), &pricing.option_of(JobPos(j), a)),
                None => Some(pricing.options(JobPos(j)).len()),
            };
            if row == Some(best) {
                out.push(job.id);
            }
        }
        out
    }

    /// Level 1's greedy decision on a priced round.
    pub fn allocate(&self, pricing: &RoundPricing) -> Allocation {
        allocation(&self.logits(pricing))
    }

    /// The round's schedule: the greedy decoding and, with samples, decodings from level 1's
    /// distribution (and level 2's, every other one; Gumbel-perturbed scores, seeded); the one
    /// the objective scores highest (the first on ties).
    pub fn decide(&self, snapshot: &ClusterSnapshot) -> Schedule {
        self.kept.keep_only(snapshot);
        // With tiers, level 1 chooses them only through its tier head (`tiers`); levels 1 and
        // 2 decide GPUs on the round without tiers, at the demand or at the chosen tiers.
        if snapshot.jobs.iter().any(|j| !j.tiers.is_empty()) {
            return self.decide_tiered(snapshot);
        }
        self.decide_at(snapshot)
    }

    /// [`LearnedScheduler::decide`] on a round without tiers.
    fn decide_at(&self, snapshot: &ClusterSnapshot) -> Schedule {
        let pricing = RoundPricing::keeping(self.perf, snapshot, self.objective, &self.kept);
        let logits = self.logits(&pricing);
        self.decode(&pricing, &logits)
    }

    /// The decodings of a priced round (see [`LearnedScheduler::decide`]) from level 1's
    /// `logits` on it.
    fn decode(&self, pricing: &RoundPricing, logits: &[Vec<f32>]) -> Schedule {
        let snapshot = pricing.snapshot();
        let ranked = |l| Choices::Ranked(Ranked::new(l));
        // The round before anything is placed, by each placer: copied for every proposal.
        let base = PlaceState::new(pricing, self.perf, self.placer);
        let mut best = self.place_ranked(pricing, &base, ranked(logits), None, None);
        if self.samples <= 1 {
            return best;
        }
        // Every proposal is valid by construction (`place_by`): scored without validating.
        let mut best_score = pricing
            .score_valid(&best)
            .map_or(f64::NEG_INFINITY, |s| s.total);
        // The first proposal the objective scores highest wins (ties keep the earlier one).
        let mut offer = |s: Schedule| {
            let score = pricing
                .score_valid(&s)
                .map_or(f64::NEG_INFINITY, |s| s.total);
            if score > best_score {
                best = s;
                best_score = score;
            }
        };
        // More proposals from the greedy scores: every job level 1 left waiting offered its
        // options too, placed after the others (GPUs left idle go to waiting jobs when the
        // objective gains); and level 1's choices placed by the baselines' packer instead of
        // level 2 (a placement level 2 was not trained to make: on a round unlike its training
        // rounds the packer may place better).
        let filled = Choices::Ranked(Ranked::filled(logits));
        offer(self.place_ranked(pricing, &base, filled, None, None));
        let packer = PlaceState::new(pricing, self.perf, Placer::Packer);
        offer(self.place_ranked(pricing, &packer, ranked(logits), None, None));
        // And one where every running job first chooses what it runs now (kept on its GPUs),
        // the rest as level 1 ranks them: scores of level 1 that flip between rounds otherwise
        // move jobs back and forth whenever no proposal keeps them, although staying scores
        // higher (the restart loss) — frequent with short rounds.
        let mut sticky = logits.to_vec();
        for (j, l) in sticky.iter_mut().enumerate() {
            if let Some(k) = pricing.current_option(JobPos(j)) {
                let top = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                l[k] = top + 1.0;
            }
        }
        let stay = self.place_ranked(pricing, &base, ranked(&sticky), None, None);
        // Kept only for the local search (step 6), which starts from it too.
        let stay = if self.grow > 0 {
            offer(stay.clone());
            Some(stay)
        } else {
            offer(stay);
            None
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ snapshot.time_s.to_bits());
        for sample in 1..self.samples {
            let noisy: Vec<Vec<f32>> = logits
                .iter()
                .map(|l| {
                    l.iter()
                        .map(|x| x + self.temperature * gumbel(&mut rng))
                        .collect()
                })
                .collect();
            // Level 2 sampled in every other decoding only: level 1's choices are explored
            // with level 2 at its best, and jointly.
            let noise = (sample % 2 == 0).then_some(&mut rng);
            let noisy = Choices::Ranked(Ranked::new(&noisy));
            offer(self.place_ranked(pricing, &base, noisy, noise, None));
        }
        // The local search from the best proposal and from the stay proposal (moves from where
        // jobs run, not from where the best proposal moved them); the better result.
        let Some(stay) = stay.filter(|s| *s != best) else {
            return self.grow(pricing, &packer, best, best_score).0;
        };
        let stay_score = pricing
            .score_valid(&stay)
            .map_or(f64::NEG_INFINITY, |s| s.total);
        let grown = self.grow(pricing, &packer, best, best_score);
        let from_stay = self.grow(pricing, &packer, stay, stay_score);
        if from_stay.1 > grown.1 {
            from_stay.0
        } else {
            grown.0
        }
    }

    /// Level 2: places `alloc` (see the module docs); valid by construction.
    pub fn place(&self, pricing: &RoundPricing, alloc: &Allocation) -> Schedule {
        self.place_with(pricing, alloc, self.placer, None, None)
    }

    /// One decoding sampled from both levels' distributions at the policy's temperature
    /// (Gumbel-perturbed scores drawn from `seed`), with what was sampled: the material of a
    /// policy-gradient step. The actions are level 1's first choice per job (a sample of the
    /// softmax over its rows) and level 2's server per placement step (a sample of the softmax
    /// over the candidates); the rest of the decoding (fallbacks, order, masks) is
    /// deterministic given them.
    pub fn sample(&self, snapshot: &ClusterSnapshot, seed: u64) -> (Schedule, Sampled) {
        self.sampled(snapshot, Some(ChaCha8Rng::seed_from_u64(seed)))
    }

    /// The greedy decoding (one, without the samples of [`LearnedScheduler::decide`]), with its
    /// choices recorded as [`LearnedScheduler::sample`] records its samples.
    pub fn sample_greedy(&self, snapshot: &ClusterSnapshot) -> (Schedule, Sampled) {
        self.sampled(snapshot, None)
    }
}

impl Scheduler for LearnedScheduler<'_> {
    fn name(&self) -> &str {
        "learned"
    }

    fn schedule(&mut self, snapshot: &ClusterSnapshot) -> Result<Schedule> {
        Ok(self.decide(snapshot))
    }
}
