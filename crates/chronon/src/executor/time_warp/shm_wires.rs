//! Time Warp's transport between worker processes on one machine (`--procs`): a worker is a
//! (process, thread) pair numbered over every process; between every ordered pair of workers a
//! bounded SPSC ring (`shm::Producer`/`Consumer`) in one shared segment, which also holds the
//! GVT registers (`gvt.rs`), so that the round algorithm runs unchanged across processes. The
//! abort word and the end-of-run barrier are those of the shared [`Control`] segment.
//!
//! A ring carries [`Wire`] records: an anti-message, or a positive event, preceded by its order
//! stack's keys when it has one (the stack is a heap `Vec` in process memory; its keys travel
//! as records of their own, *before* the event: a receiver that took the keys but not yet the
//! event holds no event; the event's record is still in the ring or in its sender's hands).
//!
//! The bounded wait (seed 000 §3.2): a sender that finds a ring full waits a short time, then
//! *absorbs* its own inbox into a private stash and retries with the records it kept; so a
//! sender never waits on a worker that is itself waiting, and no ring cycle can deadlock. The
//! stash is this worker's, taken first by every receive. Proof that GVT still holds (rings
//! behave like mailboxes for rules R1 and R2): README.md, "GVT across processes".
//!
//! Zero copy (the default), a `BPtr` payload crosses as the pointer (its item stays in its
//! owner's shared heap, found through the run's heap directory). The copy transport
//! (`--payload copy`) does what `transport/shm.rs` does: the sender copies each event's
//! payloads into new items (`shm::safe::deep_copy`, `ShmSafe::fixup_copy`) before pushing it,
//! releasing the model's, and the receiver copies them again into its own heap.

use std::any::Any;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::gvt::GvtRegisters;
use super::lp::{Anti, Msg, TwEvent};
use crate::comm::Batch;
use crate::event::{EventKey, Keyed};
use crate::shm::safe::deep_copy;
use crate::shm::{init_ring, ring_bytes, Consumer, Control, Producer, Segment, ShmSafe};

/// Records per ring.
const RING_CAP: usize = 1024;
/// How long a sender waits for ring space before it absorbs its own inbox and retries.
const SEND_WAIT: Duration = Duration::from_micros(50);
/// An end-of-run barrier wait longer than this is a hang, not a slow worker.
const BARRIER_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// One ring record.
#[derive(Debug)]
pub(super) enum Wire<P> {
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

fn rec_time<P>(r: &Rec<P>) -> f64 {
    match &r.0 {
        // Every key of an order stack has the event's time (a stack is a chain of zero-delay
        // sends that order before their parents), so the register covers the keys too and a
        // ring full of keys is drained.
        Wire::Key(k) => k.time,
        Wire::Event { ev, .. } => ev.time,
        Wire::Anti(a) => a.key.time,
    }
}

/// Where things are in the segment: the GVT registers, then one ring per ordered pair of
/// workers (the diagonal unused).
#[derive(Clone, Copy, Debug)]
struct Layout {
    workers: usize,
    rings: usize,
    stride: usize,
    len: usize,
}

impl Layout {
    fn new<P>(workers: usize) -> Layout {
        let rings = GvtRegisters::shared_bytes(workers).next_multiple_of(128);
        let stride = ring_bytes::<Rec<P>>(RING_CAP).next_multiple_of(128);
        Layout {
            workers,
            rings,
            stride,
            len: rings + workers * workers * stride,
        }
    }

    fn ring(&self, seg: &Segment, s: usize, r: usize) -> NonNull<u8> {
        assert!(s < self.workers && r < self.workers && s != r);
        let off = self.rings + (s * self.workers + r) * self.stride;
        assert!(off + self.stride <= seg.len());
        // Safety: in bounds (checked above).
        unsafe { seg.base().add(off) }
    }
}

/// One local worker's ring ends: producers towards every other worker, consumers from every
/// other worker (each with the keys of an event not yet received), its stash, and scratch.
struct Ends<P> {
    out: Vec<Option<Producer<Rec<P>>>>,
    inbox: Vec<(Consumer<Rec<P>>, Vec<EventKey>)>,
    /// Messages taken from the rings while this worker made room (a full ring, the end
    /// barrier) and not yet received.
    stash: Vec<Msg<P>>,
    recs: Vec<Rec<P>>,
}

/// Decodes the records of one ring in order into messages.
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

impl<P: Send + 'static> Ends<P> {
    /// Moves everything published in the incoming rings to the stash.
    fn absorb(&mut self) {
        let Ends { inbox, stash, .. } = self;
        for (c, keys) in inbox.iter_mut() {
            c.drain(|r| decode(keys, r, &mut |m| stash.push(m)));
        }
    }

