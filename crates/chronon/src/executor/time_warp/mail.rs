//! A worker's side of the transport (`transport/tw.rs`): taking its mailbox into its pending set,
//! and pushing its sends when they are due (README.md, "When sends leave").

use super::worker::Worker;
use crate::error::SimError;
use crate::model::Model;
use crate::queue::PendingSet;
use crate::tw_msg::{Msg, Stack, TwEvent};

impl<M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'_, '_, M, Q> {
    /// Takes the mailbox (the bottom-half queue) into the pending set, applies anti-messages,
    /// and sends what that caused.
    pub(super) fn drain(&mut self) -> Result<(), SimError> {
        let sh = self.sh;
        if sh.wires.aborted() {
            // Another process failed or was stopped: stop at the top of the loop.
            sh.abort.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // GVT read before the drain: what is not in the mailbox now is sent after it, at or
        // after GVT + lookahead (safe.rs).
        let safe_until = sh.safe.bound(|| sh.gvt.gvt());
        // Over MPI ranks without a driver thread: send, receive and step GVT here.
        sh.step_driver();
        if sh.wires.has_mail(self.w) {
            let mut result = Ok(());
            sh.wires.receive(self.w, &mut |m| match m {
                Msg::Event(e, stack) => self.accept(e, stack),
                Msg::Anti(a) => {
                    if let Err(e) = self.annihilate(a) {
                        result = Err(e);
                    }
                }
            });
            result?;
        }
        self.round.safe_until = safe_until;
        self.settle()?;
        self.flush_when_due(false);
        Ok(())
    }

    /// A positive event for one of this worker's LPs: annihilated if its anti-message came
    /// first, otherwise pending.
    #[inline]
    #[allow(clippy::box_collection)]
    pub(super) fn accept(&mut self, e: TwEvent<M::Event>, stack: Option<Box<Stack>>) {
        if self.cancelled.remove(e.id, e.time) {
            return;
        }
        if let Some(s) = stack {
            self.orders.insert(e.id, s);
        }
        self.queue.push(e);
    }

    /// Pushes the outboxes when they are due (README.md, "When sends leave"): when the worker
    /// is `idle`, when an anti-message is queued, or once its clock came within half the
    /// lookahead of the earliest time queued. A send is at least the lookahead after the event
    /// that made it, so it waits while its sender runs events in the first half of that gap,
    /// and leaves with the others queued meanwhile: fewer, fuller batches. Before every GVT
    /// report the loop flushes regardless (`flush`), as rule R2 and the safe-event proof need.
    /// Preemptive Time Warp pushes after every event, as before: its receivers preempt on what
    /// reaches their mailboxes.
    #[inline(always)]
    pub(super) fn flush_when_due(&mut self, idle: bool) {
        if self.endpoint.is_clean() {
            return;
        }
        let sh = self.sh;
        if idle
            || sh.preempt.is_some()
            || self.endpoint.urgent()
            || self.endpoint.earliest() <= self.current.1 + sh.lookahead / 2.0
        {
            self.flush_dirty();
        }
    }

    /// Pushes the outboxes into the other workers' mailboxes. A push made while a GVT round is
    /// in progress and before this worker reported in it lowers `send_min` (README, rule R2).
    #[inline(always)]
    pub(super) fn flush(&mut self) {
        if self.endpoint.is_clean() {
            return;
        }
        self.flush_dirty();
    }

    #[inline(never)]
    fn flush_dirty(&mut self) {
        let sh = self.sh;
        let min = self.endpoint.flush(&*sh.wires, || sh.gvt.gvt() >= sh.end);
        if min == f64::INFINITY {
            return;
        }
        self.round.pushed(min, sh.gvt.active_round());
    }
}
