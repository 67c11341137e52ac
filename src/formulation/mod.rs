//! The contention-aware integer program of one scheduling round, built with good_lp and handed to
//! a solver by the caller (see `formulations/README.md` for the mathematics).
//!
//! The model decides, jointly, each job's option (workers, PS, placement mode, GPU type — or
//! wait), how many of its GPUs sit under each PCIe switch, how many PS tasks sit on each server,
//! and prices co-location, PCIe and NIC sharing, PS locality and restarts exactly as
//! [`Objective`] does. It knows nothing about HiGHS; [`crate::solver`] solves it, and
//! [`Formulation::write_mps`] lets any other MIP solver re-check it.

// Servers, switches and jobs are indexed in parallel arrays throughout; index loops read best.
#![allow(clippy::needless_range_loop)]

mod mps;

use std::collections::{BTreeMap, HashMap};

use good_lp::{Constraint, Expression, ProblemVariables, Variable, variable};

use crate::error::{Error, Result};
use crate::model::{Architecture, Assignment, ClusterSnapshot, PsTask, Schedule, WorkerTask};
use crate::objective::{JobOption, Mode, Objective, same_assignment};
use crate::perf::PerfModel;

/// Metadata of one variable, in creation order (= column index).
#[derive(Debug, Clone)]
pub(crate) struct VarInfo {
    pub(crate) name: String,
    pub(crate) lb: f64,
    pub(crate) ub: f64,
    pub(crate) integer: bool,
}

/// One PCIe switch of the cluster.
#[derive(Debug, Clone)]
struct Switch {
    server: usize,
    socket: u32,
    /// GPU indices on the server under this switch.
    gpus: Vec<u32>,
}

/// The variables of one job.
struct JobVars {
    job: usize,
    options: Vec<JobOption>,
    y: Vec<Variable>,
    /// Workers per server (None: the job cannot use that server).
    m: Vec<Option<Variable>>,
    /// Workers on the server at all.
    v: Vec<Option<Variable>>,
    /// GPUs per switch and switch used, keyed by switch index.
    g: BTreeMap<usize, (Variable, Variable)>,
    /// PS per server and "any task on server" (PS jobs only).
    q: Vec<Option<Variable>>,
    a: Vec<Option<Variable>>,
    /// Sockets used per (server, socket) and "spans sockets" per server (all-reduce jobs).
    t: BTreeMap<(usize, u32), Variable>,
    zeta: BTreeMap<usize, Variable>,
    /// Binary expansion of q and the products with m (PS locality).
    bits: BTreeMap<usize, Vec<(Variable, Variable)>>,
    local_pairs: Option<Variable>,
    local_pairs_by_option: Vec<Option<Variable>>,
    keep: Option<Variable>,
    restart: f64,
    loss: [Variable; 3],
    /// `(coefficient, pair variable)` terms of the co-location, PCIe and NIC pressures.
    pressure: [Vec<(f64, Variable)>; 3],
}

/// How the formulation was built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FormulationOptions {
    /// Order interchangeable servers (and PCIe switches) by GPUs used: cuts symmetric copies of
    /// every solution without cutting any objective value.
    pub symmetry_breaking: bool,
}

impl Default for FormulationOptions {
    fn default() -> Self {
        FormulationOptions {
            symmetry_breaking: true,
        }
    }
}

/// Size of a built model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ModelSize {
    /// Columns.
    pub variables: usize,
    /// Integer or binary columns.
    pub integer_variables: usize,
    /// Rows.
    pub constraints: usize,
}

/// The integer program of one round.
pub struct Formulation {
    vars: ProblemVariables,
    info: Vec<VarInfo>,
    objective: Expression,
    /// Constant part of the objective (minus the restart cost of every running job; `keep`
    /// variables pay it back).
    objective_constant: f64,
    constraints: Vec<Constraint>,
    jobs: Vec<JobVars>,
    switches: Vec<Switch>,
    /// Column index of every variable (creation order).
    index_of: HashMap<Variable, usize>,
    /// Definitions of the sharing variables, in creation order (for MIP starts).
    shares: Vec<ShareDef>,
}

/// `var = Π_gates(Σ gate) · Σ terms` at its tight value (terms empty: the gate product alone).
#[derive(Clone)]
struct ShareDef {
    var: Variable,
    gates: Vec<Vec<Variable>>,
    terms: Vec<(f64, Variable)>,
}

fn lin(terms: &[(f64, Variable)]) -> Expression {
    let mut e = Expression::with_capacity(terms.len());
    for &(c, v) in terms {
        e.add_mul(c, v);
    }
    e
}

impl Formulation {
    fn add_var(&mut self, name: String, lb: f64, ub: f64, integer: bool) -> Variable {
        let mut def = variable().name(name.clone()).min(lb).max(ub);
        if integer {
            def = def.integer();
        }
        self.info.push(VarInfo {
            name,
            lb,
            ub,
            integer,
        });
        let v = self.vars.add(def);
        self.index_of.insert(v, self.info.len() - 1);
        v
    }

    fn bin(&mut self, name: String) -> Variable {
        self.add_var(name, 0.0, 1.0, true)
    }

    fn push(&mut self, c: Constraint) {
        self.constraints.push(c);
    }

