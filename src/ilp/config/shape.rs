//! The exact pricing search by shapes: a server's candidates grouped by what they are (job,
//! option, workers, PS, kept) apart from how their GPUs split over the PCIe switches.
//!
//! Why: on the trace rounds a shape has up to 19 layouts (8 GPUs under 4 switches), so a
//! search over fragments branches that much wider at every level than the decisions that move
//! most of a column's value; and on the ITP round a multi-server PS job has thousands of
//! shapes on a server. Every pair term but PCIe sharing is the same for all layouts of two
//! shapes ([`super::column::PairTerms::layout_free_loss`]), and PCIe sharing is a loss, so a set
//! of shapes is worth at most its *layout-free value* `F` (own reduced costs and layout-free
//! losses). The search runs over shapes with the knapsack bound of [`super::bound::Bounds`];
//! at each set it reaches it solves the layout sub-problem exactly — the layouts that fit the
//! switches with the least PCIe loss `L`, by a small search that stops at the first layout
//! with none — giving the set's exact value `V = F − L`. A set no layout fits prunes its
//! subtree (adding jobs never makes it fit), and a subtree below a set is bounded by
//! `V + Σ (own + layout-free loss to the set)` of what it adds (its PCIe losses only lower it).
//! A job's shapes come by own reduced cost, so the first that cannot beat the best ends the
//! job's loop. The same best value and enumerated columns as the fragment search (tested on
//! shipped rounds at their relaxations' duals); where two columns tie, either may come back.
//! The proof is in `formulations/README.md`, "Pricing by shapes, then layouts".

use super::column::PairTerms;
use super::search::{Search, add_job};

