//! Decoding: from the networks' scores to a schedule — level 1's options taken greedily or
//! sampled, level 2's placement steps over candidate servers, masks and the shared packer keeping
//! every schedule valid whatever the scores.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::candidates::Candidates;
use super::choices::{Choices, allocation};
use super::features::{self, Occupants, PLACE_FEATURES, PlaceTask};
use super::layers::Scratch;
use super::{Allocation, LearnedScheduler, Placer};
use crate::model::JobPos;
use crate::model::ServerIdx;
use crate::model::{ClusterSnapshot, Schedule};
use crate::objective::{Mode, RoundPricing};
use crate::perf::PerfModel;
use crate::policies::{GpuChoice, Packer};

impl LearnedScheduler<'_> {
    pub(super) fn sampled(
        &self,
        snapshot: &ClusterSnapshot,
        mut rng: Option<ChaCha8Rng>,
    ) -> (Schedule, Sampled) {
        let pricing = RoundPricing::new(self.perf, snapshot, self.objective);
        let rows = features::level1(&pricing);
        let mut logits = self.net.level1_logits(&rows.jobs, &rows.candidates);
        if let Some(rng) = rng.as_mut() {
            for v in logits.iter_mut().flatten() {
                *v += self.temperature * gumbel(rng);
            }
        }
        let chosen = logits.iter().map(|l| argmax(l)).collect();
        let mut steps = Vec::new();
        let schedule = self.place_with(
            &pricing,
            &allocation(&logits),
            self.placer,
            rng.as_mut(),
            Some(&mut steps),
        );
        (
            schedule,
            Sampled {
                jobs: rows.jobs,
                candidates: rows.candidates,
                chosen,
                steps,
            },
        )
    }

    /// [`LearnedScheduler::place`] by `placer`, level 2's scores perturbed by Gumbel noise from
    /// `noise` when given (a sample from its distribution over servers instead of its best
    /// server). Level 2's steps are appended to `record` when given.
    pub(super) fn place_with(
        &self,
        pricing: &RoundPricing,
        alloc: &Allocation,
        placer: Placer,
        noise: Option<&mut ChaCha8Rng>,
        record: Option<&mut Vec<SampledStep>>,
    ) -> Schedule {
        let base = PlaceState::new(pricing, self.perf, placer);
        self.place_ranked(pricing, &base, Choices::Listed(alloc), noise, record)
    }

    /// [`LearnedScheduler::place_with`] from choices listed or ranked as they are read,
    /// starting from `base` (the round before anything is placed, by its placer: built once
    /// and copied for every proposal of the round).
    pub(super) fn place_ranked<'p>(
        &self,
        pricing: &RoundPricing<'p>,
        base: &PlaceState<'p>,
        choices: Choices<'_>,
        noise: Option<&mut ChaCha8Rng>,
        record: Option<&mut Vec<SampledStep>>,
    ) -> Schedule {
        let order = match &choices {
            Choices::Listed(a) => a.order.clone(),
            Choices::Ranked(r) => r.order.clone(),
        };
        let mut scores = Scores {
            choices,
            net: &self.net,
            noise,
            temperature: self.temperature,
            scratch: Scratch::default(),
            scores: Vec::new(),
        };
        self.place_from(pricing, base.clone(), &order, &mut scores, record)
    }

    /// Steps 2–4 of the decoding (see the module docs) with the choices made by `chooser`:
    /// jobs considered in `order` (snapshot indices; jobs left out wait), each job's first
    /// choice, its fallbacks and level 2's servers asked of `chooser` as the decoding reaches
    /// them. Valid by construction, whatever `chooser` answers: [`LearnedScheduler::place`]
    /// answers from the networks' scores, the Python environment (`coda::replay::env`) from an
    /// outside agent, one decision at a time. Level 2's steps are appended to `record` when
    /// given.
    pub(crate) fn place_by(
        &self,
        pricing: &RoundPricing,
        order: &[usize],
        chooser: &mut dyn Chooser,
        placer: Placer,
        record: Option<&mut Vec<SampledStep>>,
    ) -> Schedule {
        let st = PlaceState::new(pricing, self.perf, placer);
        self.place_from(pricing, st, order, chooser, record)
    }

    /// [`LearnedScheduler::place_by`] from the round's state `st` (nothing placed yet).
    fn place_from(
        &self,
        pricing: &RoundPricing,
        mut st: PlaceState,
        order: &[usize],
        chooser: &mut dyn Chooser,
        record: Option<&mut Vec<SampledStep>>,
    ) -> Schedule {
        let snap = pricing.snapshot();
        st.steps = record.is_some().then(Vec::new);
        let mut first: Vec<Option<usize>> = vec![None; snap.jobs.len()];
        for &j in order {
            first[j] = chooser
                .option(j, &[], &|_| true)
                .filter(|&k| k < pricing.options(JobPos(j)).len());
        }
        // Keep pass: a job whose first choice is what it runs now stays on its GPUs.
        for &j in order {
            let job = &snap.jobs[j];
            let (Some(k), Some(cur)) = (first[j], job.run.current.as_ref()) else {
                continue;
            };
            if pricing.current_option(JobPos(j)) != Some(k) {
                continue;
            }
            st.keep(pricing, j, k, cur);
        }
        // Selection: in level 1's order, each job's first choice while its GPU type has that
        // many GPUs left (a count, not a placement) ...
        let mut budget = st.free_of_type.clone();
        let mut selected: Vec<usize> = Vec::new();
        for &j in order {
            if st.placed[j] {
                continue;
            }
            let job = &snap.jobs[j];
            if let Some(k) = first[j] {
                let o = &pricing.options(JobPos(j))[k];
                if let Some(t) = st.type_index(o.gpu_type) {
                    let need = u64::from(o.workers * job.demand.gpus_per_worker);
                    if need <= budget[t] {
                        budget[t] -= need;
                        selected.push(j);
                    }
                }
            }
        }
        // ... placed largest first (first-fit decreasing: small jobs placed first fragment the
        // servers a large one needs), each falling back to its later choices ...
        let need_of = |j: usize| {
            first[j].map_or(0, |k| {
                pricing.options(JobPos(j))[k].workers * snap.jobs[j].demand.gpus_per_worker
            })
        };
        selected.sort_by_key(|&j| std::cmp::Reverse(need_of(j)));
        for j in selected {
            self.place_job(pricing, &mut st, j, chooser);
        }
        // ... then whatever is left goes, in level 1's order, to jobs not yet placed.
        for &j in order {
            if !st.placed[j] && first[j].is_some() {
                self.place_job(pricing, &mut st, j, chooser);
            }
        }
        if let (Some(r), Some(steps)) = (record, st.steps.take()) {
            r.extend(steps);
        }
        Schedule {
            assignments: st.packer.into_assignments(),
        }
    }

    /// Places job `j` with the first of its choices (asked of `chooser` one at a time) that
    /// fits; whether one did. Level 2's steps of the plan committed are recorded when the state
    /// records (those of plans that did not fit are dropped).
    pub(super) fn place_job(
        &self,
        pricing: &RoundPricing,
        st: &mut PlaceState,
        j: usize,
        chooser: &mut dyn Chooser,
    ) -> bool {
        let job = &pricing.snapshot().jobs[j];
        let options = pricing.options(JobPos(j));
        let mut tried: Vec<usize> = Vec::new();
        // Whether option `k`'s GPU type has that many GPUs free now (one that does not is
        // passed over without a try).
        let fits = |st: &PlaceState, k: usize| {
            let o = &options[k];
            st.type_index(o.gpu_type).is_some_and(|t| {
                u64::from(o.workers * job.demand.gpus_per_worker) <= st.free_of_type[t]
            })
        };
        loop {
            let next = chooser.option(j, &tried, &|k| fits(st, k));
            // A chooser naming an option twice, or none, ends the job's choices: it waits.
            let Some(k) = next.filter(|&k| k < options.len() && !tried.contains(&k)) else {
                break;
            };
            tried.push(k);
            if !fits(st, k) {
                continue;
            }
            let o = &options[k];
            let t = st
                .type_index(o.gpu_type)
                .expect("fits: the type is in the cluster");
            let need = u64::from(o.workers * job.demand.gpus_per_worker);
            let task = PlaceTask {
                job: j,
                workers: o.workers,
                mode: o.mode,
                coloc_coef: o.terms.coloc_coef,
            };
            let recorded = st.steps.as_ref().map_or(0, Vec::len);
            let (plan, gpus) = match st.placer {
                Placer::Learned => {
                    let type_server = st.types[t].1;
                    let plan = self.learned_plan(pricing, st, task, type_server, chooser);
                    (plan, GpuChoice::OwnSwitches)
                }
                Placer::Packer => (
                    st.packer.consolidated_plan(job, &o.gpu_type, o.workers),
                    GpuChoice::Compact,
                ),
            };
            if let Some(plan) = plan
                && st.packer.place_plan(job, &plan, o.ps, gpus)
            {
                st.occ.add(j, &plan, o.terms.coloc_coef);
                st.index.update(&st.packer, plan.iter().map(|p| p.0));
                st.free_of_type[t] -= need;
                st.placed[j] = true;
                return true;
            }
            if let Some(r) = st.steps.as_mut() {
                r.truncate(recorded);
            }
        }
        false
    }

    /// Level 2 for one job: servers one at a time (of the type of server `type_server`), each
    /// taking as many of the remaining workers as fit; `None` if the workers do not fit. Each
    /// step is recorded when the state records.
    pub(super) fn learned_plan(
        &self,
        pricing: &RoundPricing,
        st: &mut PlaceState,
        task: PlaceTask,
        type_server: usize,
        chooser: &mut dyn Chooser,
    ) -> Option<Vec<(usize, u32)>> {
        let (packer, occ, index) = (&st.packer, &st.occ, &st.index);
        let job = &pricing.snapshot().jobs[task.job];
        let mut plan: Vec<(usize, u32)> = Vec::new();
        let mut rest = task.workers;
        while rest > 0 {
            let cands = keep_mode(
                pricing,
                packer,
                task,
                plan.len(),
                index.offer(packer, job, type_server, rest, &plan),
            );
            if cands.is_empty() {
                return None;
            }
            // Servers untouched this round (no one placed, every GPU, core and GiB free) that
            // the job does not run on now all have the same row: the first stands for them.
            let mut rows: Vec<f32> = Vec::with_capacity(cands.len() * PLACE_FEATURES.len());
            let mut offered: Vec<usize> = Vec::with_capacity(cands.len());
            let mut pristine_seen = false;
            for &s in &cands {
                if self.pristine(pricing, packer, occ, job, s) {
                    if pristine_seen {
                        continue;
                    }
                    pristine_seen = true;
                }
                let view = features::PlaceView {
                    pricing,
                    packer,
                    occupants: occ,
                };
                let offer = features::Offer {
                    server: s,
                    rest,
                    step: plan.len(),
                    candidates: cands.len(),
                };
                features::place_row(view, task, offer, &mut rows);
                offered.push(s);
            }
            // An answer out of range is the first candidate: valid whatever the chooser says.
            let best = Some(chooser.server(task.job, &rows))
                .filter(|&b| b < offered.len())
                .unwrap_or(0);
            if let Some(r) = st.steps.as_mut() {
                r.push(SampledStep {
                    job: task.job,
                    rows: rows
                        .chunks(PLACE_FEATURES.len())
                        .map(<[f32]>::to_vec)
                        .collect(),
                    chosen: best,
                });
            }
            let s = offered[best];
            let mut take = packer.capacity(job, s).min(rest);
            if task.mode == Mode::Multi && plan.is_empty() && take == rest && rest > 1 {
                // A multi-server option: its first server does not take every worker.
                take = rest - 1;
            }
            plan.push((s, take));
            rest -= take;
        }
        Some(plan)
    }

    /// Whether server `s` is as the round began with nothing on it, and `job` does not run
    /// there now.
    pub(super) fn pristine(
        &self,
        pricing: &RoundPricing,
        packer: &Packer,
        occ: &Occupants,
        job: &crate::model::Job,
        s: usize,
    ) -> bool {
        let server = &pricing.snapshot().cluster.servers[s];
        let (cpu, mem) = packer.free_cpu_mem(s);
        occ.on[s].is_empty()
            && cpu == server.cpu_cores
            && mem == server.memory_gib
            && packer.free_gpus_on(s).iter().all(|&f| f)
            && !job
                .run
                .current
                .as_ref()
                .is_some_and(|a| a.workers.iter().any(|w| w.server == ServerIdx(s)))
    }
}

