//! The solve request: a round priced once, its starts, held jobs and settings named, solved by
//! a [`Backend`] (HiGHS) into a schedule and an honest report.

use std::time::Instant;

use super::backend::{Backend, BackendRun, Highs, Program};
use super::codec::Decoder;
use super::formulation::{Formulation, ModelSize};
use super::report::{
    FixReport, SolveProgram, SolveReport, SolveStatus, Solved, Trail, relative_gap,
};
use super::settings::{CheckedSettings, PROVEN_GAP};
use crate::error::{Error, Result};
use crate::model::{ClusterSnapshot, JobId, Schedule};
use crate::objective::{Objective, RoundPricing, same_assignment};
use crate::perf::PerfModel;

/// One round to solve, built step by step: the round priced once ([`SolveRequest::new`]), then
/// its settings, starts and held jobs named, then [`SolveRequest::solve`] (or the relaxation,
/// the program's size, its MPS). Every solve starts from the best valid start it is offered —
/// the warm start, the candidates, the running jobs kept where they are, everyone waiting —
/// and never returns less ([`SolveReport::returned_start`]).
///
/// ```
/// use coda::ilp::SolveRequest;
/// use coda::{CalibratedPerf, ClusterSnapshot, Objective};
/// use coda::ilp::SolveSettings;
/// let snapshot = ClusterSnapshot::from_json_file("examples/instances/small.json")?;
/// let settings = SolveSettings { time_limit_s: 10.0, ..SolveSettings::default() }.checked()?;
/// let solved = SolveRequest::new(&snapshot, CalibratedPerf::shipped(), Objective::default())?
///     .settings(settings)
///     .solve()?;
/// assert!(solved.schedule.validate(&snapshot).is_empty());
/// assert!(solved.report.objective >= solved.report.start_objective);
/// # Ok::<(), coda::Error>(())
/// ```
pub struct SolveRequest<'a> {
    snapshot: &'a ClusterSnapshot,
    pricing: RoundPricing<'a>,
    settings: CheckedSettings,
    warm_start: Option<&'a Schedule>,
    candidates: Vec<Schedule>,
    fixing: Fixing,
    program: SolveProgram,
}

/// Which jobs a request holds to its warm start, and how.
enum Fixing {
    /// None: the whole program.
    None,
    /// These jobs held throughout: a smaller program, and its bound only.
    Hold(Vec<JobId>),
    /// These jobs held for `share` of the time limit, then every job freed.
    ThenFree(Vec<JobId>, f64),
}

impl<'a> SolveRequest<'a> {
    /// The round of `snapshot`, priced once by `perf` and `objective` (the program's
    /// coefficients, the starts and the final score all read the same prices), under the
    /// default settings. The snapshot gets the checks an instance file gets (finite work,
    /// unique ids, jobs that fit, consistent current placements) before any of it reaches a
    /// solver.
    pub fn new(
        snapshot: &'a ClusterSnapshot,
        perf: &'a dyn PerfModel,
        objective: Objective,
    ) -> Result<Self> {
        snapshot.check("snapshot")?;
        Ok(SolveRequest {
            snapshot,
            pricing: RoundPricing::new(perf, snapshot, objective),
            settings: CheckedSettings::default(),
            warm_start: None,
            candidates: Vec::new(),
            fixing: Fixing::None,
            program: SolveProgram::Auto,
        })
    }

    /// Builds `program` (default: [`SolveProgram::Auto`], by size). The configuration program
    /// holds a job only where the warm start keeps it where it runs, and does not fix-and-solve
    /// yet: anything else with it is an error (`Auto` then builds the compact one). The relaxation, the build and the MPS export are the compact
    /// program's whatever this says.
    pub fn program(mut self, program: SolveProgram) -> Self {
        self.program = program;
        self
    }

