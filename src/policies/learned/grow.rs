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
use crate::objective::{Mode, OptionFacts, RoundPricing};

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
            let Some(all) = packer.keeping(pricing, &best.0, None) else {
                break;
            };
            if !all.any_idle() {
                break;
            }
            let mut found: Option<(Schedule, f64)> = None;
            // Single-job moves, then the same after stopping one of the placed jobs that earn
            // least per GPU (its GPUs idle too): a move that needs a stop scores lower in both
            // halves alone.
            self.best_move(pricing, packer, &best.0, &all, None, best.1, &mut found);
            for v in victims(pricing, &best.0) {
                let from = Schedule {
                    assignments: (best.0.assignments.iter())
                        .filter(|a| a.job != v)
                        .cloned()
                        .collect(),
                };
                if let Some(idle) = packer.keeping(pricing, &from, None) {
                    self.best_move(pricing, packer, &from, &idle, Some(v), best.1, &mut found);
                }
            }
            match found {
                Some(f) => best = f,
                None => break,
            }
        }
        best
    }

    /// The best single-job move from `from` (`all`: the round with `from` placed, for its idle
    /// GPUs; `stop`: a job stopped to make room, offered nothing) into `found` if it scores
    /// above `floor` and above what `found` holds.
    #[allow(clippy::too_many_arguments)]
    fn best_move(
        &self,
        pricing: &RoundPricing,
        packer: &PlaceState,
        from: &Schedule,
        all: &PlaceState,
        stop: Option<crate::model::JobId>,
        floor: f64,
        found: &mut Option<(Schedule, f64)>,
    ) {
        // The jobs whose best offer gains most over what they hold, alone (what a move gains
        // beside that — interference relieved or added — is the score's to say).
        let mut movers: Vec<(f64, usize, Vec<usize>)> = Vec::new();
        for (j, job) in pricing.snapshot().jobs.iter().enumerate() {
            if stop == Some(job.id) {
                continue;
            }
            let held = from
                .assignment(job.id)
                .map(|a| pricing.option_of(JobPos(j), a));
            let offers = offers(pricing, held.as_ref(), all, j);
            let Some(&top) = offers.first() else {
                continue;
            };
            let held_base = held
                .and_then(|f| pricing.option_index(JobPos(j), &f))
                .map_or(0.0, |k| pricing.options(JobPos(j))[k].terms.base);
            movers.push((
                pricing.options(JobPos(j))[top].terms.base - held_base,
                j,
                offers,
            ));
        }
        movers.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        movers.truncate(GROW_JOBS);
        for (_, j, offers) in movers {
            // Everyone else kept where they are.
            let Some(st) = packer.keeping(pricing, from, Some(pricing.snapshot().jobs[j].id))
            else {
                continue;
            };
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

/// Job `j`'s offers (`held`: what it holds; `all`: the round as it stands, for its idle GPUs):
/// the options its own GPUs and the idle ones of their type can hold, other than what it holds
/// (shape and mode), one per shape (the packer places workers on as few servers as it can,
/// whatever the mode), best alone first, at most [`GROW_TRIES`].
fn offers(
    pricing: &RoundPricing,
    held: Option<&OptionFacts>,
    all: &PlaceState,
    j: usize,
) -> Vec<usize> {
    let gpw = pricing.snapshot().jobs[j].demand.gpus_per_worker;
    let held = held.map(|f| (f.workers, f.ps, f.gpu_type, f.tier, f.mode));
    let opts = pricing.options(JobPos(j));
    let mut offers: Vec<usize> = (0..opts.len())
        .filter(|&k| {
            let o = &opts[k];
            let own = match held {
                Some((w, _, t, _, _)) if t == o.gpu_type => w * gpw,
                _ => 0,
            };
            let idle = all.idle(o.gpu_type);
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
