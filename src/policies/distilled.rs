//! The distilled policy (`--policy distilled`): the lookahead's choice without its plays.
//!
//! Each round the lookahead (`coda::lookahead`) takes the proposals of six candidates
//! ([`GATE_CANDIDATES`]: the learned policy's decision, the proposal that moves nothing, the
//! learned greedy decoding, Pollux, SRTF, DRF), plays each forward 24 rounds in a copy of the
//! simulator and keeps the cheapest. The distilled policy takes the proposals of the candidates
//! its [`Gate`] may choose (the shipped gate: the first three, which the lookahead keeps in over
//! 97 % of its rounds) and asks the gate instead of playing them: per candidate, boosted
//! regression trees over the round's features ([`GATE_FEATURES`]: what the proposal changes
//! against the learned policy's — objective, contention, restarts, jobs moved, started, resized,
//! spread, GPUs — and the round: queue, demand, free GPUs, what the learned proposal restarts)
//! predict how many job-rounds the candidate's play would save over the learned policy's. The
//! candidate with the largest predicted saving above the gate's margin is kept; otherwise the
//! learned policy's decision is. The proposals cost the learned policy's eight decodings plus one
//! (the greedy one) and the objective's pricing of each; the gate is a few hundred tree lookups.
//!
//! The gate is fitted (`coda distil fit`, `coda::learn::distil`) to the lookahead's plays of
//! the rounds the student visits itself (DAgger: `coda distil plays --student distilled`), on
//! traces the evaluation never sees (`scripts/distil_gate.sh`); `models/distilled.json` is the
//! shipped gate, and its provenance, fit and replays are in `models/POLICY.md`.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::{CANDIDATES, Candidate, PolicyOptions};
use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::{Objective, RoundPricing, same_assignment};
use crate::perf::PerfModel;
use crate::scheduler::{RoundEvent, Scheduler};

/// The candidates the gate chooses among, in order; the first (the learned policy's decision)
/// is what a round keeps unless the gate predicts a saving. The default lookahead's six: the
/// first six of [`CANDIDATES`].
pub const GATE_CANDIDATES: &[Candidate] = CANDIDATES.split_at(6).0;

/// What the gate reads of a round and one candidate's proposal. `d_*`: the proposal's value
/// minus the learned proposal's; `*_share`: per job present (or per GPU for GPUs); the rest
/// describe the round and the learned proposal, the same for every candidate of a round.
pub const GATE_FEATURES: [&str; 21] = [
    "d_utility",
    "d_isolated",
    "d_contention_loss",
    "d_restart_penalty",
    "d_moved_share",
    "d_started_share",
    "d_running_share",
    "d_gpus_share",
    "d_resized_share",
    "d_multi_server_share",
    "log_jobs",
    "waiting_share",
    "demand_ratio",
    "waiting_gpus_over_free",
    "gpus_in_use_share",
    "learned_utility",
    "learned_restart_penalty",
    "learned_moved_share",
    "learned_started_share",
    "learned_gpus_share",
    "learned_multi_server_share",
];

/// What one schedule does to a round, as the gate's features read it.
#[derive(Debug, Clone, Copy, Default)]
struct Effect {
    utility: f64,
    isolated: f64,
    loss: f64,
    restart: f64,
    moved: f64,
    resized: f64,
    started: f64,
    running: f64,
    gpus: f64,
    multi: f64,
}

fn effect(pricing: &RoundPricing, schedule: &Schedule) -> Result<Effect> {
    let snap = pricing.snapshot();
    // The proposals come from checked policies (and the simulator validates what is kept):
    // validating each again would cost a quarter of its pricing, every round.
    let score = pricing.score_valid(schedule)?;
    let mut e = Effect {
        utility: score.total,
        gpus: schedule.gpus_used() as f64,
        running: schedule.assignments.len() as f64,
        multi: schedule
            .assignments
            .iter()
            .filter(|a| a.servers().len() > 1)
            .count() as f64,
        ..Effect::default()
    };
    for s in &score.jobs {
        e.isolated += s.isolated;
        e.loss += s.coloc_loss + s.pcie_loss + s.nic_loss;
        e.restart += s.restart_penalty;
    }
    for job in &snap.jobs {
        let now = job.run.current.as_ref().filter(|a| !a.workers.is_empty());
        match (now, schedule.assignment(job.id)) {
            (Some(c), Some(a)) if same_assignment(c, a) => {}
            (Some(c), Some(a)) => {
                e.moved += 1.0;
                e.resized += f64::from(u8::from(c.workers.len() != a.workers.len()));
            }
            (Some(_), None) => e.moved += 1.0,
            (None, Some(_)) => e.started += 1.0,
            (None, None) => {}
        }
    }
    Ok(e)
}