    /// Solves under `settings` (checked once, by [`super::SolveSettings::checked`]).
    pub fn settings(mut self, settings: CheckedSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Starts from `start` (for example a learned policy's schedule), which must be a valid
    /// schedule the program can express: an error at [`SolveRequest::solve`] otherwise.
    pub fn warm_start(mut self, start: &'a Schedule) -> Self {
        self.warm_start = Some(start);
        self
    }

    /// Also considers `schedules` (heuristics' schedules, say) as starts: one that is invalid,
    /// or that the program cannot express, is passed over (as a MIP start, or altogether),
    /// never an error. Called again, adds more.
    pub fn candidates(mut self, schedules: impl IntoIterator<Item = Schedule>) -> Self {
        self.candidates.extend(schedules);
        self
    }

    /// Holds `jobs` to what the warm start does with them (their option or waiting, and every
    /// worker, PS, GPU switch and socket): a smaller program, whose bound is the restricted
    /// program's, **not** a bound of the round ([`SolveRequest::fix_then_free`] reports an
    /// honest one). Needs a warm start.
    pub fn hold(mut self, jobs: &[JobId]) -> Self {
        self.fixing = Fixing::Hold(jobs.to_vec());
        self
    }

    /// Fix-and-solve: `jobs` are held to the warm start while the smaller program is solved (at
    /// most `share` of the time limit, strictly between 0 and 1), then every job is freed and
    /// the whole program solved from the best schedule so far with the time left. Its bound and
    /// gap are the whole program's, so they are honest; [`Solved::phases`] says what the first
    /// phase did. With no job to fix, the first phase is skipped. Needs a warm start.
    pub fn fix_then_free(mut self, jobs: &[JobId], share: f64) -> Result<Self> {
        if !(share > 0.0 && share < 1.0) {
            return Err(Error::setting(
                "fix and solve",
                "share",
                share,
                "strictly between 0 and 1",
            ));
        }
        self.fixing = Fixing::ThenFree(jobs.to_vec(), share);
        Ok(self)
    }

    /// Solves the round as requested: the best schedule found (never below the best start) and
    /// an honest report.
    pub fn solve(&self) -> Result<Solved> {
        let needs_start = match &self.fixing {
            Fixing::None => None,
            Fixing::Hold(jobs) => (!jobs.is_empty()).then_some("fixed jobs"),
            Fixing::ThenFree(..) => Some("fix and solve"),
        };
        if let (Some(what), None) = (needs_start, self.warm_start) {
            return Err(Error::setting(
                "solve",
                what,
                "no warm start",
                "fixing jobs needs the warm start that says what to fix them to",
            ));
        }
        if self.chosen_program() == SolveProgram::Config {
            return match &self.fixing {
                Fixing::None => self.config(&[]),
                Fixing::Hold(jobs) if self.holds_where_running(jobs) => self.config(jobs),
                Fixing::Hold(_) => Err(Error::setting(
                    "solve",
                    "program",
                    "config",
                    "the configuration program holds a job only where the warm start keeps it \
                     where it runs (use compact)",
                )),
                Fixing::ThenFree(..) => Err(Error::setting(
                    "solve",
                    "program",
                    "config",
                    "the configuration program does not fix-and-solve yet (use compact)",
                )),
            };
        }
        match &self.fixing {
            Fixing::None => self.once(&self.settings, self.warm_start, &self.candidates, &[]),
            Fixing::Hold(jobs) => {
                self.once(&self.settings, self.warm_start, &self.candidates, jobs)
            }
            Fixing::ThenFree(jobs, share) => self.fix_then_free_solve(jobs, *share),
        }
    }

    /// Whether the warm start keeps every one of the held `jobs` exactly where it runs: the
    /// holds the configuration program expresses (a kept placement; `hold` means "as the warm
    /// start has it", which the `ilp` policy's window always is).
    fn holds_where_running(&self, jobs: &[JobId]) -> bool {
        let Some(start) = self.warm_start else {
            return jobs.is_empty();
        };
        jobs.iter().all(|id| {
            let current = self
                .snapshot
                .job_index(*id)
                .and_then(|j| self.snapshot.jobs[j].run.current.as_ref());
            let planned = start.assignments.iter().find(|a| a.job == *id);
            matches!((current, planned), (Some(c), Some(a)) if same_assignment(c, a))
        })
    }

    /// The program [`SolveRequest::solve`] builds: the one asked for, [`SolveProgram::Auto`]
    /// resolved by the round's size (and to the compact program for a fix-and-solve, or a hold
    /// the configuration program cannot express).
    pub fn chosen_program(&self) -> SolveProgram {
        match self.program {
            SolveProgram::Auto => {
                let snap = self.pricing.snapshot();
                let size = snap.cluster.servers.len() * snap.jobs.len();
                let expressible = match &self.fixing {
                    Fixing::None => true,
                    Fixing::Hold(jobs) => self.holds_where_running(jobs),
                    Fixing::ThenFree(..) => false,
                };
                if size >= SolveProgram::AUTO_CONFIG_SIZE && expressible {
                    SolveProgram::Config
                } else {
                    SolveProgram::Compact
                }
            }
            p => p,
        }
    }

    /// The two phases of [`SolveRequest::fix_then_free`].
    fn fix_then_free_solve(&self, fixed: &[JobId], share: f64) -> Result<Solved> {
        let start = self.warm_start.expect("checked by solve");
        let t0 = Instant::now();
        let mut trail = Trail::new(t0);
        let (restricted, report) = if fixed.is_empty() {
            (None, None)
        } else {
            let first = self
                .settings
                .with_time_limit(self.settings.time_limit_s * share);
            let t_first = Instant::now();
            let r = self.once(&first, Some(start), &self.candidates, fixed)?;
            trail.record_from(t_first, &r.report.incumbents);
            let rep = FixReport {
                fixed: fixed.len(),
                restricted_objective: r.report.objective,
                restricted_status: r.report.status,
                restricted_s: t0.elapsed().as_secs_f64(),
            };
            (Some(r.schedule), Some(rep))
        };
        let second = self
            .settings
            .with_time_limit(self.settings.time_limit_s - t0.elapsed().as_secs_f64());
        let mut all = self.candidates.clone();
        all.push(start.clone());
        let warm = restricted.as_ref().unwrap_or(start);
        let t_second = Instant::now();
        let mut solved = self.once(&second, Some(warm), &all, &[])?;
        // The whole run's time and incumbents, both phases, so that they compare with a single
        // solve's.
        solved.report.wall_time_s = t0.elapsed().as_secs_f64();
        trail.record_from(t_second, &solved.report.incumbents);
        solved.report.incumbents = trail.into_points();
        solved.phases = Some(report.unwrap_or(FixReport {
            fixed: 0,
            restricted_objective: f64::NAN,
            restricted_status: SolveStatus::NoSolution,
            restricted_s: 0.0,
        }));
        Ok(solved)
    }

    /// The optimum of the program's linear relaxation (every column continuous, the same rows,
    /// built as the settings say), in objective units: the root bound before the solver's own
    /// presolve and cuts. `None` when the relaxation does not solve within the time limit.
    /// Starts and held jobs play no part.
    pub fn relaxation_bound(&self) -> Result<Option<f64>> {
        let t0 = Instant::now();
        let form =
            Formulation::from_pricing_with(&self.pricing, self.settings.formulation(), true)?;
        let constant = form.objective_constant();
        if form.size().variables == 0 {
            return Ok(Some(constant));
        }
        let (vars, objective, rows, _) = form.into_parts();
        let program = Program {
            vars,
            objective,
            rows,
        };
        let run = Highs.run(program, &[], None, &self.settings, t0)?;
        Ok((run.status == SolveStatus::Optimal).then_some(run.objective + constant))
    }

    /// Whether the program takes `start` as a MIP start: the constraint groups (numbered as in
    /// `formulations/README.md`) whose rows it violates, with how many rows each, once
    /// relabelled onto the program's order of interchangeable servers and switches (as every
    /// start is before it reaches the solver). Empty: a feasible point. An error when `start`
    /// is not a valid schedule the program can express.
    pub fn start_violations(&self, start: &Schedule) -> Result<Vec<(String, usize)>> {
        let form = Formulation::from_pricing(&self.pricing, self.settings.formulation())?;
        let start = if self.settings.symmetry_breaking {
            super::formulation::relabel(self.snapshot, self.pricing.topology(), start)
        } else {
            start.clone()
        };
        let x = form.encode(&self.pricing, &start)?;
        Ok(form
            .violated_groups(&x, 1e-7)
            .into_iter()
            .map(|(g, n)| (format!("{}. {g:?}", g as u8), n))
            .collect())
    }

    /// Builds the program without solving it: its size (what the build benchmark times).
    pub fn build(&self) -> Result<ModelSize> {
        Ok(Formulation::from_pricing(&self.pricing, self.settings.formulation())?.size())
    }

    /// Writes the program as MPS, and returns its size.
    pub fn export_mps(&self, out: &mut dyn std::io::Write) -> Result<ModelSize> {
        let form = Formulation::from_pricing(&self.pricing, self.settings.formulation())?;
        form.write_mps(out).map_err(|e| Error::io("<mps>", e))?;
        Ok(form.size())
    }

    /// The configuration program ([`super::config`]), from every valid start.
    fn config(&self, held: &[JobId]) -> Result<Solved> {
        // The work limit of this round: held jobs are not priced.
        let decided = self.snapshot.jobs.len().saturating_sub(held.len());
        super::config::solve(
            &self.pricing,
            &self.settings.for_round(decided),
            self.warm_start,
            &self.candidates,
            held,
        )
    }

    /// One solve of the program with `fixed` held to `warm_start`.
    fn once(
        &self,
        settings: &CheckedSettings,
        warm_start: Option<&Schedule>,
        candidates: &[Schedule],
        fixed: &[JobId],
    ) -> Result<Solved> {
        let t0 = Instant::now();
        let form = Formulation::from_pricing(&self.pricing, settings.formulation())?;
        let size = form.size();
        let (vars, objective, rows, decoder) = form.into_parts();
        let (start, fixings) = self.start(settings, &decoder, warm_start, candidates, fixed)?;
        let mut trail = Trail::new(t0);
        trail.record(start.objective);
        let run = if size.variables == 0 {
            // No job has an option (or there is no job): waiting is the only, optimal, schedule.
            // HiGHS reports an empty model with a solution status its bindings cannot read.
            BackendRun {
                status: SolveStatus::Optimal,
                values: Vec::new(),
                row_duals: Vec::new(),
                column_duals: Vec::new(),
                objective: 0.0,
                bound: Some(0.0),
                nodes: Some(0),
                build_time_s: t0.elapsed().as_secs_f64(),
                wall_time_s: 0.0,
                improvements: Vec::new(),
            }
        } else {
            let program = Program {
                vars,
                objective,
                rows,
            };
            Highs.run(program, &fixings, start.encoded.as_deref(), settings, t0)?
        };
        trail.record_run(&run.improvements, decoder.objective_constant());
        self.outcome(run, start, &decoder, size, trail)
    }

    /// The best valid start and the columns `fixed` holds. The caller's warm start must be
    /// usable; the others are tried. Keeping every running job where it is is always valid (the
    /// snapshot's check), so there is always a start to fall back on. Every start is relabelled
    /// onto the ordering of interchangeable servers and switches the program imposes (group 13):
    /// otherwise HiGHS finds the start infeasible and drops it.
    fn start(
        &self,
        settings: &CheckedSettings,
        decoder: &Decoder,
        warm_start: Option<&Schedule>,
        candidates: &[Schedule],
        fixed: &[JobId],
    ) -> Result<(Start, Vec<(usize, f64)>)> {
        let (snapshot, pricing) = (self.snapshot, &self.pricing);
        let canonical = |s: &Schedule| {
            if settings.symmetry_breaking {
                super::formulation::relabel(snapshot, pricing.topology(), s)
            } else {
                s.clone()
            }
        };
        let user = match warm_start {
            Some(s) => {
                // The caller's start must run on this round (a schedule of another round is
                // an error naming every violation, before it is relabelled or encoded).
                let violations = s.validate(snapshot);
                if !violations.is_empty() {
                    return Err(Error::InvalidSchedule {
                        context: "warm start".into(),
                        violations,
                    });
                }
                let s = canonical(s);
                let x = decoder.encode(pricing, &s)?;
                Some((s, x))
            }
            None => None,
        };
        // Fixed columns are held by their bounds (presolve removes them outright), not by rows.
        let mut fixings: Vec<(usize, f64)> = Vec::new();
        if let Some((_, x)) = &user {
            for id in fixed {
                let Some(j) = snapshot.job_index(*id) else {
                    continue;
                };
                for v in decoder.integer_columns_of(j) {
                    let i = decoder.index(v);
                    fixings.push((i, x[i].round()));
                }
            }
        }
        let mut best: Option<Start> = None;
        // Everyone waiting is valid too, should a running job's current allocation not be priced.
        let others = [snapshot.current_schedule(), Schedule::default()]
            .into_iter()
            .chain(candidates.iter().map(canonical));
        let tried = user
            .map(|(s, x)| (s, Some(x)))
            .into_iter()
            .chain(others.map(|s| (s, None)));
        for (s, encoded) in tried {
            if !s.validate(snapshot).is_empty() {
                continue;
            }
            let Ok(score) = pricing.score(&s) else {
                continue;
            };
            if best.as_ref().is_some_and(|b| b.objective >= score.total) {
                continue;
            }
            let encoded = encoded.or_else(|| decoder.encode(pricing, &s).ok());
            best = Some(Start {
                schedule: s,
                objective: score.total,
                encoded,
            });
        }
        let best = best.ok_or_else(|| Error::Solver {
            solver: "start".into(),
            reason: "not even the schedule in which every job waits can be priced".into(),
        })?;
        Ok((best, fixings))
    }

    /// The schedule and report of a run from `start`: the solver's schedule only if it beats
    /// the start, the bound and gap shifted by the program's constant, the status honest about
    /// the gap reached.
    fn outcome(
        &self,
        run: BackendRun,
        start: Start,
        decoder: &Decoder,
        size: ModelSize,
        trail: Trail,
    ) -> Result<Solved> {
        let pricing = &self.pricing;
        let warm_started = start.encoded.is_some();
        let start_objective = start.objective;
        // (schedule, its objective, its score, the bound, the status, whether it is the start)
        let (schedule, objective, score, bound, status, returned_start) = if matches!(
            run.status,
            SolveStatus::Infeasible | SolveStatus::NoSolution
        ) {
            // Nothing from the solver: the start is the answer, no bound, and the report says so.
            let score = pricing.score(&start.schedule)?;
            let objective = start_objective;
            (start.schedule, objective, score, f64::NAN, run.status, true)
        } else {
            let value = |v: good_lp::Variable| run.values[decoder.index(v)];
            let solved = decoder.decode(self.snapshot, &value);
            let solved_value = run.objective + decoder.objective_constant();
            let solved_score = pricing.score(&solved)?;
            // The solver's schedule only if it beats the start (by more than the solver's own
            // tolerance): a time-limited incumbent can be worse than keeping the cluster as it
            // is, and one no better is the start itself or a needless change.
            let returned_start = solved_score.total <= start_objective + PROVEN_GAP;
            let (schedule, objective, score) = if returned_start {
                let score = pricing.score(&start.schedule)?;
                (start.schedule, start_objective, score)
            } else {
                (solved, solved_value, solved_score)
            };
            let bound = run
                .bound
                .map(|b| b + decoder.objective_constant())
                .unwrap_or(objective);
            // HiGHS says "optimal" when the gap is within the requested tolerances, however
            // loose: only a gap within the default ones (1e-6, absolute, or relative to HiGHS'
            // own objective, which leaves out the program's constant) is called optimal here; a
            // looser stop is a gap-limit stop (`--gap 1` accepts any feasible schedule).
            let above = (bound - objective).max(0.0);
            let scale = 1.0f64.max(run.objective.abs()).max(objective.abs());
            let loose = above > PROVEN_GAP * 1.0001 * scale;
            let status = if run.status == SolveStatus::Optimal && loose {
                SolveStatus::GapLimit
            } else {
                run.status
            };
            (schedule, objective, score, bound, status, returned_start)
        };
        let report = SolveReport {
            status,
            objective,
            objective_check: score.total,
            perf_model_utility: pricing.perf_model_utility(&schedule, &score)?,
            best_bound: bound,
            // HiGHS' gap is relative to the primal value; recomputed on the shifted objective.
            gap: relative_gap(bound, objective),
            build_time_s: run.build_time_s,
            wall_time_s: run.wall_time_s,
            nodes: run.nodes,
            size,
            warm_started,
            start_objective,
            returned_start,
            incumbents: trail.into_points(),
            columns: None,
        };
        Ok(Solved {
            schedule,
            report,
            phases: None,
        })
    }
}

/// The start a solve begins from: the best valid schedule offered, its objective, and its
/// column values when the program can express it (then it is also the MIP start).
struct Start {
    schedule: Schedule,
    objective: f64,
    encoded: Option<Vec<f64>>,
}
