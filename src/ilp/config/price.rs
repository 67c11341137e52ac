//! Pricing: the column of one server with the highest reduced cost against the master's duals,
//! found exactly by a depth-first search over the jobs' fragments.
//!
//! Why the search can stop early: a fragment's reduced cost alone (its worker–PS credit less
//! what its rows cost at the duals) only falls when other fragments join it — co-location,
//! PCIe and NIC sharing are losses — so a fragment whose own reduced cost is not positive never
//! belongs to a best column, and a partial column plus the best the jobs still to decide can
//! add on their own within the GPUs left (a knapsack over GPU counts, [`knapsack_bounds`])
//! bounds everything below it. Both rest on losses being non-negative, which is checked per
//! server; where a model prices one below zero the search drops that bound and visits every
//! combination (up to the node limit). A search cut off by its node limit still bounds the
//! server's best column: the best it found, or the bound of a subtree it left.

use super::column::{Column, Fragment, pair_loss};
use super::master::Duals;
use crate::model::JobPos;
use crate::objective::{Mode, RoundPricing};

/// The best column found for a server, its reduced cost, and whether the search was complete
/// (a certificate that no column of that server has a higher one).
#[derive(Debug, Clone)]
pub(crate) struct Priced {
    /// The column (may be empty: nothing pays).
    pub column: Column,
    /// Its reduced cost.
    pub reduced_cost: f64,
    /// Whether the search finished within its node limit.
    pub exact: bool,
    /// An upper bound on every column's reduced cost on this server: `reduced_cost` when the
    /// search was exact, else the best bound of the subtrees it left (infinite where losses
    /// can be negative and nothing bounds the search).
    pub bound: f64,
}

/// A fragment a job could have on the server, with its own reduced cost and demands.
#[derive(PartialEq)]
struct Candidate {
    fragment: Fragment,
    own: f64,
    cpu: f64,
    mem: f64,
}

/// Every split of `n` GPUs over switches with `free` room each.
fn layouts(n: u32, free: &[u32], out: &mut Vec<Vec<u32>>, cur: &mut Vec<u32>) {
    if cur.len() == free.len() {
        if n == 0 {
            out.push(cur.clone());
        }
        return;
    }
    let rest: u32 = free[cur.len() + 1..].iter().sum();
    let lo = n.saturating_sub(rest);
    for g in lo..=n.min(free[cur.len()]) {
        cur.push(g);
        layouts(n - g, free, out, cur);
        cur.pop();
    }
}

/// A fragment's reduced cost alone: its worker–PS credit less its workers', PS and presence
/// rows at their duals `[α, β, γ]`, less `extra` (its spread and keep rows).
fn own_reduced_cost(slope: f64, m: u32, q: u32, [dw, dp, dn]: [f64; 3], extra: f64) -> f64 {
    let (m, q) = (f64::from(m), f64::from(q));
    slope * m * q - dw * m - dp * q - dn - extra
}