/// The gate's features of each proposal of a round (`proposals[0]`: the learned policy's), in
/// [`GATE_FEATURES`] order: the rows `coda distil plays` records and the gate reads.
pub fn gate_features(
    perf: &dyn PerfModel,
    objective: Objective,
    snap: &ClusterSnapshot,
    proposals: &[Schedule],
) -> Result<Vec<Vec<f64>>> {
    let pricing = RoundPricing::new(perf, snap, objective);
    let n = snap.jobs.len().max(1) as f64;
    let gpus = snap.cluster.num_gpus().max(1) as f64;
    let requested = |j: &crate::model::Job| f64::from(j.requested_gpus());
    let demand = snap.jobs.iter().fold(0.0, |d, j| d + requested(j));
    let (waiting, waiting_gpus) = snap.waiting();
    let (waiting, waiting_gpus) = (waiting as f64, waiting_gpus as f64);
    let in_use = snap.gpus_in_use() as f64;
    let effects = proposals
        .iter()
        .map(|s| effect(&pricing, s))
        .collect::<Result<Vec<_>>>()?;
    let l = effects.first().copied().unwrap_or_default();
    Ok(effects
        .iter()
        .map(|e| {
            vec![
                e.utility - l.utility,
                e.isolated - l.isolated,
                e.loss - l.loss,
                e.restart - l.restart,
                (e.moved - l.moved) / n,
                (e.started - l.started) / n,
                (e.running - l.running) / n,
                (e.gpus - l.gpus) / gpus,
                (e.resized - l.resized) / n,
                (e.multi - l.multi) / n,
                n.ln_1p(),
                waiting / n,
                demand / gpus,
                waiting_gpus / (gpus - in_use + 1.0),
                in_use / gpus,
                l.utility,
                l.restart,
                l.moved / n,
                l.started / n,
                l.gpus / gpus,
                l.multi / n,
            ]
        })
        .collect())
}

/// One node of a regression tree: a split (`feature` below `threshold` goes `left`, else
/// `right`; indices into the tree's nodes) or, with no feature, a leaf of `value`. In JSON a
/// node writes only the fields of its kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeNode {
    /// The feature split on (an index into [`GATE_FEATURES`]); `None` at a leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<usize>,
    /// Rows whose feature is below this go left.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub threshold: f64,
    /// The left child.
    #[serde(default, skip_serializing_if = "is_zero_index")]
    pub left: usize,
    /// The right child.
    #[serde(default, skip_serializing_if = "is_zero_index")]
    pub right: usize,
    /// A leaf's value.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub value: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_index(x: &usize) -> bool {
    *x == 0
}

/// One candidate's model in the gate: predicted saving (job-rounds over the lookahead's
/// horizon, against the learned proposal's play) = `base` + the sum of its trees' leaves
/// (gradient-boosted regression trees, least squares).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateModel {
    /// The candidate (`keep`, `pollux`...).
    pub candidate: String,
    /// The prediction before any tree.
    pub base: f64,
    /// The trees, each a list of nodes with its root first (leaves already scaled by the
    /// learning rate).
    pub trees: Vec<Vec<TreeNode>>,
}

impl GateModel {
    /// The predicted saving of a proposal with `features`.
    pub fn predict(&self, features: &[f64]) -> f64 {
        self.base
            + self
                .trees
                .iter()
                .map(|t| tree_value(t, features))
                .sum::<f64>()
    }
}

/// The value of the leaf `features` reach in `tree` (the root first).
pub fn tree_value(tree: &[TreeNode], features: &[f64]) -> f64 {
    let mut at = 0;
    // A well-formed tree ends at a leaf within its length; the bound guards a malformed one.
    for _ in 0..tree.len() {
        let Some(node) = tree.get(at) else { return 0.0 };
        match node.feature {
            None => return node.value,
            Some(f) => {
                let x = features.get(f).copied().unwrap_or(0.0);
                at = if x < node.threshold {
                    node.left
                } else {
                    node.right
                };
            }
        }
    }
    0.0
}

