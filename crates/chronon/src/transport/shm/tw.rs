//! Time Warp's seam over the shared-memory ring mesh between worker processes (`--procs`):
//! the mesh, each worker's ends with its stash, the bounded wait and the end-of-run barrier are
//! those of this folder (the same code as under the conservative protocols); this file encodes
//! Time Warp's messages (`tw_msg.rs`) as ring records and decodes them. The mesh's header
//! region is the protocol's: Time Warp sizes it and places its GVT registers there
//! (`executor/time_warp/over/shm.rs`), so that the round algorithm runs unchanged across
//! processes.
//!
//! A ring carries [`Wire`] records: an anti-message, or a positive event, preceded by its order
//! stack's keys when it has one (the stack is a heap `Vec` in process memory; its keys travel
//! as records of their own, *before* the event: a receiver that took the keys but not yet the
//! event holds no event; the event's record is still in the ring, in the receiver's stash or
//! in its sender's hands). Per sender, records arrive in order (the stash from that sender
//! first, then its ring), so each worker decodes each sender's records with that sender's
//! keys. A full ring: wait, absorb this worker's own inbox into its stash, retry; once the run
//! is over the rest is dropped and counted. Proof that GVT still holds (rings behave like
//! mailboxes for rules R1 and R2): README.md, "GVT across processes".
//!
//! Zero copy (the default), a `BPtr` payload crosses as the pointer (its item stays in its
//! owner's shared heap, found through the run's heap directory). The copy transport
//! (`--payload copy`) is the conservative endpoint's (`part.rs`, [`Copier`]), applied to each
//! event's payload: copied by the sender before the push, and again by the receiver.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Arc;

use super::part::{Copier, MeshPart};
use super::{Ends, Mesh, Record, SharedEnds, Slot};
use crate::comm::Batch;
use crate::event::EventKey;
use crate::shm::{Control, Segment, ShmSafe};
use crate::transport::tw::TwTransport;
use crate::tw_msg::{Anti, Msg, TwEvent};

/// One ring record.
#[derive(Debug)]
enum Wire<P> {
    /// One key of the order stack of the event that follows (in stack order).
    Key(EventKey),
    /// A positive event; `keys` records before it hold its order stack (0: none).
    Event {
        ev: TwEvent<P>,
        keys: u32,
    },
    Anti(Anti),
}

/// A record as the rings see it. Constructed only by [`ShmWires`], whose constructors require
/// `P: ShmSafe`; the wrapper states that for code that is generic over any model.
struct Rec<P>(Wire<P>);

// Safety: a `Rec<P>` exists only inside a `ShmWires<P>`, built by `create`/`attach`, which
// require `P: ShmSafe`; `Wire<P>` adds plain data only (keys, ids, times). A record is moved
// into a ring by one thread and out by one thread, never shared by reference, so `Sync` adds
// nothing that `P: Send` does not give.
unsafe impl<P: Send + 'static> ShmSafe for Rec<P> {}
// Safety: see `ShmSafe` above.
unsafe impl<P: Send + 'static> Sync for Rec<P> {}

impl<P: Send + 'static> Record for Rec<P> {
    #[inline]
    fn time(&self) -> f64 {
        match &self.0 {
            // Every key of an order stack has the event's time (a stack is a chain of
            // zero-delay sends that order before their parents), so the register covers the
            // keys too and a ring full of keys is drained.
            Wire::Key(k) => k.time,
            Wire::Event { ev, .. } => ev.time,
            Wire::Anti(a) => a.key.time,
        }
    }
}

/// A worker's own codec state: per sender, the keys of an event not yet received; the
/// records of the batch being pushed (scratch).
struct Codec<P> {
    keys: Vec<Vec<EventKey>>,
    recs: Vec<Rec<P>>,
}

