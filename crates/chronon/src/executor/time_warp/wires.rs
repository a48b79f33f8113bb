//! The transport a Time Warp run holds ([`Wires`]): one of the three implementations of the
//! seam (`transport.rs`), chosen when the run starts. Each call is one match on the variant
//! (per flush, per drain, per BH_min look), none per event; the worker code is compiled once
//! for every transport.

use super::lp::Msg;
#[cfg(feature = "mpi")]
use super::ranks::RankWires;
#[cfg(all(target_os = "linux", not(chronon_loom)))]
use super::shm_wires::ShmWires;
use super::transport::{Mailboxes, Transport};
use crate::comm::{Batch, BatchPool};

/// The run's transport.
pub(super) enum Wires<P> {
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
    pub(super) fn threads(workers: usize) -> Self {
        Wires::Threads(Mailboxes::new(workers))
    }

    /// The transport between worker processes, if this run has it.
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    #[inline]
    pub(super) fn procs(&self) -> Option<&ShmWires<P>> {
        match self {
            Wires::Procs(p) => Some(p),
            _ => None,
        }
    }

    /// The transport over MPI ranks, if this run has it.
    #[cfg(feature = "mpi")]
    #[inline]
    pub(super) fn ranks(&self) -> Option<&RankWires<P>> {
        match self {
            Wires::Ranks(r) => Some(r),
            _ => None,
        }
    }
}

impl<P: Send + 'static> Transport<P> for Wires<P> {
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
