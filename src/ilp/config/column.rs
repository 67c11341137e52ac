//! A column of the configuration program: what one server hosts — each job's fragment on it
//! (workers, GPUs per PCIe switch, PS, the job's option) — and what the objective charges and
//! credits inside that server, priced by the round's own [`RoundPricing`].

use crate::error::{Error, Result};
use crate::model::ServerIdx;
use crate::model::{JobPos, Schedule};
use crate::objective::{Mode, RoundPricing, same_assignment};

/// One job's tasks on one server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fragment {
    /// The job.
    pub job: JobPos,
    /// Its option (index in [`RoundPricing::options`]): the whole job's size, mode and GPU
    /// type, which every fragment of the job agrees on.
    pub option: usize,
    /// Workers on the server.
    pub workers: u32,
    /// GPUs under each PCIe switch of the server (indexed by the switch's local index).
    pub gpus: Vec<u32>,
    /// Parameter servers on the server.
    pub ps: u32,
    /// The job's current tasks on this server, exactly (its GPUs too): part of keeping it where
    /// it runs.
    pub kept: bool,
}

/// What one server hosts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Column {
    /// The server (index in the cluster).
    pub server: usize,
    /// One fragment per job on it, by job position.
    pub fragments: Vec<Fragment>,
}

impl Column {
    /// Everything the objective charges or credits inside the server: each fragment's worker–PS
    /// pairs at its option's slope, less its co-location pressure from the other jobs with
    /// workers here, its PCIe sharing (other jobs under each switch it uses) and, for a
    /// multi-server job, its NIC sharing (other multi-server jobs with a task here) — each at
    /// its option's coefficient. The per-job base terms and restarts are the master's. Summed
    /// over a schedule's columns with those, it is `Objective::score` exactly
    /// ([`columns_of`]'s test).
    pub fn value(&self, pricing: &RoundPricing<'_>) -> f64 {
        let mut v = 0.0;
        for (i, f) in self.fragments.iter().enumerate() {
            let t = &pricing.options(f.job)[f.option].terms;
            v += t.local_pair_slope * f64::from(f.workers) * f64::from(f.ps);
            for g in &self.fragments[i + 1..] {
                v += pair_loss(pricing, self.server, f, g);
            }
        }
        v
    }
}

/// What two fragments on server `s` cost each other, both ways (≤ 0 when every coefficient and
/// co-location excess is): co-location when both have workers, PCIe sharing per switch both
/// use, NIC sharing when both options are multi-server — each at the sufferer's coefficient.
/// The one place the configuration program prices contention: [`Column::value`] sums it over
/// pairs, and pricing adds it fragment by fragment.
pub(crate) fn pair_loss(pricing: &RoundPricing<'_>, s: usize, a: &Fragment, b: &Fragment) -> f64 {
    let excess = |x: &Fragment, y: &Fragment| pricing.colocation_excess(x.job, y.job, s);
    PairTerms::of(pricing, a).loss(&PairTerms::of(pricing, b), || (excess(a, b), excess(b, a)))
}

/// What of a fragment [`pair_loss`] reads, gathered once: the pricing search prices every
/// candidate against every chosen fragment at every node, and looking the option up each time
/// (and counting shared switches over vectors) was most of its time.
#[derive(Debug, Clone)]
pub(crate) struct PairTerms {
    coloc: f64,
    pcie: f64,
    nic: f64,
    multi: bool,
    workers: bool,
    /// Bit `b` set when the fragment has GPUs under switch `b` (servers of up to 64 switches;
    /// `gpus` is read past that).
    switches: u64,
    gpus: Vec<u32>,
}

impl PairTerms {
    /// The terms of `f`.
    pub(crate) fn of(pricing: &RoundPricing<'_>, f: &Fragment) -> Self {
        let o = &pricing.options(f.job)[f.option];
        let t = &o.terms;
        let switches = f
            .gpus
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .fold(0u64, |m, (b, _)| m | (1 << b));
        PairTerms {
            coloc: t.coloc_coef,
            pcie: t.pcie_coef,
            nic: t.nic_coef,
            multi: o.mode == Mode::Multi,
            workers: f.workers > 0,
            switches,
            gpus: if f.gpus.len() > 64 {
                f.gpus.clone()
            } else {
                Vec::new()
            },
        }
    }

    /// [`pair_loss`] of two fragments on one server, given (when both have workers) each
    /// one's co-location excess from the other, `(a from b, b from a)`.
    pub(crate) fn loss(&self, b: &PairTerms, excess: impl FnOnce() -> (f64, f64)) -> f64 {
        // Co-location, PCIe, NIC: in this order, so that the values are bit for bit those
        // of one sum (the fragment search's columns stay what they were).
        self.colocation_loss(b, excess) + self.pcie_loss(b) - self.nic_share(b)
    }

