//! Time Warp's seam between the threads of one process: a mailbox (bottom-half queue, whose
//! register is BH_min) and a pool of spare batches per worker.

use crate::comm::{Batch, BatchPool, Mailbox};
use crate::transport::tw::TwTransport;
use crate::tw_msg::Msg;

/// The threads transport: a mailbox and a pool of spare batches per worker.
pub(crate) struct Mailboxes<P> {
    boxes: Vec<Mailbox<Msg<P>>>,
    pools: Vec<BatchPool<Msg<P>>>,
}

impl<P: Send + 'static> Mailboxes<P> {
    pub(crate) fn new(workers: usize) -> Self {
        Mailboxes {
            boxes: (0..workers).map(|_| Mailbox::new()).collect(),
            pools: (0..workers).map(|_| BatchPool::new()).collect(),
        }
    }

    /// Worker `w`'s mailbox (a rank's driver delivers records from other ranks into it).
    #[cfg(feature = "mpi")]
    #[inline]
    pub(crate) fn mailbox(&self, w: usize) -> &Mailbox<Msg<P>> {
        &self.boxes[w]
    }

    /// Gives an emptied batch back to its sender's pool.
    #[inline]
    pub(crate) fn give_back(&self, b: Batch<Msg<P>>) {
        match b.owner() {
            Some(o) => self.pools[o].give_back(b),
            None => drop(b),
        }
    }
}

impl<P: Send + 'static> TwTransport<P> for Mailboxes<P> {
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