/// The candidates of job `j` on server `s` whose own reduced cost is above `min_own` (0 when
/// searching for the best column; `−δ` when enumerating every column within `δ` of 0).
fn candidates(
    pricing: &RoundPricing<'_>,
    duals: &Duals,
    s: usize,
    j: usize,
    min_own: f64,
) -> Vec<Candidate> {
    let snap = pricing.snapshot();
    let topology = pricing.topology();
    let server = &snap.cluster.servers[s];
    let job = &snap.jobs[j];
    let jp = JobPos(j);
    let switches = topology.switches_on(s);
    let caps: Vec<u32> = {
        let mut c = vec![0u32; switches.len()];
        for &b in switches {
            let sw = topology.switch(b);
            c[sw.local as usize] = sw.gpus.len() as u32;
        }
        c
    };
    let socket_of: Vec<u32> = {
        let mut c = vec![0u32; switches.len()];
        for &b in switches {
            let sw = topology.switch(b);
            c[sw.local as usize] = sw.socket;
        }
        c
    };
    let d = &job.demand;
    let gpw = d.gpus_per_worker.max(1);
    let mut out = Vec::new();
    let held = duals.held.get(j).copied().unwrap_or(false);
    for (k, o) in pricing.options(jp).iter().enumerate().filter(|_| !held) {
        if o.gpu_type != server.gpu_type {
            continue;
        }
        let [dw, dp, dn] = duals.option.get(&(j, k)).copied().unwrap_or([0.0; 3]);
        let ds = duals.spread.get(&(j, k, s)).copied().unwrap_or(0.0);
        let multi = o.mode == Mode::Multi;
        let sizes: Vec<(u32, u32)> = if multi {
            (0..=o.workers)
                .flat_map(|m| (0..=o.ps).map(move |q| (m, q)))
                .filter(|&(m, q)| (m, q) != (0, 0) && (m, q) != (o.workers, o.ps))
                .collect()
        } else {
            vec![(o.workers, o.ps)]
        };
        for (m, q) in sizes {
            let own = own_reduced_cost(o.terms.local_pair_slope, m, q, [dw, dp, dn], ds);
            if own <= min_own + 1e-9 {
                continue;
            }
            let cpu = f64::from(m) * d.cpu_per_worker + f64::from(q) * d.cpu_per_ps;
            let mem = f64::from(m) * d.mem_per_worker_gib + f64::from(q) * d.mem_per_ps_gib;
            if cpu > server.cpu_cores + 1e-9 || mem > server.memory_gib + 1e-9 {
                continue;
            }
            let mut splits = Vec::new();
            layouts(m * gpw, &caps, &mut splits, &mut Vec::new());
            for gpus in splits {
                let mut sockets: Vec<u32> = (0..gpus.len())
                    .filter(|&b| gpus[b] > 0)
                    .map(|b| socket_of[b])
                    .collect();
                sockets.sort_unstable();
                sockets.dedup();
                let all_reduce = job.arch == crate::model::Architecture::AllReduce;
                let ok = match o.mode {
                    Mode::Single => !all_reduce || sockets.len() <= 1,
                    Mode::CrossSocket => sockets.len() > 1,
                    Mode::Multi => true,
                };
                if ok {
                    out.push(Candidate {
                        fragment: Fragment {
                            job: jp,
                            option: k,
                            workers: m,
                            gpus,
                            ps: q,
                            kept: false,
                        },
                        own,
                        cpu,
                        mem,
                    });
                }
            }
        }
    }
    // Its current tasks here, exactly, as part of keeping it.
    if let Some(cur) = &job.run.current
        && cur.servers().contains(&s)
        && let Some(k) = pricing.option_index(jp, &pricing.option_of(jp, cur))
    {
        let o = &pricing.options(jp)[k];
        let slots = &topology.slots()[s];
        let m = cur.workers.iter().filter(|w| w.server == s).count() as u32;
        let q = cur.ps.iter().filter(|p| p.server == s).count() as u32;
        let mut gpus = vec![0u32; caps.len()];
        for w in cur.workers.iter().filter(|w| w.server == s) {
            for &g in &w.gpus {
                gpus[slots[g as usize].switch as usize] += 1;
            }
        }
        let [dw, dp, dn] = duals.option.get(&(j, k)).copied().unwrap_or([0.0; 3]);
        let extra = duals.keep.get(&(j, s)).copied().unwrap_or(0.0)
            + duals.spread.get(&(j, k, s)).copied().unwrap_or(0.0);
        let own = own_reduced_cost(o.terms.local_pair_slope, m, q, [dw, dp, dn], extra);
        if own > min_own + 1e-9 {
            out.push(Candidate {
                fragment: Fragment {
                    job: jp,
                    option: k,
                    workers: m,
                    gpus,
                    ps: q,
                    kept: true,
                },
                own,
                cpu: f64::from(m) * d.cpu_per_worker + f64::from(q) * d.cpu_per_ps,
                mem: f64::from(m) * d.mem_per_worker_gib + f64::from(q) * d.mem_per_ps_gib,
            });
        }
    }
    out.sort_by(|a, b| b.own.total_cmp(&a.own));
    out
}

/// `ub[i][c]`: the most the fragments of jobs `i..` can add within `c` free GPUs, taking each
/// fragment at its own reduced cost (a bound where losses are non-negative): a
/// multiple-choice knapsack over the server's GPU count, by dynamic programming. Far tighter
/// than the sum of every job's best fragment once jobs compete for the GPUs.
fn knapsack_bounds(jobs: &[Vec<Candidate>], gpus: usize) -> Vec<Vec<f64>> {
    let mut ub = vec![vec![0.0_f64; gpus + 1]; jobs.len() + 1];
    for i in (0..jobs.len()).rev() {
        // The best own reduced cost of job i at each GPU count.
        let mut best = vec![f64::NEG_INFINITY; gpus + 1];
        for c in &jobs[i] {
            let g = c.fragment.gpus.iter().sum::<u32>() as usize;
            if g <= gpus && c.own > best[g] {
                best[g] = c.own;
            }
        }
        for cap in 0..=gpus {
            let mut v = ub[i + 1][cap];
            for (g, &b) in best.iter().enumerate().take(cap + 1) {
                if b > f64::NEG_INFINITY {
                    v = v.max(b + ub[i + 1][cap - g]);
                }
            }
            ub[i][cap] = v;
        }
    }
    ub
}

