//! One round priced once: what the objective knows about a snapshot, computed a single time and
//! read by everyone who needs it — the integer program's coefficients, the MIP-start encoder,
//! [`Objective::score`], and (later) a learned policy's features and rewards.
//!
//! A [`RoundPricing`] holds, per job, its options and their terms (priced on first use), its
//! restart cost, the pair co-location table of the snapshot's models on each GPU type, the
//! cluster's [`Topology`] and an O(1) index from job id to job. Nothing here computes a speed
//! the [`PerfModel`] does not give; it only remembers what it gave.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{
    ClusterShape, Colocation, JobOption, JobScore, Mode, Objective, OptionShape, OptionTerms,
    PricingCache, Score, same_assignment,
};
use crate::error::{Error, Result};
use crate::model::{
    Architecture, Assignment, ClusterSnapshot, Footprint, Job, JobId, Schedule, Topology,
};
use crate::model::{GpuType, JobPos};
use crate::perf::{Occupancy, PerfModel};

/// What the objective reads of one assignment: the option it takes and how it sits.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionFacts {
    /// Workers.
    pub workers: u32,
    /// Parameter servers.
    pub ps: u32,
    /// Placement mode.
    pub mode: Mode,
    /// GPU type of its (first) worker.
    pub gpu_type: GpuType,
    /// CPU/memory tier of its workers.
    pub tier: u8,
    /// Worker–PS pairs on the same server.
    pub local_pairs: f64,
    /// Where its tasks sit.
    pub footprint: Footprint,
}

/// The snapshot priced once for one objective and performance model (see the module docs).
pub struct RoundPricing<'a> {
    perf: &'a dyn PerfModel,
    snapshot: &'a ClusterSnapshot,
    objective: Objective,
    topology: Topology,
    options: Vec<OnceLock<Vec<JobOption>>>,
    /// Option lists priced in earlier rounds, when the caller keeps them.
    kept: Option<&'a PricingCache>,
    /// What option enumeration reads of the cluster, summarised once for all jobs.
    shape: ClusterShape,
    restart: Vec<OnceLock<f64>>,
    /// Per job, the option of its current assignment (asked by every proposal of a round).
    current: Vec<OnceLock<Option<usize>>>,
    /// Per job, the index of its model in `models`.
    model_of: Vec<usize>,
    /// Per server, the index of its GPU type in `gpu_types`.
    type_of: Vec<usize>,
    gpu_types: Vec<GpuType>,
    /// `slowdown − 1` of a model next to another on a GPU type, `[victim][other][type]`,
    /// flattened; filled on first use (NaN = not yet asked).
    coloc: Vec<AtomicU64>,
    models: Vec<String>,
}

impl<'a> RoundPricing<'a> {
    /// Prices `snapshot` for `objective` with `perf`. Cheap: options, restart costs and pair
    /// slowdowns are computed on first use and then kept.
    pub fn new(
        perf: &'a dyn PerfModel,
        snapshot: &'a ClusterSnapshot,
        objective: Objective,
    ) -> Self {
        let (topology, shape) = (
            Topology::of(&snapshot.cluster),
            ClusterShape::of(&snapshot.cluster),
        );
        Self::with(perf, snapshot, objective, topology, shape)
    }

    fn with(
        perf: &'a dyn PerfModel,
        snapshot: &'a ClusterSnapshot,
        objective: Objective,
        topology: Topology,
        shape: ClusterShape,
    ) -> Self {
        let n = snapshot.jobs.len();
        let mut models: Vec<String> = Vec::new();
        let model_of = snapshot
            .jobs
            .iter()
            .map(|j| intern(&mut models, &j.model))
            .collect();
        let mut gpu_types: Vec<GpuType> = Vec::new();
        let type_of = snapshot
            .cluster
            .servers
            .iter()
            .map(|s| intern_type(&mut gpu_types, s.gpu_type))
            .collect();
        let cells = models.len() * models.len() * gpu_types.len();
        RoundPricing {
            perf,
            snapshot,
            objective: objective.for_round(snapshot),
            topology,
            options: (0..n).map(|_| OnceLock::new()).collect(),
            kept: None,
            shape,
            restart: (0..n).map(|_| OnceLock::new()).collect(),
            current: (0..n).map(|_| OnceLock::new()).collect(),
            model_of,
            type_of,
            gpu_types,
            coloc: (0..cells)
                .map(|_| AtomicU64::new(f64::NAN.to_bits()))
                .collect(),
            models,
        }
    }