    /// Builds the program for a snapshot. Every job must be priceable (known model); a job none
    /// of whose options the model can price can only wait.
    pub fn build(
        snapshot: &ClusterSnapshot,
        perf: &dyn PerfModel,
        objective: &Objective,
        options: FormulationOptions,
    ) -> Result<Self> {
        for j in &snapshot.jobs {
            perf.check_job(j, "snapshot")?;
        }
        let servers = &snapshot.cluster.servers;
        let mut switches = Vec::new();
        for (s, srv) in servers.iter().enumerate() {
            let slots = srv.gpu_slots();
            let nsw = srv.topology.iter().map(Vec::len).sum::<usize>();
            for sw in 0..nsw as u32 {
                let gpus: Vec<u32> = (0..slots.len() as u32)
                    .filter(|&g| slots[g as usize].switch == sw)
                    .collect();
                if let Some(&g0) = gpus.first() {
                    switches.push(Switch {
                        server: s,
                        socket: slots[g0 as usize].socket,
                        gpus,
                    });
                }
            }
        }
        let mut f = Formulation {
            vars: ProblemVariables::new(),
            info: Vec::new(),
            objective: Expression::default(),
            objective_constant: 0.0,
            constraints: Vec::new(),
            jobs: Vec::new(),
            switches,
            index_of: HashMap::new(),
            shares: Vec::new(),
        };
        let nsrv = servers.len();
        for (ji, job) in snapshot.jobs.iter().enumerate() {
            let opts = objective.job_options(perf, snapshot, job);
            let id = job.id;
            let is_ps = job.arch == Architecture::ParameterServer;
            let w_max = job.workers.max;
            let p_max = job.ps.max;
            let gpw = job.demand.gpus_per_worker;
            let y: Vec<Variable> = (0..opts.len())
                .map(|k| f.bin(format!("y_j{id}_o{k}")))
                .collect();
            let types: Vec<&str> = {
                let mut t: Vec<&str> = opts.iter().map(|o| o.gpu_type.as_str()).collect();
                t.sort_unstable();
                t.dedup();
                t
            };
            let usable = |s: usize| {
                types.contains(&servers[s].gpu_type.as_str()) && servers[s].num_gpus() >= gpw
            };
            let mut m = vec![None; nsrv];
            let mut v = vec![None; nsrv];
            let mut q = vec![None; nsrv];
            let mut a = vec![None; nsrv];
            let mut g = BTreeMap::new();
            let mut t = BTreeMap::new();
            let mut zeta = BTreeMap::new();
            if !opts.is_empty() {
                for s in 0..nsrv {
                    if usable(s) {
                        let cap = (servers[s].num_gpus() / gpw).min(w_max);
                        m[s] = Some(f.add_var(format!("m_j{id}_s{s}"), 0.0, f64::from(cap), true));
                        v[s] = Some(f.bin(format!("v_j{id}_s{s}")));
                    }
                    if is_ps {
                        q[s] =
                            Some(f.add_var(format!("q_j{id}_s{s}"), 0.0, f64::from(p_max), true));
                        a[s] = Some(f.bin(format!("a_j{id}_s{s}")));
                    }
                }
                for (b, sw) in f.switches.clone().iter().enumerate() {
                    if m[sw.server].is_some() {
                        let cap = sw.gpus.len() as f64;
                        let gv = f.add_var(format!("g_j{id}_b{b}"), 0.0, cap, true);
                        let uv = f.bin(format!("u_j{id}_b{b}"));
                        g.insert(b, (gv, uv));
                    }
                }
                if opts.iter().any(|o| o.mode == Mode::CrossSocket) {
                    for s in 0..nsrv {
                        let mut socks: Vec<u32> = f
                            .switches
                            .iter()
                            .filter(|sw| sw.server == s)
                            .map(|sw| sw.socket)
                            .collect();
                        socks.sort_unstable();
                        socks.dedup();
                        if m[s].is_some() && socks.len() > 1 {
                            for &so in &socks {
                                let tv = f.bin(format!("t_j{id}_s{s}_k{so}"));
                                t.insert((s, so), tv);
                            }
                            let z = f.bin(format!("z_j{id}_s{s}"));
                            zeta.insert(s, z);
                        }
                    }
                }
            }
            let loss = [
                f.add_var(format!("lcol_j{id}"), 0.0, f64::INFINITY, false),
                f.add_var(format!("lpcie_j{id}"), 0.0, f64::INFINITY, false),
                f.add_var(format!("lnic_j{id}"), 0.0, f64::INFINITY, false),
            ];
            let restart = objective.restart_cost(perf, snapshot, job)?;
            let keep = if job.current.is_some() && restart > 0.0 && !opts.is_empty() {
                Some(f.bin(format!("keep_j{id}")))
            } else {
                None
            };
            f.objective_constant -= restart;
            f.jobs.push(JobVars {
                job: ji,
                options: opts,
                y,
                m,
                v,
                g,
                q,
                a,
                t,
                zeta,
                bits: BTreeMap::new(),
                local_pairs: None,
                local_pairs_by_option: Vec::new(),
                keep,
                restart,
                loss,
                pressure: [Vec::new(), Vec::new(), Vec::new()],
            });
        }
        f.job_constraints(snapshot)?;
        f.capacity_constraints(snapshot);
        f.sharing_constraints(snapshot, perf);
        f.loss_constraints(snapshot);
        if options.symmetry_breaking {
            f.symmetry_constraints(snapshot);
        }
        f.build_objective();
        Ok(f)
    }

