//! Level 1's choices as the decoding reads them: its greedy allocation from the logits
//! ([`allocation`]), listed in full or ranked on demand ([`Choices`], [`Ranked`]).

use super::Allocation;

/// Level 1's decision from its logits: per job, the options scoring above its wait row, best
/// first; jobs ordered by their probability of running.
pub(super) fn allocation(logits: &[Vec<f32>]) -> Allocation {
    let (mut choices, order) = unsorted(logits);
    for (c, l) in choices.iter_mut().zip(logits) {
        // A total order (ties broken by index): the unstable sort gives the stable one's result.
        c.sort_unstable_by(|&a, &b| l[b].total_cmp(&l[a]).then(a.cmp(&b)));
    }
    Allocation { choices, order }
}

/// What [`allocation`] and [`Ranked`] share: per job, its options scoring above its wait row
/// (in option order, not yet by score), and the jobs ordered by their probability of running.
fn unsorted(logits: &[Vec<f32>]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut p_run = Vec::with_capacity(logits.len());
    let mut above = Vec::with_capacity(logits.len());
    for l in logits {
        let (wait, options) = l.split_last().expect("every job has a wait row");
        let max = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let z: f32 = l.iter().map(|x| (x - max).exp()).sum();
        p_run.push(1.0 - (wait - max).exp() / z);
        above.push((0..options.len()).filter(|&k| options[k] > *wait).collect());
    }
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_unstable_by(|&a, &b| p_run[b].total_cmp(&p_run[a]).then(a.cmp(&b)));
    (above, order)
}

/// Level 1's choices for a decoding: listed in full ([`Allocation`]), or ranked as the decoding
/// reads them ([`Ranked`]).
pub(super) enum Choices<'a> {
    /// Every job's choices, sorted.
    Listed(&'a Allocation),
    /// Sorted on demand.
    Ranked(Ranked<'a>),
}

impl Choices<'_> {
    /// Job `j`'s `i`-th choice, if it has one.
    pub(super) fn get(&mut self, j: usize, i: usize) -> Option<usize> {
        match self {
            Choices::Listed(a) => a.choices[j].get(i).copied(),
            Choices::Ranked(r) => r.get(j, i),
        }
    }
}

/// The [`Allocation`] of [`allocation`] (or of `filled`) with each job's choices put in order
/// only as far as the decoding reads them: a job tries one or two of its options, and sorting
/// every job's list (hundreds of options on a large cluster) in every proposal cost a sixth of
/// a replay. The choices read are the ones the sorted list holds: the same total order (score,
/// then index) selects them one at a time.
pub(super) struct Ranked<'a> {
    logits: &'a [Vec<f32>],
    /// Per job, its choices; the first `sorted[j]` in their final order.
    items: Vec<Vec<usize>>,
    sorted: Vec<usize>,
    /// Jobs, first placed first.
    pub(super) order: Vec<usize>,
}

impl<'a> Ranked<'a> {
    /// [`allocation`], ranked on demand.
    pub(super) fn new(logits: &'a [Vec<f32>]) -> Self {
        let (items, order) = unsorted(logits);
        Ranked {
            logits,
            sorted: vec![0; logits.len()],
            items,
            order,
        }
    }

    /// `filled`'s allocation (every job level 1 leaves waiting offered all its options, best
    /// scored first, after the others), ranked on demand.
    pub(super) fn filled(logits: &'a [Vec<f32>]) -> Self {
        let mut r = Ranked::new(logits);
        let mut waiting = vec![false; logits.len()];
        for (j, l) in logits.iter().enumerate() {
            if r.items[j].is_empty() {
                r.items[j] = (0..l.len() - 1).collect();
                waiting[j] = true;
            }
        }
        let (last, first): (Vec<usize>, Vec<usize>) = r.order.iter().partition(|&&j| waiting[j]);
        r.order = first;
        r.order.extend(last);
        r
    }

    /// Job `j`'s `i`-th choice: the rest of its list is searched for the next best until `i`
    /// is in place.
    pub(super) fn get(&mut self, j: usize, i: usize) -> Option<usize> {
        let (l, items) = (&self.logits[j], &mut self.items[j]);
        let sorted = &mut self.sorted[j];
        while *sorted <= i && *sorted < items.len() {
            let mut best = *sorted;
            for x in *sorted + 1..items.len() {
                let (a, b) = (items[x], items[best]);
                // `allocation`'s order: higher score first, then lower index.
                if l[a].total_cmp(&l[b]).then(b.cmp(&a)).is_gt() {
                    best = x;
                }
            }
            items.swap(*sorted, best);
            *sorted += 1;
        }
        items.get(i).copied()
    }
}

/// [`allocation`], with each job whose choices are empty (level 1 scores waiting above every
/// option) offered all its options, best scored first, and ordered after every other job. What
/// [`Ranked::filled`] ranks on demand; kept as its reference.
#[cfg(test)]
pub(super) fn filled(logits: &[Vec<f32>]) -> Allocation {
    let mut alloc = allocation(logits);
    let mut waiting = vec![false; logits.len()];
    for (j, l) in logits.iter().enumerate() {
        if !alloc.choices[j].is_empty() {
            continue;
        }
        let options = &l[..l.len() - 1];
        let mut c: Vec<usize> = (0..options.len()).collect();
        // A total order (ties broken by index): the unstable sort gives the stable one's result.
        c.sort_unstable_by(|&a, &b| options[b].total_cmp(&options[a]).then(a.cmp(&b)));
        alloc.choices[j] = c;
        waiting[j] = true;
    }
    let (last, first): (Vec<usize>, Vec<usize>) = alloc.order.iter().partition(|&&j| waiting[j]);
    alloc.order = first;
    alloc.order.extend(last);
    alloc
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every choice `Ranked` hands out, read in any order, is the one the sorted lists hold.
    #[test]
    fn ranked_choices_are_the_sorted_ones() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for round in 0..200 {
            let jobs = rng.random_range(1..8);
            // Few distinct values, so that ties (broken by index) are common.
            let logits: Vec<Vec<f32>> = (0..jobs)
                .map(|_| {
                    let n = rng.random_range(1..12);
                    (0..n)
                        .map(|_| rng.random_range(0..5) as f32 - 2.0)
                        .collect()
                })
                .collect();
            for (listed, mut ranked) in [
                (allocation(&logits), Ranked::new(&logits)),
                (filled(&logits), Ranked::filled(&logits)),
            ] {
                assert_eq!(ranked.order, listed.order, "round {round}");
                for j in 0..jobs {
                    // Read out of order: a later choice first, then all.
                    let n = listed.choices[j].len();
                    let _ = ranked.get(j, n / 2);
                    let got: Vec<usize> = (0..=n).filter_map(|i| ranked.get(j, i)).collect();
                    assert_eq!(got, listed.choices[j], "round {round}, job {j}");
                }
            }
        }
    }
}
