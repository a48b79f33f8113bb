//! Remote send and receive: the narrow interface between the Time Warp protocol and how events
//! reach another worker. Today one transport exists, threads of one process: per-worker
//! mailboxes (the bottom-half queues, whose register is BH_min) and per-worker pools that the
//! receiver returns emptied batches to, so that a remote send allocates nothing once the pools
//! are warm (comm/README.md, "Recycled batches"). The protocol code uses only
//! [`Endpoint::send`], [`Endpoint::flush`], [`Wires::receive`], [`Wires::has_mail`] and
//! [`Wires::leftovers`]: a transport between processes or ranks fits under these.

use super::lp::{Msg, TwEvent};
use super::worker::Worker;
use crate::comm::{Batch, BatchPool, Mailbox};
use crate::error::SimError;
use crate::event::Keyed;
use crate::model::Model;
use crate::queue::PendingSet;

/// What the workers share to reach each other: a mailbox and a pool of spare batches each.
pub(super) struct Wires<P> {
    boxes: Vec<Mailbox<Msg<P>>>,
    pools: Vec<BatchPool<Msg<P>>>,
}

impl<P: Send> Wires<P> {
    pub(super) fn new(workers: usize) -> Self {
        Wires {
            boxes: (0..workers).map(|_| Mailbox::new()).collect(),
            pools: (0..workers).map(|_| BatchPool::new()).collect(),
        }
    }

    /// Whether something may wait for worker `w` (a hint).
    #[inline]
    pub(super) fn has_mail(&self, w: usize) -> bool {
        !self.boxes[w].is_empty()
    }

    /// Worker `w`'s bottom-half queue, whose register is BH_min (for check-and-switch).
    #[inline]
    pub(super) fn mailbox(&self, w: usize) -> &Mailbox<Msg<P>> {
        &self.boxes[w]
    }

    /// Hands everything waiting for worker `w` to `f`, in no particular order, and gives the
    /// emptied batches back to their senders. Only worker `w` may call it.
    pub(super) fn receive(&self, w: usize, mut f: impl FnMut(Msg<P>)) {
        self.boxes[w].take_batches(|mut b| {
            b.drain_into(&mut f);
            match b.owner() {
                Some(o) => self.pools[o].give_back(b),
                None => drop(b),
            }
        });
    }

    /// What is left for worker `w` once every worker has stopped.
    pub(super) fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.boxes[w].take(f);
    }
}

/// One worker's sending side: the batch being filled per destination worker, the
/// destinations with something to send, and emptied batches that came back.
pub(super) struct Endpoint<P> {
    w: usize,
    outbox: Vec<Option<Batch<Msg<P>>>>,
    dirty: Vec<usize>,
    spare: Vec<Batch<Msg<P>>>,
}

impl<P: Send> Endpoint<P> {
    pub(super) fn new(w: usize, workers: usize) -> Self {
        Endpoint {
            w,
            outbox: (0..workers).map(|_| None).collect(),
            dirty: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Queues `m` for worker `o` (pushed at the next [`flush`](Self::flush)).
    #[inline]
    pub(super) fn send(&mut self, wires: &Wires<P>, o: usize, m: Msg<P>) {
        let slot = &mut self.outbox[o];
        if slot.is_none() {
            if self.spare.is_empty() {
                wires.pools[self.w].take_all(&mut self.spare);
            }
            let b = self
                .spare
                .pop()
                .unwrap_or_else(|| Batch::new(self.w as u32));
            *slot = Some(b);
            self.dirty.push(o);
        }
        if let Some(b) = slot {
            b.push(m);
        }
    }

    /// Pushes every queued batch; returns the earliest time pushed (`+inf`: nothing was).
    #[inline]
    pub(super) fn flush(&mut self, wires: &Wires<P>) -> f64 {
        let mut min = f64::INFINITY;
        for o in self.dirty.drain(..) {
            if let Some(b) = self.outbox[o].take() {
                for m in b.items() {
                    min = min.min(m.key().time);
                }
                wires.boxes[o].push_batch_node(b);
            }
        }
        min
    }
}

impl<M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'_, '_, M, Q> {
    /// Takes the mailbox (the bottom-half queue) into the pending set, applies anti-messages,
    /// and sends what that caused.
    pub(super) fn drain(&mut self) -> Result<(), SimError> {
        let sh = self.sh;
        if sh.wires.has_mail(self.w) {
            let mut result = Ok(());
            sh.wires.receive(self.w, |m| match m {
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

    /// Pushes the outboxes into the other workers' mailboxes. A push made while a GVT round is
    /// in progress and before this worker reported in it lowers `send_min` (README, rule R2).
    #[inline]
    pub(super) fn flush(&mut self) {
        let min = self.endpoint.flush(&self.sh.wires);
        if min == f64::INFINITY {
            return;
        }
        if let Some(r) = self.sh.gvt.active_round() {
            if r > self.reported {
                self.send_min = self.send_min.min(min);
            }
        }
    }
}
