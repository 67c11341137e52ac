//! The knapsack bound of a server's pricing search: the most the jobs still to decide can add
//! to a column, within the GPUs and cores left.
//!
//! Why a knapsack: every loss (co-location, PCIe, NIC) is non-negative where the search prunes,
//! so a set of fragments is worth at most the sum of their own reduced costs, and jobs compete
//! for the server's GPUs and cores. Why the co-location floor ([`Bounds::new`]'s `pair`): on the
//! trace rounds many jobs each have a fragment whose own reduced cost equals the server's dual
//! (each alone is a column of reduced cost 0), and a knapsack that takes several of them at their
//! own is several times the best column — what keeps exact pricing from finishing. Two jobs with
//! workers on one server always lose at least their co-location floor to each other, so the
//! knapsack also counts the jobs with workers it takes and charges each pair its floor.

/// Most units the cores dimension of [`Bounds`] has (a server's cores are counted in units
/// of `cores / CORE_UNITS` past that).
const CORE_UNITS: f64 = 64.0;

/// `T(i, g, k, c)`: the most the shapes of jobs `i..` can add within `g` free GPUs and `k`
/// core units with exactly `c` of the jobs taking a shape with workers — each shape at its
/// own reduced cost, each pair of jobs with workers less its co-location floor — a
/// multiple-choice knapsack over the server's GPUs and cores, by dynamic programming. Far
/// tighter than the sum of every job's best fragment once jobs compete for the GPUs — or, when
/// jobs offer CPU/memory tiers, for the cores. Cores are counted in whole units, each shape's
/// rounded down and the capacity too: every set of shapes that fits fits in units, so the
/// bound stays one.
pub(super) struct Bounds {
    /// `T`, by `((i · (gpus + 1) + g) · (units + 1) + k) · counts + c`.
    ub: Vec<f64>,
    /// `T` at its best count, by `(i · (gpus + 1) + g) · (units + 1) + k`.
    top: Vec<f64>,
    gpus: usize,
    units: usize,
    /// Counts of jobs with workers `T` tells apart (1 without floors: the count is not kept).
    counts: usize,
    /// Cores per unit.
    unit: f64,
}

