//! Remote send and receive: how a worker takes its mailbox and pushes its outboxes.

use super::lp::{Msg, TwEvent};
use super::worker::*;
use crate::error::SimError;
use crate::event::Keyed;
use crate::model::Model;
use crate::queue::PendingSet;

impl<'s, 'a, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, 'a, M, Q> {
    /// Takes the mailbox (the bottom-half queue) into the pending set, applies anti-messages,
    /// and sends what that caused.
    pub(super) fn drain(&mut self) -> Result<(), SimError> {
        let sh = self.sh;
        let mb = &sh.boxes[self.w];
        if !mb.is_empty() {
            let mut result = Ok(());
            mb.take(|m| match m {
                Msg::Event(e) => self.accept(e),
                Msg::Anti(a) => {
                    if let Err(e) = self.annihilate(a) {
                        result = Err(e);
                    }
                }
            });
            result?;
        }
        self.settle()?;
        self.flush();
        Ok(())
    }

    /// A positive event for one of this worker's LPs: annihilated if its anti-message came
    /// first, otherwise pending.
    #[inline]
    pub(super) fn accept(&mut self, e: TwEvent<M::Event>) {
        if !self.cancelled.is_empty() && self.cancelled.remove(&e.id) {
            return;
        }
        self.queue.push(e);
    }

    /// Applies the local anti-messages that rollbacks produced (they may roll back more).
    /// Pushes the outboxes into the other workers' mailboxes. A push made while a GVT round is
    /// in progress and before this worker reported in it lowers `send_min` (README, rule R2).
    pub(super) fn flush(&mut self) {
        if self.out_dirty.is_empty() {
            return;
        }
        let mut min = f64::INFINITY;
        for o in self.out_dirty.drain(..) {
            let batch = std::mem::take(&mut self.outbox[o]);
            for m in &batch {
                min = min.min(m.key().time);
            }
            self.sh.boxes[o].push_batch(batch);
        }
        if let Some(r) = self.sh.gvt.active_round() {
            if r > self.reported {
                self.send_min = self.send_min.min(min);
            }
        }
    }
}