    fn job_constraints(&mut self, snapshot: &ClusterSnapshot) -> Result<()> {
        let servers = &snapshot.cluster.servers;
        let nsrv = servers.len();
        for jv_i in 0..self.jobs.len() {
            let (job_idx, nopts) = (self.jobs[jv_i].job, self.jobs[jv_i].options.len());
            let job = &snapshot.jobs[job_idx];
            let id = job.id;
            let is_ps = job.arch == Architecture::ParameterServer;
            let gpw = f64::from(job.demand.gpus_per_worker);
            if nopts == 0 {
                continue;
            }
            let jv = &self.jobs[jv_i];
            let y = jv.y.clone();
            let opts = jv.options.clone();
            let m = jv.m.clone();
            let v = jv.v.clone();
            let q = jv.q.clone();
            let a = jv.a.clone();
            let g = jv.g.clone();
            let t = jv.t.clone();
            let zeta = jv.zeta.clone();
            let keep = jv.keep;
            let run: Vec<(f64, Variable)> = y.iter().map(|&x| (1.0, x)).collect();
            // At most one option.
            self.push(lin(&run).leq(1.0));
            // Workers and PS add up to the option's.
            let mut wsum: Vec<(f64, Variable)> = m.iter().flatten().map(|&x| (1.0, x)).collect();
            wsum.extend(
                y.iter()
                    .zip(&opts)
                    .map(|(&x, o)| (-f64::from(o.workers), x)),
            );
            self.push(lin(&wsum).eq(0.0));
            if is_ps {
                let mut psum: Vec<(f64, Variable)> =
                    q.iter().flatten().map(|&x| (1.0, x)).collect();
                psum.extend(y.iter().zip(&opts).map(|(&x, o)| (-f64::from(o.ps), x)));
                self.push(lin(&psum).eq(0.0));
            }
            // GPUs of a server's workers sit under that server's switches; u marks a used switch.
            for s in 0..nsrv {
                let Some(ms) = m[s] else { continue };
                let mut e: Vec<(f64, Variable)> = vec![(-gpw, ms)];
                for (b, sw) in self.switches.iter().enumerate() {
                    if sw.server == s {
                        e.push((1.0, g[&b].0));
                    }
                }
                self.push(lin(&e).eq(0.0));
                let vs = v[s].expect("v exists with m");
                let cap = self.info_ub(ms);
                self.push(lin(&[(1.0, ms), (-cap, vs)]).leq(0.0));
                self.push(lin(&[(1.0, vs), (-1.0, ms)]).leq(0.0));
            }
            for (&b, &(gv, uv)) in &g {
                let cap = self.switches[b].gpus.len() as f64;
                self.push(lin(&[(1.0, gv), (-cap, uv)]).leq(0.0));
                self.push(lin(&[(1.0, uv), (-1.0, gv)]).leq(0.0));
            }
            // GPU type: every worker on the option's type.
            let mut types: Vec<&str> = opts.iter().map(|o| o.gpu_type.as_str()).collect();
            types.sort_unstable();
            types.dedup();
            if types.len() > 1
                || (0..nsrv).any(|s| m[s].is_some() && servers[s].gpu_type != types[0])
            {
                for ty in &types {
                    let w_max = f64::from(job.workers.max);
                    let mut e: Vec<(f64, Variable)> = (0..nsrv)
                        .filter(|&s| servers[s].gpu_type != *ty)
                        .filter_map(|s| m[s].map(|x| (1.0, x)))
                        .collect();
                    e.extend(
                        y.iter()
                            .zip(&opts)
                            .filter(|(_, o)| o.gpu_type == *ty)
                            .map(|(&x, _)| (w_max, x)),
                    );
                    self.push(lin(&e).leq(w_max));
                }
            }
            // "Any task on server": a for PS jobs, v for all-reduce jobs.
            let any: Vec<Option<Variable>> = if is_ps { a.clone() } else { v.clone() };
            if is_ps {
                let p_max = f64::from(job.ps.max.max(1));
                for s in 0..nsrv {
                    let (qs, as_) = (q[s].expect("PS jobs have q"), a[s].expect("PS jobs have a"));
                    if let Some(vs) = v[s] {
                        self.push(lin(&[(1.0, vs), (-1.0, as_)]).leq(0.0));
                        self.push(lin(&[(1.0, as_), (-1.0, vs), (-1.0, qs)]).leq(0.0));
                    } else {
                        self.push(lin(&[(1.0, as_), (-1.0, qs)]).leq(0.0));
                    }
                    self.push(lin(&[(1.0, qs), (-p_max, as_)]).leq(0.0));
                }
            }
            // Mode: Multi exactly when tasks span two or more servers.
            let multi: Vec<(f64, Variable)> = y
                .iter()
                .zip(&opts)
                .filter(|(_, o)| o.mode == Mode::Multi)
                .map(|(&x, _)| (1.0, x))
                .collect();
            let span: Vec<(f64, Variable)> = any.iter().flatten().map(|&x| (1.0, x)).collect();
            let nspan = span.len() as f64;
            let mut e = span.clone();
            e.extend(multi.iter().map(|&(_, x)| (-2.0, x)));
            self.push(lin(&e).geq(0.0));
            let mut e = span.clone();
            e.extend(run.iter().map(|&(_, x)| (-1.0, x)));
            e.extend(multi.iter().map(|&(_, x)| (-(nspan - 1.0).max(0.0), x)));
            self.push(lin(&e).leq(0.0));
            // Cross-socket mode exactly when a one-server job's GPUs span sockets.
            if !t.is_empty() {
                let cross: Vec<(f64, Variable)> = y
                    .iter()
                    .zip(&opts)
                    .filter(|(_, o)| o.mode == Mode::CrossSocket)
                    .map(|(&x, _)| (1.0, x))
                    .collect();
                for (&(s, so), &tv) in &t {
                    let under: Vec<usize> = (0..self.switches.len())
                        .filter(|&b| self.switches[b].server == s && self.switches[b].socket == so)
                        .collect();
                    for &b in &under {
                        self.push(lin(&[(1.0, g[&b].1), (-1.0, tv)]).leq(0.0));
                    }
                    let mut e: Vec<(f64, Variable)> = vec![(1.0, tv)];
                    for (b, sw) in self.switches.iter().enumerate() {
                        if sw.server == s && sw.socket == so {
                            e.push((-1.0, g[&b].1));
                        }
                    }
                    self.push(lin(&e).leq(0.0));
                }
                for (&s, &z) in &zeta {
                    let socks: Vec<Variable> = t
                        .iter()
                        .filter(|((ss, _), _)| *ss == s)
                        .map(|(_, &tv)| tv)
                        .collect();
                    for i in 0..socks.len() {
                        for k in (i + 1)..socks.len() {
                            // cross >= t_i + t_k - 1 - multi
                            let mut e = cross.clone();
                            e.extend(multi.iter().copied());
                            e.push((-1.0, socks[i]));
                            e.push((-1.0, socks[k]));
                            self.push(lin(&e).geq(-1.0));
                        }
                    }
                    let mut e: Vec<(f64, Variable)> = vec![(2.0, z)];
                    e.extend(socks.iter().map(|&tv| (-1.0, tv)));
                    self.push(lin(&e).leq(0.0));
                }
                let mut e = cross.clone();
                e.extend(zeta.values().map(|&z| (-1.0, z)));
                self.push(lin(&e).leq(0.0));
            }
            // PS locality: L = Σ_s m_s·q_s, by binary expansion of q.
            if is_ps && opts.iter().any(|o| o.terms.local_pair_slope != 0.0) {
                let p_max = job.ps.max;
                let nbits = (32 - p_max.leading_zeros()).max(1);
                let mut l_terms: Vec<(f64, Variable)> = Vec::new();
                let mut bits = BTreeMap::new();
                for s in 0..nsrv {
                    let Some(ms) = m[s] else { continue };
                    let qs = q[s].expect("PS jobs have q");
                    let mcap = self.info_ub(ms);
                    let mut qexp: Vec<(f64, Variable)> = vec![(-1.0, qs)];
                    let mut pairs = Vec::new();
                    for k in 0..nbits {
                        let beta = self.bin(format!("qb_j{id}_s{s}_{k}"));
                        let pi = self.add_var(format!("mq_j{id}_s{s}_{k}"), 0.0, mcap, false);
                        let w = f64::from(1u32 << k);
                        qexp.push((w, beta));
                        l_terms.push((w, pi));
                        self.push(lin(&[(1.0, pi), (-mcap, beta)]).leq(0.0));
                        self.push(lin(&[(1.0, pi), (-1.0, ms)]).leq(0.0));
                        self.push(lin(&[(1.0, pi), (-1.0, ms), (-mcap, beta)]).geq(-mcap));
                        pairs.push((beta, pi));
                    }
                    self.push(lin(&qexp).eq(0.0));
                    bits.insert(s, pairs);
                }
                let l = self.add_var(format!("L_j{id}"), 0.0, f64::INFINITY, false);
                l_terms.push((-1.0, l));
                self.push(lin(&l_terms).eq(0.0));
                let mut split: Vec<(f64, Variable)> = vec![(-1.0, l)];
                let mut by_opt = Vec::with_capacity(nopts);
                for (k, o) in opts.iter().enumerate() {
                    let lk = self.add_var(
                        format!("L_j{id}_o{k}"),
                        0.0,
                        f64::from(o.workers * o.ps),
                        false,
                    );
                    self.push(lin(&[(1.0, lk), (-f64::from(o.workers * o.ps), y[k])]).leq(0.0));
                    split.push((1.0, lk));
                    by_opt.push(Some(lk));
                }
                self.push(lin(&split).eq(0.0));
                let jv = &mut self.jobs[jv_i];
                jv.bits = bits;
                jv.local_pairs = Some(l);
                jv.local_pairs_by_option = by_opt;
            }
            // Keep: the job stays exactly where it is (per-switch GPU counts and per-server PS).
            if let (Some(kv), Some(cur)) = (keep, &job.current) {
                let mut cur_g: BTreeMap<usize, f64> = BTreeMap::new();
                for w in &cur.workers {
                    for &gi in &w.gpus {
                        let b = self
                            .switches
                            .iter()
                            .position(|sw| sw.server == w.server && sw.gpus.contains(&gi))
                            .ok_or_else(|| Error::InvalidInstance {
                                context: "snapshot".into(),
                                reason: format!(
                                    "job {id}: current GPU {gi} of server {} not found",
                                    w.server
                                ),
                            })?;
                        *cur_g.entry(b).or_default() += 1.0;
                    }
                }
                let mut pinned = true;
                for (b, sw) in self.switches.iter().enumerate() {
                    let c = cur_g.get(&b).copied().unwrap_or(0.0);
                    match g.get(&b) {
                        Some(&(gv, _)) => {
                            let cap = sw.gpus.len() as f64;
                            self.constraints
                                .push(lin(&[(1.0, gv), (cap, kv)]).leq(c + cap));
                            self.constraints.push(lin(&[(-1.0, gv), (c, kv)]).leq(0.0));
                        }
                        None if c > 0.0 => pinned = false,
                        None => {}
                    }
                }
                if is_ps {
                    let p_max = f64::from(job.ps.max);
                    for s in 0..nsrv {
                        let c = cur.ps.iter().filter(|p| p.server == s).count() as f64;
                        let qs = q[s].expect("PS jobs have q");
                        self.constraints
                            .push(lin(&[(1.0, qs), (p_max, kv)]).leq(c + p_max));
                        self.constraints.push(lin(&[(-1.0, qs), (c, kv)]).leq(0.0));
                    }
                }
                self.constraints
                    .push(lin(&[(1.0, kv)]).leq(if pinned { 1.0 } else { 0.0 }));
                let mut e = run.clone();
                e.push((-1.0, kv));
                self.constraints.push(lin(&e).geq(0.0));
            }
        }
        Ok(())
    }