impl Bounds {
    /// The bound of `jobs`' shapes on a server of `gpus` free GPUs and `cores` cores; with
    /// `pair` (`pair[i · n + b]`, `n = jobs.len()`: a floor on what jobs `i` and `b` lose to
    /// each other whenever both take a shape with workers, symmetric), the pairs' floors are
    /// charged; without, every loss is left out (the bound as the fragment search had it).
    /// A shape counts as one with workers when [`Shape::workers`] says so and it takes GPUs
    /// (a job with workers takes at least one, so the count never passes `gpus`).
    pub(super) fn new(jobs: &[Vec<Shape>], gpus: usize, cores: f64, pair: Option<&[f64]>) -> Self {
        let n = jobs.len();
        let unit = (cores / CORE_UNITS).ceil().max(1.0);
        let units = Self::count(cores, unit);
        let counts = if pair.is_some() { gpus.min(n) + 1 } else { 1 };
        let (gn, kn) = (gpus + 1, units + 1);
        let at = |i: usize, g: usize, k: usize, c: usize| ((i * gn + g) * kn + k) * counts + c;
        let mut ub = vec![f64::NEG_INFINITY; (n + 1) * gn * kn * counts];
        for g in 0..gn {
            for k in 0..kn {
                ub[at(n, g, k, 0)] = 0.0;
            }
        }
        // Each job's best own reduced cost at each (GPUs, core units, with workers).
        let mut best: Vec<(usize, usize, bool, f64)> = Vec::new();
        // `floor[c]`: the least job i can lose to c later jobs with workers (the sum of its c
        // smallest floors to them: whichever jobs they are, they are c distinct later ones).
        let mut floor: Vec<f64> = Vec::new();
        for i in (0..n).rev() {
            best.clear();
            // By shape: a shape's layouts share GPUs, cores and own reduced cost.
            for sh in &jobs[i] {
                let g = sh.gpus;
                let k = ((sh.cpu / unit) + 1e-9).floor().max(0.0) as usize;
                if g > gpus || k > units {
                    continue;
                }
                let w = counts > 1 && sh.workers && g > 0;
                match best.iter_mut().find(|b| b.0 == g && b.1 == k && b.2 == w) {
                    Some(b) => b.3 = b.3.max(sh.own),
                    None => best.push((g, k, w, sh.own)),
                }
            }
            floor.clear();
            if let Some(pair) = pair {
                floor.extend((i + 1..n).map(|b| pair[i * n + b]));
                floor.sort_by(f64::total_cmp);
                floor.insert(0, 0.0);
                for c in 1..floor.len() {
                    floor[c] += floor[c - 1];
                }
            }
            for g in 0..gn {
                for k in 0..kn {
                    for c in 0..counts {
                        let mut v = ub[at(i + 1, g, k, c)];
                        for &(bg, bk, w, b) in &best {
                            if bg > g || bk > k {
                                continue;
                            }
                            if !w {
                                v = v.max(b + ub[at(i + 1, g - bg, k - bk, c)]);
                            } else if c >= 1 && c <= floor.len() {
                                v = v.max(b - floor[c - 1] + ub[at(i + 1, g - bg, k - bk, c - 1)]);
                            }
                        }
                        ub[at(i, g, k, c)] = v;
                    }
                }
            }
        }
        let top = ub
            .chunks(counts)
            .map(|t| t.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        Bounds {
            ub,
            top,
            gpus,
            units,
            counts,
            unit,
        }
    }

    /// Whole units in `cores` (a hair of tolerance, as the fits checks allow).
    fn count(cores: f64, unit: f64) -> usize {
        ((cores / unit) + 1e-6).floor().max(0.0) as usize
    }

    fn cell(&self, i: usize, gpus: usize, cores: f64) -> usize {
        let k = Self::count(cores, self.unit).min(self.units);
        (i * (self.gpus + 1) + gpus.min(self.gpus)) * (self.units + 1) + k
    }

    /// The bound of jobs `i..` with `gpus` GPUs and `cores` cores free.
    pub(super) fn at(&self, i: usize, gpus: usize, cores: f64) -> f64 {
        self.top[self.cell(i, gpus, cores)]
    }

    /// [`Bounds::at`] where each job of `i..` that takes a shape with workers also loses at
    /// least `mu` (≥ 0) to the fragments already chosen.
    pub(super) fn at_given(&self, i: usize, gpus: usize, cores: f64, mu: f64) -> f64 {
        if mu <= 0.0 {
            return self.at(i, gpus, cores);
        }
        let t = &self.ub[self.cell(i, gpus, cores) * self.counts..][..self.counts];
        t.iter()
            .enumerate()
            .map(|(c, &v)| v - c as f64 * mu)
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// One shape of a job on the server (its fragment apart from the layout: option, workers, PS,
/// kept; see `shape.rs`): its candidates (layouts) and what they share.
pub(super) struct Shape {
    /// Its candidates in the job's list (each a layout): a shape's are consecutive.
    pub(super) cands: std::ops::Range<usize>,
    /// Their own reduced cost.
    pub(super) own: f64,
    /// Cores and memory.
    pub(super) cpu: f64,
    pub(super) mem: f64,
    /// GPUs.
    pub(super) gpus: usize,
    /// Whether it has workers (co-location applies between two that do).
    pub(super) workers: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's option: (GPUs, cores, own reduced cost, with workers).
    type Opt = (usize, f64, f64, bool);

    /// The best of every choice of at most one option per job from job `i` on within `gpus`
    /// and `cpu`, each pair of jobs with workers losing `loss` between them, given the jobs
    /// with workers chosen so far (`with`).
    fn exhaustive(
        jobs: &[Vec<Opt>],
        loss: &dyn Fn(usize, usize) -> f64,
        with: &mut Vec<usize>,
        i: usize,
        gpus: usize,
        cpu: f64,
    ) -> f64 {
        if i == jobs.len() {
            return 0.0;
        }
        let mut best = exhaustive(jobs, loss, with, i + 1, gpus, cpu);
        for &(g, c, own, w) in &jobs[i] {
            if g <= gpus && c <= cpu + 1e-9 {
                let w = w && g > 0;
                let lost: f64 = if w {
                    with.iter().map(|&a| loss(a, i)).sum()
                } else {
                    0.0
                };
                if w {
                    with.push(i);
                }
                let v = own - lost + exhaustive(jobs, loss, with, i + 1, gpus - g, cpu - c);
                if w {
                    with.pop();
                }
                best = best.max(v);
            }
        }
        best
    }

    fn shapes(jobs: &[Vec<Opt>]) -> Vec<Vec<Shape>> {
        jobs.iter()
            .map(|opts| {
                opts.iter()
                    .enumerate()
                    .map(|(c, &(gpus, cpu, own, workers))| Shape {
                        cands: c..c + 1,
                        own,
                        cpu,
                        mem: 0.0,
                        gpus,
                        workers,
                    })
                    .collect()
            })
            .collect()
    }

    /// Random jobs, each of 1–4 options (GPUs 0–4, some without workers), from a seeded
    /// generator; `whole`: cores in whole numbers.
    fn random_jobs(next: &mut impl FnMut(u64) -> u64, whole: bool) -> Vec<Vec<Opt>> {
        (0..1 + next(5) as usize)
            .map(|_| {
                (0..1 + next(4))
                    .map(|_| {
                        let cpu = if whole {
                            next(10) as f64
                        } else {
                            next(100) as f64 / 7.0
                        };
                        let g = next(5) as usize;
                        (g, cpu, next(100) as f64 / 10.0 - 2.0, next(4) > 0)
                    })
                    .collect()
            })
            .collect()
    }

    fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut rng = seed;
        move |m: u64| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) % m
        }
    }

