//! The transport seam: how events and registers move between the workers of a run, apart from
//! what a protocol decides. A protocol (window, lock-step, null messages) is written once
//! against [`Endpoint`], the view one worker has of the transport, and runs unchanged over
//!
//! - [`threads`]: the threads of one process (today's mailboxes, [`Gsu`](crate::gsu::Gsu),
//!   barrier kinds, parking),
//! - [`shm`] (Linux): workers that are (process, thread) pairs on one machine, with shared-memory
//!   rings between every pair, the GSU registers and a barrier in a shared control segment.
//!   The same ring mesh carries Time Warp's records between processes (`shm/shared.rs`), and
//! - [`mpi`] (feature `mpi`): workers that are (rank, thread) pairs over the ranks of an
//!   `mpirun`, mailboxes inside a rank and serialized batches between ranks (`mpi/net.rs`).
//!
//! Time Warp's own seam is [`tw`] (the worker's transport, and what GVT across ranks asks of
//! the transport between ranks), implemented by the same three.
//!
//! Dispatch is static (the protocols are generic over the endpoint type): no per-event dynamic
//! call. Time Warp's `tw::Wires` is a trait object instead: one dynamic call per flush, drain
//! and BH_min look (and one per message taken in a drain). Protocol, invariants and proof sketches: `README.md` beside this file.

use crate::event::Event;
use crate::gsu::{Published, Snapshot};
use crate::model::Time;

pub(crate) mod mpi;
#[cfg(target_os = "linux")]
pub(crate) mod shm;
pub(crate) mod threads;
pub(crate) mod tw;

#[cfg(all(target_os = "linux", not(chronon_loom)))]
pub(crate) mod wire;

/// One worker's view of the transport: send to a worker, receive what waits for me, the GSU
/// registers (MOE published, MOM and TMC kept by sends and receives, a consistent snapshot),
/// a barrier over every worker of the run, the channel registers and parking of the
/// null-message protocol, and an abort word.
pub(crate) trait Endpoint<E> {
    /// This worker's number (over every process of the run).
    fn me(&self) -> usize;

    /// (S1, S2) Sends `batch` to worker `dst != me`: counted in `dst`'s TMC first, then made
    /// visible with `dst`'s MOM lowered to cover it. The caller keeps its MOE at or below the
    /// events' times until this returns.
    fn send(&mut self, dst: usize, batch: Vec<Event<E>>);

    /// (R1–R5) Receives everything that waits for this worker: each event goes to `f`, then
    /// `after` gives the registers to publish (they must cover what was received), and TMC
    /// goes down, inside one odd epoch. Returns the number received.
    fn receive<S>(
        &mut self,
        state: &mut S,
        f: impl FnMut(&mut S, Event<E>),
        after: impl FnOnce(&mut S) -> Published,
    ) -> usize;

    /// Publishes this worker's registers.
    fn publish(&mut self, p: &Published);

    /// A consistent cut of every worker's registers (gsu/README.md, C1–C4).
    fn snapshot(&mut self, out: &mut Snapshot);

    /// Publishes `p`, then takes a snapshot; returns its LBTS (the termination test).
    fn publish_and_snapshot(&mut self, p: &Published, out: &mut Snapshot) -> Time {
        self.publish(p);
        self.snapshot(out);
        out.lbts()
    }

    /// Whether something may wait for this worker (a hint for the null-message wait; may be a
    /// false positive, never a false negative once the sender's `send` returned).
    fn has_mail(&self) -> bool;

    /// Waits until every worker of the run has arrived. `false`: the run was aborted (another
    /// worker or process asked everyone to stop); the caller must leave.
    #[must_use]
    fn barrier(&mut self) -> bool;

    /// The barrier that ends a round of the round protocols (window, lock-step: after every
    /// worker flushed its sends, before the next round's receive and snapshot barrier). By
    /// default a full [`barrier`](Endpoint::barrier): every send is then in its mailbox before
    /// the next receive. A transport whose snapshot barrier itself delivers every send made
    /// before it, and folds what it delivered into the snapshot (MPI, `mpi/net.rs`), may make
    /// this one cheaper; the worker then takes that delivery with
    /// [`settle`](Endpoint::settle) right after the snapshot barrier. `false`: aborted.
    #[must_use]
    fn round_end(&mut self) -> bool {
        self.barrier()
    }

    /// Right after a snapshot barrier of the round protocols: moves into the worker's pending
    /// set (through `f`) what that barrier delivered, which its snapshot already covers
    /// (see [`round_end`](Endpoint::round_end)). By default nothing (a full `round_end`
    /// delivered everything before the round's receive).
    fn settle<S>(&mut self, state: &mut S, f: impl FnMut(&mut S, Event<E>)) {
        let _ = (state, f);
    }

    /// Null messages: the channel clock from worker `from` to worker `to` (the time below which
    /// nothing will ever come along it).
    fn channel(&self, from: usize, to: usize) -> Time;

    /// Null messages: raises this worker's channel clock towards `to` (sends a null message).
    /// Every event sent to `to` below `t` must have been sent before.
    fn raise_channel(&self, to: usize, t: Time);

    /// Wakes worker `w` if it waits in [`Endpoint::wait_until`].
    fn wake(&self, w: usize);

    /// Waits until `ready()` holds (re-checked after every wake; it may also be re-checked
    /// spuriously).
    fn wait_until(&mut self, ready: impl Fn(&Self) -> bool);

    /// Asks every worker of the run to stop (an error under null messages).
    fn abort(&self);

    /// Whether some worker asked everyone to stop.
    fn aborted(&self) -> bool;

    /// Null messages' global-event rendezvous: every worker arrives; the last one runs `last`
    /// while the others wait, then all leave. `false`: aborted while waiting.
    fn rendezvous(&mut self, last: impl FnOnce(&mut Self)) -> bool;

    /// The transport's own per-worker figures for the report (none by default).
    #[cfg_attr(chronon_loom, allow(dead_code))] // its caller (conservative/parts.rs) is not built under loom
    fn figures(&self, out: &mut Vec<(&'static str, f64)>) {
        let _ = out;
    }
}
