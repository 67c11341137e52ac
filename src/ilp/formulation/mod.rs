//! The contention-aware integer program of one scheduling round, built with good_lp and handed to
//! a solver by the caller (see `formulations/README.md` for the mathematics).
//!
//! The model decides, jointly, each job's option (workers, PS, placement mode, GPU type — or
//! wait), how many of its GPUs sit under each PCIe switch, how many PS tasks sit on each server,
//! and prices co-location, PCIe and NIC sharing, PS locality and restarts exactly as
//! [`crate::Objective`] does, reading every coefficient from the round priced once
//! ([`RoundPricing`]). It knows nothing about HiGHS; [`crate::ilp::SolveRequest`] solves it, and
//! [`Formulation::write_mps`] lets any other MIP solver re-check it.
//!
//! One file per constraint group, numbered as in `formulations/README.md` ([`Group`]):
//! `choice` (1–2), `placement` (3–5), `mode` (6–7), `capacity` (8), `locality` (9), `sharing`
//! (10), `loss` (11), `keep` (12), `symmetry` (13); `vars` creates the variables. Every row is
//! tagged with its group, so a unit test (or a failing property test) can say which group a
//! point violates.

// Servers, switches and jobs are indexed in parallel arrays throughout; index loops read best.
#![allow(clippy::needless_range_loop)]

mod capacity;
mod choice;
mod cuts;
mod keep;
mod locality;
mod loss;
mod mode;
mod mps;
mod placement;
mod sharing;
mod symmetry;
#[cfg(test)]
mod tests;
mod vars;

pub use symmetry::relabel;

use std::collections::BTreeMap;
use std::collections::HashMap;

use good_lp::IntoAffineExpression;
use good_lp::{Constraint, Expression, ProblemVariables, Variable, variable};

use super::codec::Decoder;
use super::columns::Columns;
pub(crate) use super::columns::{ColumnMap, JobVars, ShareDef, VarInfo};
use crate::error::Result;
use crate::model::Schedule;
use crate::model::{ClusterSnapshot, Job, Topology};
use crate::objective::{RoundPricing, Sharing};

/// The constraint groups of `formulations/README.md`, by their number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// 1. One option at most.
    OneOption = 1,
    /// 2. Workers and PS add up to the option's.
    TasksAddUp = 2,
    /// 3. GPUs follow workers (per switch), switch and server used.
    GpusFollowWorkers = 3,
    /// 4. Every worker on the option's GPU type.
    OneGpuType = 4,
    /// 5. "Any task on the server" for PS jobs.
    Presence = 5,
    /// 6. Mode `Multi` exactly when tasks span servers.
    MultiMode = 6,
    /// 7. Mode `CrossSocket` exactly when a one-server job spans sockets.
    CrossSocketMode = 7,
    /// 8. GPUs per switch, cores and memory per server.
    Capacity = 8,
    /// 9. PS locality by binary expansion.
    PsLocality = 9,
    /// 10. Sharing pressures (co-location, PCIe, NIC).
    SharingCounts = 10,
    /// 11. Losses: chosen option's coefficient × pressure.
    Losses = 11,
    /// 12. Keep: the job stays exactly where it is.
    Keep = 12,
    /// 13. Symmetry breaking over interchangeable servers and switches.
    Symmetry = 13,
    /// 14. Valid inequalities on co-location (presence cover, pair variables, clique rows).
    ColocationCuts = 14,
}

/// How the formulation was built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FormulationOptions {
    /// Order interchangeable servers (and PCIe switches) by GPUs used: cuts symmetric copies of
    /// every solution without cutting any objective value.
    pub symmetry_breaking: bool,
    /// Add the valid inequalities on co-location (group 14): a tighter relaxation, the same
    /// optimum, but a larger program (off by default: measured slower, see
    /// `formulations/README.md`).
    pub colocation_cuts: bool,
}