    /// The stash, then what waits in the rings; `all`: also rings whose register says empty
    /// (keys only, at the end of the run).
    fn receive(&mut self, all: bool, mut f: impl FnMut(Msg<P>)) {
        for m in self.stash.drain(..) {
            f(m);
        }
        for (c, keys) in self.inbox.iter_mut() {
            // A published event record keeps its ring's register finite until a drain takes
            // it (shm README, ring R2): an infinite register means nothing to take now.
            if all || c.min_time().is_finite() {
                c.drain(|r| decode(keys, r, &mut f));
            }
        }
    }
}

/// What the workers of one process share of the multi-process transport.
pub(super) struct ShmWires<P> {
    control: Control,
    layout: Layout,
    /// This process's number and its first worker.
    proc_index: u32,
    base: usize,
    /// The ends of this process's workers (`ends[w - base]`); each locked by its worker only
    /// (and once at the end), so never contended.
    ends: Vec<Mutex<Ends<P>>>,
    /// Events that could not be sent because the run was over (aborted, or GVT at the end:
    /// then they are at or after the end), counted as pending at the end.
    unsent: AtomicU64,
    /// The copy transport: `deep_copy` of a payload (set by `attach`, where `P: ShmSafe`).
    copy: Option<fn(P) -> P>,
    /// A run that ends at a checkpoint's cut: at the end, what a full ring holds back is
    /// pushed as the receivers make room (they absorb until every worker is at the end
    /// barrier), not dropped, so that every pending event and anti-message reaches the part
    /// that saves it.
    pub(super) keep_at_end: bool,
}

impl<P> std::fmt::Debug for ShmWires<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmWires")
            .field("workers", &self.layout.workers)
            .field("proc", &self.proc_index)
            .finish_non_exhaustive()
    }
}

impl<P: Send + 'static> ShmWires<P> {
    /// Creates the segment for `workers` workers exchanging `P` payloads (parent side): GVT 0,
    /// every ring empty.
    pub(super) fn create(workers: usize) -> io::Result<Segment>
    where
        P: ShmSafe,
    {
        let layout = Layout::new::<P>(workers);
        let seg = Segment::create(layout.len)?;
        // Safety: the registers lie at the start of the fresh segment, page-aligned, inside
        // it (`Layout`), and nobody uses them yet.
        unsafe { GvtRegisters::init_shared(seg.base(), workers) };
        for s in 0..workers {
            for r in 0..workers {
                if r != s {
                    // Safety: ring (s, r) lies inside the fresh segment, 128-byte aligned, and
                    // no end is attached yet.
                    unsafe { init_ring::<Rec<P>>(layout.ring(&seg, s, r), RING_CAP) };
                }
            }
        }
        Ok(seg)
    }

    /// Attaches to the segment made by [`create`](Self::create) for the same `P` and worker
    /// count, as process `proc_index` whose workers are `base..base + threads`; returns the
    /// transport and the GVT registers.
    pub(super) fn attach(
        seg: Segment,
        control: Control,
        workers: usize,
        proc_index: u32,
        base: usize,
        threads: usize,
        copy: bool,
    ) -> io::Result<(ShmWires<P>, GvtRegisters)>
    where
        P: ShmSafe,
    {
        let layout = Layout::new::<P>(workers);
        if seg.len() < layout.len || control.workers() != workers || base + threads > workers {
            return Err(io::Error::other(
                "the shared segments do not match this run (size or worker count)",
            ));
        }
        let seg = Arc::new(seg);
        let keep = || seg.clone() as Arc<dyn Any + Send + Sync>;
        // Safety: `create` initialized the registers at the start of the segment for
        // `workers` workers; `keep` keeps it mapped.
        let gvt = unsafe { GvtRegisters::attach_shared(seg.base(), workers, keep()) };
        let ends = (base..base + threads)
            .map(|me| {
                let out = (0..workers)
                    .map(|r| {
                        (r != me).then(|| {
                            // Safety: ring (me, r) was initialized by `create`, the handle's
                            // `keep()` keeps it mapped, and worker `me` (one per process and number) is its only
                            // producer.
                            unsafe { Producer::attach(layout.ring(&seg, me, r), keep()) }
                        })
                    })
                    .collect();
                let inbox = (0..workers)
                    .filter(|&s| s != me)
                    .map(|s| {
                        // Safety: as above; worker `me` is ring (s, me)'s only consumer.
                        let c = unsafe { Consumer::attach(layout.ring(&seg, s, me), keep()) };
                        (c, Vec::new())
                    })
                    .collect();
                Mutex::new(Ends {
                    out,
                    inbox,
                    stash: Vec::new(),
                    recs: Vec::new(),
                })
            })
            .collect();
        Ok((
            ShmWires {
                control,
                layout,
                proc_index,
                base,
                ends,
                unsent: AtomicU64::new(0),
                copy: copy.then_some(deep_copy::<P> as fn(P) -> P),
                keep_at_end: false,
            },
            gvt,
        ))
    }
}