    fn info_ub(&self, v: Variable) -> f64 {
        self.info[self.index_of[&v]].ub
    }

    fn capacity_constraints(&mut self, snapshot: &ClusterSnapshot) {
        let servers = &snapshot.cluster.servers;
        for b in 0..self.switches.len() {
            let terms: Vec<(f64, Variable)> = self
                .jobs
                .iter()
                .filter_map(|jv| jv.g.get(&b).map(|&(gv, _)| (1.0, gv)))
                .collect();
            if terms.len() > 1
                || terms
                    .iter()
                    .any(|&(_, gv)| self.info_ub(gv) > self.switches[b].gpus.len() as f64)
            {
                let cap = self.switches[b].gpus.len() as f64;
                self.constraints.push(lin(&terms).leq(cap));
            }
        }
        for (s, srv) in servers.iter().enumerate() {
            let mut cpu = Vec::new();
            let mut mem = Vec::new();
            for jv in &self.jobs {
                let d = snapshot.jobs[jv.job].demand;
                if let Some(ms) = jv.m[s] {
                    cpu.push((d.cpu_per_worker, ms));
                    mem.push((d.mem_per_worker_gib, ms));
                }
                if let Some(qs) = jv.q[s] {
                    cpu.push((d.cpu_per_ps, qs));
                    mem.push((d.mem_per_ps_gib, qs));
                }
            }
            if !cpu.is_empty() {
                self.constraints.push(lin(&cpu).leq(srv.cpu_cores));
                self.constraints.push(lin(&mem).leq(srv.memory_gib));
            }
        }
    }

