//! The loops that own a scheduler: one event at a time ([`Simulator::step`]) or to the end
//! ([`Simulator::run`], [`Simulator::run_observed`]) — the environment loop with the scheduler as the agent.

use super::*;

impl Simulator<'_> {
    /// Processes the next event; at a round, `scheduler` decides. `Ok(false)` when there is
    /// none left before the horizon. (The same events as [`Simulator::next_round`] and
    /// [`Simulator::apply`], one at a time.)
    pub fn step(&mut self, scheduler: &mut dyn Scheduler) -> Result<bool> {
        self.keeps = scheduler.keeps_when_none_wait();
        // A round handed out by `next_round` and not applied is decided first, not skipped.
        if let Some(snapshot) = self.pending.take() {
            let schedule = scheduler.schedule(&snapshot)?;
            self.decide(&snapshot, &schedule, scheduler.name())?;
            return Ok(true);
        }
        match self.next_event()? {
            Next::End => Ok(false),
            Next::Event => Ok(true),
            Next::Round => {
                let snapshot = self.snapshot();
                let schedule = scheduler.schedule(&snapshot)?;
                self.decide(&snapshot, &schedule, scheduler.name())?;
                Ok(true)
            }
        }
    }

    /// Runs to the end (every job finished) or the horizon: the environment loop
    /// ([`Simulator::next_round`], the scheduler decides, [`Simulator::apply`]) with `scheduler`
    /// as the agent, less the per-round outcome nobody reads.
    pub fn run(&mut self, scheduler: &mut dyn Scheduler) -> Result<()> {
        self.keeps = scheduler.keeps_when_none_wait();
        while let Some(snapshot) = self.next_round()? {
            let schedule = scheduler.schedule(snapshot)?;
            // The outcome of each round is the caller's business; a plain run skips it.
            self.decide_pending(&schedule, scheduler.name())?;
        }
        Ok(())
    }

    /// Runs like [`Simulator::run`], calling `observe` every `every` events and once at the end
    /// (progress bars and logs hang here; the simulator itself prints nothing).
    pub fn run_observed(
        &mut self,
        scheduler: &mut dyn Scheduler,
        every: u64,
        observe: &mut dyn FnMut(&Simulator<'_>),
    ) -> Result<()> {
        let every = every.max(1);
        while self.step(scheduler)? {
            if self.processed.is_multiple_of(every) {
                observe(self);
            }
        }
        observe(self);
        Ok(())
    }
}
