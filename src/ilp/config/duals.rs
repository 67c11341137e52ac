//! The duals of the configuration program's master relaxation: what pricing prices against,
//! a column's reduced cost at them, points between two sets of them, and the Lagrangian bound
//! on the round they give (`formulations/README.md`, "Dual smoothing").

use std::collections::HashMap;

use super::column::{Classes, Column};
use crate::error::Result;
use crate::model::JobPos;
use crate::objective::{Mode, RoundPricing};

/// The duals of the master's linear relaxation, by what each row says.
#[derive(Debug, Clone, Default)]
pub(crate) struct Duals {
    /// Of each server's "at most one column" row.
    pub server: HashMap<usize, f64>,
    /// Of `(job, option)`'s workers, PS and presence rows.
    pub option: HashMap<(usize, usize), [f64; 3]>,
    /// Of `(job, server)`'s keep row.
    pub keep: HashMap<(usize, usize), f64>,
    /// Of `(job, option, server)`'s one-fragment-per-server row.
    pub spread: HashMap<(usize, usize, usize), f64>,
    /// The jobs (by position) held where they run: pricing offers them their kept fragments
    /// only (any other fragment of theirs has no place in the master).
    pub held: Vec<bool>,
}

impl Duals {
    /// A column's reduced cost: its value less what its coefficients cost at these duals
    /// (HiGHS' `c − Aᵀy`); a column that would raise the relaxation has one above 0. Pricing
    /// computes the same inside its search; this form checks it against HiGHS, and tells
    /// which columns priced at smoothed duals would raise the relaxation.
    pub fn reduced_cost(&self, pricing: &RoundPricing<'_>, column: &Column) -> f64 {
        let mut rc =
            column.value(pricing) - self.server.get(&column.server).copied().unwrap_or(0.0);
        for f in &column.fragments {
            if let Some([w, p, n]) = self.option.get(&(f.job.0, f.option)) {
                rc -= w * f64::from(f.workers) + p * f64::from(f.ps) + n;
            }
            if f.kept {
                rc -= self
                    .keep
                    .get(&(f.job.0, column.server))
                    .copied()
                    .unwrap_or(0.0);
            }
            rc -= self
                .spread
                .get(&(f.job.0, f.option, column.server))
                .copied()
                .unwrap_or(0.0);
        }
        rc
    }

    /// `w · self + (1 − w) · other`, row by row (a row one of them lacks has dual 0 there):
    /// a point between two dual solutions, itself one (the rows' sign conditions are
    /// convex), where column generation may price ([`super::cg`]).
    pub fn mix(&self, w: f64, other: &Duals) -> Duals {
        fn rows<K: Copy + Eq + std::hash::Hash, V: Copy>(
            a: &HashMap<K, V>,
            b: &HashMap<K, V>,
            zero: V,
            f: impl Fn(V, V) -> V,
        ) -> HashMap<K, V> {
            a.keys()
                .chain(b.keys())
                .map(|&k| {
                    let (x, y) = (
                        a.get(&k).copied().unwrap_or(zero),
                        b.get(&k).copied().unwrap_or(zero),
                    );
                    (k, f(x, y))
                })
                .collect()
        }
        let one = |x: f64, y: f64| w * x + (1.0 - w) * y;
        Duals {
            server: rows(&self.server, &other.server, 0.0, one),
            option: rows(&self.option, &other.option, [0.0; 3], |x, y| {
                [one(x[0], y[0]), one(x[1], y[1]), one(x[2], y[2])]
            }),
            keep: rows(&self.keep, &other.keep, 0.0, one),
            spread: rows(&self.spread, &other.spread, 0.0, one),
            held: self.held.clone(),
        }
    }

    /// The Lagrangian bound on the round at these duals, given, for each class of servers
    /// (representative, servers), a bound on the best value of its columns *before* the
    /// class's own dual (`value − Σ` the other rows' duals × its coefficients). Every row
    /// but the classes' "at most `n` columns" and the jobs' "at most one option" is
    /// relaxed at these duals; what is left splits by class and by job: each class takes
    /// its best column `n` times if it pays, each job its best option if it pays, each
    /// running job its keep if it pays (a held one always) — the restarts' constant
    /// included. A bound on the round for any duals that meet the rows' sign conditions
    /// (the relaxation's do, and so does every [`Duals::mix`] of them); at the relaxation's
    /// own duals with no column paying, it is the relaxation's value.
    pub fn lagrangian(
        &self,
        pricing: &RoundPricing<'_>,
        classes: &Classes,
        best: &[(usize, f64)],
    ) -> Result<f64> {
        let snap = pricing.snapshot();
        let mut v: f64 = best
            .iter()
            .map(|&(r, b)| classes.count(r) as f64 * b.max(0.0))
            .sum();
        // Each multi-server option's one-fragment-per-server rows: (server, dual).
        let mut spread: HashMap<(usize, usize), Vec<(usize, f64)>> = HashMap::new();
        for (&(j, k, s), &d) in &self.spread {
            spread.entry((j, k)).or_default().push((s, d));
        }
        for rows in spread.values_mut() {
            rows.sort_by_key(|r| r.0); // one order of summing: the same bits every run
        }
        for j in 0..snap.jobs.len() {
            let jp = JobPos(j);
            v -= pricing.restart_cost(jp)?;
            let mut y_best = 0.0_f64;
            for (k, o) in pricing.options(jp).iter().enumerate() {
                let [w, p, n] = self.option.get(&(j, k)).copied().unwrap_or([0.0; 3]);
                let presence = -presence_coefficient(o.mode);
                let tasks = (o.workers + o.ps) as usize;
                let spread: f64 = spread.get(&(j, k)).map_or(0.0, |rows| {
                    rows.iter()
                        .map(|&(s, d)| d * spread_cap(classes, s, tasks) as f64)
                        .sum()
                });
                let rc = o.terms.base
                    + w * f64::from(o.workers)
                    + p * f64::from(o.ps)
                    + n * presence
                    + spread;
                y_best = y_best.max(rc);
            }
            v += y_best;
            if let Some(cur) = &snap.jobs[j].run.current {
                let rc = pricing.restart_cost(jp)?
                    + cur
                        .servers()
                        .into_iter()
                        .map(|s| self.keep.get(&(j, s)).copied().unwrap_or(0.0))
                        .sum::<f64>();
                v += if self.held.get(j).copied().unwrap_or(false) {
                    rc
                } else {
                    rc.max(0.0)
                };
            }
        }
        Ok(v)
    }
}

/// An option's coefficient `y` has in its presence row: a multi-server option needs fragments
/// on two servers or more (`Σ λ − 2y ≥ 0`), a single-server one exactly its one (`Σ λ − y ≤ 0`).
/// The master's rows and the Lagrangian bound read it from here.
pub(super) fn presence_coefficient(mode: Mode) -> f64 {
    if mode == Mode::Multi { -2.0 } else { -1.0 }
}

/// How many fragments a multi-server option of `tasks` workers and PS may have on the servers
/// of class `s` (one per server, at most one per task): its one-fragment-per-server row's
/// coefficient of `y`, negated. The master's rows and the Lagrangian bound read it from here.
pub(super) fn spread_cap(classes: &Classes, s: usize, tasks: usize) -> usize {
    classes.count(s).min(tasks)
}
