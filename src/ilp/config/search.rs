//! The exact search of one server's pricing problem: a depth-first search over the jobs'
//! fragments, for the best column or (enumerating) every column above a threshold.
//!
//! Why it can stop early: a fragment's reduced cost alone (its worker–PS credit less what its
//! rows cost at the duals) only falls when other fragments join it — co-location, PCIe and NIC
//! sharing are losses — so a partial column plus the most the jobs still to decide can add on
//! their own within the GPUs and cores left (a knapsack, [`Bounds`]; where that
//! does not prune, the same knapsack at each candidate's exact gain given the fragments chosen)
//! bounds everything below it. That rests on losses being non-negative, which is checked per
//! server; where a model prices one below zero the search drops the bound and visits every
//! combination (up to the node limit). A search cut off by its node limit still bounds the
//! server's best column: the best it found, or the bound of a subtree it left.

use super::bound::{Bounds, Shape};
use super::budget::Budget;
use super::column::{Fragment, PairTerms};
use crate::objective::{Mode, RoundPricing};

/// The most candidates a problem may have for the bound given the chosen fragments to be
/// tried (the generated rounds have ~2,000 per server, the Philly trace round ~12,000, the ITP
/// one ~250,000).
const STRONG_CANDIDATES: usize = 4_000;

/// The fewest nodes a search must be allowed for that bound to be tried (not in a probe).
const STRONG_NODES: u64 = 100_000;

/// A fragment a job could have on the server, with its own reduced cost and demands.
pub(super) struct Candidate {
    pub(super) fragment: Fragment,
    pub(super) own: f64,
    pub(super) cpu: f64,
    pub(super) mem: f64,
}

pub(super) struct Search<'p> {
    pub(super) jobs: &'p [Vec<Candidate>],
    /// [`Bounds`] of `jobs`.
    pub(super) ub: Bounds,
    /// Which layouts may open a column, and (searching fragments) `first[i][c]`: whether
    /// candidate `c` of job `i` may.
    pub(super) symmetry: Symmetry,
    pub(super) first: Vec<Vec<bool>>,
    /// By shapes: `floor[i · n + b]`, the least jobs `i` and `b` lose to each other when both
    /// have workers ([`colocation_floors`]; empty when not charged).
    pub(super) floor: Vec<f64>,
    /// One frame per chosen shape with workers, `2n + 1` values: for each job, the sum of
    /// its floors to those chosen, then (`n + 1` values) the least of that over jobs `i..`
    /// ([`super::shape`] keeps them).
    pub(super) lower: Vec<f64>,
    /// Chosen shapes with workers: the frame in use.
    pub(super) with_workers: usize,
    pub(super) prune: bool,
    /// Whether nodes the static bound leaves are tried against [`Search::given_chosen`]: only
    /// on a full search of a problem of at most [`STRONG_CANDIDATES`] candidates (each try
    /// prices every candidate against the chosen fragments: on the trace rounds' ~12,000
    /// candidates, and in the short probes, it costs more than it prunes).
    pub(super) strong: bool,
    pub(super) free: Vec<u32>,
    /// `free` summed.
    pub(super) free_total: usize,
    /// The best bound of the subtrees left unsearched at the node limit.
    pub(super) open: f64,
    pub(super) cpu: f64,
    pub(super) mem: f64,
    pub(super) chosen: Vec<(usize, usize)>,
    pub(super) value: f64,
    pub(super) best: (f64, Vec<(usize, usize)>),
    /// By shapes: every column the best was before it (in order found, each better).
    pub(super) passed: Vec<(f64, Vec<(usize, usize)>)>,
    pub(super) nodes: u64,
    pub(super) limit: u64,
    /// A value at which the search stops early (what it leaves is then bounded, not searched).
    pub(super) enough: f64,
    /// The solve's limits: the node limit above is already capped by what is left of them.
    pub(super) budget: Budget<'p>,
    /// Enumerating: every column of value at least `target` is collected (the search prunes
    /// against `target`, not against the best), at most `cap` of them.
    pub(super) collect: Option<Vec<Vec<(usize, usize)>>>,
    pub(super) target: f64,
    pub(super) cap: usize,
    problem: &'p Problem,
    /// Searching by shapes ([`super::shape`]), not fragments.
    pub(super) by_shapes: bool,
    /// The chosen shapes, `(job, shape)`, and their layout-free value.
    pub(super) sel: Vec<(usize, usize)>,
    pub(super) layout_free: f64,
    /// The chosen shapes' best layouts as `(job, candidate)`.
    pub(super) picks: Vec<(usize, usize)>,
    /// The layout search's best so far (least PCIe loss, its layouts) and its current layouts.
    pub(super) layout_best: Option<(f64, Vec<(usize, usize)>)>,
    pub(super) layout_picks: Vec<(usize, usize)>,
}

