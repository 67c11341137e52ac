//! The master of the configuration program over a pool of columns, solved as an integer
//! program: at most one column per server (per class of identical servers, as many as it has;
//! see [`Classes`]), at most one option per job, the fragments of a job
//! adding up to its option, multi-server options on two servers or more, and a running job kept
//! only where every server it runs on hosts its current fragment.

use std::collections::HashMap;
use std::time::Instant;

use good_lp::{Constraint, Expression, ProblemVariables, Variable, variable};

use super::column::{Classes, Column, JobChoice};
use super::duals::{Duals, presence_coefficient, spread_cap};
use crate::error::Result;
use crate::ilp::backend::{Backend, Highs, Program};
use crate::ilp::settings::CheckedSettings;
use crate::model::ServerIdx;
use crate::model::{Assignment, JobPos, PsTask, Schedule, WorkerTask};
use crate::objective::{Mode, RoundPricing};
use crate::scheduler::SolveStatus;

/// What a master solve found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MasterSolve {
    /// The schedule of the columns chosen (empty when the solver found none).
    pub schedule: Schedule,
    /// Its objective (the master's value, constant included); NaN without a schedule.
    pub objective: f64,
    /// The best bound on the master over this pool (not on the round: the pool may lack the
    /// columns of the round's optimum).
    pub bound: f64,
    /// How the solve ended.
    pub status: SolveStatus,
    /// The master's size.
    pub size: crate::ilp::ModelSize,
    /// Branch-and-bound nodes, if known.
    pub nodes: Option<u64>,
    /// The master's improving solutions, when found and their objective (constant included).
    pub improvements: Vec<(Instant, f64)>,
}

fn lin(terms: &[(f64, Variable)]) -> Expression {
    let mut e = Expression::with_capacity(terms.len());
    for &(c, v) in terms {
        e.add_mul(c, v);
    }
    e
}

/// The master built over a pool: its program, the constant outside it, and where its columns
/// and rows are (for MIP starts, decoding and duals).
struct Built {
    program: Program,
    constant: f64,
    /// `y[j][k]` column index of every option.
    y: Vec<Vec<usize>>,
    /// Running jobs with a keep column, ascending.
    keep_ids: Vec<usize>,
    /// Row index of each server's "at most one column" row.
    server_row: HashMap<usize, usize>,
    /// Row indices of `(job, option)`'s workers, PS and presence rows.
    option_rows: HashMap<(usize, usize), [usize; 3]>,
    /// Row index of `(job, server)`'s keep row.
    keep_row: HashMap<(usize, usize), usize>,
    /// Row index of `(job, option, server)`'s "one fragment per server" row (multi-server
    /// options, where some column of the server holds one).
    spread_row: HashMap<(usize, usize, usize), usize>,
}

/// The master's variables in column order: λ per pool column, then y per (job, option), then
/// keep per running job with a kept fragment in the pool.
struct Vars {
    vars: ProblemVariables,
    lambda: Vec<Variable>,
    y: Vec<Vec<Variable>>,
    y_index: Vec<Vec<usize>>,
    keep_ids: Vec<usize>,
    keep: HashMap<usize, Variable>,
}

/// The rows and objective as they are built, and where each kind of row is.
struct Rows<'p, 'a> {
    pricing: &'p RoundPricing<'a>,
    pool: &'p [Column],
    classes: Classes,
    rows: Vec<Constraint>,
    objective: Expression,
    constant: f64,
    server_row: HashMap<usize, usize>,
    option_rows: HashMap<(usize, usize), [usize; 3]>,
    keep_row: HashMap<(usize, usize), usize>,
    spread_row: HashMap<(usize, usize, usize), usize>,
}

/// The master over `pool`: integer, or its linear relaxation when `relax`; the jobs `held`
/// (by position) kept where they run. Rows in this order: one per server, then per job its
/// option rows, then the keep rows.
fn build(pricing: &RoundPricing<'_>, pool: &[Column], relax: bool, held: &[bool]) -> Result<Built> {
    let classes = Classes::of(pricing);
    let v = variables(pricing, pool, &classes, relax, held)?;
    let mut r = Rows {
        pricing,
        pool,
        classes,
        rows: Vec::new(),
        objective: Expression::with_capacity(pool.len()),
        constant: 0.0,
        server_row: HashMap::new(),
        option_rows: HashMap::new(),
        keep_row: HashMap::new(),
        spread_row: HashMap::new(),
    };
    r.server_rows(&v.lambda);
    for (j, ys) in v.y.iter().enumerate() {
        r.job_rows(JobPos(j), ys, &v.lambda)?;
    }
    for &j in &v.keep_ids {
        r.keep_rows(j, v.keep[&j], &v.lambda)?;
    }
    Ok(Built {
        program: Program {
            vars: v.vars,
            objective: r.objective,
            rows: r.rows,
        },
        constant: r.constant,
        y: v.y_index,
        keep_ids: v.keep_ids,
        server_row: r.server_row,
        option_rows: r.option_rows,
        keep_row: r.keep_row,
        spread_row: r.spread_row,
    })
}

