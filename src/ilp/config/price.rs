//! Pricing: the column of one server (class) with the highest reduced cost against the
//! master's duals — greedily, or exactly by the search of [`super::search`] — and every column
//! whose reduced cost is within a given gap of 0 (to close a root gap). A fragment whose own reduced cost is not positive never belongs to a best
//! column (losses only lower a column's value), so only the others are candidates.

use rayon::prelude::*;

use super::bound::Shape;
use super::budget::Budget;
use super::column::{Column, Fragment, PairTerms};
use super::duals::Duals;
use super::search::{Candidate, Problem, Search};
use crate::model::JobPos;
use crate::model::ServerIdx;
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
    /// Columns the search held as its best before `column`, of positive reduced cost, the
    /// best first (at most [`PASSED`]): added beside it, they cut the relaxations column
    /// generation needs (the search found them anyway).
    pub passed: Vec<Column>,
}

/// The most columns one search hands back beside its best ([`Priced::passed`]).
const PASSED: usize = 4;

/// What one exact search found: the best column's value (before the server's dual), the
/// column, whether the search finished, the best bound of the subtrees it left, and the
/// columns that were the best before it (values before the dual; the latest first).
struct Searched {
    value: f64,
    column: Column,
    exact: bool,
    open: f64,
    passed: Vec<(f64, Column)>,
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

/// Job `j` on server `s` at `duals`: what its candidates are enumerated against (its
/// switches' sizes and sockets, by the switch's index on the server).
struct JobOnServer<'p, 'a> {
    pricing: &'p RoundPricing<'a>,
    duals: &'p Duals,
    s: usize,
    j: usize,
    /// GPUs under each switch of the server.
    caps: Vec<u32>,
    /// Socket of each switch of the server.
    socket_of: Vec<u32>,
}

/// The candidates of job `j` on server `s` whose own reduced cost is above `min_own` (0 when
/// searching for the best column; `−δ` when enumerating every column within `δ` of 0): new
/// fragments of each option of the server's GPU type, and its current tasks there as kept.
fn candidates(
    pricing: &RoundPricing<'_>,
    duals: &Duals,
    s: usize,
    j: usize,
    min_own: f64,
) -> (Vec<Candidate>, Vec<Shape>) {
    let topology = pricing.topology();
    let switches = topology.switches_on(s);
    let mut caps = vec![0u32; switches.len()];
    let mut socket_of = vec![0u32; switches.len()];
    for &b in switches {
        let sw = topology.switch(b);
        caps[sw.local as usize] = sw.gpus.len() as u32;
        socket_of[sw.local as usize] = sw.socket;
    }
    let here = JobOnServer {
        pricing,
        duals,
        s,
        j,
        caps,
        socket_of,
    };
    // One block per shape (a shape's layouts are generated together), sorted by own reduced
    // cost, stably: the candidates come out as a stable sort of them all would leave them,
    // and the shapes are the blocks.
    let mut blocks: Vec<Vec<Candidate>> = Vec::new();
    if !duals.held.get(j).copied().unwrap_or(false) {
        here.new_fragments(min_own, &mut blocks);
    }
    here.kept_fragments(min_own, &mut blocks);
    blocks.sort_by(|a, b| b[0].own.total_cmp(&a[0].own));
    let mut out = Vec::with_capacity(blocks.iter().map(Vec::len).sum());
    let mut shapes = Vec::with_capacity(blocks.len());
    for block in blocks {
        let c = &block[0];
        shapes.push(Shape {
            cands: out.len()..out.len() + block.len(),
            own: c.own,
            cpu: c.cpu,
            mem: c.mem,
            gpus: c.fragment.gpus.iter().sum::<u32>() as usize,
            workers: c.fragment.workers > 0,
        });
        out.extend(block);
    }
    (out, shapes)
}

impl JobOnServer<'_, '_> {
    /// Every fragment of every option of the server's GPU type: each size (the whole option,
    /// or for a multi-server option each part of it), each split of its GPUs over the
    /// switches, in the sockets its mode allows, that the server's cores and memory hold.
    fn new_fragments(&self, min_own: f64, out: &mut Vec<Vec<Candidate>>) {
        let (pricing, duals, s, j) = (self.pricing, self.duals, self.s, self.j);
        let snap = pricing.snapshot();
        let server = &snap.cluster.servers[s];
        let job = &snap.jobs[j];
        let jp = JobPos(j);
        let gpw = job.demand.gpus_per_worker.max(1);
        // Each GPU count's splits over the switches, with the sockets each spans (the same
        // for every option and size that needs that many GPUs).
        let mut splits: std::collections::HashMap<usize, Vec<(Vec<u32>, usize)>> =
            Default::default();
        for (k, o) in pricing.options(jp).iter().enumerate() {
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
                let (cpu, mem) = job.cores_mem_at(o.tier, f64::from(m), f64::from(q));
                if !crate::model::fits_in((server.cpu_cores, server.memory_gib), cpu, mem) {
                    continue;
                }
                let n = (m * gpw) as usize;
                let splits = splits.entry(n).or_insert_with(|| {
                    let mut all = Vec::new();
                    layouts(m * gpw, &self.caps, &mut all, &mut Vec::new());
                    all.into_iter()
                        .map(|gpus| {
                            let mut sockets: Vec<u32> = (0..gpus.len())
                                .filter(|&b| gpus[b] > 0)
                                .map(|b| self.socket_of[b])
                                .collect();
                            sockets.sort_unstable();
                            sockets.dedup();
                            (gpus, sockets.len())
                        })
                        .collect()
                });
                let all_reduce = job.arch == crate::model::Architecture::AllReduce;
                let block: Vec<Candidate> = splits
                    .iter()
                    .filter(|(_, sockets)| match o.mode {
                        Mode::Single => !all_reduce || *sockets <= 1,
                        Mode::CrossSocket => *sockets > 1,
                        Mode::Multi => true,
                    })
                    .map(|(gpus, _)| Candidate {
                        fragment: Fragment {
                            job: jp,
                            option: k,
                            workers: m,
                            gpus: gpus.clone(),
                            ps: q,
                            kept: false,
                        },
                        own,
                        cpu,
                        mem,
                    })
                    .collect();
                if !block.is_empty() {
                    out.push(block);
                }
            }
        }
    }

