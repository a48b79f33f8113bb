//! The conservative protocols' transport between worker processes on one machine: an
//! [`Endpoint`] over the ring mesh (`mesh.rs`, `ends.rs`, `part.rs`). Between every ordered pair of
//! workers (also two threads of one process, so that every MOM register lives in shared
//! memory) a bounded SPSC ring of events; the GSU registers (MOE, TMC), the barrier and the
//! abort word in the shared [`Control`] segment; channel clocks, stash registers and wake-up
//! words for null messages in the mesh's header. Events are moved through the rings as values,
//! so `E` must be [`ShmSafe`].
//!
//! Making room (the full-ring push and the barrier of `part.rs`, as under Time Warp): this
//! protocol's *absorb* the worker's own inbox into its private stash inside an odd epoch of its GSU
//! registers, the stash's minimum published in a shared register that counts in its MOM.
//! Invariants and proof sketch: README.md, "Shared memory".

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::time::Instant;

use super::ends::Ends;
use super::mesh::{Mesh, Record};
use super::part::{Copier, MeshPart};
use super::BARRIER_TIMEOUT;
use crate::event::Event;
use crate::gsu::{Published, Snapshot};
use crate::model::Time;
use crate::shm::{futex, Control, RingRegister, Segment, ShmSafe};
use crate::transport::Endpoint;

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

/// The mesh's header for `workers` workers: their words, then `N × N` channel clocks at
/// [`chans`] bytes; returns its length.
fn header(workers: usize) -> usize {
    chans(workers) + workers * workers * std::mem::size_of::<Chan>()
}

/// Where the channel clocks start in the header.
fn chans(workers: usize) -> usize {
    (workers * std::mem::size_of::<WorkerWords>()).next_multiple_of(128)
}

impl<E: ShmSafe> Record for Event<E> {
    #[inline]
    fn time(&self) -> f64 {
        self.time
    }
}

/// What the workers of one process share of the shared-memory transport.
pub(crate) struct ShmNet {
    /// The rings (with this transport's words as the header; records `Event<E>`), the control
    /// segment.
    part: MeshPart,
    /// The register of every ring, `regs[s * N + r]` (`None` on the diagonal).
    regs: Vec<Option<RingRegister>>,
    /// The copy transport (`--payload copy`, [`Copier`]).
    copy: bool,
}
impl std::fmt::Debug for ShmNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmNet")
            .field("workers", &self.workers())
            .finish_non_exhaustive()
    }
}

impl ShmNet {
    /// Creates the net segment for `workers` workers exchanging `Event<E>`s (parent side):
    /// every ring empty, every channel clock 0, every stash register `+inf`.
    pub(crate) fn create<E: ShmSafe>(workers: usize) -> io::Result<Segment> {
        let seg = Mesh::create::<Event<E>>(header(workers), workers)?;
        for w in 0..workers {
            words(&seg, workers, w)
                .stash_min
                .store(f64::INFINITY.to_bits(), SeqCst);
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
        let part =
            MeshPart::attach::<Event<E>>(seg, header(workers), control, workers, proc_index)?;
        let regs = (0..workers * workers)
            .map(|i| part.mesh.register(i / workers, i % workers))
            .collect();
        Ok(ShmNet { part, regs, copy })
    }

    /// Worker `me`'s endpoint (`E` as given to `attach`). Call at most once per worker over
    /// every process (each ring has one producer and one consumer).
    pub(crate) fn endpoint<E: ShmSafe>(&self, me: usize) -> ShmEnd<'_, E> {
        ShmEnd {
            net: self,
            ends: self.part.mesh.ends::<Event<E>>(me),
            copy: Copier::new(self.copy),
        }
    }

    fn workers(&self) -> usize {
        self.part.workers()
    }

    fn control(&self) -> &Control {
        &self.part.control
    }

    /// The mesh's header: this transport's words.
    fn header(&self) -> NonNull<u8> {
        self.part.mesh.header()
    }

    fn words(&self, w: usize) -> &WorkerWords {
        let n = self.workers();
        assert!(w < n);
        // Safety: worker `w`'s words lie at the start of the header (`header`), aligned (the
        // header is page-aligned), atomics for which zero bytes and any stored bits are valid;
        // the mesh keeps the segment mapped for as long as `self` lives.
        unsafe { &*self.header().cast::<WorkerWords>().add(w).as_ptr() }
    }

    fn chan(&self, from: usize, to: usize) -> &AtomicU64 {
        let n = self.workers();
        assert!(from < n && to < n);
        // Safety: channel (from, to) lies inside the header (`header`, `chans`), aligned, an
        // atomic word for which any bits are valid; the mesh keeps it mapped.
        unsafe {
            &(*self
                .header()
                .add(chans(n))
                .cast::<Chan>()
                .add(from * n + to)
                .as_ptr())
            .0
        }
    }