/// Every variable of the master (see [`Vars`]); an error when a held job has no kept fragment
/// in the pool.
fn variables(
    pricing: &RoundPricing<'_>,
    pool: &[Column],
    classes: &Classes,
    relax: bool,
    held: &[bool],
) -> Result<Vars> {
    let snap = pricing.snapshot();
    let mut vars = ProblemVariables::new();
    // A variable taking at most `n` (a class's count; 1 for every y and keep).
    let new_var = |vars: &mut ProblemVariables, n: usize| {
        if relax {
            // No upper bound: the rows imply it (a column at a bound would hide its price from
            // the server row's dual, which pricing reads).
            vars.add(variable().min(0.0))
        } else if n == 1 {
            vars.add(variable().binary())
        } else {
            vars.add(variable().integer().min(0.0).max(n as f64))
        }
    };
    let lambda: Vec<Variable> = pool
        .iter()
        .map(|c| new_var(&mut vars, classes.count(c.server)))
        .collect();
    let mut y: Vec<Vec<Variable>> = Vec::with_capacity(snap.jobs.len());
    let mut y_index: Vec<Vec<usize>> = Vec::with_capacity(snap.jobs.len());
    let mut next = pool.len();
    for j in 0..snap.jobs.len() {
        let n = pricing.options(JobPos(j)).len();
        y.push((0..n).map(|_| new_var(&mut vars, 1)).collect());
        y_index.push((next..next + n).collect());
        next += n;
    }
    // Keep: running jobs with a kept fragment somewhere in the pool.
    let mut keep_ids: Vec<usize> = pool
        .iter()
        .flat_map(|c| c.fragments.iter().filter(|f| f.kept).map(|f| f.job.0))
        .collect();
    keep_ids.sort_unstable();
    keep_ids.dedup();
    let is_held = |j: usize| held.get(j).copied().unwrap_or(false);
    let keep: HashMap<usize, Variable> = keep_ids
        .iter()
        .map(|&j| {
            let v = if is_held(j) {
                // Held where it runs: kept, whatever else the round decides.
                vars.add(variable().min(1.0).max(1.0))
            } else {
                new_var(&mut vars, 1)
            };
            (j, v)
        })
        .collect();
    if let Some(j) = (0..snap.jobs.len()).find(|&j| is_held(j) && !keep.contains_key(&j)) {
        return Err(crate::error::Error::Solver {
            solver: "configuration program".into(),
            reason: format!(
                "held job {} has no kept fragment in the pool",
                snap.jobs[j].id
            ),
        });
    }
    Ok(Vars {
        vars,
        lambda,
        y,
        y_index,
        keep_ids,
        keep,
    })
}

impl Rows<'_, '_> {
    /// At most one column per server (as many as its class has servers), and each column's
    /// value in the objective.
    fn server_rows(&mut self, lambda: &[Variable]) {
        let mut by_server: HashMap<usize, Vec<(f64, Variable)>> = HashMap::new();
        for (c, &l) in self.pool.iter().zip(lambda) {
            by_server.entry(c.server).or_default().push((1.0, l));
            self.objective.add_mul(c.value(self.pricing), l);
        }
        let mut servers: Vec<usize> = by_server.keys().copied().collect();
        servers.sort_unstable();
        for s in &servers {
            self.server_row.insert(*s, self.rows.len());
            self.rows
                .push(lin(&by_server[s]).leq(self.classes.count(*s) as f64));
        }
    }

