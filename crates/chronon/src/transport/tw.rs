//! Time Warp's seam: what the Time Warp worker asks of a transport ([`TwTransport`]: what
//! waits for a worker and its BH_min, taking it, pushing a worker's batches, leftovers at the
//! end, the abort word), the transport a run holds ([`Wires`]), and what GVT across ranks asks
//! of the transport between ranks ([`RankNet`]: the rank's sends and receives, and a
//! [`Reduce`]tion over every rank). Three transports implement
//! the seam, each on its own type in its own folder:
//!
//! - threads of one process, `Mailboxes` (`threads/tw.rs`): per-worker mailboxes (the
//!   bottom-half queues, whose register is BH_min) and per-worker pools that the receiver
//!   returns emptied batches to, so that a remote send allocates nothing once the pools are
//!   warm (comm/README.md, "Recycled batches");
//! - worker processes on one machine (`--procs`, Linux), `ShmWires` (`shm/tw.rs`): Time Warp's
//!   records on the shared-memory ring mesh;
//! - MPI ranks (feature `mpi`), `RankWires` (`mpi/tw.rs`): mailboxes inside the rank, and the
//!   rank's outgoing box, which the rank's link (`mpi/tw_link.rs`) empties.
//!
//! [`Wires`] is the same seam as a trait object (`Box<dyn Wires<P>>` in the workers' shared
//! state), chosen when the run starts: each call is one indirect call (per flush, per drain,
//! per BH_min look), and within a drain one per message; none per event otherwise, and the
//! worker code is compiled once for every transport. Every [`TwTransport`] is a [`Wires`].

use crate::comm::{Batch, BatchPool};
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

    /// After worker `w` stopped: waits until every worker of every process has stopped
    /// sending (`false`: the run was aborted). Nothing to wait for where no other process
    /// sends.
    fn end_barrier(&self, w: usize) -> bool {
        let _ = w;
        true
    }

    /// Messages that could not be sent before the end (at or after the end time).
    fn unsent(&self) -> u64 {
        0
    }

    /// The transport's own figure for worker `w`: sends that found no room and retried.
    fn full_retries(&self, w: usize) -> u64 {
        let _ = w;
        0
    }
}

// GVT across ranks (`executor/time_warp/dgvt.rs`, Mattern's algorithm) and what it needs of
// the transport between ranks.

/// How many summed values a contribution carries: the white messages in transit, the number
/// of ranks that failed (so that every rank learns of a failure from the next reduction), and
/// the number of ranks whose workers asked for GVT during the computation (so that every rank
/// begins the next computation at once, together: `Outcome::wanted` in `dgvt.rs`).
pub(crate) const SUMS: usize = 3;

/// A non-blocking all-reduction over every rank: element-wise sum of `sums`, minimum of `min`.
/// At most one is in progress per rank; every rank starts them in the same order (they are
/// collective).
pub(crate) trait Reduce {
    fn start(&mut self, sums: [i64; SUMS], min: f64);
    /// The result of the reduction started last, once every rank contributed (`None`: not
    /// yet). Called again after it returned `Some`, it returns `None`.
    fn test(&mut self) -> Option<([i64; SUMS], f64)>;
}

/// The rank's colour book, which the transport between ranks writes as it sends and delivers
/// records (rules D1, D2): `Dgvt` is one.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) trait Colours {
    /// A record whose earliest message is at `time` leaves this rank now; returns the colour
    /// it carries.
    fn on_send(&mut self, time: f64) -> u64;
    /// A record of colour `epoch` was delivered to the workers it is for (after its messages
    /// are in their mailboxes, never before).
    fn on_receive(&mut self, epoch: u64);
    /// Records sent and received so far, all colours (for the end of a run).
    fn totals(&self) -> (u64, u64);
}