/// Who makes the decoding's choices ([`LearnedScheduler::place_by`]): level 1's allocation and
/// level 2's scores, or an outside agent.
pub(crate) trait Chooser {
    /// Job `j`'s next option (an index in [`RoundPricing::options`]) after `tried`, the options
    /// already tried for it this round in order (empty: its first choice); `None`: it waits.
    /// `fits(k)`: whether option `k`'s GPU type has that many GPUs free now (an option that
    /// does not is passed over without a try; for a first choice, always true).
    fn option(&mut self, j: usize, tried: &[usize], fits: &dyn Fn(usize) -> bool) -> Option<usize>;
    /// Level 2's server for job `job`: the index of one of the candidates whose rows
    /// ([`PLACE_FEATURES`] values each) `rows` holds end to end.
    fn server(&mut self, job: usize, rows: &[f32]) -> usize;
}

/// The networks' choices: level 1's allocation (choices in order) and level 2's best score,
/// Gumbel-perturbed when `noise` is given.
struct Scores<'a, 'r> {
    choices: Choices<'a>,
    net: &'a super::PolicyNet,
    noise: Option<&'r mut ChaCha8Rng>,
    temperature: f32,
    /// Buffers of level 2's forward passes, reused step after step.
    scratch: Scratch,
    scores: Vec<f32>,
}