    /// The part of [`PairTerms::loss`] that does not depend on the fragments' layouts over
    /// the switches: co-location and NIC sharing. Fragments of one job's shape (option,
    /// workers, PS) have the same, whatever their layouts (what shape pricing rests on).
    pub(crate) fn layout_free_loss(
        &self,
        b: &PairTerms,
        excess: impl FnOnce() -> (f64, f64),
    ) -> f64 {
        self.colocation_loss(b, excess) - self.nic_share(b)
    }

    /// Co-location, when both have workers: each at the sufferer's coefficient.
    fn colocation_loss(&self, b: &PairTerms, excess: impl FnOnce() -> (f64, f64)) -> f64 {
        if self.workers && b.workers {
            let (ab, ba) = excess();
            // From 0.0, as the one sum was (the same zero's sign too).
            0.0 - self.coloc * ab - b.coloc * ba
        } else {
            0.0
        }
    }

    /// NIC sharing (what is lost, ≥ 0 when the coefficients are), when both options are
    /// multi-server.
    fn nic_share(&self, b: &PairTerms) -> f64 {
        if self.multi && b.multi {
            self.nic + b.nic
        } else {
            0.0
        }
    }

    /// The part of [`PairTerms::loss`] that the layouts decide: PCIe sharing, per switch both
    /// fragments use.
    pub(crate) fn pcie_loss(&self, b: &PairTerms) -> f64 {
        let mut shared = (self.switches & b.switches).count_ones();
        if self.gpus.len() > 64 {
            shared += (64..self.gpus.len())
                .filter(|&i| self.gpus[i] > 0 && b.gpus.get(i).is_some_and(|&n| n > 0))
                .count() as u32;
        }
        -(self.pcie + b.pcie) * f64::from(shared)
    }
}

/// The servers in classes: servers in identical state (same GPU type, topology, cores,
/// memory, NIC; no task of a running job on them) form one class, which the master treats as
/// one server with a count — a column of the class may be taken up to that many times. That
/// is what removes the symmetry of identical idle servers (from the master's LP, where it
/// stalls column generation, and from pricing, done once per class). A server hosting a
/// running job's task is a class of its own (keeping that job is specific to it).
#[derive(Debug, Clone)]
pub(crate) struct Classes {
    /// Each server's class, named by its representative (its lowest server).
    rep: Vec<usize>,
    /// Each representative's members, ascending.
    members: std::collections::BTreeMap<usize, Vec<usize>>,
}

impl Classes {
    /// The round's classes.
    pub fn of(pricing: &RoundPricing<'_>) -> Self {
        let snap = pricing.snapshot();
        let servers = &snap.cluster.servers;
        let mut busy = vec![false; servers.len()];
        for job in &snap.jobs {
            if let Some(cur) = &job.run.current {
                for s in cur.servers() {
                    if let Some(b) = busy.get_mut(s) {
                        *b = true;
                    }
                }
            }
        }
        let same = |a: usize, b: usize| {
            let (x, y) = (&servers[a], &servers[b]);
            !busy[a]
                && !busy[b]
                && x.gpu_type == y.gpu_type
                && x.topology == y.topology
                && x.cpu_cores == y.cpu_cores
                && x.memory_gib == y.memory_gib
                && x.nic_gbps == y.nic_gbps
                && x.nvlink == y.nvlink
        };
        let mut rep = Vec::with_capacity(servers.len());
        let mut members: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for s in 0..servers.len() {
            let r = members.keys().copied().find(|&r| same(r, s)).unwrap_or(s);
            rep.push(r);
            members.entry(r).or_default().push(s);
        }
        Self { rep, members }
    }

    /// Server `s`'s class (its representative).
    pub fn rep(&self, s: usize) -> usize {
        self.rep[s]
    }

    /// The classes' representatives, ascending.
    pub fn reps(&self) -> impl Iterator<Item = usize> + '_ {
        self.members.keys().copied()
    }

    /// The servers of the class of representative `r`.
    pub fn members(&self, r: usize) -> &[usize] {
        self.members.get(&r).map_or(&[], |m| m.as_slice())
    }

    /// How many servers the class of representative `r` has.
    pub fn count(&self, r: usize) -> usize {
        self.members(r).len()
    }
}

/// What a schedule does with each job outside the servers: its option (`None`: it waits) and
/// whether it is kept exactly where it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct JobChoice {
    /// The option taken, if the job runs.
    pub option: Option<usize>,
    /// Whether a running job keeps its exact current placement.
    pub kept: bool,
}