    /// Its current tasks here, exactly, as part of keeping it — at any tier of its current
    /// option (a tier change is not a restart).
    fn kept_fragments(&self, min_own: f64, out: &mut Vec<Vec<Candidate>>) {
        let (pricing, duals, s, j) = (self.pricing, self.duals, self.s, self.j);
        let job = &pricing.snapshot().jobs[j];
        let jp = JobPos(j);
        let current = job
            .run
            .current
            .as_ref()
            .filter(|cur| cur.servers().contains(&s))
            .map(|cur| (cur, pricing.option_of(jp, cur)));
        let kept_options = current.iter().flat_map(|(_, f)| {
            (0..=job.tiers.len()).filter_map(move |t| {
                let f = crate::objective::OptionFacts {
                    tier: t as u8,
                    ..f.clone()
                };
                pricing.option_index(jp, &f)
            })
        });
        for k in kept_options {
            let cur = current
                .as_ref()
                .expect("kept options of a current assignment")
                .0;
            let o = &pricing.options(jp)[k];
            let slots = &pricing.topology().slots()[s];
            let m = cur
                .workers
                .iter()
                .filter(|w| w.server == ServerIdx(s))
                .count() as u32;
            let q = cur.ps.iter().filter(|p| p.server == ServerIdx(s)).count() as u32;
            let mut gpus = vec![0u32; self.caps.len()];
            for w in cur.workers.iter().filter(|w| w.server == ServerIdx(s)) {
                for &g in &w.gpus {
                    gpus[slots[g as usize].switch as usize] += 1;
                }
            }
            let [dw, dp, dn] = duals.option.get(&(j, k)).copied().unwrap_or([0.0; 3]);
            let extra = duals.keep.get(&(j, s)).copied().unwrap_or(0.0)
                + duals.spread.get(&(j, k, s)).copied().unwrap_or(0.0);
            let own = own_reduced_cost(o.terms.local_pair_slope, m, q, [dw, dp, dn], extra);
            if own > min_own + 1e-9 {
                let fragment = Fragment {
                    job: jp,
                    option: k,
                    workers: m,
                    gpus,
                    ps: q,
                    kept: true,
                };
                let (cpu, mem) = job.cores_mem_at(o.tier, f64::from(m), f64::from(q));
                out.push(vec![Candidate {
                    fragment,
                    own,
                    cpu,
                    mem,
                }]);
            }
        }
    }
}

