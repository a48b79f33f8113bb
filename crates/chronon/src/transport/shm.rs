//! The transport between worker processes on one machine: a worker is a (process, thread) pair,
//! numbered over every process. Between every ordered pair of workers (also two threads of one
//! process, so that every MOM register lives in shared memory) a bounded SPSC ring of events
//! (`shm::Producer`/`Consumer`); the GSU registers (MOE, TMC), the barrier and the abort word in
//! the shared [`Control`] segment; channel clocks and wake-up words for null messages in the
//! net segment beside the rings. Events are moved through the rings as values, so `E` must be
//! [`ShmSafe`].
//!
//! The bounded wait (seed 000 §3.2): a sender that finds a ring full waits a short time, then
//! *absorbs* its own inbox (moves what waits in its incoming rings to a private stash, inside
//! an odd epoch of its GSU registers, the stash's minimum published in a shared register that
//! counts in its MOM) and retries with the batch it kept; a worker waiting at a barrier absorbs
//! too. So a sender never waits on a worker that is itself waiting, and no ring cycle can
//! deadlock. Invariants and proof sketch: README.md, "Shared memory".

use std::any::Any;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Endpoint;
use crate::event::Event;
use crate::gsu::{Published, Snapshot};
use crate::model::Time;
use crate::shm::safe::deep_copy;
use crate::shm::{
    futex, init_ring, ring_bytes, Consumer, Control, Producer, RingRegister, Segment, ShmSafe,
};

/// Records per ring, unless `CHRONON_RING_CAP` says otherwise.
pub(crate) const RING_CAP: usize = 1024;

/// Records per ring: `CHRONON_RING_CAP` (a power of two in 2..=2^20; read by the parent and
/// inherited by the worker processes, so both sides agree on the layout), else [`RING_CAP`].
/// Small rings exercise the bounded wait (tests); large ones trade memory for fewer waits.
fn ring_cap() -> usize {
    std::env::var("CHRONON_RING_CAP")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|c| c.is_power_of_two() && (2..=1 << 20).contains(c))
        .unwrap_or(RING_CAP)
}
/// How long a sender waits for ring space before it absorbs its own inbox and retries.
const SEND_WAIT: Duration = Duration::from_micros(50);
/// A barrier or rendezvous wait longer than this is a hang, not a slow worker.
const BARRIER_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Per worker, on its own cache lines: the stash register and the wake-up word.
#[repr(C, align(128))]
struct WorkerWords {
    /// Bits of a lower bound on the times of the events in the worker's stash (`+inf`: none).
    stash_min: AtomicU64,
    /// Bumped to wake the worker (a futex word).
    bell: AtomicU32,
}

/// One channel clock (null messages), on its own cache line.
#[repr(C, align(64))]
struct Chan(AtomicU64);

/// Where things are in the net segment: `N` worker words, `N × N` channel clocks, then one
/// ring per ordered pair (the diagonal unused).
#[derive(Clone, Copy, Debug)]
struct Layout {
    workers: usize,
    cap: usize,
    chans: usize,
    rings: usize,
    stride: usize,
    len: usize,
}

impl Layout {
    fn new<E>(workers: usize) -> Layout {
        let words = workers * std::mem::size_of::<WorkerWords>();
        let chans = words.next_multiple_of(128);
        let rings = (chans + workers * workers * std::mem::size_of::<Chan>()).next_multiple_of(128);
        let cap = ring_cap();
        let stride = ring_bytes::<Event<E>>(cap).next_multiple_of(128);
        Layout {
            workers,
            cap,
            chans,
            rings,
            stride,
            len: rings + workers * workers * stride,
        }
    }
}

/// What the workers of one process share of the shared-memory transport.
pub(crate) struct ShmNet {
    seg: Arc<Segment>,
    control: Control,
    layout: Layout,
    /// The register of every ring, `regs[s * N + r]` (`None` on the diagonal).
    regs: Vec<Option<RingRegister>>,
    /// This process's number (for the abort word).
    proc_index: u32,
    /// The copy transport (`--payload copy`): every event's `BPtr` payloads are copied into
    /// the sender's heap on send and into the receiver's heap on receive.
    copy: bool,
}

impl std::fmt::Debug for ShmNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmNet")
            .field("workers", &self.layout.workers)
            .finish_non_exhaustive()
    }
}

impl ShmNet {
    /// Creates the net segment for `workers` workers exchanging `Event<E>`s (parent side):
    /// every ring empty, every channel clock 0, every stash register `+inf`.
    pub(crate) fn create<E: ShmSafe>(workers: usize) -> io::Result<Segment> {
        let layout = Layout::new::<E>(workers);
        let seg = Segment::create(layout.len)?;
        for w in 0..workers {
            words(&seg, &layout, w)
                .stash_min
                .store(f64::INFINITY.to_bits(), SeqCst);
            for r in 0..workers {
                if r != w {
                    // Safety: ring (w, r) lies inside the fresh segment, 128-byte aligned, and
                    // no end is attached yet.
                    unsafe { init_ring::<Event<E>>(ring_at(&seg, &layout, w, r), layout.cap) };
                }
            }
        }
        Ok(seg)
    }