impl<'p> Search<'p> {
    /// A search of `problem` (server `s`'s), visiting at most `node_limit` nodes (fewer if the
    /// budget has fewer left), for the best column (set `enough` or `collect` for the other
    /// uses), over fragments or (`by_shapes`) over shapes and then layouts
    /// ([`super::shape`]), then charging co-location floors in its bound when `floors`.
    /// [`Search::complete`] charges the budget.
    pub(super) fn new(
        pricing: &RoundPricing<'_>,
        s: usize,
        problem: &'p Problem,
        node_limit: u64,
        budget: Budget<'p>,
        by_shapes: bool,
        floors: bool,
    ) -> Self {
        let node_limit = budget.nodes(node_limit);
        let jobs = &problem.jobs;
        // The bound holds when every loss is non-negative.
        let prune = jobs.iter().flatten().all(|c| {
            let t = &pricing.options(c.fragment.job)[c.fragment.option].terms;
            t.coloc_coef >= 0.0 && t.pcie_coef >= 0.0 && t.nic_coef >= 0.0
        }) && jobs.iter().all(|a| {
            jobs.iter().all(|b| {
                a[0].fragment.job == b[0].fragment.job
                    || pricing.colocation_excess(a[0].fragment.job, b[0].fragment.job, s) >= 0.0
            })
        });
        let free_total = problem.free.iter().sum::<u32>() as usize;
        let symmetry = Symmetry::of(pricing, s, problem);
        // By shapes the strong bound prices shapes, not layouts.
        let candidates: usize = if by_shapes {
            problem.shapes.iter().map(Vec::len).sum()
        } else {
            jobs.iter().map(Vec::len).sum()
        };
        // The shape search charges co-location floors (the fragment search prunes as it did).
        let floor = if by_shapes && floors && prune {
            colocation_floors(pricing, problem)
        } else {
            Vec::new()
        };
        let n = jobs.len();
        Search {
            problem,
            strong: node_limit >= STRONG_NODES && candidates <= STRONG_CANDIDATES,
            jobs,
            ub: Bounds::new(
                &problem.shapes,
                free_total,
                problem.cpu,
                (!floor.is_empty()).then_some(&floor[..]),
            ),
            lower: if floor.is_empty() {
                Vec::new()
            } else {
                vec![0.0; (n + 1) * (2 * n + 1)]
            },
            floor,
            with_workers: 0,
            first: if by_shapes {
                Vec::new() // asked per layout
            } else {
                jobs.iter()
                    .map(|cands| {
                        cands
                            .iter()
                            .map(|c| symmetry.opens(&c.fragment.gpus))
                            .collect()
                    })
                    .collect()
            },
            symmetry,
            prune,
            free: problem.free.clone(),
            free_total,
            open: f64::NEG_INFINITY,
            cpu: problem.cpu,
            mem: problem.mem,
            chosen: Vec::new(),
            value: 0.0,
            best: (0.0, Vec::new()),
            passed: Vec::new(),
            nodes: 0,
            limit: node_limit,
            enough: f64::INFINITY,
            budget,
            collect: None,
            target: f64::INFINITY,
            cap: 0,
            by_shapes,
            sel: Vec::new(),
            layout_free: 0.0,
            picks: Vec::new(),
            layout_best: None,
            layout_picks: Vec::new(),
        }
    }