impl Search<'_> {
    /// The pairs terms of shape `k` of job `i` but PCIe (those of its first layout).
    fn shape_terms(&self, i: usize, k: usize) -> &PairTerms {
        &self.problem().terms[i][self.problem().shapes[i][k].cands.start]
    }

    /// What shape `k` of job `i` adds to the chosen shapes' layout-free value.
    fn shape_gain(&self, i: usize, k: usize) -> f64 {
        let n = self.jobs.len();
        let t = self.shape_terms(i, k);
        let excess = &self.problem().excess;
        self.problem().shapes[i][k].own
            + self
                .sel
                .iter()
                .map(|&(j, l)| {
                    t.layout_free_loss(self.shape_terms(j, l), || {
                        (excess[i * n + j], excess[j * n + i])
                    })
                })
                .sum::<f64>()
    }

    /// The most jobs `i..` can add within `gpus` and `cores`, given what each with workers
    /// loses at least to the chosen shapes with workers (where floors are charged).
    fn rest(&self, i: usize, gpus: usize, cores: f64) -> f64 {
        if self.floor.is_empty() {
            return self.ub.at(i, gpus, cores);
        }
        let n = self.jobs.len();
        let mu = self.lower[self.with_workers * (2 * n + 1) + n + i];
        self.ub.at_given(i, gpus, cores, mu)
    }

    /// Opens the frame of [`Search::lower`] for a chosen shape with workers of job `j`: each
    /// job's floors to the chosen ones, and their least from each job on.
    fn enter(&mut self, j: usize) {
        let n = self.jobs.len();
        let w = 2 * n + 1;
        let (done, next) = self.lower.split_at_mut((self.with_workers + 1) * w);
        let cur = &done[self.with_workers * w..];
        for b in 0..n {
            next[b] = cur[b] + self.floor[j * n + b];
        }
        next[2 * n] = 0.0; // no job left: nothing to lose
        let mut least = f64::INFINITY;
        for b in (0..n).rev() {
            least = least.min(next[b]);
            next[n + b] = least;
        }
        self.with_workers += 1;
    }

    /// The search from the root (the empty column, worth 0).
    pub(super) fn run_shapes(&mut self) {
        self.descend(0, 0.0);
    }

    /// Tries each shape of each job from `i` on added to the chosen shapes, whose best layouts
    /// are worth `exact`.
    fn descend(&mut self, i: usize, exact: f64) {
        if self.pruned(exact + self.rest(i, self.free_total, self.cpu)) {
            return;
        }
        if self.strong
            && self.prune
            && !self.sel.is_empty()
            && self.pruned(exact + self.given_shapes(i))
        {
            return;
        }
        for j in i..self.jobs.len() {
            let shapes = &self.problem().shapes[j];
            // The most jobs after j can add, at any capacity this node's leaves them.
            let rest = self.rest(j + 1, self.free_total, self.cpu);
            for (k, sh) in shapes.iter().enumerate() {
                if self.pruned(exact + sh.own + rest) {
                    break; // shapes come by own reduced cost: none after this one does better
                }
                let (g, cpu, mem) = (sh.gpus, sh.cpu, sh.mem);
                if g > self.free_total || cpu > self.cpu + 1e-9 || mem > self.mem + 1e-9 {
                    continue;
                }
                let gain = self.shape_gain(j, k);
                let upper = exact + gain;
                if self.pruned(upper + self.rest(j + 1, self.free_total - g, self.cpu - cpu)) {
                    continue;
                }
                let charged = sh.workers && !self.floor.is_empty();
                if charged {
                    self.enter(j);
                }
                self.sel.push((j, k));
                self.free_total -= g;
                self.cpu -= cpu;
                self.mem -= mem;
                self.layout_free += gain;
                self.visit(j + 1, upper);
                self.layout_free -= gain;
                self.mem += mem;
                self.cpu += cpu;
                self.free_total += g;
                self.sel.pop();
                if charged {
                    self.with_workers -= 1;
                }
            }
        }
    }

    /// At a set of shapes just extended (bounded by `upper`): its layouts, then its subtree.
    fn visit(&mut self, i: usize, upper: f64) {
        if self.tick() {
            self.leave(i, upper);
            return;
        }
        let exact = self.best_layouts();
        if self.nodes > self.limit {
            self.leave(i, upper);
            return;
        }
        let Some(exact) = exact else {
            return; // no layout fits: nor does one of any larger set
        };
        if exact > self.best.0 {
            let old = std::mem::replace(&mut self.best, (exact, self.picks.clone()));
            if !old.1.is_empty() {
                self.passed.push(old);
            }
            if exact >= self.enough {
                self.limit = 0;
            }
        }
        if self.collect.is_some() && exact >= self.target - 1e-9 {
            self.collect_layouts(0, 0.0);
            if self.nodes > self.limit {
                self.leave(i, upper);
                return;
            }
        }
        self.descend(i, exact);
    }

    /// A subtree left at the node limit: bounded by `upper` and what jobs `i..` can add.
    fn leave(&mut self, i: usize, upper: f64) {
        let b = if self.prune {
            upper + self.rest(i, self.free_total, self.cpu)
        } else {
            f64::INFINITY
        };
        self.open = self.open.max(b);
    }

    /// The chosen shapes' best layouts: their value (the layout-free value less the least
    /// PCIe loss), with `picks` set to them; `None` when none fits the switches (or the node
    /// limit cut the search: then `nodes` is past it).
    fn best_layouts(&mut self) -> Option<f64> {
        self.layout_best = None;
        self.layout_picks.clear();
        self.place(0, 0.0);
        let (loss, picks) = self.layout_best.take()?;
        self.picks = picks;
        Some(self.layout_free - loss)
    }

    /// Places the chosen shapes from the `d`-th on, their PCIe losses so far `loss` (≥ 0).
    fn place(&mut self, d: usize, loss: f64) {
        if self.layout_best.as_ref().is_some_and(|b| b.0 <= 0.0) && self.prune {
            return; // a layout without loss is found: none is better
        }
        if d == self.sel.len() {
            if self.layout_best.as_ref().is_none_or(|b| loss < b.0) {
                self.layout_best = Some((loss, self.layout_picks.clone()));
            }
            return;
        }
        let (i, k) = self.sel[d];
        for c in self.problem().shapes[i][k].cands.clone() {
            let Some(extra) = self.try_layout(d, i, c) else {
                continue;
            };
            if self.prune
                && self
                    .layout_best
                    .as_ref()
                    .is_some_and(|b| loss + extra >= b.0)
            {
                continue;
            }
            if self.tick() {
                return;
            }
            self.push_layout(i, c);
            self.place(d + 1, loss + extra);
            self.pop_layout();
        }
    }

    /// Every layout of the chosen shapes worth at least the target, collected (the
    /// enumeration's columns); from the `d`-th shape on, PCIe losses so far `loss`.
    fn collect_layouts(&mut self, d: usize, loss: f64) {
        if self.prune && self.layout_free - loss < self.target - 1e-9 {
            return;
        }
        if d == self.sel.len() {
            if self.layout_free - loss >= self.target - 1e-9
                && let Some(found) = &mut self.collect
            {
                found.push(self.layout_picks.clone());
                if found.len() > self.cap {
                    self.limit = 0;
                }
            }
            return;
        }
        let (i, k) = self.sel[d];
        for c in self.problem().shapes[i][k].cands.clone() {
            let Some(extra) = self.try_layout(d, i, c) else {
                continue;
            };
            if self.tick() {
                return;
            }
            self.push_layout(i, c);
            self.collect_layouts(d + 1, loss + extra);
            self.pop_layout();
        }
    }

    /// The PCIe loss candidate `c` of job `i`, as the `d`-th layout, adds to those placed —
    /// `None` when it does not fit what they leave of the switches, or (first placed) when
    /// the switch symmetry leaves it out.
    fn try_layout(&self, d: usize, i: usize, c: usize) -> Option<f64> {
        let gpus = &self.jobs[i][c].fragment.gpus;
        if d == 0 && !self.symmetry.opens(gpus) {
            return None;
        }
        if (0..self.free.len()).any(|b| gpus[b] > self.free[b]) {
            return None;
        }
        let t = &self.problem().terms[i][c];
        Some(
            -self
                .layout_picks
                .iter()
                .map(|&(j, e)| t.pcie_loss(&self.problem().terms[j][e]))
                .sum::<f64>(),
        )
    }

    fn push_layout(&mut self, i: usize, c: usize) {
        for b in 0..self.free.len() {
            self.free[b] -= self.jobs[i][c].fragment.gpus[b];
        }
        self.layout_picks.push((i, c));
    }

    fn pop_layout(&mut self) {
        if let Some((i, c)) = self.layout_picks.pop() {
            for b in 0..self.free.len() {
                self.free[b] += self.jobs[i][c].fragment.gpus[b];
            }
        }
    }

    /// The most jobs `i..` can add to the chosen shapes: the knapsack over the GPUs left of
    /// each shape's gain given them (own and layout-free losses; PCIe only lowers it), within
    /// the cores and memory left. [`Search::given_chosen`] by shapes.
    fn given_shapes(&self, i: usize) -> f64 {
        let cap = self.free_total;
        let mut row = vec![0.0_f64; cap + 1];
        let mut best = vec![f64::NEG_INFINITY; cap + 1];
        for j in (i..self.jobs.len()).rev() {
            best.fill(f64::NEG_INFINITY);
            let shapes = &self.problem().shapes[j];
            for (k, sh) in shapes.iter().enumerate() {
                let g = sh.gpus;
                if g > cap || sh.own <= best[g] {
                    continue; // losses only lower it
                }
                if sh.cpu > self.cpu + 1e-9 || sh.mem > self.mem + 1e-9 {
                    continue;
                }
                best[g] = best[g].max(self.shape_gain(j, k));
            }
            add_job(&mut row, &best);
        }
        row[cap]
    }
}