    /// Attaches to the net segment (created by [`ShmNet::create`] for the same `E` and worker
    /// count) and the control segment, as process `proc_index`.
    pub(crate) fn attach<E: ShmSafe>(
        seg: Segment,
        control: Control,
        workers: usize,
        proc_index: u32,
        copy: bool,
    ) -> io::Result<ShmNet> {
        let layout = Layout::new::<E>(workers);
        if seg.len() < layout.len || control.workers() != workers {
            return Err(io::Error::other(
                "the shared segments do not match this run (size or worker count)",
            ));
        }
        let seg = Arc::new(seg);
        let mut regs = Vec::with_capacity(workers * workers);
        for s in 0..workers {
            for r in 0..workers {
                regs.push((s != r).then(|| {
                    // Safety: ring (s, r) was initialized by `create`; `seg` keeps it mapped.
                    unsafe {
                        RingRegister::attach(
                            ring_at(&seg, &layout, s, r),
                            seg.clone() as Arc<dyn Any + Send + Sync>,
                        )
                    }
                }));
            }
        }
        Ok(ShmNet {
            seg,
            control,
            layout,
            regs,
            proc_index,
            copy,
        })
    }

    /// Worker `me`'s endpoint. Call at most once per worker over every process (each ring has
    /// one producer and one consumer).
    pub(crate) fn endpoint<E: ShmSafe>(&self, me: usize) -> ShmEnd<'_, E> {
        let n = self.layout.workers;
        let keep = || self.seg.clone() as Arc<dyn Any + Send + Sync>;
        let out = (0..n)
            .map(|r| {
                (r != me).then(|| {
                    // Safety: ring (me, r) was initialized by `create`, `seg` keeps it mapped, and
                    // worker `me` is its only producer (one endpoint per worker).
                    unsafe { Producer::attach(ring_at(&self.seg, &self.layout, me, r), keep()) }
                })
            })
            .collect();
        let inbox = (0..n)
            .filter(|&s| s != me)
            .map(|s| {
                // Safety: as above; worker `me` is ring (s, me)'s only consumer.
                unsafe { Consumer::attach(ring_at(&self.seg, &self.layout, s, me), keep()) }
            })
            .collect();
        ShmEnd {
            net: self,
            me,
            out,
            inbox,
            stash: Vec::new(),
            full_retries: 0,
        }
    }

    fn words(&self, w: usize) -> &WorkerWords {
        words(&self.seg, &self.layout, w)
    }

    fn chan(&self, from: usize, to: usize) -> &AtomicU64 {
        let n = self.layout.workers;
        assert!(from < n && to < n);
        // Safety: channel (from, to) lies inside the segment (`Layout`), is aligned, and is an
        // atomic word for which any bits are valid; `seg` keeps it mapped.
        unsafe {
            &(*self
                .seg
                .base()
                .add(self.layout.chans)
                .cast::<Chan>()
                .add(from * n + to)
                .as_ptr())
            .0
        }
    }

    /// Worker `w`'s MOM: the minimum of its incoming rings' registers and its stash register.
    fn mom(&self, w: usize) -> f64 {
        let n = self.layout.workers;
        let mut m = f64::from_bits(self.words(w).stash_min.load(SeqCst));
        for s in 0..n {
            if let Some(r) = &self.regs[s * n + w] {
                m = m.min(r.min_time());
            }
        }
        m
    }
}

fn words<'s>(seg: &'s Segment, layout: &Layout, w: usize) -> &'s WorkerWords {
    assert!(w < layout.workers);
    // Safety: worker `w`'s words lie at the start of the segment (`Layout`), aligned, atomics
    // for which zero bytes and any stored bits are valid; the segment outlives the borrow.
    unsafe { &*seg.base().cast::<WorkerWords>().add(w).as_ptr() }
}

fn ring_at(seg: &Segment, layout: &Layout, s: usize, r: usize) -> NonNull<u8> {
    assert!(s < layout.workers && r < layout.workers && s != r);
    let off = layout.rings + (s * layout.workers + r) * layout.stride;
    assert!(off + layout.stride <= seg.len());
    // Safety: in bounds (checked above).
    unsafe { seg.base().add(off) }
}

/// One worker's endpoint on a [`ShmNet`]: the producer ends of its outgoing rings, the
/// consumer ends of its incoming rings, and its stash.
pub(crate) struct ShmEnd<'n, E> {
    net: &'n ShmNet,
    me: usize,
    out: Vec<Option<Producer<Event<E>>>>,
    inbox: Vec<Consumer<Event<E>>>,
    /// Events taken from the rings while this worker had to make room (a full ring, a barrier
    /// wait) and not yet received: still counted in its TMC, covered by its stash register.
    stash: Vec<Event<E>>,
    /// How many times a send found its ring still full after the bounded wait (and absorbed).
    full_retries: u64,
}

impl<E> std::fmt::Debug for ShmEnd<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmEnd")
            .field("me", &self.me)
            .field("stash", &self.stash.len())
            .finish_non_exhaustive()
    }
}