/// What GVT across ranks needs of the transport between ranks: its reduction, and the rank's
/// data path (what the rank's workers handed over for other ranks goes out, what other ranks
/// sent comes into the workers' mailboxes), which writes the colour book as it goes.
/// `owner(lp)` is the worker that owns LP `lp`. Over MPI: `transport/mpi/tw_link.rs`.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) trait RankNet: Reduce + Send {
    /// Sends everything the rank's workers handed over: one record per destination rank,
    /// coloured [`Colours::on_send`] with its earliest time (rule D2). Returns whether there
    /// was anything; `Err`: a message could not be encoded (the rest went; the run fails).
    fn send(
        &mut self,
        owner: &dyn Fn(u32) -> usize,
        book: &mut dyn Colours,
    ) -> Result<bool, String>;
    /// Delivers what arrived into the workers' mailboxes, each record counted
    /// ([`Colours::on_receive`]) once its messages are there (rule D1). Returns whether
    /// anything arrived; `Err`: a record that does not decode.
    fn receive(
        &mut self,
        owner: &dyn Fn(u32) -> usize,
        book: &mut dyn Colours,
    ) -> Result<bool, String>;
    /// Once every worker of every rank stopped: exchanges [`Colours::totals`] with every rank,
    /// delivering meanwhile, until every record sent has been delivered.
    fn settle(
        &mut self,
        owner: &dyn Fn(u32) -> usize,
        book: &mut dyn Colours,
    ) -> Result<(), String>;
    /// Whether another rank stopped the run.
    fn aborted(&self) -> bool;
    /// Tells every rank to stop (this one failed).
    fn abort(&self);
    /// Records sent, messages sent, messages received.
    fn figures(&self) -> (u64, u64, u64);
    /// The driver's loop made a pass; `moved`: something moved in it. A pass where nothing
    /// did backs off at the transport's pace (spin, yield, then short sleeps).
    fn pause(&mut self, moved: bool);
}

/// The run's transport as the workers' shared state holds it.
pub(crate) type WiresBox<'a, P> = Box<dyn Wires<P> + 'a>;

/// The transport of a run on the threads of one process (`threads/tw.rs`: per-worker mailboxes
/// and batch pools), for `workers` workers.
pub(crate) fn threads<'a, P: Send + 'static>(workers: usize) -> WiresBox<'a, P> {
    Box::new(crate::transport::threads::Mailboxes::new(workers))
}

/// The run's transport: [`TwTransport`] with its closures as trait objects, so that it can be
/// one (`dyn Wires<P>`).
pub(crate) trait Wires<P>: Sync {
    fn has_mail(&self, w: usize) -> bool;
    fn bh_min(&self, w: usize) -> f64;
    fn receive(&self, w: usize, f: &mut dyn FnMut(Msg<P>));
    fn leftovers(&self, w: usize, f: &mut dyn FnMut(Msg<P>));
    fn pool(&self, w: usize) -> Option<&BatchPool<Msg<P>>>;
    fn push(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: &dyn Fn() -> bool,
    );
    fn aborted(&self) -> bool;
    fn abort_others(&self);
    fn end_barrier(&self, w: usize) -> bool;
    fn unsent(&self) -> u64;
    fn full_retries(&self, w: usize) -> u64;
}

impl<P, T: TwTransport<P> + Sync> Wires<P> for T {
    #[inline]
    fn has_mail(&self, w: usize) -> bool {
        TwTransport::has_mail(self, w)
    }

    #[inline]
    fn bh_min(&self, w: usize) -> f64 {
        TwTransport::bh_min(self, w)
    }

    fn receive(&self, w: usize, f: &mut dyn FnMut(Msg<P>)) {
        TwTransport::receive(self, w, f)
    }

    fn leftovers(&self, w: usize, f: &mut dyn FnMut(Msg<P>)) {
        TwTransport::leftovers(self, w, f)
    }

    #[inline]
    fn pool(&self, w: usize) -> Option<&BatchPool<Msg<P>>> {
        TwTransport::pool(self, w)
    }

    fn push(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: &dyn Fn() -> bool,
    ) {
        TwTransport::push(self, w, dirty, outbox, spare, over)
    }

    #[inline]
    fn aborted(&self) -> bool {
        TwTransport::aborted(self)
    }

    fn abort_others(&self) {
        TwTransport::abort_others(self)
    }

    fn end_barrier(&self, w: usize) -> bool {
        TwTransport::end_barrier(self, w)
    }

    fn unsent(&self) -> u64 {
        TwTransport::unsent(self)
    }

    fn full_retries(&self, w: usize) -> u64 {
        TwTransport::full_retries(self, w)
    }
}