/// A valid schedule as columns (one per server that hosts anything, named by the server's class
/// — so two servers of a class hosting the same fragments give the same column twice) and
/// per-job choices. An error if it uses an option the round's list does not hold (the program
/// cannot express it).
pub(crate) fn columns_of(
    pricing: &RoundPricing<'_>,
    schedule: &Schedule,
) -> Result<(Vec<Column>, Vec<JobChoice>)> {
    let snap = pricing.snapshot();
    let slots = pricing.topology().slots();
    let mut choices = vec![
        JobChoice {
            option: None,
            kept: false,
        };
        snap.jobs.len()
    ];
    let mut columns: Vec<Column> = Vec::new();
    for a in &schedule.assignments {
        let j = pricing.job_index(a.job).ok_or_else(|| Error::Solver {
            solver: "configuration program".into(),
            reason: format!("job {} is not in the round", a.job),
        })?;
        let facts = pricing.option_of(j, a);
        let k = pricing
            .option_index(j, &facts)
            .ok_or_else(|| Error::Solver {
                solver: "configuration program".into(),
                reason: format!("job {}: its option is not among the round's", a.job),
            })?;
        let kept = snap.jobs[j.0]
            .run
            .current
            .as_ref()
            .is_some_and(|c| same_assignment(c, a));
        choices[j.0] = JobChoice {
            option: Some(k),
            kept,
        };
        for s in a.servers() {
            let switches = slots[s].iter().map(|g| g.switch + 1).max().unwrap_or(0) as usize;
            let mut f = Fragment {
                job: j,
                option: k,
                workers: 0,
                gpus: vec![0; switches],
                ps: a.ps.iter().filter(|p| p.server == ServerIdx(s)).count() as u32,
                kept,
            };
            for w in a.workers.iter().filter(|w| w.server == ServerIdx(s)) {
                f.workers += 1;
                for &g in &w.gpus {
                    f.gpus[slots[s][g as usize].switch as usize] += 1;
                }
            }
            match columns.iter_mut().find(|c| c.server == s) {
                Some(c) => c.fragments.push(f),
                None => columns.push(Column {
                    server: s,
                    fragments: vec![f],
                }),
            }
        }
    }
    let classes = Classes::of(pricing);
    columns.sort_by_key(|c| c.server);
    for c in &mut columns {
        c.fragments.sort_by_key(|f| f.job);
        c.server = classes.rep(c.server);
    }
    Ok((columns, choices))
}

/// The master's part of a schedule's value: each running job's base term, and the restart of
/// every running job not kept.
#[cfg(test)]
pub(crate) fn master_value(pricing: &RoundPricing<'_>, choices: &[JobChoice]) -> Result<f64> {
    let mut v = 0.0;
    for (j, c) in choices.iter().enumerate() {
        let j = JobPos(j);
        if let Some(k) = c.option {
            v += pricing.options(j)[k].terms.base;
        }
        if !c.kept {
            v -= pricing.restart_cost(j)?;
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::Objective;
    use crate::perf::CalibratedPerf;

    use crate::ilp::config::test_instance as instance;

    /// The decomposition is exact: on every shipped round, for the schedule that keeps every
    /// running job and for the program's own solution, the columns' values plus the master's
    /// terms are `Objective::score`.
    #[test]
    fn columns_and_master_terms_add_up_to_the_score() {
        let perf = CalibratedPerf::shipped();
        for name in [
            "gen_s02_j04_seed1",
            "gen_s02_j06_seed2",
            "gen_s03_j06_seed1",
            "gen_s03_j08_seed2",
            "gen_s04_j08_seed1",
            "trace_philly_8x8_16jobs",
        ] {
            let snap = instance(name);
            for kappa in [0.0, 0.5] {
                let objective = Objective {
                    in_service_credit: kappa,
                    ..Objective::default()
                };
                let pricing = RoundPricing::new(perf, &snap, objective);
                let settings = crate::ilp::SolveSettings {
                    time_limit_s: 5.0,
                    ..Default::default()
                }
                .checked()
                .unwrap();
                let solved = crate::ilp::SolveRequest::new(&snap, perf, objective)
                    .unwrap()
                    .settings(settings)
                    .solve()
                    .unwrap();
                for schedule in [
                    snap.current_schedule(),
                    solved.schedule,
                    Schedule::default(),
                ] {
                    let score = pricing.score(&schedule).unwrap().total;
                    let (columns, choices) = columns_of(&pricing, &schedule).unwrap();
                    let sum: f64 = columns.iter().map(|c| c.value(&pricing)).sum::<f64>()
                        + master_value(&pricing, &choices).unwrap();
                    assert!(
                        (sum - score).abs() < 1e-9,
                        "{name}, κ {kappa}: columns {sum} vs score {score}"
                    );
                }
            }
        }
    }
}