impl<P: Send + 'static> ShmWires<P> {
    fn ends(&self, w: usize) -> std::sync::MutexGuard<'_, Ends<P>> {
        self.ends[w - self.base]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Whether some process asked every process to stop.
    #[inline]
    pub(super) fn aborted(&self) -> bool {
        self.control.aborted().is_some()
    }

    /// Asks every process to stop (this one failed).
    pub(super) fn abort(&self) {
        self.control.abort(self.proc_index);
    }

    /// Hands everything waiting for worker `w` to `f` (its stash first, then its rings in
    /// sender order; per sender in sending order).
    pub(super) fn receive(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.ends(w).receive(false, self.copied(f));
    }

    /// `f`, given received events with their payloads copied into this thread's heap under
    /// the copy transport.
    fn copied(&self, mut f: impl FnMut(Msg<P>)) -> impl FnMut(Msg<P>) {
        let copy = self.copy;
        move |m| match (m, copy) {
            (Msg::Event(mut e, stack), Some(c)) => {
                e.payload = c(e.payload);
                f(Msg::Event(e, stack))
            }
            (m, _) => f(m),
        }
    }

    /// BH_min of worker `w`: the minimum of its incoming rings' registers (each a lower bound
    /// on what waits in its ring: shm README, ring R2) and of its stash.
    pub(super) fn bh_min(&self, w: usize) -> f64 {
        let ends = self.ends(w);
        let stash = ends
            .stash
            .iter()
            .map(|m| m.key().time)
            .fold(f64::INFINITY, f64::min);
        ends.inbox
            .iter()
            .map(|(c, _)| c.min_time())
            .fold(stash, f64::min)
    }

    /// What is left for worker `w` once every worker has stopped (after [`end_barrier`]).
    ///
    /// [`end_barrier`]: Self::end_barrier
    pub(super) fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>)) {
        self.ends(w).receive(true, self.copied(f));
    }

    /// Events that were never sent because the run was over.
    pub(super) fn unsent(&self) -> u64 {
        self.unsent.load(SeqCst)
    }

    /// Pushes the batches of worker `w` for the workers in `dirty` (taking them from
    /// `outbox`, emptied batches to `spare`); returns the earliest time pushed. A full ring:
    /// wait a little, absorb `w`'s own inbox, retry with what is left (bounded wait). If the
    /// run is over (`over()`, unless it ends at a checkpoint's cut, or another process
    /// aborted) what is left is dropped and counted as pending.
    pub(super) fn flush(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: impl Fn() -> bool,
    ) -> f64 {
        let mut ends = self.ends(w);
        let mut min = f64::INFINITY;
        for o in dirty.drain(..) {
            let Some(mut b) = outbox[o].take() else {
                continue;
            };
            let mut recs = std::mem::take(&mut ends.recs);
            b.drain_into(&mut |m| {
                min = min.min(m.key().time);
                match m {
                    Msg::Event(mut e, stack) => {
                        let keys = match stack {
                            Some(s) => {
                                let n = s.len() as u32;
                                recs.extend(s.iter().map(|k| Rec(Wire::Key(*k))));
                                n
                            }
                            None => 0,
                        };
                        if let Some(c) = self.copy {
                            e.payload = c(e.payload);
                        }
                        recs.push(Rec(Wire::Event { ev: e, keys }));
                    }
                    Msg::Anti(a) => recs.push(Rec(Wire::Anti(a))),
                }
            });
            spare.push(b);
            loop {
                let ring = ends.out[o].as_mut().expect("no ring to oneself");
                if ring.push_batch(&mut recs, rec_time, SEND_WAIT).is_ok() {
                    break;
                }
                if self.aborted() || (over() && !self.keep_at_end) {
                    let n = recs
                        .iter()
                        .filter(|r| matches!(r.0, Wire::Event { .. }))
                        .count();
                    self.unsent.fetch_add(n as u64, SeqCst);
                    recs.clear();
                    break;
                }
                // The receiver may be waiting for a ring of ours to drain: make room, keep
                // the records.
                ends.absorb();
            }
            ends.recs = recs;
        }
        min
    }

    /// After worker `w` stopped: waits until every worker of every process has (absorbing its
    /// inbox meanwhile, so that no sender stays blocked on it). `false`: the run was aborted.
    pub(super) fn end_barrier(&self, w: usize) -> bool {
        let parties = self.layout.workers as u32;
        self.control
            .barrier_with(parties, BARRIER_TIMEOUT, || self.ends(w).absorb())
            .is_ok()
    }
}