/// Decodes the records of one sender in order into messages.
fn decode<P>(keys: &mut Vec<EventKey>, r: Rec<P>, f: &mut impl FnMut(Msg<P>)) {
    match r.0 {
        Wire::Key(k) => keys.push(k),
        Wire::Event { ev, keys: n } => {
            let stack = (n > 0).then(|| {
                debug_assert_eq!(keys.len(), n as usize, "an order stack arrived torn");
                Box::new(std::mem::take(keys))
            });
            f(Msg::Event(ev, stack));
        }
        Wire::Anti(a) => f(Msg::Anti(a)),
    }
}

/// Encodes one message as records (its stack's keys, then the event), the event's payload as
/// sent by `copy`.
fn encode<P>(m: Msg<P>, recs: &mut Vec<Rec<P>>, copy: Copier<P>) {
    match m {
        Msg::Event(mut e, stack) => {
            let keys = match stack {
                Some(s) => {
                    recs.extend(s.iter().map(|k| Rec(Wire::Key(*k))));
                    s.len() as u32
                }
                None => 0,
            };
            e.payload = copy.sent(e.payload);
            recs.push(Rec(Wire::Event { ev: e, keys }));
        }
        Msg::Anti(a) => recs.push(Rec(Wire::Anti(a))),
    }
}

/// What the workers of one process share of the multi-process transport.
pub(crate) struct ShmWires<P> {
    /// The ends of this process's workers, each with its codec state.
    ends: SharedEnds<Rec<P>, Codec<P>>,
    /// Events that could not be sent because the run was over (aborted, or GVT at the end:
    /// then they are at or after the end), counted as pending at the end.
    unsent: AtomicU64,
    /// The copy transport, or zero copy (set by `attach`, where `P: ShmSafe`).
    copy: Copier<P>,
    /// A run that ends at a checkpoint's cut: at the end, what a full ring holds back is
    /// pushed as the receivers make room (they absorb until every worker is at the end
    /// barrier), not dropped, so that every pending event and anti-message reaches the part
    /// that saves it.
    pub(crate) keep_at_end: bool,
}

impl<P> std::fmt::Debug for ShmWires<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmWires")
            .field("ends", &self.ends)
            .finish_non_exhaustive()
    }
}

impl<P: Send + 'static> ShmWires<P> {
    /// Creates the segment for `workers` workers exchanging `P` payloads (parent side), every
    /// ring empty, after a zeroed header region of `header` bytes that the protocol fills
    /// (at [`Segment::base`]) before any process attaches.
    pub(crate) fn create(workers: usize, header: usize) -> io::Result<Segment>
    where
        P: ShmSafe,
    {
        Mesh::create::<Rec<P>>(header, workers)
    }

    /// Attaches to the segment made by [`create`](Self::create) for the same `P`, worker count
    /// and header size, as process `proc_index` whose workers are `base..base + threads`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn attach(
        seg: Segment,
        header: usize,
        control: Control,
        workers: usize,
        proc_index: u32,
        base: usize,
        threads: usize,
        copy: bool,
    ) -> io::Result<ShmWires<P>>
    where
        P: ShmSafe,
    {
        let codec = |_| Codec {
            keys: vec![Vec::new(); workers],
            recs: Vec::new(),
        };
        let part = MeshPart::attach::<Rec<P>>(seg, header, control, workers, proc_index)?;
        Ok(ShmWires {
            ends: SharedEnds::new(part, base, threads, codec)?,
            unsent: AtomicU64::new(0),
            copy: Copier::new(copy),
            keep_at_end: false,
        })
    }

    /// The start of the header region (the protocol's registers).
    pub(crate) fn header(&self) -> NonNull<u8> {
        self.ends.part().mesh.header()
    }

    /// What keeps the segment mapped while the protocol's registers in it are used.
    pub(crate) fn keep(&self) -> Arc<dyn Any + Send + Sync> {
        self.ends.part().mesh.keep()
    }

    /// Decodes what waits for worker `w` into `f` (per sender, in sending order: its records
    /// in `w`'s stash, then its ring; `all`: also rings whose register says empty), each
    /// event's payload as received by the copy transport.
    fn take(&self, w: usize, all: bool, mut f: impl FnMut(Msg<P>)) {
        let copy = self.copy;
        let mut f = move |m| match m {
            Msg::Event(mut e, stack) => {
                e.payload = copy.received(e.payload);
                f(Msg::Event(e, stack))
            }
            m => f(m),
        };
        let mut slot = self.ends.lock(w);
        let Slot { ends, local } = &mut *slot;
        ends.take(all, |s, r| decode(&mut local.keys[s], r, &mut f));
    }

    /// Events that were never sent because the run was over.
    pub(crate) fn unsent(&self) -> u64 {
        self.unsent.load(SeqCst)
    }

    /// How many times worker `w` found a ring full after the bounded wait.
    pub(crate) fn full_retries(&self, w: usize) -> u64 {
        self.ends.lock(w).ends.full_retries()
    }

    /// After worker `w` stopped: waits until every worker of every process has (absorbing its
    /// inbox meanwhile, so that no sender stays blocked on it). `false`: the run was aborted.
    pub(crate) fn end_barrier(&self, w: usize) -> bool {
        self.ends.end_barrier(w)
    }
}

