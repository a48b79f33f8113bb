//! Time Warp's seam over MPI ranks ([`RankWires`]): inside a rank, the threads transport's
//! mailboxes among the rank's own workers; a batch for a worker of another rank goes to the
//! rank's outgoing box, which only the rank's link empties (`tw_link.rs`: it encodes the
//! messages with `tw_codec.rs` and sends them through `comm.rs`).

use std::ops::Range;

use crate::comm::{Batch, BatchPool, Mailbox};
use crate::transport::threads::Mailboxes;
use crate::transport::tw::TwTransport;
use crate::tw_msg::Msg;

/// The transport of a rank: mailboxes among its own workers, as with threads (only this
/// rank's workers' are used), and the batches workers handed over for other ranks.
pub(crate) struct RankWires<P> {
    mine: Range<usize>,
    local: Mailboxes<P>,
    /// Batches for workers of other ranks, emptied by the rank's link only. Its register is a
    /// lower bound on what waits there.
    outgoing: Mailbox<Msg<P>>,
}

impl<P: Send + 'static> RankWires<P> {
    /// The transport of the rank whose workers are `mine`, out of `workers`.
    pub(crate) fn new(workers: usize, mine: Range<usize>) -> Self {
        RankWires {
            mine,
            local: Mailboxes::new(workers),
            outgoing: Mailbox::new(),
        }
    }

    /// Whether worker `w` runs in this rank.
    #[inline(always)]
    pub(crate) fn is_local(&self, w: usize) -> bool {
        self.mine.contains(&w)
    }

    /// The link takes what workers handed over.
    pub(crate) fn take_outgoing(&self, f: impl FnMut(Batch<Msg<P>>)) {
        self.outgoing.take_batches(f);
    }

    /// Worker `w`'s mailbox (the link delivers records from other ranks into it).
    #[inline]
    pub(crate) fn mailbox(&self, w: usize) -> &Mailbox<Msg<P>> {
        self.local.mailbox(w)
    }

    /// Gives an emptied batch back to its sender's pool (the link, once it serialized it).
    pub(crate) fn give_back(&self, b: Batch<Msg<P>>) {
        self.local.give_back(b);
    }
}

/// On a reference: the rank's link (`tw_link.rs`) holds the same wires as the workers.
impl<P: Send + 'static> TwTransport<P> for &RankWires<P> {
    #[inline]
    fn has_mail(&self, w: usize) -> bool {
        self.local.has_mail(w)
    }

    #[inline]
    fn bh_min(&self, w: usize) -> f64 {
        self.local.bh_min(w)
    }

    fn receive(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.local.receive(w, f)
    }

    fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.local.leftovers(w, f)
    }

    #[inline]
    fn pool(&self, w: usize) -> Option<&BatchPool<Msg<P>>> {
        self.local.pool(w)
    }

    fn push(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: impl Fn() -> bool,
    ) {
        // For another rank: the rank's link sends it (`tw_link.rs`, when the rank's driver
        // steps). For rule R2 this counts as pushed (README, "GVT across ranks", D3).
        dirty.retain(|&o| {
            if self.is_local(o) {
                return true;
            }
            if let Some(b) = outbox[o].take() {
                self.outgoing.push_batch_node(b);
            }
            false
        });
        self.local.push(w, dirty, outbox, spare, over);
    }
}