    /// Adds `var >= gate·(Σ terms) ` in big-M form: `var >= Σ terms − M·(#gates − Σ gates)`,
    /// where each gate is a sum of binaries (0 or 1). Exact wherever `var` is pushed down, as
    /// every sharing variable is (it only ever costs utility).
    fn gated_sum(
        &mut self,
        var: Variable,
        gates: Vec<Vec<Variable>>,
        terms: Vec<(f64, Variable)>,
        big_m: f64,
    ) {
        let mut e: Vec<(f64, Variable)> = vec![(1.0, var)];
        e.extend(terms.iter().map(|&(c, x)| (-c, x)));
        for g in &gates {
            e.extend(g.iter().map(|&x| (-big_m, x)));
        }
        self.constraints
            .push(lin(&e).geq(-big_m * gates.len() as f64));
        self.shares.push(ShareDef { var, gates, terms });
    }

    /// Sharing pressures, aggregated per (job, server) and (job, switch): O(jobs × places)
    /// variables instead of one per pair of jobs.
    fn sharing_constraints(&mut self, snapshot: &ClusterSnapshot, perf: &dyn PerfModel) {
        let servers = &snapshot.cluster.servers;
        let n = self.jobs.len();
        let multi_ys = |jv: &JobVars| -> Vec<Variable> {
            jv.y.iter()
                .zip(&jv.options)
                .filter(|(_, o)| o.mode == Mode::Multi)
                .map(|(&x, _)| x)
                .collect()
        };
        // μ_js = job j is on several servers and has a task on s.
        let mut mu: BTreeMap<(usize, usize), Variable> = BTreeMap::new();
        for j in 0..n {
            let d = multi_ys(&self.jobs[j]);
            if d.is_empty() {
                continue;
            }
            let id = snapshot.jobs[self.jobs[j].job].id;
            for s in 0..servers.len() {
                let Some(a) = self.jobs[j].a[s].or(self.jobs[j].v[s]) else {
                    continue;
                };
                let m = self.add_var(format!("mu_j{id}_s{s}"), 0.0, 1.0, false);
                // m >= a + D − 1 (an AND of two binaries, pushed down wherever it is read).
                let mut e: Vec<(f64, Variable)> = vec![(1.0, m), (-1.0, a)];
                e.extend(d.iter().map(|&x| (-1.0, x)));
                self.constraints.push(lin(&e).geq(-1.0));
                self.shares.push(ShareDef {
                    var: m,
                    gates: vec![vec![a], d.clone()],
                    terms: vec![],
                });
                mu.insert((j, s), m);
            }
        }
        for i in 0..n {
            if self.jobs[i].options.is_empty() {
                continue;
            }
            let ji = &snapshot.jobs[self.jobs[i].job];
            let id = ji.id;
            // Co-location: ω_is >= v_is · Σ_j (slowdown_ij − 1)·v_js.
            for s in 0..servers.len() {
                let Some(vi) = self.jobs[i].v[s] else {
                    continue;
                };
                let gpu = &servers[s].gpu_type;
                let terms: Vec<(f64, Variable)> = (0..n)
                    .filter(|&k| k != i)
                    .filter_map(|k| {
                        let vk = self.jobs[k].v[s]?;
                        let c = perf.colocation_slowdown(
                            &ji.model,
                            &snapshot.jobs[self.jobs[k].job].model,
                            gpu,
                        ) - 1.0;
                        (c > 0.0).then_some((c, vk))
                    })
                    .collect();
                if terms.is_empty() {
                    continue;
                }
                // When job i is absent, up to one co-runner per GPU of the server may be there.
                let slots = servers[s].num_gpus() as usize;
                let mut cs: Vec<f64> = terms.iter().map(|t| t.0).collect();
                cs.sort_by(|a, b| b.total_cmp(a));
                let big_m: f64 = cs.iter().take(slots).sum();
                let w = self.add_var(format!("wcol_j{id}_s{s}"), 0.0, f64::INFINITY, false);
                self.gated_sum(w, vec![vec![vi]], terms, big_m);
                self.jobs[i].pressure[0].push((1.0, w));
            }
            // PCIe: ω_ib >= u_ib · #other jobs under switch b.
            let bs: Vec<usize> = self.jobs[i].g.keys().copied().collect();
            for b in bs {
                let cap = self.switches[b].gpus.len();
                if cap < 2 {
                    continue;
                }
                let ui = self.jobs[i].g[&b].1;
                let terms: Vec<(f64, Variable)> = (0..n)
                    .filter(|&k| k != i)
                    .filter_map(|k| self.jobs[k].g.get(&b).map(|&(_, u)| (1.0, u)))
                    .collect();
                if terms.is_empty() {
                    continue;
                }
                let big_m = (terms.len() as f64).min(cap as f64);
                let w = self.add_var(format!("wpci_j{id}_b{b}"), 0.0, f64::INFINITY, false);
                self.gated_sum(w, vec![vec![ui]], terms, big_m);
                self.jobs[i].pressure[1].push((1.0, w));
            }
            // NIC: ω_is >= [i multi-server, on s] · #other multi-server jobs on s.
            let di = multi_ys(&self.jobs[i]);
            if di.is_empty() {
                continue;
            }
            for s in 0..servers.len() {
                let Some(ai) = self.jobs[i].a[s].or(self.jobs[i].v[s]) else {
                    continue;
                };
                let terms: Vec<(f64, Variable)> = (0..n)
                    .filter(|&k| k != i)
                    .filter_map(|k| mu.get(&(k, s)).map(|&m| (1.0, m)))
                    .collect();
                if terms.is_empty() {
                    continue;
                }
                let big_m = terms.len() as f64;
                let w = self.add_var(format!("wnic_j{id}_s{s}"), 0.0, f64::INFINITY, false);
                self.gated_sum(w, vec![vec![ai], di.clone()], terms, big_m);
                self.jobs[i].pressure[2].push((1.0, w));
            }
        }
    }

