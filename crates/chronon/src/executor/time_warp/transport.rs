//! Remote send and receive: the narrow interface between the Time Warp protocol and how events
//! reach another worker. Two transports sit under it:
//!
//! - threads of one process: per-worker mailboxes (the bottom-half queues, whose register is
//!   BH_min) and per-worker pools that the receiver returns emptied batches to, so that a
//!   remote send allocates nothing once the pools are warm (comm/README.md, "Recycled
//!   batches");
//! - worker processes on one machine (`--procs`, Linux): shared-memory rings between every
//!   pair of workers (`shm_wires.rs`).
//!
//! The protocol code uses only [`Endpoint::send`], [`Endpoint::flush`], [`Wires::receive`],
//! [`Wires::has_mail`] and [`Wires::leftovers`]: an MPI transport fits under the same calls.
//! The choice is one predictable branch per flush and per receive, none per event.

use super::lp::{Msg, Stack, TwEvent};
#[cfg(all(target_os = "linux", not(chronon_loom)))]
use super::shm_wires::ShmWires;

/// Without the transport between processes (not Linux, or the loom build) there is no value of
/// it: `Wires::procs` is always `None`.
#[cfg(not(all(target_os = "linux", not(chronon_loom))))]
pub(super) struct ShmWires<P>(std::convert::Infallible, std::marker::PhantomData<P>);

#[cfg(not(all(target_os = "linux", not(chronon_loom))))]
impl<P> ShmWires<P> {
    pub(super) fn aborted(&self) -> bool {
        match self.0 {}
    }
}
use super::worker::Worker;
use crate::comm::{Batch, BatchPool, Mailbox};
use crate::error::SimError;
use crate::event::Keyed;
use crate::model::Model;
use crate::queue::PendingSet;

/// What the workers share to reach each other: with threads, a mailbox and a pool of spare
/// batches each; across processes, the rings.
pub(super) struct Wires<P> {
    boxes: Vec<Mailbox<Msg<P>>>,
    pools: Vec<BatchPool<Msg<P>>>,
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    procs: Option<ShmWires<P>>,
    /// Over MPI ranks: the workers of this rank, and what goes to other ranks (ranks/).
    #[cfg(feature = "mpi")]
    ranks: Option<super::ranks::RankWires<P>>,
}

impl<P: Send + 'static> Wires<P> {
    pub(super) fn new(workers: usize) -> Self {
        Wires {
            boxes: (0..workers).map(|_| Mailbox::new()).collect(),
            pools: (0..workers).map(|_| BatchPool::new()).collect(),
            #[cfg(all(target_os = "linux", not(chronon_loom)))]
            procs: None,
            #[cfg(feature = "mpi")]
            ranks: None,
        }
    }

    /// Over MPI ranks: mailboxes and pools as with threads (only this rank's workers' are
    /// used), and a flush to another rank's worker goes to the rank's driver.
    #[cfg(feature = "mpi")]
    pub(super) fn over_ranks(workers: usize, mine: std::ops::Range<usize>) -> Self {
        let mut w = Wires::new(workers);
        w.ranks = Some(super::ranks::RankWires::new(mine));
        w
    }

    /// The part only a run over MPI ranks has.
    #[cfg(feature = "mpi")]
    pub(super) fn ranks(&self) -> Option<&super::ranks::RankWires<P>> {
        self.ranks.as_ref()
    }

    /// Gives an emptied batch back to its sender's pool (the rank driver, once it serialized
    /// a batch for another rank).
    #[cfg(feature = "mpi")]
    pub(super) fn give_back(&self, b: Batch<Msg<P>>) {
        match b.owner() {
            Some(o) => self.pools[o].give_back(b),
            None => drop(b),
        }
    }

    /// The transport between worker processes.
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    pub(super) fn over_procs(procs: ShmWires<P>) -> Self {
        Wires {
            boxes: Vec::new(),
            pools: Vec::new(),
            procs: Some(procs),
            #[cfg(feature = "mpi")]
            ranks: None,
        }
    }

    /// The transport between worker processes, if this run has one.
    #[inline(always)]
    pub(super) fn procs(&self) -> Option<&ShmWires<P>> {
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        return self.procs.as_ref();
        #[cfg(not(all(target_os = "linux", not(chronon_loom))))]
        None
    }

    /// Asks the workers of every other process to stop (this process failed).
    pub(super) fn abort_others(&self) {
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some(p) = self.procs() {
            p.abort();
        }
    }

    /// Whether something may wait for worker `w` (a hint; across processes the receive
    /// itself looks).
    #[inline]
    pub(super) fn has_mail(&self, w: usize) -> bool {
        if self.procs().is_some() {
            return true;
        }
        !self.boxes[w].is_empty()
    }

    /// Worker `w`'s mailbox (a rank's driver delivers records from other ranks into it).
    #[cfg(feature = "mpi")]
    #[inline]
    pub(super) fn mailbox(&self, w: usize) -> &Mailbox<Msg<P>> {
        &self.boxes[w]
    }

    /// BH_min of worker `w`: a lower bound on the times of the messages waiting for it (the
    /// mailbox register with threads; across processes the minimum of its incoming rings'
    /// registers and of its stash). Only worker `w` may call it (for preemption).
    #[inline]
    pub(super) fn bh_min(&self, w: usize) -> f64 {
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some(p) = self.procs() {
            return p.bh_min(w);
        }
        self.boxes[w].min_time()
    }

    /// Hands everything waiting for worker `w` to `f`, in no particular order, and gives the
    /// emptied batches back to their senders. Only worker `w` may call it.
    pub(super) fn receive(&self, w: usize, mut f: impl FnMut(Msg<P>)) {
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some(p) = self.procs() {
            return p.receive(w, f);
        }
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
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some(p) = self.procs() {
            return p.leftovers(w, f);
        }
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
    /// The earliest time queued since the last flush (`+inf`: nothing is).
    earliest: f64,
    /// Whether an anti-message is queued (it leaves at the next [`Worker::flush_when_due`]).
    urgent: bool,
}

