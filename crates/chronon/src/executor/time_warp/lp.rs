//! What Time Warp keeps per worker and per LP: the side table of order stacks, the
//! processed-event records, and the LP's history. The event entry and the messages between
//! workers are below every transport (`tw_msg.rs`).

use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::event::{Event, EventKey, Keyed};
use crate::fingerprint::LpDigest;
use crate::model::{LpId, LpMeta, Time};
use crate::tw_msg::{Stack, TwEvent, STACKED};

/// Hashes event ids (unique `u64`s, no adversary) with one multiplication.
#[derive(Debug, Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
        }
    }
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A worker's side table of order stacks: one per stacked event this worker holds (pending,
/// processed and not yet committed, or in a suspended context). An entry is inserted where the
/// event enters the worker (sent by one of its LPs, or received) and removed where the event
/// leaves Time Warp here: committed (fossil collection), cancelled, or annihilated.
#[derive(Debug, Default)]
pub(crate) struct Orders {
    map: HashMap<u64, Stack, BuildHasherDefault<IdHasher>>,
    /// Keys allocated for the stacks held (their capacities).
    keys: usize,
}

impl Orders {
    /// The order stack of `e` (`own` holds its one key when it is plain).
    #[inline]
    fn stack<'a, P>(&'a self, e: &TwEvent<P>, own: &'a EventKey) -> &'a [EventKey] {
        if e.stacked() {
            if let Some(s) = self.map.get(&e.id) {
                return s;
            }
            debug_assert!(false, "a stacked event without its stack");
        }
        std::slice::from_ref(own)
    }

    /// The event's own key (what the fingerprint folds and sends are numbered after).
    #[inline(always)]
    pub(crate) fn key<P>(&self, e: &TwEvent<P>) -> EventKey {
        if e.stacked() {
            return self.own_key(e.id).unwrap_or_else(|| e.head());
        }
        e.head()
    }

    #[cold]
    #[inline(never)]
    fn own_key(&self, id: u64) -> Option<EventKey> {
        let k = self.map.get(&id).and_then(|s| s.last().copied());
        debug_assert!(k.is_some(), "a stacked event without its stack");
        k
    }

    /// The sequential executor's order between two events.
    #[inline]
    pub(crate) fn order<P>(&self, a: &TwEvent<P>, b: &TwEvent<P>) -> Ordering {
        if !a.stacked() && !b.stacked() {
            return a.head().cmp(&b.head());
        }
        let (ka, kb) = (a.head(), b.head());
        self.stack(a, &ka).cmp(self.stack(b, &kb))
    }

    /// The entry for `child`, sent with id `id` while `parent` runs, and its order stack if it
    /// is stacked (for the side table of the worker that will hold it). The common case (the
    /// child sorts after its parent's head) is inlined; it returns in registers.
    #[inline(always)]
    pub(crate) fn child<P>(
        &self,
        parent: &TwEvent<P>,
        child: Event<P>,
        id: u64,
    ) -> (TwEvent<P>, Option<Box<Stack>>) {
        if child.key() > parent.head() {
            return (TwEvent::plain(child, id), None);
        }
        self.child_stacked(parent, child, id)
    }

    #[cold]
    #[inline(never)]
    fn child_stacked<P>(
        &self,
        parent: &TwEvent<P>,
        child: Event<P>,
        id: u64,
    ) -> (TwEvent<P>, Option<Box<Stack>>) {
        let key = child.key();
        let own = parent.head();
        let stack = self.stack(parent, &own);
        let cut = stack.iter().position(|k| *k <= key).unwrap_or(stack.len());
        if cut == 0 {
            return (TwEvent::plain(child, id), None);
        }
        let mut s = Vec::with_capacity(cut + 1);
        s.extend_from_slice(&stack[..cut]);
        s.push(key);
        let h = s[0];
        let e = TwEvent {
            time: child.time,
            seq: h.seq,
            id: id | STACKED,
            src: h.src,
            dst: child.dst,
            payload: child.payload,
        };
        (e, Some(Box::new(s)))
    }

    /// Keeps the order stack of the stacked event `id`.
    #[inline]
    #[allow(clippy::boxed_local)] // the box a message carries (a thin pointer), unboxed here
    pub(crate) fn insert(&mut self, id: u64, stack: Box<Stack>) {
        debug_assert!(id & STACKED != 0 && stack.len() > 1);
        self.keys += stack.capacity();
        if let Some(old) = self.map.insert(id, *stack) {
            self.keys -= old.capacity();
        }
    }

    /// Forgets the order stack of `e` (it leaves this worker), returning it.
    #[inline(always)]
    pub(crate) fn remove<P>(&mut self, e: &TwEvent<P>) -> Option<Box<Stack>> {
        if !e.stacked() {
            return None;
        }
        self.remove_stacked(e.id)
    }

    #[cold]
    #[inline(never)]
    fn remove_stacked(&mut self, id: u64) -> Option<Box<Stack>> {
        let s = self.map.remove(&id)?;
        self.keys -= s.capacity();
        Some(Box::new(s))
    }

