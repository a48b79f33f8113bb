//! What Time Warp keeps per event and per LP: the event wrapper with its tie-order stack, the
//! messages between workers, the processed-event records, and the LP's history.

use std::cmp::Ordering;
use std::collections::VecDeque;

use crate::event::{Event, EventKey, Keyed};
use crate::fingerprint::LpDigest;
use crate::model::{LpId, LpMeta};

/// An event as Time Warp moves it: the engine's event, a run-unique id (what an anti-message
/// names), and the *order stack* that places it in the sequential executor's order.
///
/// The sequential executor pops a priority queue by key, so an event sent with zero delay and a
/// smaller key than its sender's event runs right after it, not before. Its position is the
/// stack `V(e)`: `V(e) = [key(e)]` when `key(e)` exceeds the head of its parent's stack,
/// otherwise the parent's stack cut at the first entry `<= key(e)`, with `key(e)` appended. The
/// sequential pop order is the lexicographic order of these stacks (see README.md); `stack` is
/// `None` for the common one-entry case.
#[derive(Debug)]
pub(crate) struct TwEvent<P> {
    pub(crate) ev: Event<P>,
    pub(crate) id: u64,
    /// A thin pointer (8 bytes), where `Box<[EventKey]>` would take 16 in every event.
    #[allow(clippy::box_collection)]
    pub(crate) stack: Option<Box<Vec<EventKey>>>,
}

impl<P> TwEvent<P> {
    /// The head of the order stack (its time is the event's time).
    #[inline(always)]
    pub(crate) fn head(&self) -> EventKey {
        match &self.stack {
            None => self.ev.key(),
            Some(s) => s[0],
        }
    }

    /// The sequential executor's order between two events.
    #[inline]
    pub(crate) fn order(&self, other: &Self) -> Ordering {
        match (&self.stack, &other.stack) {
            (None, None) => self.ev.key().cmp(&other.ev.key()),
            _ => {
                let (ka, kb) = (self.ev.key(), other.ev.key());
                let a: &[EventKey] = self
                    .stack
                    .as_deref()
                    .map_or(std::slice::from_ref(&ka), |v| v);
                let b: &[EventKey] = other
                    .stack
                    .as_deref()
                    .map_or(std::slice::from_ref(&kb), |v| v);
                a.cmp(b)
            }
        }
    }

    /// The order stack of an event with key `child` sent while this event runs.
    #[inline]
    #[allow(clippy::box_collection)]
    pub(crate) fn child_stack(&self, child: EventKey) -> Option<Box<Vec<EventKey>>> {
        let head = self.head();
        if child > head {
            return None;
        }
        let key = self.ev.key();
        let parent: &[EventKey] = self
            .stack
            .as_deref()
            .map_or(std::slice::from_ref(&key), |v| v);
        let cut = parent
            .iter()
            .position(|k| *k <= child)
            .unwrap_or(parent.len());
        let mut s = Vec::with_capacity(cut + 1);
        s.extend_from_slice(&parent[..cut]);
        s.push(child);
        Some(Box::new(s))
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
    Event(TwEvent<P>),
    Anti(Anti),
}

impl<P> Keyed for Msg<P> {
    #[inline(always)]
    fn key(&self) -> EventKey {
        match self {
            Msg::Event(e) => e.head(),
            Msg::Anti(a) => a.key,
        }
    }
}

/// One send of a processed event, kept to cancel it on rollback. The rest of its key is
/// known: the sender is the LP, and the `k`-th send of an event carried the send counter
/// `meta.seq + k` of the event's record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sent {
    pub(crate) dst: LpId,
    pub(crate) time: f64,
    pub(crate) id: u64,
}

/// A saved copy of the state before processed event number `at` (copy state saving).
#[derive(Debug)]
pub(crate) struct Checkpoint<S> {
    pub(crate) at: u64,
    pub(crate) state: S,
    pub(crate) meta: LpMeta,
}

/// One LP under Time Warp: the part every event touches (its *hot* record). What only
/// fossil collection or copy state saving touch lives in the LP's [`TwCold`] record, in a
/// parallel vector (same index).
///
/// Processed events are numbered from 0 in processing order; `next` is the number of the next
/// one. The records themselves are in the worker's history arena (`history.rs`): `last` is the
/// position of the newest, and each record links to the LP's previous one.
#[derive(Debug)]
#[repr(C, align(64))] // bookkeeping first (80 bytes), then the state
pub(crate) struct TwLp<S> {
    pub(crate) id: LpId,
    /// Whether the last processed event's order stack is its key alone.
    pub(crate) last_plain: bool,
    /// Key of the last processed event still in the arena (zero when there is none).
    pub(crate) last_key: EventKey,
    pub(crate) meta: LpMeta,
    /// The digest of every event processed and not rolled back (committed or not): folded when
    /// an event runs, restored from the record on rollback. At the end of an incomplete run the
    /// oldest uncommitted record's digest is the committed one.
    pub(crate) digest: LpDigest,
    /// Arena position of the newest record (`history::NONE`: none).
    pub(crate) last: u64,
    /// Number of the next event this LP processes.
    pub(crate) next: u64,
    pub(crate) state: S,
}

/// The rarely touched part of an LP (see [`TwLp`]); used by copy state saving only: the
/// commit point, the checkpoints, and the committed events that a rollback may still coast
/// over once the arena has freed their records.
#[derive(Debug)]
pub(crate) struct TwCold<S, P> {
    /// Number of events committed.
    pub(crate) committed: u64,
    pub(crate) checkpoints: VecDeque<Checkpoint<S>>,
    /// Committed events numbered `coast_base ..` (up to `arena_base`), oldest first.
    pub(crate) coast: VecDeque<TwEvent<P>>,
    pub(crate) coast_base: u64,
    /// Number of the LP's oldest record still in the arena.
    pub(crate) arena_base: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: f64, src: u32, seq: u64, stack: Option<Vec<EventKey>>) -> TwEvent<()> {
        TwEvent {
            ev: Event::new(EventKey { time, src, seq }, 0, ()),
            id: 0,
            stack: stack.map(Box::new),
        }
    }

    fn k(time: f64, src: u32) -> EventKey {
        EventKey { time, src, seq: 0 }
    }

    #[test]
    fn zero_delay_children_follow_their_parent() {
        // Parent (1, src 7) sends (1, src 4) and (1, src 5) with zero delay; then (1, src 4)
        // sends (1, src 3) and (1, src 4.8 ~ src 6 below 7).
        let a = ev(1.0, 7, 0, None);
        let b2 = ev(1.0, 4, 0, a.child_stack(k(1.0, 4)).map(|b| *b));
        let b1 = ev(1.0, 5, 0, a.child_stack(k(1.0, 5)).map(|b| *b));
        let c = ev(1.0, 3, 0, b2.child_stack(k(1.0, 3)).map(|b| *b));
        let kk = ev(1.0, 6, 0, b2.child_stack(k(1.0, 6)).map(|b| *b));
        let later = ev(2.0, 0, 0, a.child_stack(k(2.0, 0)).map(|b| *b));
        assert!(later.stack.is_none());
        let order = [&a, &b2, &c, &b1, &kk, &later];
        for w in order.windows(2) {
            assert_eq!(w[0].order(w[1]), Ordering::Less);
        }
        assert_eq!(kk.stack.as_deref(), Some(&vec![k(1.0, 7), k(1.0, 6)]));
        assert_eq!(c.head(), k(1.0, 7));
    }
}