    /// The problem searched.
    pub(super) fn problem(&self) -> &'p Problem {
        self.problem
    }

    /// The most jobs `i..` can add given the fragments chosen: the knapsack of [`Bounds`] over
    /// the GPUs left (not the cores), each candidate at its own reduced cost plus what
    /// it loses to the chosen fragments (its exact gain if it were added next). Tighter than
    /// the static bound, which ignores every loss, and dearer (every candidate against every
    /// chosen fragment): computed only where the static bound does not prune.
    fn given_chosen(&self, i: usize) -> f64 {
        let cap = self.free_total;
        let mut row = vec![0.0_f64; cap + 1];
        let mut best = vec![f64::NEG_INFINITY; cap + 1];
        for j in (i..self.jobs.len()).rev() {
            best.fill(f64::NEG_INFINITY);
            for (c, cand) in self.jobs[j].iter().enumerate() {
                let g = cand.fragment.gpus.iter().sum::<u32>() as usize;
                if g > cap || cand.own <= best[g] {
                    continue; // losses only lower it
                }
                if !self.fits(cand) {
                    continue;
                }
                best[g] = best[g].max(self.gain(j, c));
            }
            add_job(&mut row, &best);
        }
        row[cap]
    }

    /// Whether `cand` fits in what the chosen fragments leave (cores, memory, GPUs per switch).
    fn fits(&self, cand: &Candidate) -> bool {
        cand.cpu <= self.cpu + 1e-9
            && cand.mem <= self.mem + 1e-9
            && (0..self.free.len()).all(|b| cand.fragment.gpus[b] <= self.free[b])
    }

    /// What candidate `c` of job `i` adds to the column of the chosen fragments.
    fn gain(&self, i: usize, c: usize) -> f64 {
        self.problem.gain(i, c, &self.chosen)
    }

    /// Whether a subtree bounded by `bound` can hold nothing the search wants.
    pub(super) fn pruned(&self, bound: f64) -> bool {
        if !self.prune {
            return false;
        }
        if self.collect.is_some() {
            bound < self.target - 1e-9
        } else {
            bound <= self.best.0 + 1e-12
        }
    }

    /// Searches from the root, charges the budget with the nodes visited, and says whether
    /// the search finished within its limit.
    pub(super) fn complete(&mut self) -> bool {
        if self.by_shapes {
            self.run_shapes();
        } else {
            self.run(0);
        }
        self.budget.spend(self.nodes);
        self.nodes <= self.limit
    }

    /// Counts a node; whether the search is past its limit (past the deadline it counts as
    /// over its limit: not exact).
    pub(super) fn tick(&mut self) -> bool {
        self.nodes += 1;
        if self.nodes.is_multiple_of(4096)
            && self
                .budget
                .deadline()
                .is_some_and(|d| std::time::Instant::now() >= d)
        {
            self.limit = 0;
        }
        self.nodes > self.limit
    }

    fn run(&mut self, i: usize) {
        if self.tick() {
            // The subtree left here is bounded by its knapsack bound (by nothing without one).
            let b = if self.prune {
                self.value + self.ub.at(i, self.free_total, self.cpu)
            } else {
                f64::INFINITY
            };
            self.open = self.open.max(b);
            return;
        }
        if self.value > self.best.0 {
            self.best = (self.value, self.chosen.clone());
            if self.value >= self.enough {
                self.limit = 0;
            }
        }
        if let Some(found) = &mut self.collect
            && self.chosen.last().is_some_and(|&(j, _)| j + 1 == i)
            && self.value >= self.target - 1e-9
        {
            // Collected where first reached (its last fragment just added; the branches
            // that add nothing more reach it again).
            found.push(self.chosen.clone());
            if found.len() > self.cap {
                self.limit = 0;
            }
        }
        if i == self.jobs.len()
            || self.pruned(self.value + self.ub.at(i, self.free_total, self.cpu))
        {
            return;
        }
        if self.strong
            && self.prune
            && !self.chosen.is_empty()
            && self.pruned(self.value + self.given_chosen(i))
        {
            return;
        }
        for c in 0..self.jobs[i].len() {
            let cand = &self.jobs[i][c];
            if self.chosen.is_empty() && !self.first[i][c] {
                continue;
            }
            if !self.fits(cand) {
                continue;
            }
            let gain = self.gain(i, c);
            let used = cand.fragment.gpus.iter().sum::<u32>() as usize;
            let rest = self
                .ub
                .at(i + 1, self.free_total - used, self.cpu - cand.cpu);
            if self.pruned(self.value + gain + rest) {
                continue;
            }
            for b in 0..self.free.len() {
                self.free[b] -= cand.fragment.gpus[b];
            }
            self.free_total -= used;
            let (cpu, mem) = (cand.cpu, cand.mem);
            self.cpu -= cpu;
            self.mem -= mem;
            self.value += gain;
            self.chosen.push((i, c));
            self.run(i + 1);
            self.chosen.pop();
            self.value -= gain;
            self.cpu += cpu;
            self.mem += mem;
            let cand = &self.jobs[i][c];
            for b in 0..self.free.len() {
                self.free[b] += cand.fragment.gpus[b];
            }
            self.free_total += used;
        }
        // Or job i has nothing here.
        self.run(i + 1);
    }
}

