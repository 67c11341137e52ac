//! The loops that own a scheduler — one event at a time ([`Simulator::step`]) or to the end
//! ([`Simulator::run`], [`Simulator::run_observed`]): the environment loop with the scheduler as
//! the agent — and the observers a loop reports to ([`Observe`], as argmin's executor reports to
//! its observers): progress bars, the log of a policy's solves, anything that watches a run
//! without the simulator or the scheduler printing or storing it.

use super::*;
use crate::scheduler::RoundEvent;

/// How often an observer's [`Observe::observe_event`] is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObserverMode {
    /// Never (an observer of rounds only).
    Never,
    /// After every event.
    Always,
    /// After every `n`-th event processed (a progress bar).
    Every(u64),
}

/// Watches a run: called by [`Simulator::run_observed`] after events (as its
/// [`Observe::mode`] says), after every round decided, and once at the end. Every method does
/// nothing by default; an error stops the run.
pub trait Observe {
    /// How often [`Observe::observe_event`] is called (default: never).
    fn mode(&self) -> ObserverMode {
        ObserverMode::Never
    }

    /// After an event is processed, as [`Observe::mode`] says (`Every(n)`: when the count of
    /// events processed is a multiple of `n`).
    fn observe_event(&mut self, _sim: &Simulator<'_>) -> Result<()> {
        Ok(())
    }

    /// After a round was decided and applied: the snapshot the scheduler saw, and what it
    /// reported of the round ([`Scheduler::take_events`]: its solve, jobs back-filled, a round
    /// kept).
    fn observe_round(
        &mut self,
        _sim: &Simulator<'_>,
        _snapshot: &ClusterSnapshot,
        _events: &[RoundEvent],
    ) -> Result<()> {
        Ok(())
    }

    /// Once, when the run is over (every job finished, the horizon reached, or a stall).
    fn observe_final(&mut self, _sim: &Simulator<'_>) -> Result<()> {
        Ok(())
    }
}

impl Simulator<'_> {
    /// Processes the next event; at a round, `scheduler` decides. `Ok(false)` when there is
    /// none left before the horizon. (The same events as [`Simulator::next_round`] and
    /// [`Simulator::apply`], one at a time.)
    pub fn step(&mut self, scheduler: &mut dyn Scheduler) -> Result<bool> {
        Ok(self.step_round(scheduler)?.is_some())
    }

    /// [`Simulator::step`], returning the round's snapshot when the step decided one (`None`
    /// inside: an event without a decision; `None` outside: the end).
    fn step_round(
        &mut self,
        scheduler: &mut dyn Scheduler,
    ) -> Result<Option<Option<ClusterSnapshot>>> {
        self.keeps = scheduler.keeps_when_none_wait();
        // A round handed out by `next_round` and not applied is decided first, not skipped.
        let snapshot = match self.pending.take() {
            Some(snapshot) => snapshot,
            None => match self.next_event()? {
                Next::End => return Ok(None),
                Next::Event => return Ok(Some(None)),
                Next::Round => self.snapshot(),
            },
        };
        let schedule = scheduler.schedule(&snapshot)?;
        self.decide(&snapshot, &schedule, scheduler.name())?;
        Ok(Some(Some(snapshot)))
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
            // Nobody watches: what the scheduler says of the round is dropped.
            scheduler.take_events();
        }
        Ok(())
    }

    /// Runs like [`Simulator::run`] (the same events and decisions), reporting to `observers`
    /// after events, after every round with what the scheduler said of it, and at the end.
    pub fn run_observed(
        &mut self,
        scheduler: &mut dyn Scheduler,
        observers: &mut [&mut dyn Observe],
    ) -> Result<()> {
        let mut seen = self.processed;
        while let Some(round) = self.step_round(scheduler)? {
            if let Some(snapshot) = round {
                let events = scheduler.take_events();
                for o in observers.iter_mut() {
                    o.observe_round(self, &snapshot, &events)?;
                }
            }
            // A step that processed no event (a round decided, a stale event dropped) is not
            // one to report.
            if self.processed == seen {
                continue;
            }
            seen = self.processed;
            for o in observers.iter_mut() {
                let due = match o.mode() {
                    ObserverMode::Never => false,
                    ObserverMode::Always => true,
                    ObserverMode::Every(n) => self.processed.is_multiple_of(n.max(1)),
                };
                if due {
                    o.observe_event(self)?;
                }
            }
        }
        for o in observers.iter_mut() {
            o.observe_final(self)?;
        }
        Ok(())
    }
}