impl<P: Send + 'static> super::transport::Transport<P> for ShmWires<P> {
    /// Across processes the receive itself looks.
    #[inline]
    fn has_mail(&self, _w: usize) -> bool {
        true
    }

    #[inline]
    fn bh_min(&self, w: usize) -> f64 {
        ShmWires::bh_min(self, w)
    }

    fn receive(&self, w: usize, f: impl FnMut(Msg<P>)) {
        ShmWires::receive(self, w, f)
    }

    fn leftovers(&self, w: usize, f: impl FnMut(Msg<P>)) {
        ShmWires::leftovers(self, w, f)
    }

    fn push(
        &self,
        w: usize,
        dirty: &mut Vec<usize>,
        outbox: &mut [Option<Batch<Msg<P>>>],
        spare: &mut Vec<Batch<Msg<P>>>,
        over: impl Fn() -> bool,
    ) {
        self.flush(w, dirty, outbox, spare, over);
    }

    #[inline]
    fn aborted(&self) -> bool {
        ShmWires::aborted(self)
    }

    fn abort_others(&self) {
        self.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two workers of two "processes" (two attachments of one segment in this process).
    fn two() -> (ShmWires<u64>, ShmWires<u64>) {
        let seg = ShmWires::<u64>::create(2).unwrap();
        let seg2 = Segment::from_fd(seg.fd().try_clone_to_owned().unwrap()).unwrap();
        let control = Control::create(2).unwrap();
        let (a, _) = ShmWires::attach(seg, control.clone(), 2, 0, 0, 1, false).unwrap();
        let (b, _) = ShmWires::attach(seg2, control, 2, 1, 1, 1, false).unwrap();
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

    fn send(w: &ShmWires<u64>, me: usize, to: usize, msgs: Vec<Msg<u64>>) -> f64 {
        let mut b = Batch::new(me as u32);
        msgs.into_iter().for_each(|m| b.push(m));
        let mut outbox: Vec<Option<Batch<Msg<u64>>>> = vec![None, None];
        outbox[to] = Some(b);
        let mut spare = Vec::new();
        w.flush(me, &mut vec![to], &mut outbox, &mut spare, || false)
    }

    #[test]
    fn events_stacks_and_anti_messages_arrive_in_order() {
        let (a, b) = two();
        let stack = vec![key(2.0, 9), key(2.0, 4), key(2.0, 1)];
        let min = send(
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
        assert_eq!(min, 2.0);
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
