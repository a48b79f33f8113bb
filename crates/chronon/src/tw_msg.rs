//! What Time Warp workers send each other, below every transport: an event entry with its
//! tie-order stack ([`TwEvent`], [`Stack`]) or a cancellation ([`Anti`]), as a [`Msg`]. The
//! Time Warp executor (`executor/time_warp/`) makes and consumes them; each transport
//! (`transport/`) carries them, as they are between threads and encoded between processes and
//! ranks.

use crate::event::{Event, EventKey, Keyed};
use crate::model::{LpId, Time};

/// Bit 63 of an event id: the event is *stacked* (its order stack, below, has more than one
/// key). Ids are `worker << 48 | n` with fewer than 2^15 workers, so the bit is free.
pub(crate) const STACKED: u64 = 1 << 63;

/// An event as Time Warp moves it: a flat 32-byte entry (for an empty payload, as the
/// sequential executor's `Event`) holding a run-unique id (what an anti-message names) and
/// the key that orders it in the pending set.
///
/// The sequential executor pops a priority queue by key, so an event sent with zero delay and a
/// smaller key than its sender's event runs right after it, not before. Its position is the
/// *order stack* `V(e)`: `V(e) = [key(e)]` when `key(e)` exceeds the head of its parent's
/// stack, otherwise the parent's stack cut at the first entry `<= key(e)`, with `key(e)`
/// appended. The sequential pop order is the lexicographic order of these stacks (see
/// `executor/time_warp/README.md`). For the common one-key stack the entry's `(time, src, seq)` is the event's own
/// key. A *stacked* event (id bit [`STACKED`]) carries the **head** of its stack in
/// `(time, src, seq)` instead (every key of a stack has the event's time), so that the pending
/// set orders every entry by its own fields; its stack, whose last key is its own, lives in
/// the worker's side table (`Orders`, `executor/time_warp/lp.rs`) and travels beside the
/// entry in a [`Msg`].
#[derive(Debug)]
pub(crate) struct TwEvent<P> {
    pub(crate) time: Time,
    /// Own send counter, or the stack head's for a stacked event.
    pub(crate) seq: u64,
    pub(crate) id: u64,
    /// Own sender, or the stack head's for a stacked event.
    pub(crate) src: LpId,
    pub(crate) dst: LpId,
    pub(crate) payload: P,
}

impl<P> TwEvent<P> {
    /// A plain (one-key) entry for `e` with id `id`.
    #[inline(always)]
    pub(crate) fn plain(e: Event<P>, id: u64) -> Self {
        debug_assert_eq!(id & STACKED, 0, "ids below 2^63");
        TwEvent {
            time: e.time,
            seq: e.seq,
            id,
            src: e.src,
            dst: e.dst,
            payload: e.payload,
        }
    }

    /// The head of the order stack (its time is the event's time): what the pending set
    /// orders by; the event's own key unless it is stacked.
    #[inline(always)]
    pub(crate) fn head(&self) -> EventKey {
        EventKey {
            time: self.time,
            seq: self.seq,
            src: self.src,
        }
    }

    /// Whether the order stack has more than one key (then it is in the side table).
    #[inline(always)]
    pub(crate) fn stacked(&self) -> bool {
        self.id & STACKED != 0
    }
}

impl<P> Keyed for TwEvent<P> {
    /// Pending sets order by the stack head: the lowest timestamp first (LTF), and close to the
    /// sequential order; the exact order per LP is enforced by rollback.
    #[inline(always)]
    fn key(&self) -> EventKey {
        self.head()
    }
}

/// An order stack of two or more keys, head first, the event's own key last.
pub(crate) type Stack = Vec<EventKey>;

/// The cancellation of the event `id` (key `key`) sent to LP `dst`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Anti {
    pub(crate) dst: LpId,
    pub(crate) key: EventKey,
    pub(crate) id: u64,
}

/// What workers send each other through their mailboxes (the bottom-half queues).
#[derive(Debug)]
pub(crate) enum Msg<P> {
    /// An event, with its order stack when it is stacked.
    #[allow(clippy::box_collection)] // a thin pointer: the common `None` costs 8 bytes
    Event(TwEvent<P>, Option<Box<Stack>>),
    Anti(Anti),
}

impl<P> Keyed for Msg<P> {
    #[inline(always)]
    fn key(&self) -> EventKey {
        match self {
            Msg::Event(e, _) => e.head(),
            Msg::Anti(a) => a.key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_32_bytes_for_an_empty_payload() {
        assert_eq!(std::mem::size_of::<TwEvent<()>>(), 32);
        assert_eq!(std::mem::size_of::<TwEvent<u64>>(), 40);
    }
}