    /// Job `jp`: one option, and its fragments adding up to it; its restart in the constant.
    fn job_rows(&mut self, jp: JobPos, ys: &[Variable], lambda: &[Variable]) -> Result<()> {
        let j = jp.0;
        let options = self.pricing.options(jp);
        if !ys.is_empty() {
            self.rows
                .push(lin(&ys.iter().map(|&v| (1.0, v)).collect::<Vec<_>>()).leq(1.0));
        }
        for (k, o) in options.iter().enumerate() {
            self.objective.add_mul(o.terms.base, ys[k]);
            let (mut w, mut p, mut n) = (Vec::new(), Vec::new(), Vec::new());
            for (c, &l) in self.pool.iter().zip(lambda) {
                for f in c.fragments.iter().filter(|f| f.job == jp && f.option == k) {
                    w.push((f64::from(f.workers), l));
                    p.push((f64::from(f.ps), l));
                    n.push((1.0, l));
                }
            }
            w.push((-f64::from(o.workers), ys[k]));
            p.push((-f64::from(o.ps), ys[k]));
            let at = self.rows.len();
            self.option_rows.insert((j, k), [at, at + 1, at + 2]);
            self.rows.push(lin(&w).eq(0.0));
            self.rows.push(lin(&p).eq(0.0));
            if o.mode == Mode::Multi {
                // On two servers or more.
                n.push((presence_coefficient(o.mode), ys[k]));
                self.rows.push(lin(&n).geq(0.0));
                self.spread_rows(jp, k, (o.workers + o.ps) as usize, ys[k], lambda);
            } else {
                // On one server: one (whole) fragment.
                n.push((presence_coefficient(o.mode), ys[k]));
                self.rows.push(lin(&n).leq(0.0));
            }
        }
        // Restarts: every running job pays its own unless kept.
        self.constant -= self.pricing.restart_cost(jp)?;
        Ok(())
    }

    /// A multi-server option (`tasks` workers and PS) takes at most one fragment on each server
    /// (of a class: on at most as many of its servers as the class has, or as the option has
    /// tasks): valid for integers, and what keeps the relaxation from running a multi-server
    /// option as two half-columns of one server.
    fn spread_rows(
        &mut self,
        jp: JobPos,
        k: usize,
        tasks: usize,
        y: Variable,
        lambda: &[Variable],
    ) {
        let mut per: std::collections::BTreeMap<usize, Vec<(f64, Variable)>> =
            std::collections::BTreeMap::new();
        for (c, &l) in self.pool.iter().zip(lambda) {
            if c.fragments.iter().any(|f| f.job == jp && f.option == k) {
                per.entry(c.server).or_default().push((1.0, l));
            }
        }
        for (s, mut terms) in per {
            let n = spread_cap(&self.classes, s, tasks);
            terms.push((-(n as f64), y));
            self.spread_row.insert((jp.0, k, s), self.rows.len());
            self.rows.push(lin(&terms).leq(0.0));
        }
    }

    /// Running job `j` is kept (variable `kv`, worth its restart) only where a kept fragment of
    /// it is chosen on each of its current servers.
    fn keep_rows(&mut self, j: usize, kv: Variable, lambda: &[Variable]) -> Result<()> {
        self.objective
            .add_mul(self.pricing.restart_cost(JobPos(j))?, kv);
        let current = self.pricing.snapshot().jobs[j]
            .run
            .current
            .as_ref()
            .expect("kept fragments belong to running jobs");
        for s in current.servers() {
            let mut terms: Vec<(f64, Variable)> = self
                .pool
                .iter()
                .zip(lambda)
                .filter(|(c, _)| {
                    c.server == s && c.fragments.iter().any(|f| f.job.0 == j && f.kept)
                })
                .map(|(_, &l)| (1.0, l))
                .collect();
            terms.push((-1.0, kv));
            self.keep_row.insert((j, s), self.rows.len());
            self.rows.push(lin(&terms).geq(0.0));
        }
        Ok(())
    }
}

/// Solves the master over `pool` (any number of columns per server) under `settings`, from
/// `start` (a schedule's columns and choices, every one of its columns in the pool) if given.
pub(crate) fn solve_master(
    pricing: &RoundPricing<'_>,
    pool: &[Column],
    settings: &CheckedSettings,
    start: Option<(&[Column], &[JobChoice])>,
    held: &[bool],
) -> Result<MasterSolve> {
    let t0 = Instant::now();
    let built = build(pricing, pool, false, held)?;
    let start_values = start.map(|(columns, choices)| {
        // A class's column counts once per server of the class that takes it.
        let mut x: Vec<f64> = pool
            .iter()
            .map(|c| columns.iter().filter(|&s| s == c).count() as f64)
            .collect();
        for (j, ys) in built.y.iter().enumerate() {
            x.extend((0..ys.len()).map(|k| f64::from(u8::from(choices[j].option == Some(k)))));
        }
        x.extend(
            built
                .keep_ids
                .iter()
                .map(|&j| f64::from(u8::from(choices[j].kept))),
        );
        x
    });
    let constant = built.constant;
    let size = crate::ilp::ModelSize {
        variables: built.program.vars.len(),
        integer_variables: built.program.vars.len(),
        constraints: built.program.rows.len(),
    };
    let run = Highs.run(built.program, &[], start_values.as_deref(), settings, t0)?;
    let bound = run.bound.map_or(f64::NAN, |b| b + constant);
    let improvements = run
        .improvements
        .iter()
        .map(|&(at, v)| (at, v + constant))
        .collect();
    if run.values.is_empty() {
        return Ok(MasterSolve {
            schedule: Schedule::default(),
            objective: f64::NAN,
            bound,
            status: run.status,
            size,
            nodes: run.nodes,
            improvements,
        });
    }
    // Each class's columns go to its servers in order, as many times as taken.
    let classes = Classes::of(pricing);
    let mut used: HashMap<usize, usize> = HashMap::new();
    let mut chosen: Vec<Column> = Vec::new();
    for (c, &v) in pool.iter().zip(&run.values) {
        for _ in 0..v.round().max(0.0) as usize {
            let next = used.entry(c.server).or_default();
            let Some(&s) = classes.members(c.server).get(*next) else {
                break;
            };
            *next += 1;
            chosen.push(Column {
                server: s,
                fragments: c.fragments.clone(),
            });
        }
    }
    let chosen: Vec<&Column> = chosen.iter().collect();
    Ok(MasterSolve {
        schedule: decode(pricing, &chosen),
        objective: run.objective + constant,
        bound,
        status: run.status,
        size,
        nodes: run.nodes,
        improvements,
    })
}