    fn loss_constraints(&mut self, snapshot: &ClusterSnapshot) {
        let servers = &snapshot.cluster.servers;
        let n_jobs = self.jobs.iter().filter(|jv| !jv.options.is_empty()).count();
        let max_gpus = servers.iter().map(|s| s.num_gpus()).max().unwrap_or(0) as f64;
        let max_cap = self
            .switches
            .iter()
            .map(|sw| sw.gpus.len())
            .max()
            .unwrap_or(0) as f64;
        for jv in &self.jobs {
            let job = &snapshot.jobs[jv.job];
            let w_max = f64::from(job.workers.max);
            let p_max = f64::from(job.ps.max);
            let gpw = f64::from(job.demand.gpus_per_worker);
            let others = (n_jobs as f64 - 1.0).max(0.0);
            for kind in 0..3 {
                let p = &jv.pressure[kind];
                if p.is_empty() {
                    continue;
                }
                // Big-M: the most pressure the job can meet with any of its options. Each
                // co-runner or sharer holds at least one GPU (or, for NIC, one task) there.
                let all: f64 = p.iter().map(|(c, _)| c).sum();
                let max_c = p.iter().map(|(c, _)| *c).fold(0.0, f64::max);
                let structural = match kind {
                    0 => w_max.min(servers.len() as f64) * others.min(max_gpus - 1.0) * max_c,
                    1 => (w_max * gpw).min(self.switches.len() as f64) * others.min(max_cap - 1.0),
                    _ => (w_max + p_max).min(servers.len() as f64) * others,
                };
                let pmax = all.min(structural.max(0.0));
                let coefs: Vec<f64> = jv
                    .options
                    .iter()
                    .map(|o| match kind {
                        0 => o.terms.coloc_coef,
                        1 => o.terms.pcie_coef,
                        _ => o.terms.nic_coef,
                    })
                    .collect();
                for (k, &coef) in coefs.iter().enumerate() {
                    if coef <= 0.0 {
                        continue;
                    }
                    // loss >= coef·P − coef·Pmax·(1 − y_k): binding only for the chosen option.
                    let mut e: Vec<(f64, Variable)> = vec![(1.0, jv.loss[kind])];
                    e.extend(p.iter().map(|&(c, x)| (-coef * c, x)));
                    e.push((-coef * pmax, jv.y[k]));
                    self.constraints.push(lin(&e).geq(-coef * pmax));
                }
                // Valid for every option (pressure is 0 when the job waits): strengthens the
                // relaxation, where the big-M rows above are slack.
                let min_coef = coefs.iter().copied().fold(f64::INFINITY, f64::min);
                if min_coef > 0.0 && min_coef.is_finite() {
                    let mut e: Vec<(f64, Variable)> = vec![(1.0, jv.loss[kind])];
                    e.extend(p.iter().map(|&(c, x)| (-min_coef * c, x)));
                    self.constraints.push(lin(&e).geq(0.0));
                }
            }
        }
    }

    /// Symmetry breaking. Servers nobody runs on now and identical in everything the model
    /// reads are interchangeable, and so are the PCIe switches of one socket of such a server:
    /// any solution can be relabelled so that, between two consecutive interchangeable places,
    /// the first hosts a job of index no larger than every job the second hosts (and an empty
    /// place comes after every used one). `v[j][s'] <= Σ_{i <= j} v[i][s]` says exactly that,
    /// and keeps one labelling of each solution instead of up to `n!`.
    fn symmetry_constraints(&mut self, snapshot: &ClusterSnapshot) {
        let servers = &snapshot.cluster.servers;
        let busy: Vec<bool> = (0..servers.len())
            .map(|s| {
                snapshot
                    .jobs
                    .iter()
                    .any(|j| j.current.as_ref().is_some_and(|c| c.servers().contains(&s)))
            })
            .collect();
        let same = |a: usize, b: usize| {
            let (x, y) = (&servers[a], &servers[b]);
            x.gpu_type == y.gpu_type
                && x.topology == y.topology
                && x.cpu_cores == y.cpu_cores
                && x.memory_gib == y.memory_gib
        };
        let mut prev: Option<usize> = None;
        for s in 0..servers.len() {
            if busy[s] {
                continue;
            }
            if let Some(p) = prev.filter(|&p| same(p, s)) {
                let places: Vec<(Option<Variable>, Option<Variable>)> =
                    self.jobs.iter().map(|jv| (jv.v[p], jv.v[s])).collect();
                self.order_places(&places);
            }
            prev = Some(s);
        }
        for b in 1..self.switches.len() {
            let (x, y) = (&self.switches[b - 1], &self.switches[b]);
            if x.server == y.server
                && x.socket == y.socket
                && x.gpus.len() == y.gpus.len()
                && !busy[x.server]
            {
                let places: Vec<(Option<Variable>, Option<Variable>)> = self
                    .jobs
                    .iter()
                    .map(|jv| (jv.g.get(&(b - 1)).map(|g| g.1), jv.g.get(&b).map(|g| g.1)))
                    .collect();
                self.order_places(&places);
            }
        }
    }