    /// Worker `w`'s MOM: the minimum of its incoming rings' registers and its stash register.
    fn mom(&self, w: usize) -> f64 {
        let n = self.workers();
        let mut m = f64::from_bits(self.words(w).stash_min.load(SeqCst));
        for s in 0..n {
            if let Some(r) = &self.regs[s * n + w] {
                m = m.min(r.min_time());
            }
        }
        m
    }
}

/// Worker `w`'s words in a fresh net segment (before any process attached).
fn words(seg: &Segment, workers: usize, w: usize) -> &WorkerWords {
    assert!(w < workers && header(workers) <= seg.len());
    // Safety: as in `ShmNet::words`; the segment outlives the borrow.
    unsafe { &*seg.base().cast::<WorkerWords>().add(w).as_ptr() }
}

/// One worker's endpoint on a [`ShmNet`]: its ends of the mesh (events taken from the rings
/// while it had to make room wait in their stash: still counted in its TMC, covered by its
/// stash register).
pub(crate) struct ShmEnd<'n, E> {
    net: &'n ShmNet,
    ends: Ends<Event<E>>,
    copy: Copier<Event<E>>,
}

impl<E> std::fmt::Debug for ShmEnd<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmEnd")
            .field("ends", &self.ends)
            .finish_non_exhaustive()
    }
}

/// Makes room for a sender or a barrier waiter: moves what waits in its incoming rings to its
/// stash inside an odd epoch, with the stash register lowered to cover it before the epoch
/// ends (README.md, "Shared memory", X1).
fn absorb<E: ShmSafe>(net: &ShmNet, ends: &mut Ends<Event<E>>) {
    if !ends.rings_hold_mail() {
        // Nothing published (a published record keeps its ring's register finite: R2).
        return;
    }
    let me = ends.me();
    net.control().bracket(me, || {
        let min = ends.absorb();
        net.words(me).stash_min.fetch_min(min.to_bits(), SeqCst);
    });
}

impl<E: ShmSafe> Endpoint<E> for ShmEnd<'_, E> {
    #[inline]
    fn me(&self) -> usize {
        self.ends.me()
    }

    fn send(&mut self, dst: usize, mut batch: Vec<Event<E>>) {
        if batch.is_empty() {
            return;
        }
        let Self { net, ends, copy } = self;
        if copy.on() {
            batch = batch.into_iter().map(|e| copy.sent(e)).collect();
        }
        // (S1) counted in transit first, then (S2) pushed (which lowers the ring's register).
        net.control().count_sent(dst, batch.len());
        // Once the run is aborted nobody will read the rest, which is dropped.
        net.part
            .push(ends, dst, &mut batch, |ends| absorb(net, ends), || false);
    }

    fn receive<S>(
        &mut self,
        state: &mut S,
        mut f: impl FnMut(&mut S, Event<E>),
        after: impl FnOnce(&mut S) -> Published,
    ) -> usize {
        let Self { net, ends, copy } = self;
        let me = ends.me();
        net.control().receive(me, || {
            let n = ends.take(true, |_, e| f(state, copy.received(e)));
            net.words(me)
                .stash_min
                .store(f64::INFINITY.to_bits(), SeqCst);
            (n, after(state))
        })
    }

    fn publish(&mut self, p: &Published) {
        self.net.control().publish(self.ends.me(), p);
    }

    fn snapshot(&mut self, out: &mut Snapshot) {
        let net = self.net;
        net.control().snapshot(|w| net.mom(w), out);
    }

    fn has_mail(&self) -> bool {
        self.ends.has_mail()
    }

    fn barrier(&mut self) -> bool {
        let Self { net, ends, .. } = self;
        net.part.barrier(|| absorb(net, ends))
    }

    fn channel(&self, from: usize, to: usize) -> Time {
        f64::from_bits(self.net.chan(from, to).load(SeqCst))
    }

    fn raise_channel(&self, to: usize, t: Time) {
        self.net.chan(self.ends.me(), to).store(t.to_bits(), SeqCst);
    }

    fn wake(&self, w: usize) {
        let bell = &self.net.words(w).bell;
        bell.fetch_add(1, SeqCst);
        futex::wake_all(bell);
    }

    fn wait_until(&mut self, ready: impl Fn(&Self) -> bool) {
        let bell = &self.net.words(self.ends.me()).bell;
        let this = &*self;
        // The bell is read before `ready` in every round, and a waker bumps it after making
        // `ready` true, so the futex never sleeps through a wake; 1 ms slices bound the rest.
        futex::wait_until(bell, Instant::now() + BARRIER_TIMEOUT, || {
            ready(this) || this.net.part.aborted()
        });
    }

    fn abort(&self) {
        self.net.part.abort();
        for w in 0..self.net.workers() {
            self.wake(w);
        }
    }

    fn aborted(&self) -> bool {
        self.net.part.aborted()
    }

    fn figures(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("ring_full_retries", self.ends.full_retries() as f64));
    }

    fn rendezvous(&mut self, _last: impl FnOnce(&mut Self)) -> bool {
        // Global events are refused before a multi-process run starts (they read every LP's
        // state, which no process holds): reaching here is a bug; stop every process rather
        // than hang.
        self.abort();
        false
    }
}