/// The master's linear relaxation over `pool`, with the pool columns `fixed` held at 1: its
/// value (constant included), duals, and each pool column's value and HiGHS reduced cost (to
/// check [`Duals::reduced_cost`] against).
pub(crate) struct Relaxation {
    /// Its value, constant included.
    pub value: f64,
    /// Its duals.
    pub duals: Duals,
    /// Each pool column's value.
    pub lambda: Vec<f64>,
    /// Each pool column's reduced cost, by HiGHS.
    #[cfg_attr(not(test), allow(dead_code))]
    pub reduced: Vec<f64>,
}

/// The least time limit of one relaxation LP, in seconds (see [`solve_lp`]).
const LP_FLOOR_S: f64 = 1.0;

/// Solves the master's linear relaxation (see [`Relaxation`]).
pub(crate) fn solve_lp(
    pricing: &RoundPricing<'_>,
    pool: &[Column],
    fixed: &[usize],
    settings: &CheckedSettings,
    held: &[bool],
) -> Result<Relaxation> {
    let t0 = Instant::now();
    let built = build(pricing, pool, true, held)?;
    let Built {
        program,
        constant,
        server_row,
        option_rows,
        keep_row,
        spread_row,
        ..
    } = built;
    let fixings: Vec<(usize, f64)> = fixed.iter().map(|&i| (i, 1.0)).collect();
    // A relaxation cut short leaves no duals to price with, and column generation could not
    // even start: each LP gets at least `LP_FLOOR_S` (they take milliseconds here); the
    // solve's own deadline is kept between LPs, by the phases' budgets. Under load a 0.1 ms
    // limit ended the first LP with no solution, and the solve with an error instead of its
    // start.
    let lp_settings = settings.with_time_limit(settings.time_limit_s.max(LP_FLOOR_S));
    let run = Highs.run(program, &fixings, None, &lp_settings, t0)?;
    if run.status != SolveStatus::Optimal || run.row_duals.is_empty() {
        return Err(crate::error::Error::Solver {
            solver: "configuration LP".into(),
            reason: format!("the master's relaxation ended {}", run.status),
        });
    }
    let d = &run.row_duals;
    let duals = Duals {
        server: server_row.iter().map(|(&s, &r)| (s, d[r])).collect(),
        option: option_rows
            .iter()
            .map(|(&jk, r)| (jk, [d[r[0]], d[r[1]], d[r[2]]]))
            .collect(),
        keep: keep_row.iter().map(|(&js, &r)| (js, d[r])).collect(),
        spread: spread_row.iter().map(|(&jks, &r)| (jks, d[r])).collect(),
        held: held.to_vec(),
    };
    let reduced = run.column_duals[..pool.len()].to_vec();
    Ok(Relaxation {
        value: run.objective + constant,
        duals,
        lambda: run.values[..pool.len()].to_vec(),
        reduced,
    })
}