    /// `second[j] <= Σ_{i <= j} first[i]` for every job `j` that can use the second place.
    fn order_places(&mut self, places: &[(Option<Variable>, Option<Variable>)]) {
        let mut prefix: Vec<(f64, Variable)> = Vec::new();
        for &(first, second) in places {
            if let Some(f) = first {
                prefix.push((-1.0, f));
            }
            if let Some(sv) = second {
                let mut e = prefix.clone();
                e.push((1.0, sv));
                self.constraints.push(lin(&e).leq(0.0));
            }
        }
    }

    fn build_objective(&mut self) {
        let mut e = Expression::default();
        for jv in &self.jobs {
            for (k, o) in jv.options.iter().enumerate() {
                e.add_mul(o.terms.base, jv.y[k]);
                if let Some(Some(lk)) = jv.local_pairs_by_option.get(k) {
                    e.add_mul(o.terms.local_pair_slope, *lk);
                }
            }
            for l in jv.loss {
                e.add_mul(-1.0, l);
            }
            if let Some(kv) = jv.keep {
                e.add_mul(jv.restart, kv);
            }
        }
        self.objective = e;
    }

    /// Size of the model.
    pub fn size(&self) -> ModelSize {
        ModelSize {
            variables: self.info.len(),
            integer_variables: self.info.iter().filter(|v| v.integer).count(),
            constraints: self.constraints.len(),
        }
    }

    /// Constant added to the solver's objective value to get the [`Objective`] value.
    pub fn objective_constant(&self) -> f64 {
        self.objective_constant
    }

    /// The pieces a solver needs: variables, objective (to maximise), constraints.
    pub fn into_parts(self) -> (ProblemVariables, Expression, Vec<Constraint>, Decoder) {
        let dec = Decoder {
            jobs: self.jobs,
            switches: self.switches,
            info: self.info,
            constant: self.objective_constant,
            index_of: self.index_of,
            shares: self.shares,
        };
        (self.vars, self.objective, self.constraints, dec)
    }

    /// Writes the model in free MPS format (maximisation, declared with `OBJSENSE MAX`).
    pub fn write_mps(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        mps::write(
            out,
            &self.info,
            &self.objective,
            self.objective_constant,
            &self.constraints,
            &self.index_of,
        )
    }
}

/// Maps solver values back to a [`Schedule`], and a schedule to solver values (MIP start).
pub struct Decoder {
    jobs: Vec<JobVars>,
    switches: Vec<Switch>,
    info: Vec<VarInfo>,
    constant: f64,
    index_of: HashMap<Variable, usize>,
    shares: Vec<ShareDef>,
}

impl Decoder {
    /// Number of columns.
    pub fn num_variables(&self) -> usize {
        self.info.len()
    }

    /// Column index of a variable.
    pub fn index(&self, v: Variable) -> usize {
        self.index_of[&v]
    }

    /// Constant added to the solver objective.
    pub fn objective_constant(&self) -> f64 {
        self.constant
    }

    /// The schedule encoded by a solution (`value(v)` gives each variable's value).
    pub fn decode(&self, snapshot: &ClusterSnapshot, value: &dyn Fn(Variable) -> f64) -> Schedule {
        let r = |v: Variable| value(v).round();
        let mut taken: Vec<Vec<bool>> = self
            .switches
            .iter()
            .map(|sw| vec![false; sw.gpus.len()])
            .collect();
        let mut out: Vec<Assignment> = Vec::new();
        // Kept jobs first: they get exactly their current GPUs.
        let mut order: Vec<usize> = (0..self.jobs.len()).collect();
        order.sort_by_key(|&i| self.jobs[i].keep.map(|k| r(k) < 0.5).unwrap_or(true));
        for i in order {
            let jv = &self.jobs[i];
            let job = &snapshot.jobs[jv.job];
            if !jv.y.iter().any(|&y| r(y) > 0.5) {
                continue;
            }
            let kept = jv.keep.is_some_and(|k| r(k) > 0.5);
            if kept {
                let cur = job
                    .current
                    .clone()
                    .expect("keep exists only for running jobs");
                for w in &cur.workers {
                    for &g in &w.gpus {
                        if let Some(b) = self
                            .switches
                            .iter()
                            .position(|sw| sw.server == w.server && sw.gpus.contains(&g))
                        {
                            let pos = self.switches[b]
                                .gpus
                                .iter()
                                .position(|&x| x == g)
                                .expect("found above");
                            taken[b][pos] = true;
                        }
                    }
                }
                out.push(cur);
                continue;
            }
            let gpw = job.demand.gpus_per_worker as usize;
            let mut workers = Vec::new();
            let mut servers: Vec<usize> = Vec::new();
            let mut by_server: HashMap<usize, Vec<u32>> = HashMap::new();
            let mut keys: Vec<&usize> = jv.g.keys().collect();
            keys.sort_unstable();
            for &b in keys {
                let n = r(jv.g[&b].0) as usize;
                let sw = &self.switches[b];
                let mut got = 0;
                for (pos, &gpu) in sw.gpus.iter().enumerate() {
                    if got == n {
                        break;
                    }
                    if !taken[b][pos] {
                        taken[b][pos] = true;
                        by_server.entry(sw.server).or_default().push(gpu);
                        got += 1;
                    }
                }
                if !servers.contains(&sw.server) && n > 0 {
                    servers.push(sw.server);
                }
            }
            servers.sort_unstable();
            for s in servers {
                let gpus = &by_server[&s];
                for chunk in gpus.chunks(gpw.max(1)) {
                    workers.push(WorkerTask {
                        server: s,
                        gpus: chunk.to_vec(),
                    });
                }
            }
            let mut ps = Vec::new();
            for (s, q) in jv.q.iter().enumerate() {
                if let Some(qv) = q {
                    for _ in 0..(r(*qv) as usize) {
                        ps.push(PsTask { server: s });
                    }
                }
            }
            out.push(Assignment {
                job: job.id,
                workers,
                ps,
            });
        }
        out.sort_by_key(|a| a.job);
        Schedule { assignments: out }
    }