/// A good column of server `s` at `duals`, fast: fragments added one at a time, each the one
/// that raises the column's reduced cost most given those already in, while any does. Not a
/// certificate (`exact` is false); column generation searches exactly when this finds
/// nothing (and briefly, for a bound, when it does).
#[cfg(test)]
pub(crate) fn price_greedy(pricing: &RoundPricing<'_>, duals: &Duals, s: usize) -> Priced {
    price_greedy_on(duals, s, &problem(pricing, duals, s, 0.0))
}

/// [`price_greedy`] of server `s` on its pricing problem at `duals` ([`problems`]).
pub(super) fn price_greedy_on(duals: &Duals, s: usize, problem: &Problem) -> Priced {
    let jobs = &problem.jobs;
    let (mut free, mut cpu, mut mem) = (problem.free.clone(), problem.cpu, problem.mem);
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
                let gain = problem.gain(i, c, &chosen);
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
        passed: Vec::new(),
    }
}

/// What the pricing searches of one relaxation share: the round, its duals, each search's node
/// limit and the phase's budget.
#[derive(Clone, Copy)]
pub(crate) struct Pricer<'p, 'a> {
    /// The round.
    pub pricing: &'p RoundPricing<'a>,
    /// The relaxation's duals.
    pub duals: &'p Duals,
    /// Nodes one search may visit.
    pub node_limit: u64,
    /// When to stop.
    pub budget: Budget<'p>,
    /// Price the server classes on the current rayon pool (ignored under a work limit, whose
    /// nodes go to the searches in order: see [`Budget::counts_nodes`]).
    pub parallel: bool,
    /// Search by shapes, then layouts ([`super::shape`]); else over fragments.
    pub shapes: bool,
    /// By shapes: charge the co-location floors ([`super::bound`]).
    pub floors: bool,
}

/// The best column of server `s` at `duals`, searching at most `node_limit` nodes.
#[cfg(test)]
pub(crate) fn price_server(pricer: Pricer<'_, '_>, s: usize) -> Priced {
    pricer
        .price_servers(&[s], f64::INFINITY)
        .pop()
        .expect("one server priced")
}

/// Server `s`'s pricing problem at `duals`: its capacities and, per job with any, the
/// candidates of own reduced cost above `min_own`, the jobs with the best first (good columns
/// early, tight bounds soon).
fn problem(pricing: &RoundPricing<'_>, duals: &Duals, s: usize, min_own: f64) -> Problem {
    let snap = pricing.snapshot();
    let topology = pricing.topology();
    let mut per_job: Vec<(Vec<Candidate>, Vec<Shape>)> = (0..snap.jobs.len())
        .map(|j| candidates(pricing, duals, s, j, min_own))
        .filter(|c| !c.0.is_empty())
        .collect();
    per_job.sort_by(|a, b| b.0[0].own.total_cmp(&a.0[0].own));
    let (jobs, shapes): (Vec<Vec<Candidate>>, Vec<Vec<Shape>>) = per_job.into_iter().unzip();
    let mut free = vec![0u32; topology.switches_on(s).len()];
    for &b in topology.switches_on(s) {
        let sw = topology.switch(b);
        free[sw.local as usize] = sw.gpus.len() as u32;
    }
    let server = &snap.cluster.servers[s];
    let terms = jobs
        .iter()
        .map(|cands| {
            cands
                .iter()
                .map(|c| PairTerms::of(pricing, &c.fragment))
                .collect()
        })
        .collect();
    let excess = jobs
        .iter()
        .flat_map(|a| {
            jobs.iter()
                .map(move |b| pricing.colocation_excess(a[0].fragment.job, b[0].fragment.job, s))
        })
        .collect();
    Problem {
        cpu: server.cpu_cores,
        mem: server.memory_gib,
        free,
        shapes,
        jobs,
        terms,
        excess,
    }
}

/// The pricing problem of each server in `servers` at `duals` (in that order): built once per
/// relaxation and shared by the greedy and the exact pricing (on the trace rounds, building a
/// server's ~12,000 (Philly) to ~250,000 (ITP) candidates cost more than a short search of
/// them). Built on the current rayon pool when `parallel` (the same problems: each server's is
/// its own).
pub(super) fn problems(
    pricing: &RoundPricing<'_>,
    duals: &Duals,
    servers: &[usize],
    parallel: bool,
) -> Vec<Problem> {
    per_server(servers, parallel, |&s| problem(pricing, duals, s, 0.0))
}