impl Chooser for Scores<'_, '_> {
    fn option(
        &mut self,
        j: usize,
        tried: &[usize],
        _fits: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        self.choices.get(j, tried.len())
    }

    fn server(&mut self, _job: usize, rows: &[f32]) -> usize {
        self.net
            .level2_scores_into(rows, &mut self.scratch, &mut self.scores);
        if let Some(rng) = self.noise.as_deref_mut() {
            for v in &mut self.scores {
                *v += self.temperature * gumbel(rng);
            }
        }
        argmax(&self.scores)
    }
}

/// The index of the highest value, the first on ties (the policy's greedy choice).
pub(crate) fn argmax(v: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// What [`LearnedScheduler::sample`] sampled in one round.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// Per job (snapshot order), its level-1 features.
    pub jobs: Vec<Vec<f32>>,
    /// Per job, its level-1 rows (options, then wait).
    pub candidates: Vec<Vec<Vec<f32>>>,
    /// Per job, the row sampled first (the wait row: the job was not to run).
    pub chosen: Vec<usize>,
    /// Level 2's steps, in the order taken.
    pub steps: Vec<SampledStep>,
}

/// One level-2 step of a sampled decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledStep {
    /// The job placed (snapshot index).
    pub job: usize,
    /// One row per candidate server offered.
    pub rows: Vec<Vec<f32>>,
    /// The server sampled among them.
    pub chosen: usize,
}