/// `floor[i · n + b]` of [`Bounds::new`] for `problem`: the least jobs `i` and `b` lose to each
/// other on the server whenever both have workers there — each its co-location excess from
/// the other at the least coefficient of its options with workers, plus, where every such
/// option of both is multi-server, their least NIC coefficients. Valid for any two of their
/// shapes with workers ([`super::column::PairTerms::layout_free_loss`]; PCIe only adds).
fn colocation_floors(pricing: &RoundPricing<'_>, problem: &Problem) -> Vec<f64> {
    let n = problem.jobs.len();
    // Per job: (least, most) co-location coefficient, least NIC coefficient and whether every
    // option with workers is multi-server, over its shapes with workers.
    let per_job: Vec<Option<(f64, f64, f64, bool)>> = (0..n)
        .map(|i| {
            problem.shapes[i]
                .iter()
                .filter(|sh| sh.workers)
                .map(|sh| {
                    let f = &problem.jobs[i][sh.cands.start].fragment;
                    let o = &pricing.options(f.job)[f.option];
                    let t = &o.terms;
                    (
                        t.coloc_coef,
                        t.coloc_coef,
                        t.nic_coef,
                        o.mode == Mode::Multi,
                    )
                })
                .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1), a.2.min(b.2), a.3 && b.3))
        })
        .collect();
    let mut floor = vec![0.0; n * n];
    for a in 0..n {
        for b in 0..n {
            let (Some(x), Some(y)) = (per_job[a], per_job[b]) else {
                continue;
            };
            if a == b {
                continue;
            }
            // The least of coefficient × excess over the coefficients' range.
            let least = |(lo, hi, ..): (f64, f64, f64, bool), e: f64| (lo * e).min(hi * e);
            let nic = if x.3 && y.3 { x.2 + y.2 } else { 0.0 };
            floor[a * n + b] =
                least(x, problem.excess[a * n + b]) + least(y, problem.excess[b * n + a]) + nic;
        }
    }
    floor
}

/// One step of the knapsack over a server's GPUs: `row[c]` (the most the jobs after this one
/// add within `c` GPUs) becomes the most with this job too, whose best gain at `g` GPUs is
/// `best[g]` (not positive: it has nothing worth taking there).
pub(super) fn add_job(row: &mut [f64], best: &[f64]) {
    for c in (0..row.len()).rev() {
        let mut v = row[c];
        for (g, &b) in best.iter().enumerate().take(c + 1) {
            if b > 0.0 {
                v = v.max(b + row[c - g]);
            }
        }
        row[c] = v;
    }
}

/// One server's pricing problem: its capacities and its jobs' candidate fragments.
pub(super) struct Problem {
    pub(super) cpu: f64,
    pub(super) mem: f64,
    pub(super) free: Vec<u32>,
    pub(super) jobs: Vec<Vec<Candidate>>,
    /// `terms[i][c]`: what candidate `c` of job `i` prices its pairs with, gathered once with
    /// the problem (greedy and exact pricing price every candidate against every chosen
    /// fragment; kept beside the candidates, which are sorted, so the sort moves less).
    pub(super) terms: Vec<Vec<PairTerms>>,
    /// `excess[i * n + k]`: job `i`'s co-location excess from job `k` on this server (`n` =
    /// `jobs.len()`).
    pub(super) excess: Vec<f64>,
    /// Each job's candidates by shape, in its order of own reduced cost.
    pub(super) shapes: Vec<Vec<Shape>>,
}

