//! Step 6 of the decoding: a local search on the objective. On a lightly loaded cluster level
//! 1's proposals leave GPUs idle that the exact program would hand out (on 28 rounds cut from
//! Sia's simulator, 43 of 64 GPUs busy on average, the objective 10.5 % below the program's).
//! While GPUs are idle, the search offers every job the options the idle GPUs and its own can
//! hold — a waiting job any, a placed job any other shape or mode — each placed by the
//! baselines' packer beside everyone else kept where they are, also after stopping one of the
//! placed jobs that earn least per GPU, and makes the move the objective scores highest, if it
//! gains; then again, up to the policy's number of moves ([`GROW_MOVES`] suggested). Best
//! improvement rather than first: taking the first job's gain hands it idle GPUs that a larger
//! gain elsewhere needed (inside Sia's simulator, first improvement reached 2,001 s average JCT
//! on workload 1, best improvement with stops 1,736 s).

use super::LearnedScheduler;
use super::decode::{Chooser, PlaceState};
use crate::model::{JobPos, Schedule};
use crate::objective::{Mode, RoundPricing};

/// Moves per search that `--policy-grow` suggests (each the round's best single-job move): the
/// setting measured inside Sia's simulator. Not the default: on the Philly window at its own
/// 64 servers, GPUs idle all the time, the search costs about 3× the replay's time and 2–3 % of
/// its average JCT (the objective sees one round: jobs grown into idle GPUs hold them when new
/// jobs arrive); under load it gains (`models/POLICY.md`, `benches/results/grow`).
pub const GROW_MOVES: usize = 8;

/// Jobs offered a move, per move and stop: those whose best offer gains most alone. Bounds a
/// move's cost on a large round (each try keeps every other job and scores the round).
pub(super) const GROW_JOBS: usize = 8;

/// Placed jobs a move may stop to make room ([`victims`]).
pub(super) const GROW_STOPS: usize = 4;

/// Options offered per job and move, the best alone (the option's isolated progress, the
/// objective's `base` term) first: what a job gains beyond them is rarely worth a try's cost.
pub(super) const GROW_TRIES: usize = 3;

/// A chooser naming one option, once; placements by the packer never ask it for a server.
struct Only(usize);

impl Chooser for Only {
    fn option(&mut self, _j: usize, tried: &[usize], _: &dyn Fn(usize) -> bool) -> Option<usize> {
        tried.is_empty().then_some(self.0)
    }

    fn server(&mut self, _job: usize, _rows: &[f32]) -> usize {
        0
    }
}

impl LearnedScheduler<'_> {
    /// `start` (scoring `score`) improved by the search of the module docs, with its score;
    /// `packer` is the round with nothing placed, placed by the packer. Never scores below
    /// `start`.
    pub(super) fn grow(
        &self,
        pricing: &RoundPricing,
        packer: &PlaceState,
        start: Schedule,
        score: f64,
    ) -> (Schedule, f64) {
        let mut best = (start, score);
        for _ in 0..self.grow {
            let free = free_by_type(pricing, &best.0);
            if free.iter().all(|&(_, n)| n == 0) {
                break;
            }
            let mut found: Option<(Schedule, f64)> = None;
            // Single-job moves, then the same after stopping one of the placed jobs that earn
            // least per GPU (its GPUs idle too): a move that needs a stop scores lower in both
            // halves alone.
            let stops =
                std::iter::once(None).chain(victims(pricing, &best.0).into_iter().map(Some));
            for stop in stops {
                let from = match stop {
                    None => best.0.clone(),
                    Some(v) => Schedule {
                        assignments: best
                            .0
                            .assignments
                            .iter()
                            .filter(|a| a.job != v)
                            .cloned()
                            .collect(),
                    },
                };
                let free = if stop.is_none() {
                    free.clone()
                } else {
                    free_by_type(pricing, &from)
                };
                self.best_move(pricing, packer, &from, &free, stop, best.1, &mut found);
            }
            match found {
                Some(f) => best = f,
                None => break,
            }
        }
        best
    }
}