    /// Stacks held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes allocated for the table and its stacks (the memory figures).
    pub(crate) fn bytes(&self) -> u64 {
        let slot = std::mem::size_of::<(u64, Stack)>() + 1;
        (self.map.capacity() * slot + self.keys * std::mem::size_of::<EventKey>()) as u64
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
/// Processed events are numbered from 0 in processing order; the number of the next one is
/// the digest's count ([`TwLp::next`]): an event's key is folded into the digest when it runs
/// and unfolded when it rolls back, so the two never differ. The records themselves are in
/// the worker's history arena (`history.rs`): `last` is the position of the newest, and each
/// record links to the LP's previous one. The LP's id is not kept: its worker knows it from
/// the index (`Shared::lp_id`).
///
/// 64 bytes of bookkeeping, then the state, aligned so that with a 32-byte state (PHOLD's) a
/// record is 96 bytes on two cache lines: a million LPs take 96 MB, not 128 (which lets a
/// million-LP PHOLD run within `--max-memory 512M`).
#[derive(Debug)]
#[repr(C, align(32))]
pub(crate) struct TwLp<S> {
    /// Key of the last processed event still in the arena (zero when there is none), as its
    /// three fields, so that `last_plain` fits beside them.
    last_time: Time,
    last_seq: u64,
    last_src: LpId,
    /// Whether the last processed event's order stack is its key alone.
    pub(crate) last_plain: bool,
    pub(crate) meta: LpMeta,
    /// The digest of every event processed and not rolled back (committed or not): folded when
    /// an event runs, restored from the record on rollback. At the end of an incomplete run the
    /// oldest uncommitted record's digest is the committed one.
    pub(crate) digest: LpDigest,
    /// Arena position of the newest record (`history::NONE`: none).
    pub(crate) last: u64,
    pub(crate) state: S,
}

impl<S> TwLp<S> {
    /// An LP that has processed nothing.
    pub(crate) fn new(state: S, meta: LpMeta, digest: LpDigest, last: u64) -> Self {
        TwLp {
            last_time: 0.0,
            last_seq: 0,
            last_src: 0,
            last_plain: true,
            meta,
            digest,
            last,
            state,
        }
    }

    /// Number of the next event this LP processes (events processed and not rolled back).
    #[inline(always)]
    pub(crate) fn next(&self) -> u64 {
        self.digest.count()
    }

    /// Key of the last processed event still in the arena (zero when there is none).
    #[inline(always)]
    pub(crate) fn last_key(&self) -> EventKey {
        EventKey {
            time: self.last_time,
            seq: self.last_seq,
            src: self.last_src,
        }
    }

    /// No processed event in the arena any more (as for a new LP): nothing sorts before it.
    pub(crate) fn forget_last_key(&mut self) {
        let zero = EventKey {
            time: 0.0,
            seq: 0,
            src: 0,
        };
        self.set_last_key(zero, true);
    }

    /// Records `key` as the last processed event's, `plain` when its order stack is the key
    /// alone.
    #[inline(always)]
    pub(crate) fn set_last_key(&mut self, key: EventKey, plain: bool) {
        self.last_time = key.time;
        self.last_seq = key.seq;
        self.last_src = key.src;
        self.last_plain = plain;
    }
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

    fn k(time: f64, src: u32) -> EventKey {
        EventKey { time, src, seq: 0 }
    }

    /// The entry for an event with key `key` sent while `parent` runs, its stack kept.
    fn send(o: &mut Orders, parent: &TwEvent<()>, key: EventKey, id: u64) -> TwEvent<()> {
        let (e, stack) = o.child(parent, Event::new(key, 0, ()), id);
        if let Some(s) = stack {
            o.insert(e.id, s);
        }
        e
    }

    #[test]
    fn zero_delay_children_follow_their_parent() {
        let mut o = Orders::default();
        // Parent (1, src 7) sends (1, src 4) and (1, src 5) with zero delay; then (1, src 4)
        // sends (1, src 3) and (1, src 6) (below 7).
        let a = TwEvent::plain(Event::new(k(1.0, 7), 0, ()), 1);
        let b2 = send(&mut o, &a, k(1.0, 4), 2);
        let b1 = send(&mut o, &a, k(1.0, 5), 3);
        let c = send(&mut o, &b2, k(1.0, 3), 4);
        let kk = send(&mut o, &b2, k(1.0, 6), 5);
        let later = send(&mut o, &a, k(2.0, 0), 6);
        assert!(!later.stacked() && !a.stacked());
        assert!(b2.stacked() && b1.stacked() && c.stacked() && kk.stacked());
        let order = [&a, &b2, &c, &b1, &kk, &later];
        for w in order.windows(2) {
            assert_eq!(o.order(w[0], w[1]), Ordering::Less);
        }
        // Every stacked entry carries its head; the table knows its own key.
        assert_eq!(kk.head(), k(1.0, 7));
        assert_eq!(c.head(), k(1.0, 7));
        assert_eq!(o.key(&kk), k(1.0, 6));
        assert_eq!(o.key(&c), k(1.0, 3));
        assert_eq!(o.key(&later), k(2.0, 0));
        assert_eq!(o.len(), 4);
        assert_eq!(o.remove(&kk).as_deref(), Some(&vec![k(1.0, 7), k(1.0, 6)]));
        assert!(o.remove(&later).is_none());
        assert_eq!(o.len(), 3);
    }

    #[test]
    fn an_lp_keeps_64_bytes_of_bookkeeping_and_its_next_number_in_the_digest() {
        assert_eq!(std::mem::size_of::<TwLp<()>>(), 64);
        // PHOLD's state (a counter and a vector): 96 bytes, two cache lines.
        assert_eq!(std::mem::size_of::<TwLp<(u64, Vec<u8>)>>(), 96);
        let mut lp = TwLp::new((), LpMeta::new(1, 3), LpDigest::default(), 0);
        assert_eq!(
            (lp.next(), lp.last_key(), lp.last_plain),
            (0, k(0.0, 0), true)
        );
        lp.digest.commit(&k(2.0, 5));
        lp.set_last_key(k(2.0, 5), false);
        assert_eq!(
            (lp.next(), lp.last_key(), lp.last_plain),
            (1, k(2.0, 5), false)
        );
        lp.digest.uncommit(&k(2.0, 5));
        assert_eq!(lp.next(), 0);
    }
}
