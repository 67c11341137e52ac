//! The lookahead distilled into a gate ([`crate::policies::distilled`]): the rounds a student
//! visits, each with the lookahead's plays of the gate's candidates ([`play_rounds`]), and the
//! gate fitted to them ([`fit_gate`]) and judged on rounds it was not fitted on
//! ([`gate_fit`]).
//!
//! A row's target is a candidate's *saving*: how many job-rounds its play leaves fewer than the
//! learned proposal's play (the cost the lookahead minimises, divided by the round length), so
//! the lookahead's own choice is the candidate of largest saving, and a gate that predicts
//! savings exactly makes the lookahead's choices without playing.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lookahead::Lookahead;
use crate::perf::PerfModel;
use crate::policies::distilled::{
    GATE_CANDIDATES, GATE_FEATURES, Gate, GateModel, TreeNode, gate_features, tree_value,
};
use crate::policies::{Candidate, PolicyKind};
use crate::replay::Replay;

use super::rounds::StudentReplay;

/// One round a student visited, with the lookahead's plays of [`GATE_CANDIDATES`]; only
/// rounds whose proposals differ are recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayRound {
    /// `{trace}-{skip}+{take}-s{seed}-{student}-t{round time}`.
    pub id: String,
    /// Jobs present.
    pub jobs: usize,
    /// Per candidate, its [`GATE_FEATURES`].
    pub features: Vec<Vec<f64>>,
    /// Per candidate, whether its proposal is the learned policy's.
    pub same: Vec<bool>,
    /// Per candidate, job-rounds its play saves against the learned proposal's (0 for the
    /// learned proposal itself and for the same proposal).
    pub saving: Vec<f64>,
}

/// The rows of the JSON-lines file at `path` (`coda distil plays`), each checked against
/// this build's candidates and features (a bad row is an error naming its line and field).
pub fn read_play_rounds(path: &std::path::Path) -> Result<Vec<PlayRound>> {
    let rows: Vec<(usize, PlayRound)> = super::labels::read_numbered_json_lines(path)?;
    let (c, f) = (GATE_CANDIDATES.len(), GATE_FEATURES.len());
    for (line, r) in &rows {
        let bad = |field: &str, want: String| {
            Error::invalid(
                &path.display().to_string(),
                *line as u64,
                field,
                &r.id,
                want,
            )
        };
        if r.features.len() != c || r.features.iter().any(|x| x.len() != f) {
            return Err(bad(
                "features",
                format!("{c} rows of {f} values (this build's gate)"),
            ));
        }
        if r.same.len() != c || r.saving.len() != c {
            return Err(bad("same / saving", format!("{c} values each")));
        }
    }
    Ok(rows.into_iter().map(|(_, r)| r).collect())
}

/// The rounds of `replay` under `student` (its decisions drive the replay: DAgger on the
/// student's own states), every `every`-th round with at least two jobs present and differing
/// proposals, up to `count` (rounds whose ids are in `done` count without being played: a run
/// resumed), each played by a lookahead with the replay's settings over
/// [`GATE_CANDIDATES`] and handed to `visit` as it is done.
pub fn play_rounds(
    replay: &Replay,
    perf: &dyn PerfModel,
    student: PolicyKind,
    every: usize,
    count: usize,
    done: &std::collections::HashSet<String>,
    visit: &mut dyn FnMut(PlayRound) -> Result<()>,
) -> Result<()> {
    let mut rounds = StudentReplay::new(replay, perf, student, "distil plays")?;
    let opts = rounds.opts.clone();
    let mut expert = Lookahead::with_candidates(perf, &opts, rounds.settings(), GATE_CANDIDATES)?;
    let round_s = opts.objective.round_s;
    rounds.visit(every, count, done, &mut |id, snap| {
        let plays = expert.plays(snap)?;
        if !plays.played() {
            return Ok(false);
        }
        let features = gate_features(perf, opts.objective, snap, &plays.schedules)?;
        visit(PlayRound {
            id,
            jobs: snap.jobs.len(),
            features,
            same: plays.first_same.iter().map(|&f| f == 0).collect(),
            saving: plays
                .costs
                .iter()
                .map(|c| (plays.costs[0] - c) / round_s)
                .collect(),
        })?;
        Ok(true)
    })
}

/// How the gate's trees are grown ([`fit_gate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BoostSettings {
    /// Trees per candidate.
    pub trees: usize,
    /// Splits from root to leaf.
    pub depth: usize,
    /// Learning rate: the share of each tree's fit added.
    pub rate: f64,
    /// Fewest rows in a leaf.
    pub min_leaf: usize,
    /// Thresholds tried per feature (its quantiles over the rows).
    pub bins: usize,
    /// Savings are clipped to this quantile and its complement before fitting (a few plays
    /// save or lose tens of job-rounds; least squares would chase them).
    pub clip_quantile: f64,
    /// The features the trees may split on (indices into [`GATE_FEATURES`]; empty: all).
    pub features: Vec<usize>,
}

