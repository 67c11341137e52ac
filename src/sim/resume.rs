//! A simulator resumed from a round's snapshot ([`Simulator::resume`]): the copy of the world a
//! lookahead plays candidate decisions forward in, knowing only what the snapshot says — the
//! jobs that have arrived, their progress and placements — and any arrivals the caller chooses
//! to imagine. Also what such a play is scored by ([`Simulator::time_in_system_s`]).

use super::*;

impl<'a> Simulator<'a> {
    /// A simulator that starts at `snapshot`'s time with its jobs arrived, each with the progress
    /// and the placement the snapshot gives it, and `arrivals` still to come (jobs with
    /// `arrival_s` at or after the snapshot's time; none: a future without arrivals). A round is
    /// due at once, and [`Simulator::next_round`] hands out the snapshot's jobs as they are.
    ///
    /// What a snapshot does not say is not restored: a running job that was in the middle of a
    /// restart progresses at once, and the records start at the resume, but for the history
    /// the snapshot carries (restarts, GPU-seconds held, seconds waited), which they go on
    /// from — so the rounds of a resumed run show its policy the history the run it was cut
    /// from would. A job that had run before (it has progress or a placement) pays a restart
    /// when it resumes after a preemption, as in the run it was cut from.
    pub fn resume(
        perf: &'a dyn PerfModel,
        config: SimConfig,
        snapshot: &ClusterSnapshot,
        arrivals: Vec<Job>,
    ) -> Result<Self> {
        let t0 = snapshot.time_s;
        if let Some(j) = arrivals
            .iter()
            .find(|j| j.arrival_s.is_nan() || j.arrival_s < t0)
        {
            return Err(Error::setting(
                "simulator resume",
                "arrivals.arrival_s",
                format!("job {}: {}", j.id, j.arrival_s),
                format!("must be at or after the snapshot's time {t0}"),
            ));
        }
        let mut jobs = snapshot.jobs.clone();
        jobs.extend(arrivals);
        let mut sim = Simulator::new(perf, config, snapshot.cluster.clone(), jobs)?;
        // `new` queued every arrival from time 0; the resumed run starts at `t0`.
        sim.events.clear();
        sim.now = t0;
        sim.last_advance = t0;
        sim.utilization = vec![(t0, 0)];
        for job in &snapshot.jobs {
            // A job the admission left out ([`Unplaceable::Skip`]) is not resumed.
            let Some(&i) = sim.index_of.get(&job.id) else {
                continue;
            };
            let run = &job.run;
            let alone = match &run.current {
                Some(a) => sim.alone_speed(i, a),
                None => 0.0,
            };
            let st = &mut sim.state[i];
            st.arrived = true;
            st.done = run.done_iterations;
            st.assignment = run.current.clone();
            st.alone_speed = alone;
            if run.current.is_some() || run.done_iterations > 0.0 {
                sim.records[i].first_start_s = Some(t0);
            }
            let r = &mut sim.records[i];
            r.restarts = run.restarts;
            r.gpu_seconds = run.attained_gpu_s;
            r.waiting_s = run.waited_s;
            sim.active.push(i);
        }
        sim.active.sort_unstable();
        sim.arrivals_left = 0;
        for i in 0..sim.jobs.len() {
            if !sim.state[i].arrived {
                let t = sim.jobs[i].arrival_s;
                sim.push(t, Event::Arrival(i));
                sim.arrivals_left += 1;
            }
        }
        sim.last_arrival = sim.last_arrival.max(t0);
        sim.after_change()?;
        sim.tick_pending = true;
        sim.push(t0, Event::Tick);
        Ok(sim)
    }

    /// Seconds the jobs spent in the system (arrived and not finished) between `from` and `to`,
    /// summed over jobs: the area under the number of jobs present, what a lookahead minimises
    /// over its horizon (over a whole run from 0, the sum of the jobs' JCTs).
    pub fn time_in_system_s(&self, from: f64, to: f64) -> f64 {
        self.records
            .iter()
            .map(|r| {
                let end = r.finish_s.unwrap_or(to).min(to);
                (end - r.arrival_s.max(from)).max(0.0)
            })
            .sum()
    }
}

impl Simulator<'_> {
    /// A lower bound on the seconds the jobs present now will still spend in the system if no
    /// other job arrives, valid for every policy: the capacity bound of
    /// [`Simulator::jct_bound`] on what is left — the `k`-th completion no earlier than the
    /// `k`-th of preemptive shortest-remaining-area-first on the whole cluster, nor than the
    /// `k`-th job alone at its fastest. `fastest` gives a job's most iterations per second alone
    /// and its fewest GPU-seconds per iteration (what `coda bound` computes per job).
    /// What a lookahead adds at the end of its horizon, so that progress on a job that does not
    /// finish within it still counts.
    pub fn remaining_time_bound_s(&self, fastest: &dyn Fn(JobId) -> Option<(f64, f64)>) -> f64 {
        let (mut alone, mut areas) = (Vec::new(), Vec::new());
        for &i in &self.active {
            let left = (self.jobs[i].total_iterations - self.state[i].done).max(0.0);
            if let Some((speed, gpu_s)) = fastest(self.jobs[i].id) {
                alone.push(left / speed);
                areas.push(left * gpu_s);
            }
        }
        let gpus = self.priced.cluster.num_gpus() as f64;
        let mut srpt = super::bound::srpt_completions(&vec![0.0; areas.len()], &areas, gpus);
        srpt.sort_by(f64::total_cmp);
        alone.sort_by(f64::total_cmp);
        srpt.iter().zip(&alone).map(|(s, a)| s.max(*a)).sum()
    }
}