#[cfg(test)]
mod tests {
    use super::super::budget::Budget;
    use super::super::cg::{Gen, generate_columns};
    use super::super::column::Classes;
    use super::super::price::Pricer;
    use crate::ilp::SolveSettings;
    use crate::ilp::config::{columns_of, solve_lp, test_instance};
    use crate::objective::{Objective, RoundPricing};
    use crate::perf::CalibratedPerf;

    /// The shape search, with and without co-location floors, finds the fragment search's
    /// best reduced cost on every server class (both finishing) at the duals of the
    /// keep-everything start (many columns pay) and of the converged root (none does), and
    /// enumerates the same columns within a gap at the latter; the columns it hands back
    /// beside its best pay, less than the best — on shipped rounds with running jobs (kept
    /// fragments) and multi-server options.
    #[test]
    fn shapes_price_and_enumerate_as_fragments_do() {
        let perf = CalibratedPerf::shipped();
        let settings = SolveSettings::default().checked().unwrap();
        let spent = std::sync::atomic::AtomicU64::new(0);
        let (mut compared, mut enumerated, mut passed) = (0, 0, 0);
        for name in [
            "gen_s02_j04_seed1",
            "gen_s02_j06_seed2",
            "gen_s03_j06_seed1",
            "gen_s03_j08_seed2",
            "gen_s04_j08_seed1",
        ] {
            let snap = test_instance(name);
            let pricing = RoundPricing::new(perf, &snap, Objective::default());
            let (seed, _) = columns_of(&pricing, &snap.current_schedule()).unwrap();
            let held = vec![false; snap.jobs.len()];
            let gen_ = Gen {
                pricing: &pricing,
                settings: &settings,
                held: &held,
                node_limit: 5_000_000,
                budget: Budget::unlimited(&spent),
            };
            let converged = generate_columns(gen_, seed.clone(), 200).unwrap().pool;
            let reps: Vec<usize> = Classes::of(&pricing).reps().collect();
            for pool in [&seed, &converged] {
                let r = solve_lp(&pricing, pool, &[], &settings, &held).unwrap();
                let pricer = |shapes, floors| Pricer {
                    pricing: &pricing,
                    duals: &r.duals,
                    node_limit: 50_000_000,
                    budget: Budget::unlimited(&spent),
                    parallel: false,
                    shapes,
                    floors,
                };
                let by_fragments = pricer(false, false).price_servers(&reps, f64::INFINITY);
                let (by_shapes, unfloored) = (
                    pricer(true, true).price_servers(&reps, f64::INFINITY),
                    pricer(true, false).price_servers(&reps, f64::INFINITY),
                );
                let both = by_shapes.iter().chain(&unfloored);
                for (a, b) in both.zip(by_fragments.iter().cycle()) {
                    assert!(a.exact && b.exact, "{name}: a search did not finish");
                    assert!(
                        (a.reduced_cost - b.reduced_cost).abs() < 1e-9,
                        "{name} server {}: shapes {} vs fragments {}",
                        a.column.server,
                        a.reduced_cost,
                        b.reduced_cost
                    );
                    let direct = r.duals.reduced_cost(&pricing, &a.column);
                    assert!((a.reduced_cost - direct).abs() < 1e-9, "{name}");
                    // The columns handed back beside the best pay, and no more than it.
                    for c in &a.passed {
                        let rc = r.duals.reduced_cost(&pricing, c);
                        assert!(rc > 1e-9 && rc <= a.reduced_cost + 1e-9, "{name}: {rc}");
                        passed += 1;
                    }
                    compared += 1;
                }
                // Enumeration runs at converged duals (within the gap to a schedule).
                if std::ptr::eq(pool, &converged) {
                    let delta = 0.02 * r.value.abs().max(1.0);
                    let (a, b) = (
                        pricer(true, true).enumerate_columns(&reps, delta, 100_000),
                        pricer(false, false).enumerate_columns(&reps, delta, 100_000),
                    );
                    // Both stop past the cap (or neither).
                    assert_eq!(a.is_some(), b.is_some(), "{name}: one enumeration finished");
                    let (Some(mut a), Some(mut b)) = (a, b) else {
                        continue;
                    };
                    let key = |c: &super::super::column::Column| format!("{c:?}");
                    a.sort_by_key(key);
                    b.sort_by_key(key);
                    assert_eq!(a.len(), b.len(), "{name}: columns enumerated");
                    assert!(a == b, "{name}: different columns enumerated");
                    enumerated += a.len();
                }
            }
        }
        assert!(
            compared >= 10 && enumerated >= 10 && passed >= 1,
            "{compared} {enumerated} {passed}"
        );
    }
}