/// A draw of the standard Gumbel distribution: added to logits, their argmax is a sample of
/// their softmax.
pub(super) fn gumbel(rng: &mut ChaCha8Rng) -> f32 {
    let u: f32 = rng.random_range(f32::EPSILON..1.0);
    -(-u.ln()).ln()
}

/// The schedule being built by level 2: free resources, who sits where, the candidate index,
/// free GPUs per type and which jobs are placed.
#[derive(Clone)]
pub(super) struct PlaceState<'p> {
    packer: Packer<'p>,
    occ: Occupants,
    index: Candidates,
    /// (GPU type, its first server), in order of first appearance.
    types: Vec<(crate::model::GpuType, usize)>,
    free_of_type: Vec<u64>,
    placed: Vec<bool>,
    /// Who places: level 2 or the packer.
    placer: Placer,
    /// Level 2's steps, when the decoding records them.
    steps: Option<Vec<SampledStep>>,
}

impl<'p> PlaceState<'p> {
    pub(super) fn new(pricing: &RoundPricing<'p>, perf: &'p dyn PerfModel, placer: Placer) -> Self {
        let snap = pricing.snapshot();
        let packer = Packer::priced(pricing, perf);
        let mut types: Vec<(crate::model::GpuType, usize)> = Vec::new();
        let mut free_of_type: Vec<u64> = Vec::new();
        for (i, s) in snap.cluster.servers.iter().enumerate() {
            match types.iter().position(|(t, _)| *t == s.gpu_type) {
                Some(t) => free_of_type[t] += u64::from(s.num_gpus()),
                None => {
                    types.push((s.gpu_type, i));
                    free_of_type.push(u64::from(s.num_gpus()));
                }
            }
        }
        PlaceState {
            index: Candidates::new(snap, &packer),
            occ: Occupants::new(snap.cluster.servers.len(), snap.jobs.len()),
            packer,
            types,
            free_of_type,
            placed: vec![false; snap.jobs.len()],
            placer,
            steps: None,
        }
    }

    fn type_index(&self, t: crate::model::GpuType) -> Option<usize> {
        self.types.iter().position(|(x, _)| *x == t)
    }

    /// Keeps assignment `a` (of a job of the round) as it is, if its resources are still free;
    /// whether it was kept.
    pub(super) fn keep_assignment(
        &mut self,
        pricing: &RoundPricing,
        a: &crate::model::Assignment,
    ) -> bool {
        let Some(j) = pricing.job_index(a.job) else {
            return false;
        };
        let coef = pricing
            .option_index(j, &pricing.option_of(j, a))
            .map_or(0.0, |k| pricing.options(j)[k].terms.coloc_coef);
        if !self.packer.keep(&pricing.snapshot().jobs[j.0], a) {
            return false;
        }
        self.taken(pricing, j.0, coef, a);
        true
    }