/// The distilled policy's gate: one model per candidate it may choose besides the learned
/// policy's decision (some of [`GATE_CANDIDATES`], in that order), and the margin a predicted
/// saving must clear. Only those candidates propose when the policy runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// [`GATE_FEATURES`], as they were when the gate was fitted (checked on load).
    pub features: Vec<String>,
    /// Per candidate the gate may choose, in [`GATE_CANDIDATES`] order (the first, the learned
    /// policy's decision, has none: its saving is 0 by definition).
    pub models: Vec<GateModel>,
    /// A candidate is kept only when its predicted saving exceeds this (job-rounds).
    pub margin: f64,
    /// Where the gate's training rows came from.
    pub trained_on: Vec<String>,
}

/// The shipped gate, `models/distilled.json`.
const SHIPPED: &str = include_str!("../../models/distilled.json");

impl Gate {
    /// The gate in `text` (JSON, from `origin`), its features and candidates checked.
    pub fn from_json(text: &str, origin: &str) -> Result<Self> {
        let gate: Gate = crate::util::json::parse_json(text, origin)?;
        let expected: Vec<String> = GATE_FEATURES.iter().map(|s| s.to_string()).collect();
        if gate.features != expected {
            return Err(Error::invalid(
                origin,
                0,
                "features",
                format!("{:?}", gate.features),
                format!("this build's gate features, {expected:?}"),
            ));
        }
        let names: Vec<&str> = GATE_CANDIDATES[1..].iter().map(|c| c.name()).collect();
        let have: Vec<&str> = gate.models.iter().map(|m| m.candidate.as_str()).collect();
        let at: Vec<Option<usize>> = have
            .iter()
            .map(|h| names.iter().position(|n| n == h))
            .collect();
        if at.iter().any(Option::is_none) || at.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::invalid(
                origin,
                0,
                "models",
                format!("{have:?}"),
                format!("at most one model per candidate, in this order: {names:?}"),
            ));
        }
        for m in &gate.models {
            let n = GATE_FEATURES.len();
            for t in &m.trees {
                let bad = t.is_empty()
                    || t.iter().any(|node| {
                        node.feature.is_some_and(|f| {
                            f >= n || node.left >= t.len() || node.right >= t.len()
                        })
                    });
                if bad {
                    return Err(Error::invalid(
                        origin,
                        0,
                        "models",
                        &m.candidate,
                        format!(
                            "trees whose splits name one of {n} features and nodes of the tree"
                        ),
                    ));
                }
            }
        }
        Ok(gate)
    }

    /// The gate in the JSON file at `path`.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_json(&text, &path.display().to_string())
    }

    /// The shipped gate, parsed once and shared (a lookahead may build a distilled policy for
    /// every play).
    pub fn shipped() -> Result<Arc<Self>> {
        static GATE: OnceLock<Arc<Gate>> = OnceLock::new();
        if let Some(g) = GATE.get() {
            return Ok(g.clone());
        }
        let g = Arc::new(Gate::from_json(
            SHIPPED,
            "models/distilled.json (built in)",
        )?);
        Ok(GATE.get_or_init(|| g).clone())
    }

    /// The candidates that propose: the learned policy's decision, then one per model.
    pub fn candidates(&self) -> Vec<Candidate> {
        let mut out = vec![GATE_CANDIDATES[0]];
        out.extend(self.models.iter().filter_map(|m| {
            GATE_CANDIDATES
                .iter()
                .find(|c| c.name() == m.candidate)
                .copied()
        }));
        out
    }

    /// The candidate to keep (an index into [`Gate::candidates`]) among proposals with
    /// `features` (one row per candidate of [`Gate::candidates`]); `same[k]`: candidate `k`'s
    /// proposal is the learned one's.
    pub fn choose<R: AsRef<[f64]>>(&self, features: &[R], same: &[bool]) -> usize {
        let mut best = (0, self.margin);
        for (k, m) in self.models.iter().enumerate() {
            let k = k + 1;
            if same[k] {
                continue;
            }
            let p = m.predict(features[k].as_ref());
            if p > best.1 {
                best = (k, p);
            }
        }
        best.0
    }
}

/// The distilled policy (see the [module docs](self)).
pub struct Distilled<'a> {
    perf: &'a dyn PerfModel,
    objective: Objective,
    gate: Arc<Gate>,
    proposers: Vec<(Candidate, Box<dyn Scheduler + 'a>)>,
    events: Vec<RoundEvent>,
}

impl<'a> Distilled<'a> {
    /// The policy with `opts` (its gate: [`super::LearnedOptions::gate`], else the shipped one).
    pub fn new(perf: &'a dyn PerfModel, opts: &PolicyOptions) -> Result<Self> {
        let gate = match &opts.learned.gate {
            Some(p) => Arc::new(Gate::from_file(p)?),
            None => Gate::shipped()?,
        };
        let mut proposers = Vec::new();
        for c in gate.candidates() {
            proposers.push((c, c.build(perf, opts)?));
        }
        Ok(Distilled {
            perf,
            objective: opts.objective,
            gate,
            proposers,
            events: Vec::new(),
        })
    }
}