impl<P: Send + 'static> TwTransport<P> for ShmWires<P> {
    /// Across processes the receive itself looks.
    #[inline]
    fn has_mail(&self, _w: usize) -> bool {
        true
    }

    /// BH_min of worker `w`: the minimum of its incoming rings' registers (each a lower bound
    /// on what waits in its ring: shm README, ring R2) and of its stash.
    #[inline]
    fn bh_min(&self, w: usize) -> f64 {
        self.ends.lock(w).ends.mail_min()
    }

    fn receive(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.take(w, false, f);
    }

    /// What is left for worker `w` once every worker has stopped (after
    /// [`end_barrier`](ShmWires::end_barrier)).
    fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.take(w, true, f);
    }

    /// A full ring: wait a little, absorb `w`'s own inbox, retry with what is left (the
    /// bounded wait). If the run is over (`over()`, unless it ends at a checkpoint's cut, or
    /// another process aborted) what is left is dropped and counted as pending.
    fn push(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: impl Fn() -> bool,
    ) {
        let mut slot = self.ends.lock(w);
        let Slot { ends, local } = &mut *slot;
        let recs = &mut local.recs;
        for o in dirty.drain(..) {
            let Some(mut b) = outbox[o].take() else {
                continue;
            };
            b.drain_into(&mut |m| encode(m, recs, self.copy));
            spare.push(b);
            let absorb = |e: &mut Ends<Rec<P>>| _ = e.absorb();
            let over = || over() && !self.keep_at_end;
            if !self.ends.part().push(ends, o, recs, absorb, over) {
                let n = recs
                    .iter()
                    .filter(|r| matches!(r.0, Wire::Event { .. }))
                    .count();
                self.unsent.fetch_add(n as u64, SeqCst);
                recs.clear();
            }
        }
    }

    #[inline]
    fn aborted(&self) -> bool {
        self.ends.part().aborted()
    }

    fn abort_others(&self) {
        self.ends.part().abort();
    }

    fn end_barrier(&self, w: usize) -> bool {
        ShmWires::end_barrier(self, w)
    }

    fn unsent(&self) -> u64 {
        ShmWires::unsent(self)
    }

    fn full_retries(&self, w: usize) -> u64 {
        ShmWires::full_retries(self, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two workers of two "processes" (two attachments of one segment in this process).
    fn two() -> (ShmWires<u64>, ShmWires<u64>) {
        let seg = ShmWires::<u64>::create(2, 64).unwrap();
        let seg2 = Segment::from_fd(seg.fd().try_clone_to_owned().unwrap()).unwrap();
        let control = Control::create(2).unwrap();
        let a = ShmWires::attach(seg, 64, control.clone(), 2, 0, 0, 1, false).unwrap();
        let b = ShmWires::attach(seg2, 64, control, 2, 1, 1, 1, false).unwrap();
        (a, b)
    }

    fn key(time: f64, seq: u64) -> EventKey {
        EventKey { time, seq, src: 0 }
    }

    fn event(time: f64, id: u64, stack: Option<Vec<EventKey>>) -> Msg<u64> {
        let ev = TwEvent {
            time,
            seq: id,
            id,
            src: 0,
            dst: 1,
            payload: id * 10,
        };
        Msg::Event(ev, stack.map(Box::new))
    }

    fn send(w: &ShmWires<u64>, me: usize, to: usize, msgs: Vec<Msg<u64>>) {
        let mut b = Batch::new(me as u32);
        msgs.into_iter().for_each(|m| b.push(m));
        let mut outbox: Vec<Option<Batch<Msg<u64>>>> = vec![None, None];
        outbox[to] = Some(b);
        let mut spare = Vec::new();
        w.push(me, &mut vec![to], &mut outbox, &mut spare, || false);
        assert!(outbox[to].is_none() && spare.len() == 1);
    }

    #[test]
    fn events_stacks_and_anti_messages_arrive_in_order() {
        let (a, b) = two();
        let stack = vec![key(2.0, 9), key(2.0, 4), key(2.0, 1)];
        send(
            &a,
            0,
            1,
            vec![
                event(3.0, 1, None),
                event(2.0, 2, Some(stack.clone())),
                Msg::Anti(Anti {
                    dst: 1,
                    key: key(3.0, 1),
                    id: 1,
                }),
            ],
        );
        assert_eq!(b.bh_min(1), 2.0);
        assert_eq!(a.bh_min(0), f64::INFINITY);
        let mut got = Vec::new();
        b.receive(1, |m| got.push(m));
        assert_eq!(got.len(), 3);
        match (&got[0], &got[1], &got[2]) {
            (Msg::Event(e1, s1), Msg::Event(e2, s2), Msg::Anti(x)) => {
                assert_eq!((e1.id, e1.payload, s1.is_none()), (1, 10, true));
                assert_eq!((e2.id, e2.time), (2, 2.0));
                assert_eq!(s2.as_deref(), Some(&stack));
                assert_eq!(x.id, 1);
            }
            _ => panic!("wrong kinds or order"),
        }
        let mut none = 0;
        b.receive(1, |_| none += 1);
        a.receive(0, |_| none += 1);
        assert_eq!(none, 0);
    }

    /// Both workers send far more than a ring holds to each other without ever receiving:
    /// the bounded wait absorbs each one's own inbox, so neither deadlocks, and every message
    /// arrives once, in order (stash first, then the ring).
    #[test]
    fn two_workers_flooding_each_other_never_deadlock() {
        let (a, b) = two();
        const N: u64 = 20_000;
        let run = |w: &ShmWires<u64>, me: usize| {
            for chunk in 0..N / 100 {
                let msgs = (0..100)
                    .map(|i| {
                        let id = chunk * 100 + i;
                        // Every 7th event carries a two-key order stack.
                        let stack = (id % 7 == 0).then(|| vec![key(1.0, id), key(1.0, 0)]);
                        event(1.0 + id as f64, id, stack)
                    })
                    .collect();
                send(w, me, 1 - me, msgs);
            }
            assert!(w.end_barrier(me));
            let mut ids = Vec::new();
            w.leftovers(me, |m| match m {
                Msg::Event(e, stack) => {
                    assert_eq!(stack.is_some(), e.id % 7 == 0);
                    ids.push(e.id);
                }
                Msg::Anti(_) => panic!("no anti-message was sent"),
            });
            ids
        };
        let (ia, ib) = std::thread::scope(|s| {
            let ha = s.spawn(|| run(&a, 0));
            let hb = s.spawn(|| run(&b, 1));
            (ha.join().unwrap(), hb.join().unwrap())
        });
        let want: Vec<u64> = (0..N).collect();
        assert_eq!(ia, want);
        assert_eq!(ib, want);
        assert_eq!(a.unsent() + b.unsent(), 0);
    }
}