    /// [`RoundPricing::new`] reading and keeping option lists in `kept` (a policy's cache across
    /// the rounds of a replay: see [`PricingCache`]).
    pub(crate) fn keeping(
        perf: &'a dyn PerfModel,
        snapshot: &'a ClusterSnapshot,
        objective: Objective,
        kept: &'a PricingCache,
    ) -> Self {
        let (topology, shape) = kept.cluster(&snapshot.cluster);
        RoundPricing {
            kept: Some(kept),
            ..RoundPricing::with(perf, snapshot, objective, topology, shape)
        }
    }

    /// The snapshot priced.
    pub fn snapshot(&self) -> &'a ClusterSnapshot {
        self.snapshot
    }

    /// The performance model it was priced with.
    pub fn perf(&self) -> &'a dyn PerfModel {
        self.perf
    }

    /// The objective it was priced for.
    pub fn objective(&self) -> &Objective {
        &self.objective
    }

    /// The cluster's topology (GPU → switch → socket).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Position in the snapshot of the job with this id, in O(1) (the snapshot's own index).
    pub fn job_index(&self, id: JobId) -> Option<JobPos> {
        self.snapshot.job_index(id).map(JobPos)
    }

    /// Every option of job `j`, in [`Objective::job_options`] order.
    pub fn options(&self, j: JobPos) -> &[JobOption] {
        let j = j.0;
        self.options[j].get_or_init(|| {
            let job = &self.snapshot.jobs[j];
            match self.kept {
                Some(kept) => kept.options(self.perf, &self.shape, &self.objective, job),
                None => self.objective.job_options_in(self.perf, &self.shape, job),
            }
        })
    }

    /// Job `j`'s full pace: the speed of its fastest option alone, iterations per second (0
    /// if it has none), against which the in-service credit is measured.
    pub fn pace(&self, j: JobPos) -> f64 {
        super::full_pace(self.options(j).iter().map(|o| o.iterations_per_s))
    }

    /// The objective's own priority of job `j`: the most any of its options is worth alone (its
    /// isolated progress fraction, before contention and restart terms); 0 if it has none.
    /// Jobs nearest to finishing come first, as in shortest-remaining-time-first.
    pub fn alone_value(&self, j: JobPos) -> f64 {
        self.options(j)
            .iter()
            .map(|o| o.terms.base)
            .fold(0.0, f64::max)
    }

    /// The GPU types job `j` has an option on, sorted.
    pub fn usable_types(&self, j: JobPos) -> Vec<&str> {
        let mut t: Vec<&str> = self
            .options(j)
            .iter()
            .map(|o| o.gpu_type.as_str())
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// `slowdown − 1` of job `victim` next to job `other` on server `server`'s GPU type.
    pub fn colocation_excess(&self, victim: JobPos, other: JobPos, server: usize) -> f64 {
        let (m, t) = (self.models.len(), self.gpu_types.len());
        let (a, b, g) = (
            self.model_of[victim.0],
            self.model_of[other.0],
            self.type_of[server],
        );
        // Relaxed is enough: the value is a pure function of the pair, so a race stores the
        // same bits twice.
        let cell = &self.coloc[(a * m + b) * t + g];
        let known = f64::from_bits(cell.load(Ordering::Relaxed));
        if !known.is_nan() {
            return known;
        }
        let (victim, other, gpu) = (&self.models[a], &self.models[b], &self.gpu_types[g]);
        let excess = match self.objective.colocation {
            Colocation::Pair => self.perf.colocation_slowdown(victim, other, gpu) - 1.0,
            Colocation::FullServer | Colocation::Progress => {
                let n = super::colocation::full_server_co_runners(self.shape.largest(gpu));
                (self.perf.colocation_slowdown_among(victim, other, gpu, n) - 1.0) / f64::from(n)
            }
        };
        cell.store(excess.to_bits(), Ordering::Relaxed);
        excess
    }

    /// Restart penalty `ρ_j` of job `j` (0 if it is not running now).
    pub fn restart_cost(&self, j: JobPos) -> Result<f64> {
        let j = j.0;
        if let Some(&r) = self.restart[j].get() {
            return Ok(r);
        }
        let job = &self.snapshot.jobs[j];
        let r = match &job.run.current {
            Some(cur) if !cur.workers.is_empty() => {
                let fp = cur.footprint(self.topology.slots());
                let t = self.terms_of(j, &self.shape_of(j, cur, &fp))?;
                self.objective.restart_s / self.objective.round_s
                    * (t.base + t.local_pair_slope * fp.local_pairs as f64)
            }
            _ => 0.0,
        };
        Ok(*self.restart[j].get_or_init(|| r))
    }

    /// The index in [`RoundPricing::options`] of the option job `j` runs with now: `None` if
    /// it is not running or its list does not hold that option.
    pub fn current_option(&self, j: JobPos) -> Option<usize> {
        *self.current[j.0].get_or_init(|| {
            let cur = self.snapshot.jobs[j.0]
                .run
                .current
                .as_ref()
                .filter(|a| !a.workers.is_empty())?;
            let fp = cur.footprint(self.topology.slots());
            self.index_of(j, &self.shape_of(j.0, cur, &fp))
        })
    }

    /// The option assignment `a` of job `j` takes, and how it sits.
    pub fn option_of(&self, j: JobPos, a: &Assignment) -> OptionFacts {
        self.facts(j.0, a, a.footprint(self.topology.slots()))
    }

    fn facts(&self, j: usize, a: &Assignment, fp: Footprint) -> OptionFacts {
        let o = self.shape_of(j, a, &fp);
        OptionFacts {
            workers: o.workers,
            ps: o.ps,
            mode: o.mode,
            gpu_type: o.gpu_type,
            tier: o.tier,
            local_pairs: fp.local_pairs as f64,
            footprint: fp,
        }
    }

    /// The option assignment `a` of job `j` takes, sitting as `fp` says.
    fn shape_of(&self, j: usize, a: &Assignment, fp: &Footprint) -> OptionShape {
        let job = &self.snapshot.jobs[j];
        let mode = if fp.task_servers.len() > 1 {
            Mode::Multi
        } else if job.arch == Architecture::AllReduce && fp.sockets.len() > 1 {
            Mode::CrossSocket
        } else {
            Mode::Single
        };
        OptionShape {
            workers: a.workers.len() as u32,
            ps: a.ps.len() as u32,
            mode,
            gpu_type: self.snapshot.cluster.servers[a.workers[0].server].gpu_type,
            tier: a.tier,
        }
    }

    /// The index in [`RoundPricing::options`] of the option `f` describes (the program's
    /// `y_jk` order), if the list holds it.
    pub fn option_index(&self, j: JobPos, f: &OptionFacts) -> Option<usize> {
        let shape = OptionShape {
            workers: f.workers,
            ps: f.ps,
            mode: f.mode,
            gpu_type: f.gpu_type,
            tier: f.tier,
        };
        self.index_of(j, &shape)
    }

    /// [`RoundPricing::option_index`] of an option's shape.
    fn index_of(&self, j: JobPos, f: &OptionShape) -> Option<usize> {
        // A job's options are listed by tier, GPU type (in the cluster's order), workers, PS
        // and mode (`Objective::job_options_in`'s loops), so a binary search finds the first
        // that matches: pricing a schedule looks up every job's option, and the lists are long.
        let rank = |t: &GpuType| self.shape.types.iter().position(|(x, _)| x == t);
        let key = (f.tier, rank(&f.gpu_type)?, f.workers, f.ps, f.mode);
        let options = self.options(j);
        let k = options.partition_point(|o| {
            (
                o.tier,
                rank(&o.gpu_type).unwrap_or(usize::MAX),
                o.workers,
                o.ps,
                o.mode,
            ) < key
        });
        let found = options.get(k).is_some_and(|o| {
            (o.tier, o.gpu_type, o.workers, o.ps, o.mode)
                == (f.tier, f.gpu_type, f.workers, f.ps, f.mode)
        });
        let found = found.then_some(k);
        debug_assert_eq!(
            found,
            options.iter().position(|o| o.workers == f.workers
                && o.ps == f.ps
                && o.mode == f.mode
                && o.gpu_type == f.gpu_type
                && o.tier == f.tier)
        );
        found
    }

    /// The terms of the option `f` describes: read from the job's options (priced directly if
    /// the option list does not hold it).
    fn terms_of(&self, j: usize, f: &OptionShape) -> Result<OptionTerms> {
        let job = &self.snapshot.jobs[j];
        match self.index_of(JobPos(j), f) {
            Some(k) => Ok(self.options(JobPos(j))[k].terms),
            None => self
                .objective
                .option_terms_at_pace(
                    self.perf,
                    job,
                    *f,
                    self.shape.largest(&f.gpu_type),
                    Some(self.pace(JobPos(j))),
                )
                .ok_or_else(|| unpriceable(job, f)),
        }
    }

    /// The objective value of a valid schedule (an invalid one is an error): the formula of the
    /// [module docs](super).
    pub fn score(&self, schedule: &Schedule) -> Result<Score> {
        let violations = schedule.validate(self.snapshot);
        if !violations.is_empty() {
            return Err(Error::InvalidSchedule {
                context: "schedule".into(),
                violations,
            });
        }
        self.score_valid(schedule)
    }

    /// [`RoundPricing::score`] of a schedule valid by construction (a decoder's proposals),
    /// without validating it again: validation costs a quarter of a proposal's pricing.
    /// Checked in debug builds.
    pub(crate) fn score_valid(&self, schedule: &Schedule) -> Result<Score> {
        debug_assert!(schedule.validate(self.snapshot).is_empty());
        let idx = |id: JobId| {
            self.snapshot
                .job_index(id)
                .expect("a valid schedule names known jobs")
        };
        // Who shares what is read from the one occupancy index the performance model uses; the
        // objective only aggregates it first-order (sums over shared switches and servers).
        let occ = Occupancy::of_on(self.topology.shared_slots(), self.snapshot, schedule);
        let mut out = Vec::new();
        let mut total = 0.0;
        for (i, a) in schedule.assignments.iter().enumerate() {
            let j = idx(a.job);
            let job = &self.snapshot.jobs[j];
            let fp = occ.footprint(i);
            let f = self.shape_of(j, a, fp);
            let t = self.terms_of(j, &f)?;
            let mut pcol = 0.0;
            for &s in &fp.worker_servers {
                for &o in occ.workers_on(s).iter().filter(|&&o| o != i) {
                    pcol += self.colocation_excess(
                        JobPos(j),
                        JobPos(idx(schedule.assignments[o].job)),
                        s,
                    );
                }
            }
            let npcie: usize = fp
                .switches
                .iter()
                .map(|&(s, k)| occ.switch_on(s, k).len() - 1)
                .sum();
            let nnic: usize = if f.mode == Mode::Multi {
                fp.task_servers
                    .iter()
                    .map(|&s| occ.distributed_on(s).len() - 1)
                    .sum()
            } else {
                0
            };
            let changed = job
                .run
                .current
                .as_ref()
                .is_some_and(|c| !same_assignment(c, a));
            let js = JobScore {
                job: job.id,
                isolated: t.base + t.local_pair_slope * fp.local_pairs as f64,
                coloc_loss: t.coloc_coef * pcol,
                pcie_loss: t.pcie_coef * npcie as f64,
                nic_loss: t.nic_coef * nnic as f64,
                restart_penalty: if changed {
                    self.restart_cost(JobPos(j))?
                } else {
                    0.0
                },
            };
            total += js.isolated - js.coloc_loss - js.pcie_loss - js.nic_loss - js.restart_penalty;
            out.push(js);
        }
        // Running jobs the schedule stops pay their restart too.
        let mut assigned = vec![false; self.snapshot.jobs.len()];
        for a in &schedule.assignments {
            assigned[idx(a.job)] = true;
        }
        for (j, job) in self.snapshot.jobs.iter().enumerate() {
            if job.run.current.is_some() && !assigned[j] {
                let r = self.restart_cost(JobPos(j))?;
                if r > 0.0 {
                    total -= r;
                    out.push(JobScore {
                        job: job.id,
                        isolated: 0.0,
                        coloc_loss: 0.0,
                        pcie_loss: 0.0,
                        nic_loss: 0.0,
                        restart_penalty: r,
                    });
                }
            }
        }
        Ok(Score { total, jobs: out })
    }

    /// The round utility of a schedule already scored, with the PerfModel's compounded
    /// in-context speeds instead of the first-order terms (see
    /// [`Objective::perf_model_utility`]).
    pub fn perf_model_utility(&self, schedule: &Schedule, score: &Score) -> Result<f64> {
        let restart: f64 = score.jobs.iter().map(|j| j.restart_penalty).sum();
        let mut progress = 0.0;
        for (id, s) in crate::perf::speeds(self.perf, self.snapshot, schedule)? {
            let j = self.snapshot.job_index(id).expect("speeds of known jobs");
            let job = &self.snapshot.jobs[j];
            progress += self.objective.value(job, &s, self.pace(JobPos(j)));
        }
        Ok(progress - restart)
    }
}

/// Index of `name` in `list`, appending it if new.
fn intern(list: &mut Vec<String>, name: &str) -> usize {
    match list.iter().position(|x| x == name) {
        Some(i) => i,
        None => {
            list.push(name.to_string());
            list.len() - 1
        }
    }
}

/// The index of GPU type `t` in `list`, appended if new.
fn intern_type(list: &mut Vec<GpuType>, t: GpuType) -> usize {
    match list.iter().position(|x| *x == t) {
        Some(i) => i,
        None => {
            list.push(t);
            list.len() - 1
        }
    }
}

fn unpriceable(job: &Job, f: &OptionShape) -> Error {
    Error::UnsupportedConfiguration {
        model: job.model.clone(),
        reason: format!(
            "job {}: {} workers, {} PS, {:?} on {} at tier {} cannot be priced",
            job.id, f.workers, f.ps, f.mode, f.gpu_type, f.tier
        ),
    }
}
