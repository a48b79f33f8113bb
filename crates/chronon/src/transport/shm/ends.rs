//! One worker's ends of the ring mesh: the producers of its outgoing rings, the consumers of its
//! incoming rings, and a private stash of records taken from them while it had to make room.
//!
//! The bounded wait (seed 000 §3.2): [`Ends::push`] waits a short time for ring space, then
//! calls the protocol's *make room* (which absorbs this worker's own inbox into the stash, in
//! whatever bracket the protocol's registers need) and retries with the records it kept; a
//! sender therefore never waits on a worker that is itself waiting, and no cycle of full rings
//! can deadlock. Per sender, records reach the receiver in sending order: a receive takes that
//! sender's stash first, then its ring.

use std::time::Duration;

use super::mesh::Record;
use crate::shm::{Consumer, Producer};

/// How long a sender waits for ring space before it makes room and retries.
pub(crate) const SEND_WAIT: Duration = Duration::from_micros(50);

/// One worker's ends (see the module doc). `Send`, not `Sync`: one thread uses them at a time.
pub(crate) struct Ends<R> {
    me: usize,
    /// The producer of ring `(me, r)` at `out[r]` (`None` at `me`).
    out: Vec<Option<Producer<R>>>,
    /// `(s, consumer of ring (s, me))` for every other worker `s`, by increasing `s`.
    inbox: Vec<(usize, Consumer<R>)>,
    /// Per incoming ring (as `inbox`): what an absorb took from it, not yet received.
    stash: Vec<Vec<R>>,
    /// Records in the stash.
    stashed: usize,
    /// The minimum time in the stash (`+inf`: empty).
    stash_min: f64,
    /// How many times a push found its ring still full after the bounded wait.
    full_retries: u64,
}

impl<R> std::fmt::Debug for Ends<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ends")
            .field("me", &self.me)
            .field("stashed", &self.stashed)
            .finish_non_exhaustive()
    }
}

impl<R: Record> Ends<R> {
    pub(super) fn new(
        me: usize,
        out: Vec<Option<Producer<R>>>,
        inbox: Vec<(usize, Consumer<R>)>,
    ) -> Ends<R> {
        let stash = inbox.iter().map(|_| Vec::new()).collect();
        Ends {
            me,
            out,
            inbox,
            stash,
            stashed: 0,
            stash_min: f64::INFINITY,
            full_retries: 0,
        }
    }

    /// This worker's number (over every process).
    #[inline]
    pub(crate) fn me(&self) -> usize {
        self.me
    }

    /// Whether some incoming ring's register is finite: a published record keeps it so until a
    /// drain takes the record (shm/README.md, ring R2), so `false` means nothing to take now.
    #[inline]
    pub(crate) fn rings_hold_mail(&self) -> bool {
        self.inbox.iter().any(|(_, c)| c.min_time().is_finite())
    }

    /// Whether something may wait for this worker, in the stash or the rings.
    #[inline]
    pub(crate) fn has_mail(&self) -> bool {
        self.stashed > 0 || self.rings_hold_mail()
    }

    /// A lower bound on the times of the records waiting for this worker: the minimum of its
    /// stash and of its incoming rings' registers.
    pub(crate) fn mail_min(&self) -> f64 {
        self.inbox
            .iter()
            .map(|(_, c)| c.min_time())
            .fold(self.stash_min, f64::min)
    }

    /// Moves everything published in the incoming rings to the stash; returns the minimum time
    /// of what it moved (`+inf`: nothing).
    pub(crate) fn absorb(&mut self) -> f64 {
        let mut min = f64::INFINITY;
        let mut n = 0;
        for ((_, c), stash) in self.inbox.iter_mut().zip(&mut self.stash) {
            n += c.drain(|r| {
                min = min.min(r.time());
                stash.push(r);
            });
        }
        self.stashed += n;
        self.stash_min = self.stash_min.min(min);
        min
    }

    /// Hands every waiting record to `f` with its sender: per sender its stash, then its ring
    /// (`all`: every ring; otherwise only rings whose register is finite, which holds every
    /// ring with a published record). Empties the stash; returns how many records it handed.
    pub(crate) fn take(&mut self, all: bool, mut f: impl FnMut(usize, R)) -> usize {
        let mut n = std::mem::take(&mut self.stashed);
        self.stash_min = f64::INFINITY;
        for ((s, c), stash) in self.inbox.iter_mut().zip(&mut self.stash) {
            for r in stash.drain(..) {
                f(*s, r);
            }
            if all || c.min_time().is_finite() {
                n += c.drain(|r| f(*s, r));
            }
        }
        n
    }

    /// Pushes `batch` (in order) into ring `(me, dst)`. When the ring stays full for
    /// [`SEND_WAIT`]: `give_up()` ends the push with the unsent rest still in `batch`
    /// (returns `false`); otherwise `make_room(self)` (the protocol's absorb) and a retry with
    /// the rest. `true`: everything was pushed.
    pub(crate) fn push(
        &mut self,
        dst: usize,
        batch: &mut Vec<R>,
        mut make_room: impl FnMut(&mut Self),
        mut give_up: impl FnMut() -> bool,
    ) -> bool {
        loop {
            let ring = self.out[dst].as_mut().expect("no ring to oneself");
            if ring.push_batch(batch, R::time, SEND_WAIT).is_ok() {
                return true;
            }
            self.full_retries += 1;
            if give_up() {
                return false;
            }
            // The receiver may be waiting for a ring of ours to drain: make room, keep the rest.
            make_room(self);
        }
    }

    /// How many times a push found its ring full after the bounded wait (and made room).
    pub(crate) fn full_retries(&self) -> u64 {
        self.full_retries
    }
}