impl Scheduler for Distilled<'_> {
    fn name(&self) -> &str {
        "distilled"
    }

    fn schedule(&mut self, snap: &ClusterSnapshot) -> Result<Schedule> {
        let mut proposals = Vec::with_capacity(self.proposers.len());
        for (_, p) in &mut self.proposers {
            proposals.push(p.schedule(snap)?);
            p.take_events();
        }
        let same: Vec<bool> = proposals
            .iter()
            .map(|s| super::same_schedule(s, &proposals[0]))
            .collect();
        if same.iter().all(|&s| s) {
            return Ok(proposals.swap_remove(0));
        }
        let features = gate_features(self.perf, self.objective, snap, &proposals)?;
        let k = self.gate.choose(&features, &same);
        self.events.push(RoundEvent::Gated {
            chosen: self.proposers[k].0.name(),
        });
        Ok(proposals.swap_remove(k))
    }

    fn take_events(&mut self) -> Vec<RoundEvent> {
        std::mem::take(&mut self.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constant(name: &str, v: f64) -> GateModel {
        GateModel {
            candidate: name.into(),
            base: v,
            trees: vec![],
        }
    }

    #[test]
    fn shipped_gate_loads_and_a_bad_one_is_named() {
        let g = Gate::shipped().unwrap().as_ref().clone();
        assert!(g.models.len() < GATE_CANDIDATES.len());
        assert_eq!(g.candidates()[0], GATE_CANDIDATES[0]);
        let mut bad = g.clone();
        bad.features.pop();
        let e = Gate::from_json(&serde_json::to_string(&bad).unwrap(), "g.json").unwrap_err();
        assert!(e.to_string().contains("features"), "{e}");
        let mut bad = g.clone();
        bad.models = vec![constant("drf", 0.0), constant("keep", 0.0)];
        let e = Gate::from_json(&serde_json::to_string(&bad).unwrap(), "g.json").unwrap_err();
        assert!(e.to_string().contains("models"), "{e}");
        let mut bad = g.clone();
        let split = TreeNode {
            feature: Some(GATE_FEATURES.len()),
            threshold: 0.0,
            left: 0,
            right: 0,
            value: 0.0,
        };
        bad.models = vec![GateModel {
            trees: vec![vec![split]],
            ..constant("keep", 0.0)
        }];
        let e = Gate::from_json(&serde_json::to_string(&bad).unwrap(), "g.json").unwrap_err();
        assert!(e.to_string().contains("models"), "{e}");
    }

    #[test]
    fn a_tree_sends_rows_by_its_splits() {
        let node = |feature, threshold, left, right, value| TreeNode {
            feature,
            threshold,
            left,
            right,
            value,
        };
        let m = GateModel {
            candidate: "keep".into(),
            base: 1.0,
            trees: vec![vec![
                node(Some(3), 0.5, 1, 2, 0.0),
                node(None, 0.0, 0, 0, -2.0),
                node(None, 0.0, 0, 0, 5.0),
            ]],
        };
        let mut x = vec![0.0; GATE_FEATURES.len()];
        assert_eq!(m.predict(&x), -1.0);
        x[3] = 0.5;
        assert_eq!(m.predict(&x), 6.0);
    }

    #[test]
    fn the_gate_keeps_learned_unless_a_saving_clears_the_margin() {
        let n = GATE_FEATURES.len();
        let mut gate = Gate {
            features: GATE_FEATURES.iter().map(|s| s.to_string()).collect(),
            models: GATE_CANDIDATES[1..]
                .iter()
                .enumerate()
                .map(|(k, c)| constant(c.name(), k as f64))
                .collect(),
            margin: 10.0,
            trained_on: vec![],
        };
        let rows = vec![vec![1.0; n]; GATE_CANDIDATES.len()];
        let differ = vec![false; GATE_CANDIDATES.len()];
        // Predictions 0..4, margin 10: nothing clears it.
        assert_eq!(gate.choose(&rows, &differ), 0);
        gate.margin = 1.5;
        // The largest prediction (4, the last candidate) wins...
        assert_eq!(gate.choose(&rows, &differ), 5);
        // ...unless its proposal is the learned one's.
        let mut same = differ.clone();
        same[5] = true;
        assert_eq!(gate.choose(&rows, &same), 4);
    }
}