/// `f` of each item, in order: on the current rayon pool when `parallel`, else one after the
/// other. The pricing of a server class reads the round and the duals and writes nothing
/// shared (the round's lazily priced options are behind `OnceLock`s), so both give the same
/// results; only a work limit, which hands nodes out in order, needs the sequential one.
fn per_server<T: Sync, R: Send>(
    items: &[T],
    parallel: bool,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    if parallel && items.len() > 1 {
        items.par_iter().map(f).collect()
    } else {
        items.iter().map(f).collect()
    }
}

impl Pricer<'_, '_> {
    /// The best column of each server in `servers` at the duals (in that order), each search
    /// visiting at most the node limit and stopping at a column of reduced cost `enough`
    /// (infinite: the best). Identical idle servers are one class
    /// ([`super::column::Classes`]), priced once by passing only its representative.
    #[cfg(test)]
    pub(crate) fn price_servers(&self, servers: &[usize], enough: f64) -> Vec<Priced> {
        let problems = problems(self.pricing, self.duals, servers, self.parallel);
        self.price_servers_on(servers, &problems, enough)
    }

    /// [`Pricer::price_servers`] on the servers' problems at the duals ([`problems`]).
    pub(super) fn price_servers_on(
        &self,
        servers: &[usize],
        problems: &[Problem],
        enough: f64,
    ) -> Vec<Priced> {
        let work: Vec<(usize, &Problem)> = servers.iter().copied().zip(problems).collect();
        let parallel = self.parallel && !self.budget.counts_nodes();
        per_server(&work, parallel, |&(s, problem)| {
            let pi = self.duals.server.get(&s).copied().unwrap_or(0.0);
            let found = self.search(s, problem, enough + pi);
            Priced {
                column: found.column,
                reduced_cost: found.value - pi,
                exact: found.exact,
                bound: found.value.max(found.open) - pi,
                passed: found
                    .passed
                    .into_iter()
                    .filter(|(v, _)| *v - pi > 1e-9)
                    .map(|(_, c)| c)
                    .collect(),
            }
        })
    }

    /// Every column of the classes of `servers` (representatives) whose reduced cost at the
    /// duals is at least `−delta`, up to the switch symmetry of `search::Symmetry` (columns it
    /// maps onto each other are the same to the master); `None` when there are more than `cap`, the
    /// node limit or budget cuts a search, or some loss is negative (nothing bounds the search).
    /// At duals where no column has a positive reduced cost, a schedule better than one of
    /// value `z` uses only columns of reduced cost at least `z − LP` (each column's reduced
    /// cost is at most 0, and they add up to at least that): with `delta = LP − z`, the master
    /// over these columns holds every such schedule.
    pub(crate) fn enumerate_columns(
        &self,
        servers: &[usize],
        delta: f64,
        cap: usize,
    ) -> Option<Vec<Column>> {
        let mut out: Vec<Column> = Vec::new();
        for &s in servers {
            let problem = problem(self.pricing, self.duals, s, -delta);
            let pi = self.duals.server.get(&s).copied().unwrap_or(0.0);
            let mut search = Search::new(
                self.pricing,
                s,
                &problem,
                self.node_limit,
                self.budget,
                self.shapes,
                self.floors,
            );
            if !search.prune {
                return None;
            }
            search.collect = Some(Vec::new());
            search.target = pi - delta;
            search.cap = cap.saturating_sub(out.len());
            if !search.complete() {
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
    fn search(&self, s: usize, problem: &Problem, enough: f64) -> Searched {
        let mut search = Search::new(
            self.pricing,
            s,
            problem,
            self.node_limit,
            self.budget,
            self.shapes,
            self.floors,
        );
        search.enough = enough;
        let exact = search.complete();
        let column = |picks: &[(usize, usize)]| {
            let mut fragments: Vec<Fragment> = picks
                .iter()
                .map(|&(i, c)| problem.jobs[i][c].fragment.clone())
                .collect();
            fragments.sort_by_key(|f| f.job);
            Column {
                server: s,
                fragments,
            }
        };
        Searched {
            value: search.best.0,
            column: column(&search.best.1),
            exact,
            open: search.open,
            passed: search
                .passed
                .iter()
                .rev()
                .take(PASSED)
                .map(|(v, picks)| (*v, column(picks)))
                .collect(),
        }
    }
}