impl Default for BoostSettings {
    fn default() -> Self {
        BoostSettings {
            trees: 150,
            depth: 3,
            rate: 0.05,
            min_leaf: 100,
            bins: 32,
            clip_quantile: 0.01,
            features: Vec::new(),
        }
    }
}

/// The gate fitted to `sets` (plays, one set per file) that may choose `candidates` (some of
/// [`GATE_CANDIDATES`] after the first; others are left out of it): per candidate, boosted
/// regression trees of its saving on its features over the rows where its proposal differs
/// from the learned one's. The margin is the one of [`MARGINS`] whose choices keep the most
/// saving when each set is judged by the gate fitted to the others (on the rows themselves if
/// there is one set).
pub fn fit_gate(
    sets: &[Vec<PlayRound>],
    candidates: &[Candidate],
    settings: &BoostSettings,
    trained_on: Vec<String>,
) -> Result<Gate> {
    if settings.trees == 0 || settings.min_leaf == 0 || settings.bins == 0 || settings.rate <= 0.0 {
        return Err(Error::setting(
            "distil fit",
            "trees / min_leaf / bins / rate",
            format!("{settings:?}"),
            "positive",
        ));
    }
    let all: Vec<&PlayRound> = sets.iter().flatten().collect();
    let gate = |rows: &[&PlayRound], margin: f64| Gate {
        features: GATE_FEATURES.iter().map(|s| s.to_string()).collect(),
        models: GATE_CANDIDATES
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, c)| candidates.contains(c))
            .map(|(k, c)| fit_model(rows, k, c.name(), settings))
            .collect(),
        margin,
        trained_on: trained_on.clone(),
    };
    // Per margin, the saving kept on held-out sets.
    let mut kept = [0.0; MARGINS.len()];
    if sets.len() > 1 {
        for (i, held) in sets.iter().enumerate() {
            let rest: Vec<&PlayRound> = sets
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .flat_map(|(_, s)| s)
                .collect();
            let mut g = gate(&rest, 0.0);
            for (m, k) in MARGINS.iter().zip(&mut kept) {
                g.margin = *m;
                *k += gate_fit(&g, held).kept;
            }
        }
    }
    let mut g = gate(&all, 0.0);
    if sets.len() <= 1 {
        for (m, k) in MARGINS.iter().zip(&mut kept) {
            g.margin = *m;
            *k = gate_fit(&g, sets.first().map_or(&[][..], |s| &s[..])).kept;
        }
    }
    let best = (0..MARGINS.len()).fold(0, |b, i| if kept[i] > kept[b] { i } else { b });
    g.margin = MARGINS[best];
    Ok(g)
}

/// The margins [`fit_gate`] chooses among (job-rounds).
pub const MARGINS: [f64; 8] = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];

/// Candidate `k`'s model: boosted trees on the rows where its proposal differs.
fn fit_model(rows: &[&PlayRound], k: usize, name: &str, s: &BoostSettings) -> GateModel {
    let mine: Vec<&PlayRound> = rows.iter().copied().filter(|r| !r.same[k]).collect();
    let nf = GATE_FEATURES.len();
    if mine.is_empty() {
        return GateModel {
            candidate: name.to_string(),
            base: 0.0,
            trees: Vec::new(),
        };
    }
    let mut y: Vec<f64> = mine.iter().map(|r| r.saving[k]).collect();
    let mut sorted = y.clone();
    sorted.sort_by(f64::total_cmp);
    let (lo, hi) = (
        sorted_quantile(&sorted, s.clip_quantile),
        sorted_quantile(&sorted, 1.0 - s.clip_quantile),
    );
    for v in &mut y {
        *v = v.clamp(lo, hi);
    }
    let base = y.iter().sum::<f64>() / y.len() as f64;
    // Per feature, its thresholds (distinct quantiles) and every row's bin: the number of
    // thresholds at or below its value, so `x < thresholds[i]` is `bin <= i`.
    let thresholds: Vec<Vec<f64>> = (0..nf)
        .map(|f| {
            if !s.features.is_empty() && !s.features.contains(&f) {
                // A feature the trees may not use offers no threshold.
                return Vec::new();
            }
            let mut xs: Vec<f64> = mine.iter().map(|r| r.features[k][f]).collect();
            xs.sort_by(f64::total_cmp);
            let mut t: Vec<f64> = (1..s.bins)
                .map(|i| sorted_quantile(&xs, i as f64 / s.bins as f64))
                .collect();
            t.dedup();
            t
        })
        .collect();
    let bins: Vec<Vec<usize>> = mine
        .iter()
        .map(|r| {
            (0..nf)
                .map(|f| thresholds[f].partition_point(|&t| t <= r.features[k][f]))
                .collect()
        })
        .collect();
    let mut residual: Vec<f64> = y.iter().map(|v| v - base).collect();
    let mut trees = Vec::with_capacity(s.trees);
    for _ in 0..s.trees {
        let mut nodes = Vec::new();
        let all: Vec<usize> = (0..mine.len()).collect();
        grow(&all, s.depth, &bins, &thresholds, &residual, s, &mut nodes);
        for (i, r) in residual.iter_mut().enumerate() {
            *r -= tree_value(&nodes, &mine[i].features[k]);
        }
        trees.push(nodes);
    }
    GateModel {
        candidate: name.to_string(),
        base,
        trees,
    }
}

