//! Time Warp's seam: what the Time Warp worker asks of a transport ([`TwTransport`]: what
//! waits for a worker and its BH_min, taking it, pushing a worker's batches, leftovers at the
//! end, the abort word) and the transport a run holds ([`Wires`]). Three transports implement
//! the seam, each on its own type in its own folder:
//!
//! - threads of one process, `Mailboxes` (`threads/tw.rs`): per-worker mailboxes (the
//!   bottom-half queues, whose register is BH_min) and per-worker pools that the receiver
//!   returns emptied batches to, so that a remote send allocates nothing once the pools are
//!   warm (comm/README.md, "Recycled batches");
//! - worker processes on one machine (`--procs`, Linux), `ShmWires` (`shm/tw.rs`): Time Warp's
//!   records on the shared-memory ring mesh;
//! - MPI ranks (feature `mpi`), `RankWires` (`mpi/tw.rs`): mailboxes inside the rank, and the
//!   rank's outgoing box, which Time Warp's rank driver empties.
//!
//! [`Wires`] is one of the three, chosen when the run starts: each call is one match on the
//! variant (per flush, per drain, per BH_min look), none per event, and the worker code is
//! compiled once for every transport.

use crate::comm::{Batch, BatchPool};
#[cfg(feature = "mpi")]
use crate::transport::mpi::RankWires;
#[cfg(all(target_os = "linux", not(chronon_loom)))]
use crate::transport::shm::ShmWires;
use crate::transport::threads::Mailboxes;
use crate::tw_msg::Msg;

/// What the Time Warp worker needs of a transport. Worker `w` calls the methods that take
/// `w` for itself only.
pub(crate) trait TwTransport<P> {
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

/// The run's transport.
pub(crate) enum Wires<P> {
    /// Threads of one process.
    Threads(Mailboxes<P>),
    /// Worker processes on one machine (`--procs`).
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    Procs(ShmWires<P>),
    /// MPI ranks.
    #[cfg(feature = "mpi")]
    Ranks(RankWires<P>),
}

/// `$body` with `$t` bound to the transport of whichever variant `$wires` is.
macro_rules! each {
    ($wires:expr, $t:ident => $body:expr) => {
        match $wires {
            Wires::Threads($t) => $body,
            #[cfg(all(target_os = "linux", not(chronon_loom)))]
            Wires::Procs($t) => $body,
            #[cfg(feature = "mpi")]
            Wires::Ranks($t) => $body,
        }
    };
}

impl<P: Send + 'static> Wires<P> {
    /// The threads transport for `workers` workers.
    pub(crate) fn threads(workers: usize) -> Self {
        Wires::Threads(Mailboxes::new(workers))
    }

    /// The transport between worker processes, if this run has it.
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    #[inline]
    pub(crate) fn procs(&self) -> Option<&ShmWires<P>> {
        match self {
            Wires::Procs(p) => Some(p),
            _ => None,
        }
    }

    /// The transport over MPI ranks, if this run has it.
    #[cfg(feature = "mpi")]
    #[inline]
    pub(crate) fn ranks(&self) -> Option<&RankWires<P>> {
        match self {
            Wires::Ranks(r) => Some(r),
            _ => None,
        }
    }
}

impl<P: Send + 'static> TwTransport<P> for Wires<P> {
    #[inline]
    fn has_mail(&self, w: usize) -> bool {
        each!(self, t => t.has_mail(w))
    }

    #[inline]
    fn bh_min(&self, w: usize) -> f64 {
        each!(self, t => t.bh_min(w))
    }

    #[inline]
    fn receive(&self, w: usize, f: impl FnMut(Msg<P>)) {
        each!(self, t => t.receive(w, f))
    }

    fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>)) {
        each!(self, t => t.leftovers(w, f))
    }

    #[inline]
    fn pool(&self, w: usize) -> Option<&BatchPool<Msg<P>>> {
        each!(self, t => t.pool(w))
    }

    #[inline]
    fn push(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: impl Fn() -> bool,
    ) {
        each!(self, t => t.push(w, dirty, outbox, spare, over))
    }

    #[inline]
    fn aborted(&self) -> bool {
        each!(self, t => t.aborted())
    }

    fn abort_others(&self) {
        each!(self, t => t.abort_others())
    }
}