struct Search<'p, 'a> {
    pricing: &'p RoundPricing<'a>,
    server: usize,
    jobs: &'p [Vec<Candidate>],
    /// [`knapsack_bounds`] of `jobs`.
    ub: Vec<Vec<f64>>,
    /// `first[i][c]`: whether candidate `c` of job `i` may open a column (see [`symmetric`]).
    first: Vec<Vec<bool>>,
    prune: bool,
    free: Vec<u32>,
    /// `free` summed.
    free_total: usize,
    /// The best bound of the subtrees left unsearched at the node limit.
    open: f64,
    cpu: f64,
    mem: f64,
    chosen: Vec<(usize, usize)>,
    value: f64,
    best: (f64, Vec<(usize, usize)>),
    nodes: u64,
    limit: u64,
    /// A value at which the search stops early (what it leaves is then bounded, not searched).
    enough: f64,
    deadline: Option<std::time::Instant>,
    /// Enumerating: every column of value at least `target` is collected (the search prunes
    /// against `target`, not against the best), at most `cap` of them.
    collect: Option<Vec<Vec<(usize, usize)>>>,
    target: f64,
    cap: usize,
}

impl<'p, 'a> Search<'p, 'a> {
    /// A search of `problem` (server `s`'s), visiting at most `node_limit` nodes, for the best
    /// column (set `enough` or `collect` for the other uses).
    fn new(
        pricing: &'p RoundPricing<'a>,
        s: usize,
        problem: &'p Problem,
        node_limit: u64,
        deadline: Option<std::time::Instant>,
    ) -> Self {
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
        Search {
            pricing,
            server: s,
            jobs,
            ub: knapsack_bounds(jobs, free_total),
            first: symmetric(pricing, s, problem),
            prune,
            free: problem.free.clone(),
            free_total,
            open: f64::NEG_INFINITY,
            cpu: problem.cpu,
            mem: problem.mem,
            chosen: Vec::new(),
            value: 0.0,
            best: (0.0, Vec::new()),
            nodes: 0,
            limit: node_limit,
            enough: f64::INFINITY,
            deadline,
            collect: None,
            target: f64::INFINITY,
            cap: 0,
        }
    }

    /// The most jobs `i..` can add given the fragments chosen: the knapsack of
    /// [`knapsack_bounds`] over the GPUs left, each candidate at its own reduced cost plus what
    /// it loses to the chosen fragments (its exact gain if it were added next). Tighter than
    /// the static bound, which ignores every loss, and dearer (every candidate against every
    /// chosen fragment): computed only where the static bound does not prune.
    fn given_chosen(&self, i: usize) -> f64 {
        let cap = self.free_total;
        let mut row = vec![0.0_f64; cap + 1];
        let mut best = vec![f64::NEG_INFINITY; cap + 1];
        for j in (i..self.jobs.len()).rev() {
            best.fill(f64::NEG_INFINITY);
            for cand in &self.jobs[j] {
                let g = cand.fragment.gpus.iter().sum::<u32>() as usize;
                if g > cap || cand.own <= best[g] {
                    continue; // losses only lower it
                }
                if cand.cpu > self.cpu + 1e-9
                    || cand.mem > self.mem + 1e-9
                    || (0..self.free.len()).any(|b| cand.fragment.gpus[b] > self.free[b])
                {
                    continue;
                }
                let gain = cand.own
                    + self
                        .chosen
                        .iter()
                        .map(|&(ji, ci)| {
                            pair_loss(
                                self.pricing,
                                self.server,
                                &cand.fragment,
                                &self.jobs[ji][ci].fragment,
                            )
                        })
                        .sum::<f64>();
                best[g] = best[g].max(gain);
            }
            for c in (0..=cap).rev() {
                let mut v = row[c];
                for (g, &b) in best.iter().enumerate().take(c + 1) {
                    if b > 0.0 {
                        v = v.max(b + row[c - g]);
                    }
                }
                row[c] = v;
            }
        }
        row[cap]
    }