impl Problem {
    /// What candidate `c` of job `i` adds to a column of the `chosen` fragments: its own
    /// reduced cost and its losses to each of them (`pair_loss`, from the gathered terms).
    pub(super) fn gain(&self, i: usize, c: usize, chosen: &[(usize, usize)]) -> f64 {
        let n = self.jobs.len();
        let t = &self.terms[i][c];
        self.jobs[i][c].own
            + chosen
                .iter()
                .map(|&(k, d)| {
                    t.loss(&self.terms[k][d], || {
                        (self.excess[i * n + k], self.excess[k * n + i])
                    })
                })
                .sum::<f64>()
    }
}

/// Which layouts may be a column's first fragment's (in job order): on a server with no
/// kept fragment, a permutation of its PCIe switches that keeps each switch's size and the
/// switches' grouping into sockets maps columns to columns of the same value (every term
/// depends on the layout only through which switches two fragments share and how many sockets
/// one spans), so some best column has a first fragment whose layout is the largest of its
/// image under every such permutation — only those open a column. Up to 8 times fewer
/// subtrees on a 2-socket × 2-switch server.
pub(super) struct Symmetry {
    /// The inverse of each such permutation (none: every layout opens a column).
    inverse: Vec<Vec<usize>>,
}

impl Symmetry {
    /// The switch symmetry of server `s` in `problem`.
    fn of(pricing: &RoundPricing<'_>, s: usize, problem: &Problem) -> Self {
        let n = problem.free.len();
        if n > 6 || problem.jobs.iter().flatten().any(|c| c.fragment.kept) {
            return Symmetry {
                inverse: Vec::new(),
            };
        }
        let topology = pricing.topology();
        let mut socket = vec![0u32; n];
        for &b in topology.switches_on(s) {
            let sw = topology.switch(b);
            socket[sw.local as usize] = sw.socket;
        }
        // Every permutation of the switches keeping sizes and the socket partition.
        let mut inverse: Vec<Vec<usize>> = Vec::new();
        let mut perm: Vec<usize> = (0..n).collect();
        heap_permutations(n, &mut perm, &mut |p| {
            let ok = (0..n).all(|a| {
                problem.free[p[a]] == problem.free[a]
                    && (0..n).all(|b| (socket[a] == socket[b]) == (socket[p[a]] == socket[p[b]]))
            });
            if ok {
                let mut inv = vec![0; n];
                for a in 0..n {
                    inv[p[a]] = a;
                }
                inverse.push(inv);
            }
        });
        Symmetry { inverse }
    }

    /// Whether layout `g` may open a column: no image of it is larger (lexicographically;
    /// the image `h` of `g` under `p` has `h[p[a]] = g[a]`, so `h[b] = g[p⁻¹[b]]`).
    pub(super) fn opens(&self, g: &[u32]) -> bool {
        self.inverse.iter().all(|inv| {
            for (b, &a) in inv.iter().enumerate() {
                match g[a].cmp(&g[b]) {
                    std::cmp::Ordering::Less => return true,
                    std::cmp::Ordering::Greater => return false,
                    std::cmp::Ordering::Equal => {}
                }
            }
            true
        })
    }
}

/// Calls `f` on every permutation of `perm[..k]` (Heap's algorithm).
fn heap_permutations(k: usize, perm: &mut Vec<usize>, f: &mut impl FnMut(&[usize])) {
    if k <= 1 {
        f(perm);
        return;
    }
    for i in 0..k - 1 {
        heap_permutations(k - 1, perm, f);
        let j = if k.is_multiple_of(2) { i } else { 0 };
        perm.swap(j, k - 1);
    }
    heap_permutations(k - 1, perm, f);
}