/// Grows the subtree of `rows` into `nodes` (its root at the index returned): the split of
/// largest squared-error reduction with at least `min_leaf` rows a side, `depth` levels deep.
fn grow(
    rows: &[usize],
    depth: usize,
    bins: &[Vec<usize>],
    thresholds: &[Vec<f64>],
    residual: &[f64],
    s: &BoostSettings,
    nodes: &mut Vec<TreeNode>,
) -> usize {
    let at = nodes.len();
    let sum: f64 = rows.iter().map(|&i| residual[i]).sum();
    let n = rows.len() as f64;
    nodes.push(TreeNode {
        feature: None,
        threshold: 0.0,
        left: 0,
        right: 0,
        value: s.rate * sum / n.max(1.0),
    });
    if depth == 0 || rows.len() < 2 * s.min_leaf {
        return at;
    }
    let mut best: Option<(f64, usize, usize)> = None;
    for (f, t) in thresholds.iter().enumerate() {
        let mut bs = vec![(0.0, 0usize); t.len() + 1];
        for &i in rows {
            let b = &mut bs[bins[i][f]];
            b.0 += residual[i];
            b.1 += 1;
        }
        let (mut sl, mut nl) = (0.0, 0usize);
        for (i, b) in bs.iter().enumerate().take(t.len()) {
            sl += b.0;
            nl += b.1;
            let nr = rows.len() - nl;
            if nl < s.min_leaf || nr < s.min_leaf {
                continue;
            }
            let sr = sum - sl;
            let gain = sl * sl / nl as f64 + sr * sr / nr as f64 - sum * sum / n;
            if best.is_none_or(|(g, _, _)| gain > g) {
                best = Some((gain, f, i));
            }
        }
    }
    let Some((_, f, i)) = best.filter(|b| b.0 > 1e-12) else {
        return at;
    };
    let (left, right): (Vec<usize>, Vec<usize>) = rows.iter().partition(|&&r| bins[r][f] <= i);
    let l = grow(&left, depth - 1, bins, thresholds, residual, s, nodes);
    let r = grow(&right, depth - 1, bins, thresholds, residual, s, nodes);
    nodes[at] = TreeNode {
        feature: Some(f),
        threshold: thresholds[f][i],
        left: l,
        right: r,
        value: 0.0,
    };
    at
}

/// How well a gate makes the lookahead's choices on some rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GateFit {
    /// Rounds judged.
    pub rounds: usize,
    /// Job-rounds the lookahead's choices save over the learned proposals (over every
    /// candidate played: the most any gate can).
    pub best: f64,
    /// Job-rounds the best of the gate's own candidates would save (the most this gate can).
    pub reachable: f64,
    /// Job-rounds the gate's choices save (negative: worse than the learned proposals).
    pub kept: f64,
    /// Rounds where the gate chose what the lookahead chose.
    pub agree: usize,
    /// Rounds where the gate left the learned proposal.
    pub switched: usize,
}

/// `gate`'s choices on `rows` against the lookahead's.
pub fn gate_fit(gate: &Gate, rows: &[PlayRound]) -> GateFit {
    let mut fit = GateFit {
        rounds: rows.len(),
        best: 0.0,
        reachable: 0.0,
        kept: 0.0,
        agree: 0,
        switched: 0,
    };
    // The gate's candidates' columns of a row (the rows hold every candidate of the plays).
    let cols: Vec<usize> = gate
        .candidates()
        .iter()
        .filter_map(|c| GATE_CANDIDATES.iter().position(|g| g == c))
        .collect();
    for r in rows {
        let lookahead = best_of(&r.saving);
        let features: Vec<&[f64]> = cols.iter().map(|&k| &r.features[k][..]).collect();
        let same: Vec<bool> = cols.iter().map(|&k| r.same[k]).collect();
        let chosen = cols[gate.choose(&features, &same)];
        fit.best += r.saving[lookahead];
        fit.reachable += cols.iter().map(|&k| r.saving[k]).fold(0.0, f64::max);
        fit.kept += r.saving[chosen];
        fit.agree += usize::from(r.saving[chosen] == r.saving[lookahead]);
        fit.switched += usize::from(chosen != 0);
    }
    fit
}

/// The first candidate of largest saving (the lookahead's choice: ties keep the earlier).
fn best_of(saving: &[f64]) -> usize {
    let mut best = 0;
    for (k, &s) in saving.iter().enumerate() {
        if s > saving[best] {
            best = k;
        }
    }
    best
}

/// The `q`-quantile of `sorted` (ascending; nearest rank; 0 for none).
fn sorted_quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round()) as usize]
}
