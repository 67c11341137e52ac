//! Pricing: the column of one server with the highest reduced cost against the master's duals,
//! found exactly by a depth-first search over the jobs' fragments.
//!
//! Why the search can stop early: a fragment's reduced cost alone (its worker–PS credit less
//! what its rows cost at the duals) only falls when other fragments join it — co-location,
//! PCIe and NIC sharing are losses — so a fragment whose own reduced cost is not positive never
//! belongs to a best column, and a partial column plus the best own reduced cost of every job
//! still to decide bounds everything below it. Both rest on losses being non-negative, which
//! is checked per server; where a model prices one below zero the search drops that bound and
//! visits every combination (up to the node limit).

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
}

/// A fragment a job could have on the server, with its own reduced cost and demands.
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

/// The candidates of job `j` on server `s` whose own reduced cost is positive.
fn candidates(pricing: &RoundPricing<'_>, duals: &Duals, s: usize, j: usize) -> Vec<Candidate> {
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
            if own <= 1e-9 {
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
        if own > 1e-9 {
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

struct Search<'p, 'a> {
    pricing: &'p RoundPricing<'a>,
    server: usize,
    jobs: Vec<Vec<Candidate>>,
    /// `rest[i]`: the best own reduced cost of jobs `i..`, summed.
    rest: Vec<f64>,
    prune: bool,
    free: Vec<u32>,
    cpu: f64,
    mem: f64,
    chosen: Vec<(usize, usize)>,
    value: f64,
    best: (f64, Vec<(usize, usize)>),
    nodes: u64,
    limit: u64,
    deadline: Option<std::time::Instant>,
}

impl Search<'_, '_> {
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
            return;
        }
        if self.value > self.best.0 {
            self.best = (self.value, self.chosen.clone());
        }
        if i == self.jobs.len() || (self.prune && self.value + self.rest[i] <= self.best.0 + 1e-12)
        {
            return;
        }
        for c in 0..self.jobs[i].len() {
            let cand = &self.jobs[i][c];
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
            if self.prune && self.value + gain + self.rest[i + 1] <= self.best.0 + 1e-12 {
                continue;
            }
            for b in 0..self.free.len() {
                self.free[b] -= cand.fragment.gpus[b];
            }
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
        .map(|j| candidates(pricing, duals, s, j))
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
    }
}

/// The best column of server `s` at `duals`, searching at most `node_limit` nodes.
pub(crate) fn price_server(
    pricing: &RoundPricing<'_>,
    duals: &Duals,
    s: usize,
    node_limit: u64,
    deadline: Option<std::time::Instant>,
) -> Priced {
    let snap = pricing.snapshot();
    let mut jobs: Vec<Vec<Candidate>> = (0..snap.jobs.len())
        .map(|j| candidates(pricing, duals, s, j))
        .filter(|c| !c.is_empty())
        .collect();
    // Best own reduced cost first: good columns early, tight bounds soon.
    jobs.sort_by(|a, b| b[0].own.total_cmp(&a[0].own));
    let mut rest = vec![0.0; jobs.len() + 1];
    for i in (0..jobs.len()).rev() {
        rest[i] = rest[i + 1] + jobs[i][0].own.max(0.0);
    }
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
    let topology = pricing.topology();
    let mut free = vec![0u32; topology.switches_on(s).len()];
    for &b in topology.switches_on(s) {
        let sw = topology.switch(b);
        free[sw.local as usize] = sw.gpus.len() as u32;
    }
    let server = &snap.cluster.servers[s];
    let mut search = Search {
        pricing,
        server: s,
        jobs,
        rest,
        prune,
        free,
        cpu: server.cpu_cores,
        mem: server.memory_gib,
        chosen: Vec::new(),
        value: 0.0,
        best: (0.0, Vec::new()),
        nodes: 0,
        limit: node_limit,
        deadline,
    };
    search.run(0);
    let exact = search.nodes <= search.limit;
    let (value, picks) = search.best.clone();
    let mut fragments: Vec<Fragment> = picks
        .iter()
        .map(|&(i, c)| search.jobs[i][c].fragment.clone())
        .collect();
    fragments.sort_by_key(|f| f.job);
    let column = Column {
        server: s,
        fragments,
    };
    let pi = duals.server.get(&s).copied().unwrap_or(0.0);
    Priced {
        column,
        reduced_cost: value - pi,
        exact,
    }
}