    /// Whether a subtree bounded by `bound` can hold nothing the search wants.
    fn pruned(&self, bound: f64) -> bool {
        if !self.prune {
            return false;
        }
        if self.collect.is_some() {
            bound < self.target - 1e-9
        } else {
            bound <= self.best.0 + 1e-12
        }
    }

    fn run(&mut self, i: usize) {
        self.nodes += 1;
        // Past the deadline the search counts as over its limit (not exact).
        if self.nodes.is_multiple_of(4096)
            && self
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
        {
            self.limit = 0;
        }
        if self.nodes > self.limit {
            // The subtree left here is bounded by its knapsack bound (by nothing without one).
            let b = if self.prune {
                self.value + self.ub[i][self.free_total]
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
        if i == self.jobs.len() || self.pruned(self.value + self.ub[i][self.free_total]) {
            return;
        }
        if self.prune && !self.chosen.is_empty() && self.pruned(self.value + self.given_chosen(i)) {
            return;
        }
        for c in 0..self.jobs[i].len() {
            let cand = &self.jobs[i][c];
            if self.chosen.is_empty() && !self.first[i][c] {
                continue;
            }
            if cand.cpu > self.cpu + 1e-9 || cand.mem > self.mem + 1e-9 {
                continue;
            }
            if (0..self.free.len()).any(|b| cand.fragment.gpus[b] > self.free[b]) {
                continue;
            }
            let gain = cand.own
                + self
                    .chosen
                    .iter()
                    .map(|&(ji, ci)| {
                        pair_loss(
                            self.pricing,
                            self.server,
                            &cand.fragment,
                            &self.jobs[ji][ci].fragment,
                        )
                    })
                    .sum::<f64>();
            let used = cand.fragment.gpus.iter().sum::<u32>() as usize;
            if self.pruned(self.value + gain + self.ub[i + 1][self.free_total - used]) {
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

/// A good column of server `s` at `duals`, fast: fragments added one at a time, each the one
/// that raises the column's reduced cost most given those already in, while any does. Not a
/// certificate (`exact` is false); column generation prices exactly only when this finds
/// nothing.
pub(crate) fn price_greedy(pricing: &RoundPricing<'_>, duals: &Duals, s: usize) -> Priced {
    let snap = pricing.snapshot();
    let jobs: Vec<Vec<Candidate>> = (0..snap.jobs.len())
        .map(|j| candidates(pricing, duals, s, j, 0.0))
        .filter(|c| !c.is_empty())
        .collect();
    let topology = pricing.topology();
    let mut free = vec![0u32; topology.switches_on(s).len()];
    for &b in topology.switches_on(s) {
        let sw = topology.switch(b);
        free[sw.local as usize] = sw.gpus.len() as u32;
    }
    let server = &snap.cluster.servers[s];
    let (mut cpu, mut mem) = (server.cpu_cores, server.memory_gib);
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut value = 0.0;
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for (i, cands) in jobs.iter().enumerate() {
            if chosen.iter().any(|&(ci, _)| ci == i) {
                continue;
            }
            for (c, cand) in cands.iter().enumerate() {
                if best.is_some_and(|b| cand.own <= b.0) {
                    break; // sorted by own: interactions only lower it
                }
                if cand.cpu > cpu + 1e-9
                    || cand.mem > mem + 1e-9
                    || (0..free.len()).any(|b| cand.fragment.gpus[b] > free[b])
                {
                    continue;
                }
                let gain = cand.own
                    + chosen
                        .iter()
                        .map(|&(ji, ci)| {
                            pair_loss(pricing, s, &cand.fragment, &jobs[ji][ci].fragment)
                        })
                        .sum::<f64>();
                if gain > 1e-9 && best.is_none_or(|b| gain > b.0) {
                    best = Some((gain, i, c));
                }
            }
        }
        let Some((gain, i, c)) = best else { break };
        let cand = &jobs[i][c];
        for (f, g) in free.iter_mut().zip(&cand.fragment.gpus) {
            *f -= g;
        }
        cpu -= cand.cpu;
        mem -= cand.mem;
        value += gain;
        chosen.push((i, c));
    }
    let mut fragments: Vec<Fragment> = chosen
        .iter()
        .map(|&(i, c)| jobs[i][c].fragment.clone())
        .collect();
    fragments.sort_by_key(|f| f.job);
    let pi = duals.server.get(&s).copied().unwrap_or(0.0);
    Priced {
        column: Column {
            server: s,
            fragments,
        },
        reduced_cost: value - pi,
        exact: false,
        bound: f64::INFINITY,
    }
}

/// The best column of server `s` at `duals`, searching at most `node_limit` nodes.
#[cfg(test)]
pub(crate) fn price_server(
    pricing: &RoundPricing<'_>,
    duals: &Duals,
    s: usize,
    node_limit: u64,
    deadline: Option<std::time::Instant>,
) -> Priced {
    price_servers(pricing, duals, &[s], node_limit, f64::INFINITY, deadline)
        .pop()
        .expect("one server priced")
}

/// One server's pricing problem, up to which server it is: servers whose problems are equal
/// (same GPU type, capacities and switch sizes, and the same candidates at the same own
/// reduced costs — identical idle servers, typically) have the same best columns, so a class
/// of them is searched once.
#[derive(PartialEq)]
struct Problem {
    gpu_type: String,
    cpu: f64,
    mem: f64,
    free: Vec<u32>,
    jobs: Vec<Vec<Candidate>>,
}

/// The best column of each server in `servers` at `duals` (in that order), each search visiting
/// at most `node_limit` nodes and stopping at a column of reduced cost `enough` (infinite: the
/// best); servers with equal problems share one search.
pub(crate) fn price_servers(
    pricing: &RoundPricing<'_>,
    duals: &Duals,
    servers: &[usize],
    node_limit: u64,
    enough: f64,
    deadline: Option<std::time::Instant>,
) -> Vec<Priced> {
    let snap = pricing.snapshot();
    let topology = pricing.topology();
    // Searched classes: the problem and what its search found (value, fragments, exact, open).
    let mut classes: Vec<(Problem, f64, Vec<Fragment>, bool, f64)> = Vec::new();
    let mut out = Vec::with_capacity(servers.len());
    for &s in servers {
        let mut jobs: Vec<Vec<Candidate>> = (0..snap.jobs.len())
            .map(|j| candidates(pricing, duals, s, j, 0.0))
            .filter(|c| !c.is_empty())
            .collect();
        // Best own reduced cost first: good columns early, tight bounds soon.
        jobs.sort_by(|a, b| b[0].own.total_cmp(&a[0].own));
        let mut free = vec![0u32; topology.switches_on(s).len()];
        for &b in topology.switches_on(s) {
            let sw = topology.switch(b);
            free[sw.local as usize] = sw.gpus.len() as u32;
        }
        let server = &snap.cluster.servers[s];
        let problem = Problem {
            gpu_type: server.gpu_type.clone(),
            cpu: server.cpu_cores,
            mem: server.memory_gib,
            free,
            jobs,
        };
        let pi = duals.server.get(&s).copied().unwrap_or(0.0);
        let found = match classes.iter().position(|c| c.0 == problem) {
            Some(i) => i,
            None => {
                let (value, fragments, exact, open) =
                    search(pricing, s, &problem, node_limit, enough + pi, deadline);
                classes.push((problem, value, fragments, exact, open));
                classes.len() - 1
            }
        };
        let (_, value, fragments, exact, open) = &classes[found];
        out.push(Priced {
            column: Column {
                server: s,
                fragments: fragments.clone(),
            },
            reduced_cost: value - pi,
            exact: *exact,
            bound: value.max(*open) - pi,
        });
    }
    out
}

/// Which candidates may be a column's first fragment (in job order): on a server with no
/// kept fragment, a permutation of its PCIe switches that keeps each switch's size and the
/// switches' grouping into sockets maps columns to columns of the same value (every term
/// depends on the layout only through which switches two fragments share and how many sockets
/// one spans), so some best column has a first fragment whose layout is the largest of its
/// image under every such permutation — only those open a column. Up to 8 times fewer
/// subtrees on a 2-socket × 2-switch server.
fn symmetric(pricing: &RoundPricing<'_>, s: usize, problem: &Problem) -> Vec<Vec<bool>> {
    let all = || problem.jobs.iter().map(|c| vec![true; c.len()]).collect();
    let n = problem.free.len();
    if n > 6 || problem.jobs.iter().flatten().any(|c| c.fragment.kept) {
        return all();
    }
    let topology = pricing.topology();
    let mut socket = vec![0u32; n];
    for &b in topology.switches_on(s) {
        let sw = topology.switch(b);
        socket[sw.local as usize] = sw.socket;
    }
    // Every permutation of the switches keeping sizes and the socket partition.
    let mut perms: Vec<Vec<usize>> = Vec::new();
    let mut perm: Vec<usize> = (0..n).collect();
    heap_permutations(n, &mut perm, &mut |p| {
        let ok = (0..n).all(|a| {
            problem.free[p[a]] == problem.free[a]
                && (0..n).all(|b| (socket[a] == socket[b]) == (socket[p[a]] == socket[p[b]]))
        });
        if ok {
            perms.push(p.to_vec());
        }
    });
    problem
        .jobs
        .iter()
        .map(|cands| {
            cands
                .iter()
                .map(|c| {
                    let g = &c.fragment.gpus;
                    perms.iter().all(|p| {
                        let mut image = vec![0u32; n];
                        for a in 0..n {
                            image[p[a]] = g[a];
                        }
                        image <= *g
                    })
                })
                .collect()
        })
        .collect()
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

/// Every column of the classes of `servers` (representatives) whose reduced cost at `duals` is
/// at least `−delta`, up to the switch symmetry of [`symmetric`] (columns it maps onto each
/// other are the same to the master); `None` when there are more than `cap`, the node limit or
/// deadline cuts a search, or some loss is negative (nothing bounds the search). At duals
/// where no column has a positive reduced cost, a schedule better than one of value `z` uses
/// only columns of reduced cost at least `z − LP` (each column's reduced cost is at most 0,
/// and they add up to at least that): with `delta = LP − z`, the master over these columns
/// holds every such schedule.
pub(crate) fn enumerate_columns(
    pricing: &RoundPricing<'_>,
    duals: &Duals,
    servers: &[usize],
    delta: f64,
    cap: usize,
    node_limit: u64,
    deadline: Option<std::time::Instant>,
) -> Option<Vec<Column>> {
    let snap = pricing.snapshot();
    let topology = pricing.topology();
    let mut out: Vec<Column> = Vec::new();
    for &s in servers {
        let jobs: Vec<Vec<Candidate>> = (0..snap.jobs.len())
            .map(|j| candidates(pricing, duals, s, j, -delta))
            .filter(|c| !c.is_empty())
            .collect();
        let mut free = vec![0u32; topology.switches_on(s).len()];
        for &b in topology.switches_on(s) {
            let sw = topology.switch(b);
            free[sw.local as usize] = sw.gpus.len() as u32;
        }
        let server = &snap.cluster.servers[s];
        let problem = Problem {
            gpu_type: server.gpu_type.clone(),
            cpu: server.cpu_cores,
            mem: server.memory_gib,
            free,
            jobs,
        };
        let pi = duals.server.get(&s).copied().unwrap_or(0.0);
        let mut search = Search::new(pricing, s, &problem, node_limit, deadline);
        if !search.prune {
            return None;
        }
        search.collect = Some(Vec::new());
        search.target = pi - delta;
        search.cap = cap.saturating_sub(out.len());
        search.run(0);
        if search.nodes > search.limit {
            return None;
        }
        for picks in search.collect.take().unwrap_or_default() {
            let mut fragments: Vec<Fragment> = picks
                .iter()
                .map(|&(i, c)| problem.jobs[i][c].fragment.clone())
                .collect();
            fragments.sort_by_key(|f| f.job);
            out.push(Column {
                server: s,
                fragments,
            });
        }
    }
    Some(out)
}

/// The exact search of one problem (server `s`'s): the best column's value (before the
/// server's dual), its fragments by job, whether the search finished, and the best bound of
/// the subtrees it left.
fn search(
    pricing: &RoundPricing<'_>,
    s: usize,
    problem: &Problem,
    node_limit: u64,
    enough: f64,
    deadline: Option<std::time::Instant>,
) -> (f64, Vec<Fragment>, bool, f64) {
    let jobs = &problem.jobs;
    let mut search = Search::new(pricing, s, problem, node_limit, deadline);
    search.enough = enough;
    search.run(0);
    let exact = search.nodes <= search.limit;
    let (value, picks) = search.best;
    let mut fragments: Vec<Fragment> = picks
        .iter()
        .map(|&(i, c)| jobs[i][c].fragment.clone())
        .collect();
    fragments.sort_by_key(|f| f.job);
    (value, fragments, exact, search.open)
}