impl LearnedScheduler<'_> {
    /// The best single-job move from `from` (`free`: its idle GPUs per type; `stop`: a job
    /// stopped to make room, offered nothing) into `found` if it scores above `floor` and above
    /// what `found` holds.
    #[allow(clippy::too_many_arguments)]
    fn best_move(
        &self,
        pricing: &RoundPricing,
        packer: &PlaceState,
        from: &Schedule,
        free: &[(crate::model::GpuType, u64)],
        stop: Option<crate::model::JobId>,
        floor: f64,
        found: &mut Option<(Schedule, f64)>,
    ) {
        // The jobs whose best offer gains most over what they hold, alone (what a move gains
        // beside that — interference relieved or added — is the score's to say).
        let mut movers: Vec<(f64, usize, Vec<usize>)> = Vec::new();
        for j in 0..pricing.snapshot().jobs.len() {
            if stop == Some(pricing.snapshot().jobs[j].id) {
                continue;
            }
            let offers = offers(pricing, from, free, j);
            let Some(&top) = offers.first() else {
                continue;
            };
            let held = from
                .assignment(pricing.snapshot().jobs[j].id)
                .and_then(|a| pricing.option_index(JobPos(j), &pricing.option_of(JobPos(j), a)))
                .map_or(0.0, |k| pricing.options(JobPos(j))[k].terms.base);
            movers.push((pricing.options(JobPos(j))[top].terms.base - held, j, offers));
        }
        movers.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        movers.truncate(GROW_JOBS);
        for (_, j, offers) in movers {
            let id = pricing.snapshot().jobs[j].id;
            // Everyone else kept where they are.
            let mut st = packer.clone();
            let kept = from.assignments.iter().filter(|a| a.job != id);
            if !kept.into_iter().all(|a| st.keep_assignment(pricing, a)) {
                continue;
            }
            for k in offers {
                let mut s = st.clone();
                if !self.place_job(pricing, &mut s, j, &mut Only(k)) {
                    continue;
                }
                let schedule = s.into_schedule();
                let v = pricing
                    .score_valid(&schedule)
                    .map_or(f64::NEG_INFINITY, |s| s.total);
                if v > found.as_ref().map_or(floor, |f| f.1) {
                    *found = Some((schedule, v));
                }
            }
        }
    }
}

/// The placed jobs of `schedule` a move may stop: the [`GROW_STOPS`] earning least per GPU
/// (their option's `base` term per GPU), least first.
fn victims(pricing: &RoundPricing, schedule: &Schedule) -> Vec<crate::model::JobId> {
    let mut per_gpu: Vec<(f64, crate::model::JobId)> = schedule
        .assignments
        .iter()
        .filter_map(|a| {
            let j = pricing.job_index(a.job)?;
            let k = pricing.option_index(j, &pricing.option_of(j, a))?;
            let gpus = a.workers.iter().map(|w| w.gpus.len()).sum::<usize>().max(1);
            Some((pricing.options(j)[k].terms.base / gpus as f64, a.job))
        })
        .collect();
    per_gpu.sort_by(|a, b| a.0.total_cmp(&b.0));
    per_gpu
        .into_iter()
        .take(GROW_STOPS)
        .map(|(_, id)| id)
        .collect()
}

/// Job `j`'s offers in `schedule` (`free`: its idle GPUs per type): the options its own GPUs and
/// the idle ones of their type can hold, other than what it holds (shape and mode), one per
/// shape (the packer places workers on as few servers as it can, whatever the mode), best
/// alone first, at most [`GROW_TRIES`].
fn offers(
    pricing: &RoundPricing,
    schedule: &Schedule,
    free: &[(crate::model::GpuType, u64)],
    j: usize,
) -> Vec<usize> {
    let snap = pricing.snapshot();
    let gpw = snap.jobs[j].demand.gpus_per_worker;
    let held = schedule.assignment(snap.jobs[j].id).map(|a| {
        let f = pricing.option_of(JobPos(j), a);
        (f.workers, f.ps, f.gpu_type, f.tier, f.mode)
    });
    let opts = pricing.options(JobPos(j));
    let mut offers: Vec<usize> = (0..opts.len())
        .filter(|&k| {
            let o = &opts[k];
            let own = match held {
                Some((w, _, t, _, _)) if t == o.gpu_type => w * gpw,
                _ => 0,
            };
            let idle = free
                .iter()
                .find(|(t, _)| *t == o.gpu_type)
                .map_or(0, |&(_, n)| n);
            held != Some((o.workers, o.ps, o.gpu_type, o.tier, o.mode))
                && u64::from(o.workers * gpw) <= idle + u64::from(own)
        })
        .collect();
    offers.sort_by(|&a, &b| {
        let key = |k: usize| (opts[k].terms.base, opts[k].mode == Mode::Single);
        key(b)
            .partial_cmp(&key(a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut seen = Vec::new();
    offers.retain(|&k| {
        let shape = (opts[k].workers, opts[k].ps, opts[k].gpu_type, opts[k].tier);
        let new = !seen.contains(&shape);
        seen.push(shape);
        new
    });
    offers.truncate(GROW_TRIES);
    offers
}

/// Idle GPUs per type in `schedule`, in the cluster's order of types.
fn free_by_type(pricing: &RoundPricing, schedule: &Schedule) -> Vec<(crate::model::GpuType, u64)> {
    let snap = pricing.snapshot();
    let mut free: Vec<(crate::model::GpuType, u64)> = Vec::new();
    for s in &snap.cluster.servers {
        match free.iter_mut().find(|(t, _)| *t == s.gpu_type) {
            Some((_, n)) => *n += u64::from(s.num_gpus()),
            None => free.push((s.gpu_type, u64::from(s.num_gpus()))),
        }
    }
    for a in &schedule.assignments {
        let t = snap.cluster.servers[a.workers[0].server].gpu_type;
        let used: u64 = a.workers.iter().map(|w| w.gpus.len() as u64).sum();
        if let Some((_, n)) = free.iter_mut().find(|(x, _)| *x == t) {
            *n = n.saturating_sub(used);
        }
    }
    free
}