impl Default for FormulationOptions {
    fn default() -> Self {
        FormulationOptions {
            symmetry_breaking: true,
            colocation_cuts: false,
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

/// Columns and rows as they are added; kept apart from the per-job variables so that a
/// constraint group can read a job's variables while it adds rows.
pub(crate) struct Model {
    vars: ProblemVariables,
    pub(crate) info: Vec<VarInfo>,
    pub(crate) constraints: Vec<Constraint>,
    groups: Vec<Group>,
    /// Column index of every variable (creation order).
    pub(crate) index_of: HashMap<Variable, usize>,
    /// Definitions of the sharing variables, in creation order (for MIP starts).
    pub(crate) shares: Vec<ShareDef>,
    /// Every column continuous: the linear relaxation (the root bound before any cut).
    relax: bool,
}

impl Model {
    fn add_var(&mut self, name: String, lb: f64, ub: f64, integer: bool) -> Variable {
        let mut def = variable().name(name.clone()).min(lb).max(ub);
        if integer && !self.relax {
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

    fn push(&mut self, group: Group, c: Constraint) {
        self.constraints.push(c);
        self.groups.push(group);
    }

    fn info_ub(&self, v: Variable) -> f64 {
        self.info[self.index_of[&v]].ub
    }
}

/// `Σ c·x` of `(c, x)` terms.
fn lin(terms: &[(f64, Variable)]) -> Expression {
    let mut e = Expression::with_capacity(terms.len());
    for &(c, v) in terms {
        e.add_mul(c, v);
    }
    e
}

/// The integer program of one round.
pub struct Formulation {
    model: Model,
    objective: Expression,
    /// Constant part of the objective (minus the restart cost of every running job; `keep`
    /// variables pay it back).
    objective_constant: f64,
    jobs: Vec<JobVars>,
    topology: Topology,
}

/// What every constraint group reads: the snapshot, its topology and the job's variables.
struct Ctx<'a> {
    snapshot: &'a ClusterSnapshot,
    topology: &'a Topology,
}

impl Ctx<'_> {
    fn job(&self, jv: &JobVars) -> &Job {
        &self.snapshot.jobs[jv.job]
    }
}

impl Formulation {
    /// Builds the program from a round already priced.
    pub fn from_pricing(pricing: &RoundPricing<'_>, options: FormulationOptions) -> Result<Self> {
        Self::from_pricing_with(pricing, options, false)
    }

    /// [`Formulation::from_pricing`], with every column continuous when `relax` is set: the
    /// linear relaxation, whose optimum is the root bound before the solver's own cuts.
    pub(crate) fn from_pricing_with(
        pricing: &RoundPricing<'_>,
        options: FormulationOptions,
        relax: bool,
    ) -> Result<Self> {
        let snapshot = pricing.snapshot();
        pricing.perf().check_snapshot(snapshot, "snapshot")?;
        let mut f = Formulation {
            model: Model {
                vars: ProblemVariables::new(),
                info: Vec::new(),
                constraints: Vec::new(),
                groups: Vec::new(),
                index_of: HashMap::new(),
                shares: Vec::new(),
                relax,
            },
            objective: Expression::default(),
            objective_constant: 0.0,
            jobs: Vec::new(),
            topology: pricing.topology().clone(),
        };
        for j in 0..snapshot.jobs.len() {
            let jv = vars::job_vars(&mut f.model, pricing, j)?;
            f.objective_constant -= jv.restart;
            f.jobs.push(jv);
        }
        let ctx = Ctx {
            snapshot,
            topology: &f.topology,
        };
        // Per job, groups in this order; then the groups that couple jobs. The order of rows and
        // columns is part of what HiGHS sees, so it is kept stable.
        for jv in &mut f.jobs {
            if jv.options.is_empty() {
                continue;
            }
            choice::one_option(&mut f.model, jv);
            choice::tasks_add_up(&mut f.model, &ctx, jv);
            placement::gpus_follow_workers(&mut f.model, &ctx, jv);
            placement::one_gpu_type(&mut f.model, &ctx, jv);
            placement::presence(&mut f.model, &ctx, jv);
            mode::multi(&mut f.model, jv);
            mode::cross_socket(&mut f.model, &ctx, jv);
            locality::ps_locality(&mut f.model, &ctx, jv);
            keep::keep(&mut f.model, &ctx, jv)?;
        }
        capacity::capacity(&mut f.model, &ctx, &f.jobs);
        sharing::sharing(&mut f.model, &ctx, pricing, &mut f.jobs);
        loss::losses(&mut f.model, &ctx, &f.jobs);
        if options.colocation_cuts {
            cuts::colocation_cuts(&mut f.model, &ctx, pricing, &f.jobs);
        }
        if options.symmetry_breaking {
            symmetry::symmetry(&mut f.model, &ctx, &f.jobs);
        }
        f.build_objective();
        Ok(f)
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
            for kind in Sharing::ALL {
                e.add_mul(-1.0, jv.loss[kind.index()]);
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
            variables: self.model.info.len(),
            integer_variables: self.model.info.iter().filter(|v| v.integer).count(),
            constraints: self.model.constraints.len(),
        }
    }

    /// Constant added to the solver's objective value to get the [`Objective`] value.
    pub fn objective_constant(&self) -> f64 {
        self.objective_constant
    }

    /// The groups whose rows `x` (a value per column) violates by more than `tol`, with the
    /// number of violated rows each.
    pub fn violated_groups(&self, x: &[f64], tol: f64) -> BTreeMap<Group, usize> {
        let mut out = BTreeMap::new();
        for (c, &g) in self.model.constraints.iter().zip(&self.model.groups) {
            let e = c.expression();
            let lhs: f64 = e
                .linear_coefficients()
                .map(|(v, k)| k * x[self.model.index_of[&v]])
                .sum::<f64>()
                + e.constant();
            let bad = if c.is_equality() {
                lhs.abs() > tol
            } else {
                lhs > tol
            };
            if bad {
                *out.entry(g).or_default() += 1;
            }
        }
        out
    }

    /// The column map as the codec reads it, before the program goes to a solver.
    fn columns(&self) -> Columns<'_> {
        Columns {
            jobs: &self.jobs,
            topology: &self.topology,
            columns: self.model.info.len(),
            index_of: &self.model.index_of,
            shares: &self.model.shares,
        }
    }

    /// [`Decoder::encode`] before the program is handed to a solver (to check rows at a point,
    /// with [`Formulation::violated_groups`]).
    pub fn encode(&self, pricing: &RoundPricing<'_>, schedule: &Schedule) -> Result<Vec<f64>> {
        self.columns().encode(pricing, schedule)
    }

    /// Rows per constraint group.
    #[cfg(test)]
    pub fn rows_per_group(&self) -> BTreeMap<Group, usize> {
        let mut out = BTreeMap::new();
        for &g in &self.model.groups {
            *out.entry(g).or_default() += 1;
        }
        out
    }

    /// The pieces a solver needs: variables, objective (to maximise), constraints.
    pub fn into_parts(self) -> (ProblemVariables, Expression, Vec<Constraint>, Decoder) {
        let Model {
            vars,
            info,
            constraints,
            index_of,
            shares,
            ..
        } = self.model;
        let dec = Decoder::new(ColumnMap {
            jobs: self.jobs,
            topology: self.topology,
            info,
            constant: self.objective_constant,
            index_of,
            shares,
        });
        (vars, self.objective, constraints, dec)
    }

    /// Writes the model in free MPS format (maximisation, declared with `OBJSENSE MAX`).
    pub fn write_mps(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        mps::write(out, &self.model, &self.objective, self.objective_constant)
    }
}