impl<P: Send + 'static> Endpoint<P> {
    pub(super) fn new(w: usize, workers: usize) -> Self {
        Endpoint {
            w,
            outbox: (0..workers).map(|_| None).collect(),
            dirty: Vec::new(),
            spare: Vec::new(),
            earliest: f64::INFINITY,
            urgent: false,
        }
    }

    /// Queues `m` for worker `o` (pushed at the next [`flush`](Self::flush)).
    #[inline]
    pub(super) fn send(&mut self, wires: &Wires<P>, o: usize, m: Msg<P>) {
        self.earliest = self.earliest.min(m.key().time);
        self.urgent |= matches!(m, Msg::Anti(_));
        let slot = &mut self.outbox[o];
        if slot.is_none() {
            if self.spare.is_empty() {
                // Across processes there are no pools: a sender keeps its own batches.
                if let Some(pool) = wires.pools.get(self.w) {
                    pool.take_all(&mut self.spare);
                }
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

    /// Whether nothing is queued.
    #[inline(always)]
    pub(super) fn is_clean(&self) -> bool {
        self.dirty.is_empty()
    }

    /// The earliest time queued (`+inf`: nothing is).
    #[inline(always)]
    pub(super) fn earliest(&self) -> f64 {
        self.earliest
    }

    /// Whether an anti-message is queued.
    #[inline(always)]
    pub(super) fn urgent(&self) -> bool {
        self.urgent
    }

    /// Pushes every queued batch; returns the earliest time pushed (`+inf`: nothing was).
    /// `over()`: whether the run is over (across processes, a sender that cannot get ring
    /// space then drops what is left, which is at or after the end time).
    #[inline]
    pub(super) fn flush(&mut self, wires: &Wires<P>, over: impl Fn() -> bool) -> f64 {
        if self.dirty.is_empty() {
            // Nothing queued (every event without a remote send): nothing to push.
            return f64::INFINITY;
        }
        let min = std::mem::replace(&mut self.earliest, f64::INFINITY);
        self.urgent = false;
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some(p) = wires.procs() {
            return p.flush(
                self.w,
                &mut self.dirty,
                &mut self.outbox,
                &mut self.spare,
                over,
            );
        }
        let _ = &over;
        for o in self.dirty.drain(..) {
            if let Some(b) = self.outbox[o].take() {
                #[cfg(feature = "mpi")]
                if let Some(r) = wires.ranks.as_ref().filter(|r| !r.is_local(o)) {
                    // For another rank: the driver sends it (ranks/driver.rs). For rule R2
                    // this counts as pushed (README, "GVT across ranks", D3).
                    r.hand_over(b);
                    continue;
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
        if sh.wires.procs().is_some_and(|p| p.aborted()) {
            // Another process failed or was stopped: stop at the top of the loop.
            sh.abort.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // GVT read before the drain: what is not in the mailbox now is sent after it, at or
        // after GVT + lookahead (safe.rs).
        let safe_until = sh.safe.bound(|| sh.gvt.gvt());
        // Over MPI ranks without a driver thread: send, receive and step GVT here.
        sh.pump();
        if sh.wires.has_mail(self.w) {
            let mut result = Ok(());
            sh.wires.receive(self.w, |m| match m {
                Msg::Event(e, stack) => self.accept(e, stack),
                Msg::Anti(a) => {
                    if let Err(e) = self.annihilate(a) {
                        result = Err(e);
                    }
                }
            });
            result?;
        }
        self.safe_until = safe_until;
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
        let min = self.endpoint.flush(&sh.wires, || sh.gvt.gvt() >= sh.end);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKey;
    use crate::executor::time_warp::lp::Anti;

    fn event(time: f64, id: u64) -> Msg<u32> {
        Msg::Event(
            TwEvent {
                time,
                seq: 0,
                id,
                src: 0,
                dst: 1,
                payload: 7,
            },
            None,
        )
    }

    #[test]
    fn an_endpoint_keeps_its_earliest_time_until_the_flush() {
        let wires = Wires::<u32>::new(2);
        let mut end = Endpoint::new(0, 2);
        assert!(end.is_clean());
        assert_eq!(end.earliest(), f64::INFINITY);
        end.send(&wires, 1, event(5.0, 1));
        end.send(&wires, 1, event(3.0, 2));
        let key = EventKey {
            time: 4.0,
            seq: 0,
            src: 0,
        };
        assert!(!end.urgent());
        end.send(&wires, 1, Msg::Anti(Anti { dst: 1, key, id: 9 }));
        assert!(end.urgent(), "an anti-message is due at once");
        assert_eq!(end.earliest(), 3.0);
        assert!(!wires.has_mail(1), "nothing leaves before the flush");
        assert_eq!(end.flush(&wires, || false), 3.0);
        assert!(end.is_clean());
        assert_eq!(end.earliest(), f64::INFINITY, "the flush resets it");
        assert!(!end.urgent());
        assert_eq!(wires.bh_min(1), 3.0);
        let mut got = Vec::new();
        wires.receive(1, |m| got.push(m.key().time));
        got.sort_by(f64::total_cmp);
        assert_eq!(got, [3.0, 4.0, 5.0]);
        assert_eq!(end.flush(&wires, || false), f64::INFINITY);
        // The emptied batch went back to the sender's pool and is reused.
        end.send(&wires, 1, event(8.0, 3));
        assert_eq!(end.earliest(), 8.0);
        assert_eq!(end.flush(&wires, || false), 8.0);
    }
}
