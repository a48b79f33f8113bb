//! Remote send and receive: the seam between the Time Warp protocol and how events reach
//! another worker. The protocol asks a transport for what [`Transport`] names (what waits for
//! a worker and its BH_min, taking it, pushing a worker's batches, leftovers at the end, the
//! abort word) and sends through its own [`Endpoint`]; three transports implement the seam,
//! each on its own type:
//!
//! - threads of one process, [`Mailboxes`] (here): per-worker mailboxes (the bottom-half
//!   queues, whose register is BH_min) and per-worker pools that the receiver returns emptied
//!   batches to, so that a remote send allocates nothing once the pools are warm
//!   (comm/README.md, "Recycled batches");
//! - worker processes on one machine (`--procs`, Linux), `ShmWires` (`shm_wires.rs`): Time
//!   Warp's records on the shared-memory ring mesh of `transport/shm/`;
//! - MPI ranks (feature `mpi`), `RankWires` (`ranks/mod.rs`): mailboxes inside the rank, and
//!   the rank's driver for workers of other ranks.
//!
//! A run holds its transport as a [`Wires`](super::wires::Wires) (`wires.rs`): one match per
//! call, that is per flush, per drain and per BH_min look, none per event.

use super::lp::Msg;
use crate::comm::{Batch, BatchPool, Mailbox};
use crate::event::Keyed;

/// What the Time Warp worker needs of a transport. Worker `w` calls the methods that take
/// `w` for itself only.
pub(super) trait Transport<P> {
    /// Whether something may wait for worker `w` (a hint: a false positive costs a look; a
    /// transport whose receive looks anyway says `true`).
    fn has_mail(&self, w: usize) -> bool;

    /// BH_min of worker `w`: a lower bound on the times of the messages waiting for it (for
    /// preemption's check).
    fn bh_min(&self, w: usize) -> f64;

    /// Hands everything waiting for worker `w` to `f`, in no particular order (per sender in
    /// sending order), and gives emptied batches back to their senders.
    fn receive(&self, w: usize, f: impl FnMut(Msg<P>));

    /// What is left for worker `w` once every worker has stopped.
    fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>));

    /// Where emptied batches of worker `w` come back (`None`: a sender keeps its own).
    fn pool(&self, w: usize) -> Option<&BatchPool<Msg<P>>> {
        let _ = w;
        None
    }

    /// Pushes the batches of worker `w` for the workers in `dirty` (taking them from
    /// `outbox`; emptied ones go to `spare` where the transport empties them itself).
    /// `over()`: whether the run is over (a transport that cannot get room then drops what
    /// is left, which is at or after the end time, and counts it).
    fn push(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: impl Fn() -> bool,
    );

    /// Whether another process asked every process to stop.
    fn aborted(&self) -> bool {
        false
    }

    /// Asks the workers of every other process to stop (this one failed).
    fn abort_others(&self) {}
}

/// The threads transport: a mailbox and a pool of spare batches per worker.
pub(super) struct Mailboxes<P> {
    boxes: Vec<Mailbox<Msg<P>>>,
    pools: Vec<BatchPool<Msg<P>>>,
}

impl<P: Send + 'static> Mailboxes<P> {
    pub(super) fn new(workers: usize) -> Self {
        Mailboxes {
            boxes: (0..workers).map(|_| Mailbox::new()).collect(),
            pools: (0..workers).map(|_| BatchPool::new()).collect(),
        }
    }

    /// Worker `w`'s mailbox (a rank's driver delivers records from other ranks into it).
    #[cfg(feature = "mpi")]
    #[inline]
    pub(super) fn mailbox(&self, w: usize) -> &Mailbox<Msg<P>> {
        &self.boxes[w]
    }

    /// Gives an emptied batch back to its sender's pool.
    #[inline]
    pub(super) fn give_back(&self, b: Batch<Msg<P>>) {
        match b.owner() {
            Some(o) => self.pools[o].give_back(b),
            None => drop(b),
        }
    }
}

impl<P: Send + 'static> Transport<P> for Mailboxes<P> {
    #[inline]
    fn has_mail(&self, w: usize) -> bool {
        !self.boxes[w].is_empty()
    }

    #[inline]
    fn bh_min(&self, w: usize) -> f64 {
        self.boxes[w].min_time()
    }

    fn receive(&self, w: usize, mut f: impl FnMut(Msg<P>)) {
        self.boxes[w].take_batches(|mut b| {
            b.drain_into(&mut f);
            self.give_back(b);
        });
    }

    fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.boxes[w].take(f);
    }

    #[inline]
    fn pool(&self, w: usize) -> Option<&BatchPool<Msg<P>>> {
        self.pools.get(w)
    }

    #[inline]
    fn push(
        &self,
        _w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        _spare: &mut Vec<Batch<Msg<P>>>,
        _over: impl Fn() -> bool,
    ) {
        for o in dirty.drain(..) {
            if let Some(b) = outbox[o].take() {
                self.boxes[o].push_batch_node(b);
            }
        }
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
    pub(super) fn send(&mut self, wires: &impl Transport<P>, o: usize, m: Msg<P>) {
        self.earliest = self.earliest.min(m.key().time);
        self.urgent |= matches!(m, Msg::Anti(_));
        let slot = &mut self.outbox[o];
        if slot.is_none() {
            if self.spare.is_empty() {
                // Across processes there are no pools: a sender keeps its own batches.
                if let Some(pool) = wires.pool(self.w) {
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
    pub(super) fn flush(&mut self, wires: &impl Transport<P>, over: impl Fn() -> bool) -> f64 {
        if self.dirty.is_empty() {
            // Nothing queued (every event without a remote send): nothing to push.
            return f64::INFINITY;
        }
        let min = std::mem::replace(&mut self.earliest, f64::INFINITY);
        self.urgent = false;
        wires.push(
            self.w,
            &mut self.dirty,
            &mut self.outbox,
            &mut self.spare,
            over,
        );
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
        let wires = Mailboxes::<u32>::new(2);
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
