//! The column map of one round's program: which solver column is which job's variable, the
//! topology they index, and the product definitions of the sharing terms. The formulation
//! builds it; the codec reads it to decode a solution and to encode a MIP start. Neither of the
//! two reaches into the other: both depend on this file only.

use std::collections::{BTreeMap, HashMap};

use good_lp::Variable;

use crate::model::{SwitchId, Topology};
use crate::objective::JobOption;

/// Metadata of one variable, in creation order (= column index).
#[derive(Debug, Clone)]
pub(crate) struct VarInfo {
    pub(crate) name: String,
    pub(crate) lb: f64,
    pub(crate) ub: f64,
    pub(crate) integer: bool,
}

/// The variables of one job.
pub(crate) struct JobVars {
    /// Index of the job in the snapshot.
    pub(crate) job: usize,
    pub(crate) options: Vec<JobOption>,
    pub(crate) y: Vec<Variable>,
    /// Workers per server (None: the job cannot use that server).
    pub(crate) m: Vec<Option<Variable>>,
    /// Workers on the server at all.
    pub(crate) v: Vec<Option<Variable>>,
    /// Workers per server at each CPU/memory tier, `[tier][server]` (where `m` exists): the
    /// split of `m` that prices cores and memory. Empty when every option is at the demand.
    pub(crate) m_tier: Vec<Vec<Option<Variable>>>,
    /// GPUs per switch and switch used.
    pub(crate) g: BTreeMap<SwitchId, (Variable, Variable)>,
    /// PS per server and "any task on server" (PS jobs only).
    pub(crate) q: Vec<Option<Variable>>,
    pub(crate) a: Vec<Option<Variable>>,
    /// Sockets used per (server, socket) and "spans sockets" per server (all-reduce jobs).
    pub(crate) t: BTreeMap<(usize, u32), Variable>,
    pub(crate) zeta: BTreeMap<usize, Variable>,
    /// Binary expansion of q and the products with m (PS locality).
    pub(crate) bits: BTreeMap<usize, Vec<(Variable, Variable)>>,
    pub(crate) local_pairs: Option<Variable>,
    pub(crate) local_pairs_by_option: Vec<Option<Variable>>,
    pub(crate) keep: Option<Variable>,
    pub(crate) restart: f64,
    /// Loss per sharing kind, indexed by [`Sharing::index`].
    pub(crate) loss: [Variable; 3],
    /// `(coefficient, pair variable, the most it reaches while the job is there)` terms of each
    /// sharing kind's pressure (a pair variable sums co-runners, so it may exceed 1).
    pub(crate) pressure: [Vec<(f64, Variable, f64)>; 3],
    /// Co-location pressure `ωcol_js` per server (where the job can meet a priced co-runner).
    pub(crate) wcol: BTreeMap<usize, Variable>,
}

impl JobVars {
    /// The most workers any option of the job has: the big-M of its worker counts. (Its
    /// `workers.max` may be far larger than the cluster holds; the options are clipped to it.)
    pub(crate) fn w_max(&self) -> f64 {
        f64::from(self.options.iter().map(|o| o.workers).max().unwrap_or(0))
    }

    /// The most parameter servers any option of the job has.
    pub(crate) fn p_max(&self) -> f64 {
        f64::from(self.options.iter().map(|o| o.ps).max().unwrap_or(0))
    }

    /// `(1, y_k)` for every option: `run_j`.
    pub(crate) fn run(&self) -> Vec<(f64, Variable)> {
        self.y.iter().map(|&x| (1.0, x)).collect()
    }

    /// The option variables whose option satisfies `keep`.
    pub(crate) fn ys_where(&self, keep: impl Fn(&JobOption) -> bool) -> Vec<Variable> {
        self.y
            .iter()
            .zip(&self.options)
            .filter(|(_, o)| keep(o))
            .map(|(&x, _)| x)
            .collect()
    }

    /// "Any task on server s": `a` for PS jobs, `v` for all-reduce jobs.
    pub(crate) fn any_task(&self, s: usize) -> Option<Variable> {
        self.a[s].or(self.v[s])
    }
}

/// `var = Π_gates(Σ gate) · Σ terms` at its tight value (terms empty: the gate product alone).
#[derive(Clone)]
pub(crate) struct ShareDef {
    pub(crate) var: Variable,
    pub(crate) gates: Vec<Vec<Variable>>,
    pub(crate) terms: Vec<(f64, Variable)>,
}

/// Everything a built program's columns mean, owned (what a [`super::codec::Decoder`] keeps after
/// the program went to the solver).
pub(crate) struct ColumnMap {
    pub(crate) jobs: Vec<JobVars>,
    pub(crate) topology: Topology,
    pub(crate) info: Vec<VarInfo>,
    /// Constant part of the objective.
    pub(crate) constant: f64,
    pub(crate) index_of: HashMap<Variable, usize>,
    pub(crate) shares: Vec<ShareDef>,
}

impl ColumnMap {
    /// The borrowed view the codec reads.
    pub(crate) fn view(&self) -> Columns<'_> {
        Columns {
            jobs: &self.jobs,
            topology: &self.topology,
            columns: self.info.len(),
            index_of: &self.index_of,
            shares: &self.shares,
        }
    }
}

/// What decoding and encoding read of a built program, borrowed (from a [`ColumnMap`], or from
/// a formulation before it goes to the solver).
pub(crate) struct Columns<'a> {
    pub(crate) jobs: &'a [JobVars],
    pub(crate) topology: &'a Topology,
    pub(crate) columns: usize,
    pub(crate) index_of: &'a HashMap<Variable, usize>,
    pub(crate) shares: &'a [ShareDef],
}