    /// Values of every variable for a valid schedule (a MIP start). Errors if the schedule uses
    /// an option the model does not contain.
    pub fn encode(
        &self,
        snapshot: &ClusterSnapshot,
        perf: &dyn PerfModel,
        objective: &Objective,
        schedule: &Schedule,
    ) -> Result<Vec<f64>> {
        let mut x = vec![0.0; self.info.len()];
        let idx = |v: Variable| -> usize { self.index_of[&v] };
        // Scoring first rejects invalid schedules and unpriceable shapes with a clear error.
        objective.score(perf, snapshot, schedule)?;
        let mut chosen: Vec<Option<usize>> = vec![None; self.jobs.len()];
        for (i, jv) in self.jobs.iter().enumerate() {
            let job = &snapshot.jobs[jv.job];
            let Some(a) = schedule.assignment(job.id) else {
                continue;
            };
            let facts = Objective::option_of(snapshot, job, a);
            let k = jv
                .options
                .iter()
                .position(|o| {
                    o.workers == facts.0
                        && o.ps == facts.1
                        && o.mode == facts.2
                        && o.gpu_type == facts.3
                })
                .ok_or_else(|| Error::InvalidInstance {
                    context: "MIP start".into(),
                    reason: format!("job {}: {:?} is not an option of the model", job.id, facts),
                })?;
            chosen[i] = Some(k);
            x[idx(jv.y[k])] = 1.0;
            let mut per_server: HashMap<usize, f64> = HashMap::new();
            let mut per_switch: HashMap<usize, f64> = HashMap::new();
            for w in &a.workers {
                *per_server.entry(w.server).or_default() += 1.0;
                for &g in &w.gpus {
                    let b = self
                        .switches
                        .iter()
                        .position(|sw| sw.server == w.server && sw.gpus.contains(&g))
                        .expect("valid schedule");
                    *per_switch.entry(b).or_default() += 1.0;
                }
            }
            let mut ps_on: HashMap<usize, f64> = HashMap::new();
            for p in &a.ps {
                *ps_on.entry(p.server).or_default() += 1.0;
            }
            for (s, &n) in &per_server {
                x[idx(jv.m[*s].expect("option's type"))] = n;
                x[idx(jv.v[*s].expect("option's type"))] = 1.0;
            }
            for (b, &n) in &per_switch {
                let (gv, uv) = jv.g[b];
                x[idx(gv)] = n;
                x[idx(uv)] = 1.0;
            }
            for s in 0..jv.q.len() {
                if let (Some(qv), Some(av)) = (jv.q[s], jv.a[s]) {
                    let q = ps_on.get(&s).copied().unwrap_or(0.0);
                    x[idx(qv)] = q;
                    let on = q > 0.0 || per_server.contains_key(&s);
                    x[idx(av)] = f64::from(u8::from(on));
                }
            }
            for (&(s, so), &tv) in &jv.t {
                let on = a.workers.iter().any(|w| {
                    w.server == s
                        && w.gpus.iter().any(|g| {
                            self.switches
                                .iter()
                                .any(|sw| sw.server == s && sw.socket == so && sw.gpus.contains(g))
                        })
                });
                x[idx(tv)] = f64::from(u8::from(on));
            }
            for (&s, &z) in &jv.zeta {
                let n =
                    jv.t.iter()
                        .filter(|((ss, _), tv)| *ss == s && x[idx(**tv)] > 0.5)
                        .count();
                x[idx(z)] = f64::from(u8::from(n >= 2));
            }
            let mut l = 0.0;
            for (&s, pairs) in &jv.bits {
                let q = ps_on.get(&s).copied().unwrap_or(0.0) as u32;
                let m = per_server.get(&s).copied().unwrap_or(0.0);
                for (k, &(beta, pi)) in pairs.iter().enumerate() {
                    let bit = f64::from((q >> k) & 1);
                    x[idx(beta)] = bit;
                    x[idx(pi)] = bit * m;
                    l += bit * m * f64::from(1u32 << k);
                }
            }
            if let Some(lv) = jv.local_pairs {
                x[idx(lv)] = l;
                if let Some(Some(lk)) = jv.local_pairs_by_option.get(k) {
                    x[idx(*lk)] = l;
                }
            }
            if let (Some(kv), Some(cur)) = (jv.keep, &job.current) {
                x[idx(kv)] = f64::from(u8::from(same_assignment(cur, a)));
            }
        }
        // Sharing variables at their tight values, in creation order (μ before the NIC ω that
        // read it), then losses.
        for d in &self.shares {
            let gate: f64 = d
                .gates
                .iter()
                .map(|g| g.iter().map(|&v| x[idx(v)]).sum::<f64>())
                .product();
            let sum: f64 = if d.terms.is_empty() {
                1.0
            } else {
                d.terms.iter().map(|&(c, v)| c * x[idx(v)]).sum()
            };
            x[idx(d.var)] = gate * sum;
        }
        for (i, jv) in self.jobs.iter().enumerate() {
            let Some(k) = chosen[i] else { continue };
            let o = &jv.options[k];
            for kind in 0..3 {
                let coef = [o.terms.coloc_coef, o.terms.pcie_coef, o.terms.nic_coef][kind];
                let p: f64 = jv.pressure[kind].iter().map(|&(c, v)| c * x[idx(v)]).sum();
                x[idx(jv.loss[kind])] = (coef * p).max(0.0);
            }
        }
        Ok(x)
    }
}
