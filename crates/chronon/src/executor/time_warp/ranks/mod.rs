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
use crate::comm::{Batch, Mailbox};

/// What the transport keeps for a rank: which workers are its own, and the batches workers
/// handed over for other ranks.
pub(crate) struct RankWires<P> {
    mine: Range<usize>,
    /// Batches for workers of other ranks, emptied by the driver only. Its register is a
    /// lower bound on what waits there.
    outgoing: Mailbox<Msg<P>>,
}

impl<P> RankWires<P> {
    pub(crate) fn new(mine: Range<usize>) -> Self {
        RankWires {
            mine,
            outgoing: Mailbox::new(),
        }
    }

    /// Whether worker `w` runs in this rank.
    #[inline(always)]
    pub(crate) fn is_local(&self, w: usize) -> bool {
        self.mine.contains(&w)
    }

    /// Hands a batch for a worker of another rank to the driver.
    #[inline]
    pub(crate) fn hand_over(&self, b: Batch<Msg<P>>) {
        self.outgoing.push_batch_node(b);
    }

    /// The driver takes what workers handed over.
    pub(crate) fn take_outgoing(&self, f: impl FnMut(Batch<Msg<P>>)) {
        self.outgoing.take_batches(f);
    }
}
