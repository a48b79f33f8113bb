//! Time Warp over MPI ranks (`mpirun -n R chronon run … --sync timewarp --threads W`): R ranks
//! of W worker threads each; a worker is (rank, thread), numbered `r * W + t`, and the LP
//! mapping, event ids and GVT report slots are over all `R × W` workers. Inside a rank the
//! workers reach each other as with threads (mailboxes, zero copy); a flush to a worker of
//! another rank hands the batch to the rank's `outgoing` mailbox, which only the rank's
//! **driver** thread empties (`driver.rs`): it serializes the messages into one record per
//! destination rank (`codec.rs`), tagged with its GVT colour, and hands them to the rank layer
//! (`transport::mpi::comm`); it decodes what arrives into the workers' mailboxes, and runs GVT
//! across ranks (`dgvt.rs`: Mattern's algorithm over reductions, with the in-rank round of
//! `gvt.rs` as its local round). The worker loop is the unchanged Time Warp worker.
//! Protocol and proof sketch: README.md beside `dgvt.rs` ("GVT across ranks", "Across ranks").

pub(super) mod codec;
pub(super) mod driver;
pub(super) mod pump;
pub(crate) mod run;

use std::ops::Range;

use super::lp::Msg;
use super::transport::{Mailboxes, Transport};
use crate::comm::{Batch, BatchPool, Mailbox};

/// The transport of a rank: mailboxes among its own workers, as with threads (only this
/// rank's workers' are used), and the batches workers handed over for other ranks.
pub(crate) struct RankWires<P> {
    mine: Range<usize>,
    local: Mailboxes<P>,
    /// Batches for workers of other ranks, emptied by the driver only. Its register is a
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

    /// The driver takes what workers handed over.
    pub(crate) fn take_outgoing(&self, f: impl FnMut(Batch<Msg<P>>)) {
        self.outgoing.take_batches(f);
    }

    /// Worker `w`'s mailbox (the driver delivers records from other ranks into it).
    #[inline]
    pub(super) fn mailbox(&self, w: usize) -> &Mailbox<Msg<P>> {
        self.local.mailbox(w)
    }

    /// Gives an emptied batch back to its sender's pool (the driver, once it serialized it).
    pub(super) fn give_back(&self, b: Batch<Msg<P>>) {
        self.local.give_back(b);
    }
}

impl<P: Send + 'static> Transport<P> for RankWires<P> {
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
        // For another rank: the driver sends it (driver.rs). For rule R2 this counts as
        // pushed (README, "GVT across ranks", D3).
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
