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

use super::lp::Msg;
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
use crate::comm::{Batch, BatchPool, Mailbox};
use crate::event::Keyed;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKey;
    use crate::executor::time_warp::lp::{Anti, TwEvent};

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