/// The schedule of the chosen columns: kept fragments get their job's current tasks on the
/// server exactly; the others GPUs under the switches their counts say, lowest free first,
/// cut into workers in switch order.
fn decode(pricing: &RoundPricing<'_>, chosen: &[&Column]) -> Schedule {
    let snap = pricing.snapshot();
    let topology = pricing.topology();
    let mut by_job: HashMap<usize, Assignment> = HashMap::new();
    for c in chosen {
        let s = c.server;
        let switches = topology.switches_on(s);
        let mut taken: Vec<Vec<bool>> = switches
            .iter()
            .map(|&b| vec![false; topology.switch(b).gpus.len()])
            .collect();
        let mut order: Vec<&super::column::Fragment> = c.fragments.iter().collect();
        order.sort_by_key(|f| !f.kept);
        for f in order {
            let job = &snap.jobs[f.job.0];
            let a = by_job.entry(f.job.0).or_insert_with(|| Assignment {
                // Every fragment of a job takes the same option, so the same tier.
                tier: pricing.options(f.job)[f.option].tier,
                job: job.id,
                workers: Vec::new(),
                ps: Vec::new(),
            });
            if f.kept {
                let cur = job.run.current.as_ref().expect("kept: running");
                for w in cur.workers.iter().filter(|w| w.server == ServerIdx(s)) {
                    for &g in &w.gpus {
                        if let Some((b, pos)) = topology.switch_of(s, g) {
                            let local = switches.iter().position(|&x| x == b).unwrap_or(0);
                            taken[local][pos] = true;
                        }
                    }
                    a.workers.push(w.clone());
                }
                a.ps.extend(cur.ps.iter().filter(|p| p.server == ServerIdx(s)).cloned());
                continue;
            }
            let mut gpus: Vec<u32> = Vec::new();
            for (local, &b) in switches.iter().enumerate() {
                let want = f
                    .gpus
                    .get(topology.switch(b).local as usize)
                    .copied()
                    .unwrap_or(0);
                let mut got = 0;
                for (pos, &gpu) in topology.switch(b).gpus.iter().enumerate() {
                    if got == want {
                        break;
                    }
                    if !taken[local][pos] {
                        taken[local][pos] = true;
                        gpus.push(gpu);
                        got += 1;
                    }
                }
            }
            let gpw = job.demand.gpus_per_worker.max(1) as usize;
            for chunk in gpus.chunks(gpw) {
                a.workers.push(WorkerTask {
                    server: ServerIdx(s),
                    gpus: chunk.to_vec(),
                });
            }
            a.ps.extend((0..f.ps).map(|_| PsTask {
                server: ServerIdx(s),
            }));
        }
    }
    let mut assignments: Vec<Assignment> = by_job.into_values().collect();
    assignments.sort_by_key(|a| snap.job_index(a.job));
    for a in &mut assignments {
        a.workers.sort_by_key(|w| w.server);
        a.ps.sort_by_key(|p| p.server);
    }
    Schedule { assignments }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ilp::SolveSettings;
    use crate::ilp::config::columns_of;
    use crate::objective::Objective;
    use crate::perf::CalibratedPerf;

    /// Over a pool holding the compact program's proven optimum and the keep-everything
    /// schedule, the master finds that optimum again: a valid schedule whose score is the
    /// master's objective and the compact optimum.
    #[test]
    fn the_master_over_the_optimums_columns_finds_the_optimum() {
        let perf = CalibratedPerf::shipped();
        let objective = Objective::default();
        let settings = SolveSettings {
            time_limit_s: 60.0,
            ..Default::default()
        }
        .checked()
        .unwrap();
        for name in [
            "gen_s02_j04_seed1",
            "gen_s02_j06_seed2",
            "gen_s03_j06_seed1",
            "gen_s03_j08_seed2",
        ] {
            let (snap, exact) = crate::ilp::config::proven_optimum(name);
            let pricing = RoundPricing::new(perf, &snap, objective);
            let keep = snap.current_schedule();
            let (mut pool, _) = columns_of(&pricing, &exact.schedule).unwrap();
            let (keep_cols, keep_choices) = columns_of(&pricing, &keep).unwrap();
            for c in &keep_cols {
                if !pool.contains(c) {
                    pool.push(c.clone());
                }
            }
            let m = solve_master(
                &pricing,
                &pool,
                &settings,
                Some((&keep_cols, &keep_choices)),
                &vec![false; snap.jobs.len()],
            )
            .unwrap();
            assert_eq!(m.status, SolveStatus::Optimal, "{name}");
            assert!(
                m.schedule.validate(&snap).is_empty(),
                "{name}: {:?}",
                m.schedule.validate(&snap)
            );
            let score = pricing.score(&m.schedule).unwrap().total;
            assert!(
                (score - m.objective).abs() < 1e-6,
                "{name}: score {score} vs master {}",
                m.objective
            );
            assert!(
                (m.objective - exact.report.objective).abs() < 1e-6,
                "{name}: master {} vs compact {}",
                m.objective,
                exact.report.objective
            );
        }
    }
}