    /// This state (nothing placed yet) with every assignment of `schedule` but job `except`'s
    /// kept where it is; `None` if one does not fit.
    pub(super) fn keeping(
        &self,
        pricing: &RoundPricing,
        schedule: &Schedule,
        except: Option<crate::model::JobId>,
    ) -> Option<Self> {
        let mut st = self.clone();
        let others = schedule
            .assignments
            .iter()
            .filter(|a| Some(a.job) != except);
        others
            .into_iter()
            .all(|a| st.keep_assignment(pricing, a))
            .then_some(st)
    }

    /// Idle GPUs of type `t` in this state.
    pub(super) fn idle(&self, t: crate::model::GpuType) -> u64 {
        self.type_index(t).map_or(0, |i| self.free_of_type[i])
    }

    /// Whether any GPU is idle in this state.
    pub(super) fn any_idle(&self) -> bool {
        self.free_of_type.iter().any(|&n| n > 0)
    }

    /// The schedule placed so far.
    pub(super) fn into_schedule(self) -> Schedule {
        Schedule {
            assignments: self.packer.into_assignments(),
        }
    }

    /// What committing `cur` for job `j` (co-location coefficient `coef`) changes beside the
    /// packer: occupants, candidate index, free GPUs of its type, placed flag.
    fn taken(
        &mut self,
        pricing: &RoundPricing,
        j: usize,
        coef: f64,
        cur: &crate::model::Assignment,
    ) {
        let snap = pricing.snapshot();
        let plan = plan_of(cur);
        self.occ.add(j, &plan, coef);
        self.index.update(&self.packer, plan.iter().map(|p| p.0));
        if let Some(t) = self.type_index(snap.cluster.servers[cur.workers[0].server].gpu_type) {
            self.free_of_type[t] -= cur.workers.iter().map(|w| w.gpus.len() as u64).sum::<u64>();
        }
        self.placed[j] = true;
    }

    /// Keeps job `j` (option `k`) exactly where it runs, if its resources are still free.
    fn keep(&mut self, pricing: &RoundPricing, j: usize, k: usize, cur: &crate::model::Assignment) {
        if self.packer.keep(&pricing.snapshot().jobs[j], cur) {
            let coef = pricing.options(JobPos(j))[k].terms.coloc_coef;
            self.taken(pricing, j, coef, cur);
        }
    }
}

/// The candidates of a job's first step that keep the mode level 1 chose (`Single`: a server
/// that holds every worker — for an all-reduce job, under one socket; `CrossSocket`: a server
/// that holds every worker; `Multi`: any); all of `cands` if none does, so that a job is never
/// refused a placement the mode alone rules out. Later steps are not filtered.
pub(crate) fn keep_mode(
    pricing: &RoundPricing,
    packer: &Packer,
    task: PlaceTask,
    step: usize,
    cands: Vec<usize>,
) -> Vec<usize> {
    if step > 0 || task.mode == Mode::Multi {
        return cands;
    }
    let job = &pricing.snapshot().jobs[task.job];
    let need = task.workers * job.demand.gpus_per_worker;
    let one_socket = task.mode == Mode::Single && job.arch == crate::model::Architecture::AllReduce;
    let fits = |s: usize| {
        if packer.capacity(job, s) < task.workers {
            return false;
        }
        if !one_socket {
            return true;
        }
        let slots = &pricing.topology().slots()[s];
        let free = packer.free_gpus_on(s);
        let mut per_socket: Vec<(u32, u32)> = Vec::new();
        for (i, &f) in free.iter().enumerate() {
            if f {
                match per_socket.iter_mut().find(|x| x.0 == slots[i].socket) {
                    Some(x) => x.1 += 1,
                    None => per_socket.push((slots[i].socket, 1)),
                }
            }
        }
        per_socket.iter().any(|x| x.1 >= need)
    };
    let kept: Vec<usize> = cands.iter().copied().filter(|&s| fits(s)).collect();
    if kept.is_empty() { cands } else { kept }
}

/// Workers per server of an assignment, in order of first appearance.
pub(crate) fn plan_of(a: &crate::model::Assignment) -> Vec<(usize, u32)> {
    let mut plan: Vec<(usize, u32)> = Vec::new();
    for w in &a.workers {
        match plan.iter_mut().find(|p| p.0 == w.server.0) {
            Some(p) => p.1 += 1,
            None => plan.push((w.server.0, 1)),
        }
    }
    plan
}