/// Moves what waits in worker `me`'s incoming rings to its stash, inside an odd epoch, with
/// the stash register lowered to cover it before the epoch ends (README.md, "Shared memory",
/// X1).
fn absorb<E: ShmSafe>(
    net: &ShmNet,
    me: usize,
    inbox: &mut [Consumer<Event<E>>],
    stash: &mut Vec<Event<E>>,
) {
    if inbox.iter().all(|c| !c.min_time().is_finite()) {
        // Nothing published (a published record keeps its ring's register finite: R2).
        return;
    }
    net.control.bracket(me, || {
        let mut min = f64::INFINITY;
        for c in inbox.iter_mut() {
            c.drain(|e| {
                min = min.min(e.time);
                stash.push(e);
            });
        }
        net.words(me).stash_min.fetch_min(min.to_bits(), SeqCst);
    });
}

impl<E: ShmSafe> Endpoint<E> for ShmEnd<'_, E> {
    #[inline]
    fn me(&self) -> usize {
        self.me
    }

    fn send(&mut self, dst: usize, mut batch: Vec<Event<E>>) {
        if batch.is_empty() {
            return;
        }
        if self.net.copy {
            // Serialize: each payload is copied out of the model's item into a new one (the
            // stand-in for a copy into the ring); the model's item is released here.
            batch = batch.into_iter().map(deep_copy).collect();
        }
        // (S1) counted in transit first, then (S2) pushed (which lowers the ring's register).
        self.net.control.count_sent(dst, batch.len());
        let Self {
            net,
            me,
            out,
            inbox,
            stash,
            full_retries,
        } = self;
        let ring = out[dst].as_mut().expect("no ring to oneself");
        while ring.push_batch(&mut batch, |e| e.time, SEND_WAIT).is_err() {
            *full_retries += 1;
            if net.control.aborted().is_some() {
                // The run is over; nobody will read the rest.
                return;
            }
            // The receiver may be waiting for a ring of ours to drain: make room, keep the batch.
            absorb(net, *me, inbox, stash);
        }
    }

    fn receive<S>(
        &mut self,
        state: &mut S,
        mut f: impl FnMut(&mut S, Event<E>),
        after: impl FnOnce(&mut S) -> Published,
    ) -> usize {
        let Self {
            net,
            me,
            inbox,
            stash,
            ..
        } = self;
        let copy = net.copy;
        // Deserialize: the receiver copies each payload into its own heap (releasing the
        // sender's copy), as a process that received bytes must.
        let mut f = |s: &mut S, e: Event<E>| f(s, if copy { deep_copy(e) } else { e });
        net.control.receive(*me, || {
            let mut n = stash.len();
            for e in stash.drain(..) {
                f(state, e);
            }
            for c in inbox.iter_mut() {
                n += c.drain(|e| f(state, e));
            }
            net.words(*me)
                .stash_min
                .store(f64::INFINITY.to_bits(), SeqCst);
            (n, after(state))
        })
    }

    fn publish(&mut self, p: &Published) {
        self.net.control.publish(self.me, p);
    }

    fn snapshot(&mut self, out: &mut Snapshot) {
        let net = self.net;
        net.control.snapshot(|w| net.mom(w), out);
    }

    fn has_mail(&self) -> bool {
        !self.stash.is_empty() || self.inbox.iter().any(|c| c.min_time().is_finite())
    }

    fn barrier(&mut self) -> bool {
        let Self {
            net,
            me,
            inbox,
            stash,
            ..
        } = self;
        let parties = net.layout.workers as u32;
        net.control
            .barrier_with(parties, BARRIER_TIMEOUT, || absorb(net, *me, inbox, stash))
            .is_ok()
    }

    fn channel(&self, from: usize, to: usize) -> Time {
        f64::from_bits(self.net.chan(from, to).load(SeqCst))
    }

    fn raise_channel(&self, to: usize, t: Time) {
        self.net.chan(self.me, to).store(t.to_bits(), SeqCst);
    }

    fn wake(&self, w: usize) {
        let bell = &self.net.words(w).bell;
        bell.fetch_add(1, SeqCst);
        futex::wake_all(bell);
    }

    fn wait_until(&mut self, ready: impl Fn(&Self) -> bool) {
        let bell = &self.net.words(self.me).bell;
        let this = &*self;
        // The bell is read before `ready` in every round, and a waker bumps it after making
        // `ready` true, so the futex never sleeps through a wake; 1 ms slices bound the rest.
        futex::wait_until(bell, Instant::now() + BARRIER_TIMEOUT, || {
            ready(this) || this.net.control.aborted().is_some()
        });
    }

    fn abort(&self) {
        self.net.control.abort(self.net.proc_index);
        for w in 0..self.net.layout.workers {
            self.wake(w);
        }
    }

    fn aborted(&self) -> bool {
        self.net.control.aborted().is_some()
    }

    fn figures(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("ring_full_retries", self.full_retries as f64));
    }

    fn rendezvous(&mut self, _last: impl FnOnce(&mut Self)) -> bool {
        // Global events are refused before a multi-process run starts (they read every LP's
        // state, which no process holds): reaching here is a bug; stop every process rather
        // than hang.
        self.abort();
        false
    }
}