    /// Without floors, with whole cores, the knapsack is exact (the best choice within the
    /// GPUs and cores, from any job on and at any capacity); with fractional cores, or cores
    /// counted in units of several, it still bounds that choice.
    #[test]
    fn the_knapsack_is_exact_on_whole_cores_and_a_bound_otherwise() {
        let mut next = rng(7);
        for case in 0..200 {
            let whole = case % 2 == 0;
            let jobs = random_jobs(&mut next, whole);
            let (gpus, cores) = (next(9) as usize, if case % 5 == 0 { 300.0 } else { 24.0 });
            let b = Bounds::new(&shapes(&jobs), gpus, cores, None);
            for i in 0..=jobs.len() {
                for g in 0..=gpus {
                    for c in [0.0, 3.0, 7.5, 12.0, cores] {
                        let want = exhaustive(&jobs[i..], &|_, _| 0.0, &mut vec![], 0, g, c);
                        let got = b.at(i, g, c);
                        assert!(got >= want - 1e-9, "case {case}: bound {got} < best {want}");
                        if whole && b.unit == 1.0 && c.fract() == 0.0 {
                            assert!((got - want).abs() < 1e-9, "case {case}: {got} vs {want}");
                        }
                    }
                }
            }
        }
    }

    /// With floors, the bound holds for every choice whose pairs of jobs with workers lose at
    /// least their floor (here: random floors plus a random excess), given chosen fragments
    /// that cost each later job with workers at least `mu`; where every pair loses exactly one
    /// floor (the same for all pairs) and nothing is chosen, it is exact (whole cores); and it
    /// is never above the bound without floors.
    #[test]
    fn the_floors_keep_a_bound_and_are_exact_at_the_floor() {
        let mut next = rng(11);
        for case in 0..300 {
            let jobs = random_jobs(&mut next, true);
            let n = jobs.len();
            let mut pair = vec![0.0; n * n];
            let mut over = vec![0.0; n * n];
            for a in 0..n {
                for b in a + 1..n {
                    // Odd cases: one floor for every pair, lost exactly.
                    let f = if case % 2 == 0 {
                        next(30) as f64 / 10.0
                    } else {
                        1.5
                    };
                    let e = if case % 2 == 0 {
                        next(20) as f64 / 10.0
                    } else {
                        0.0
                    };
                    (pair[a * n + b], pair[b * n + a]) = (f, f);
                    (over[a * n + b], over[b * n + a]) = (e, e);
                }
            }
            let loss = |a: usize, b: usize| pair[a * n + b] + over[a * n + b];
            let gpus = next(9) as usize;
            let b = Bounds::new(&shapes(&jobs), gpus, 24.0, Some(&pair));
            let plain = Bounds::new(&shapes(&jobs), gpus, 24.0, None);
            let mu = next(3) as f64 / 2.0;
            for i in 0..=n {
                for g in 0..=gpus {
                    for c in [0.0, 7.0, 24.0] {
                        // Jobs i.. of the whole problem: what they lose to each other.
                        let lone = |a: usize, b: usize| loss(a + i, b + i);
                        // `mu` charged once per job with workers: a chosen job (`MAX`) that
                        // every later one loses `mu` to.
                        let given = |a: usize, b: usize| {
                            if a == usize::MAX { mu } else { lone(a, b) }
                        };
                        let want = exhaustive(&jobs[i..], &given, &mut vec![usize::MAX], 0, g, c);
                        let got = b.at_given(i, g, c, mu);
                        assert!(got >= want - 1e-9, "case {case}: bound {got} < best {want}");
                        let alone = exhaustive(&jobs[i..], &lone, &mut vec![], 0, g, c);
                        assert!(b.at(i, g, c) >= alone - 1e-9, "case {case}");
                        if case % 2 == 1 && b.unit == 1.0 {
                            assert!((b.at(i, g, c) - alone).abs() < 1e-9, "case {case}");
                        }
                        assert!(b.at(i, g, c) <= plain.at(i, g, c) + 1e-9, "case {case}");
                    }
                }
            }
        }
    }
}
