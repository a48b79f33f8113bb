//! Per-thread buffered reference counting (seed 001 §3.3.4).
//!
//! A clone or a drop does not touch the item: it appends the item's address to one of two
//! buffers of the calling thread, one of references and one of unreferences. When either is
//! full (see [`set_buffer_capacity`]; default 10 000 operations, the seed's best), both go to a
//! central store with a *uid* from one global counter. The store is applied by one thread at a
//! time under its lock, so the counts themselves are plain integers:
//!
//! - a batch's references are applied at once, and the batch's uid becomes its thread's
//!   *last applied reference uid*;
//! - a batch's unreferences wait in uid order until their uid is at most the smallest last
//!   applied reference uid over the registered threads; an item whose count then reaches zero
//!   is freed (after the lock is released).
//!
//! [`Buffered`] applies the store in the thread that pushed the batch (the seed's "immediate"
//! application); [`BufferedDeferred`] hands it to a dedicated thread (the seed's "dedicated
//! thread"). The README beside this file has the proof that an item is never freed while a
//! handle to it exists. A thread that holds handles but stops cloning and dropping holds back
//! every thread's unreferences until it pushes again: call [`BufferedScheme::flush`] (or let
//! the thread end) to release them.

use std::cell::{RefCell, UnsafeCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{Raw, Scheme};

/// Buffered counting with a compile-time choice of who applies the buffers; use the aliases.
#[derive(Debug)]
pub enum BufferedScheme<const DEFERRED: bool> {}

/// Buffered counting, applied by the thread that fills a buffer (seed 001 §3.3.4, "B-I").
pub type Buffered = BufferedScheme<false>;
/// Buffered counting, applied by a dedicated thread (seed 001 §3.3.4, "B-T").
pub type BufferedDeferred = BufferedScheme<true>;

static CAPACITY: AtomicUsize = AtomicUsize::new(10_000);

/// Sets how many operations a thread's buffer holds before it is pushed (at least 1), for
/// buffers started after the call. The seed compares 1 000, 10 000 and 100 000 (Table 7).
pub fn set_buffer_capacity(ops: usize) {
    // Ordering: a tuning knob; a thread that reads an older value is still correct.
    CAPACITY.store(ops.max(1), Ordering::Relaxed);
}

fn capacity() -> usize {
    // Ordering: see `set_buffer_capacity`.
    CAPACITY.load(Ordering::Relaxed)
}

/// An item's count: changed only by the thread that holds the central lock.
#[derive(Debug)]
pub struct Count(UnsafeCell<usize>);

// Safety: the cell is read and written only under the central store's mutex (or by the thread
// that creates the item, before any other thread can see it).
unsafe impl Sync for Count {}

/// A buffered operation's item (a reference needs only the count; an unreference may free).
#[derive(Clone, Copy)]
struct Op(Raw);

/// A thread's reference and unreference buffers.
type Buffers = (Vec<Op>, Vec<Op>);

struct Batch {
    uid: u64,
    /// The registered thread that pushed it, and whether that thread is leaving.
    slot: Option<(usize, bool)>,
    refs: Vec<Op>,
    unrefs: Vec<Op>,
}

#[derive(Default)]
struct Store {
    next_uid: u64,
    /// Per registered thread: the uid of its last applied batch of references.
    last_ref: Vec<Option<u64>>,
    /// Pushed, not yet applied (the dedicated thread's queue).
    pending: Vec<Batch>,
    /// Applied references, unreferences waiting for the uid rule, in uid order.
    waiting: VecDeque<(u64, Vec<Op>)>,
    /// The uid of the last batch applied.
    applied: u64,
    processor_started: bool,
    /// Emptied buffers, handed back to pushing threads (a 10 000-operation buffer is 160 KB:
    /// allocating one per push costs page faults).
    spare: Vec<Vec<Op>>,
}

struct Central {
    store: Mutex<Store>,
    /// Signals the dedicated thread that a batch is pending.
    work: Condvar,
    /// Signals `flush` callers that batches were applied.
    done: Condvar,
}

static IMMEDIATE: Central = Central::new();
static DEFERRED: Central = Central::new();

impl Central {
    const fn new() -> Central {
        Central {
            store: Mutex::new(Store {
                next_uid: 0,
                last_ref: Vec::new(),
                pending: Vec::new(),
                waiting: VecDeque::new(),
                applied: 0,
                processor_started: false,
                spare: Vec::new(),
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn central(deferred: bool) -> &'static Central {
    if deferred {
        &DEFERRED
    } else {
        &IMMEDIATE
    }
}

impl Store {
    fn take_uid(&mut self) -> u64 {
        self.next_uid += 1;
        self.next_uid
    }

    fn register(&mut self) -> usize {
        let uid = self.take_uid();
        match self.last_ref.iter().position(Option::is_none) {
            Some(slot) => {
                self.last_ref[slot] = Some(uid);
                slot
            }
            None => {
                self.last_ref.push(Some(uid));
                self.last_ref.len() - 1
            }
        }
    }

    /// Applies one batch: its references now, its unreferences when the uid rule allows.
    fn recycle(&mut self, mut buffer: Vec<Op>) {
        if self.spare.len() < 64 && buffer.capacity() > 0 {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    /// Two empty buffers for a thread that just pushed its own.
    fn spares(&mut self) -> Buffers {
        let cap = capacity();
        let mut one = || self.spare.pop().unwrap_or_else(|| Vec::with_capacity(cap));
        (one(), one())
    }

    fn apply(&mut self, batch: Batch, frees: &mut Vec<Raw>) {
        for op in &batch.refs {
            // Safety: a reference is recorded by a handle that exists, so the item is alive
            // until its unreference is applied, which is after this (the uid rule); counts are
            // changed only under this lock.
            unsafe { *(*op.0.header::<Buffered>()).0.get() += 1 };
        }
        if let Some((slot, leaving)) = batch.slot {
            self.last_ref[slot] = if leaving { None } else { Some(batch.uid) };
        }
        self.recycle(batch.refs);
        if batch.unrefs.is_empty() {
            self.recycle(batch.unrefs);
        } else {
            self.waiting.push_back((batch.uid, batch.unrefs));
        }
        self.applied = self.applied.max(batch.uid);
        let min = self
            .last_ref
            .iter()
            .flatten()
            .copied()
            .min()
            .unwrap_or(u64::MAX);
        while self.waiting.front().is_some_and(|(uid, _)| *uid <= min) {
            let (_, unrefs) = self.waiting.pop_front().expect("checked above");
            for op in &unrefs {
                // Safety: as above; the uid rule guarantees every reference recorded before
                // this unreference has been applied, so the count does not reach zero early.
                let count = unsafe { &mut *(*op.0.header::<Buffered>()).0.get() };
                *count -= 1;
                if *count == 0 {
                    frees.push(op.0);
                }
            }
            self.recycle(unrefs);
        }
    }
}

/// Frees items whose count reached zero (outside the lock: a value's drop may drop handles).
fn free_all(frees: Vec<Raw>) {
    for raw in frees {
        // Safety: its count reached zero under the uid rule: no handle remains.
        unsafe { raw.free() }
    }
}

/// Pushes a batch and applies it (immediate) or queues it for the dedicated thread; returns
/// its uid.
fn push(deferred: bool, slot: Option<(usize, bool)>, refs: Vec<Op>, unrefs: Vec<Op>) -> u64 {
    push_and_refill(deferred, slot, refs, unrefs, false).0
}

/// As `push`, and when `refill`, also returns two empty buffers for the pushing thread.
fn push_and_refill(
    deferred: bool,
    slot: Option<(usize, bool)>,
    refs: Vec<Op>,
    unrefs: Vec<Op>,
    refill: bool,
) -> (u64, Option<Buffers>) {
    let c = central(deferred);
    let mut store = c.lock();
    let uid = store.take_uid();
    let batch = Batch {
        uid,
        slot,
        refs,
        unrefs,
    };
    if deferred {
        store.pending.push(batch);
        if !store.processor_started {
            store.processor_started = true;
            std::thread::Builder::new()
                .name("chronon-refcount".into())
                .spawn(processor)
                .expect("cannot start the reference-counting thread");
        }
        c.work.notify_one();
        let spares = refill.then(|| store.spares());
        (uid, spares)
    } else {
        let mut frees = Vec::new();
        store.apply(batch, &mut frees);
        let spares = refill.then(|| store.spares());
        drop(store);
        free_all(frees);
        (uid, spares)
    }
}

/// The dedicated thread of [`BufferedDeferred`].
fn processor() {
    LOCAL_DEFERRED.with_borrow_mut(|b| b.direct = true);
    let c = central(true);
    loop {
        let mut store = c.lock();
        while store.pending.is_empty() {
            store = c.work.wait(store).unwrap_or_else(|e| e.into_inner());
        }
        let batches = std::mem::take(&mut store.pending);
        let mut frees = Vec::new();
        for b in batches {
            store.apply(b, &mut frees);
        }
        drop(store);
        free_all(frees);
        c.done.notify_all();
    }
}

struct ThreadBuffers {
    deferred: bool,
    /// The dedicated thread: its operations are pushed one by one (it applies the store, and
    /// an idle registered thread would hold back every unreference).
    direct: bool,
    slot: Option<usize>,
    refs: Vec<Op>,
    unrefs: Vec<Op>,
}

impl ThreadBuffers {
    const fn new(deferred: bool) -> Self {
        ThreadBuffers {
            deferred,
            direct: false,
            slot: None,
            refs: Vec::new(),
            unrefs: Vec::new(),
        }
    }

    fn slot(&mut self) -> usize {
        let deferred = self.deferred;
        *self
            .slot
            .get_or_insert_with(|| central(deferred).lock().register())
    }

    /// Takes both buffers when either is full.
    fn take_if_full(&mut self) -> Option<(usize, Vec<Op>, Vec<Op>)> {
        let cap = capacity();
        if self.refs.len() < cap && self.unrefs.len() < cap {
            return None;
        }
        let slot = self.slot();
        Some((
            slot,
            std::mem::take(&mut self.refs),
            std::mem::take(&mut self.unrefs),
        ))
    }
}

impl Drop for ThreadBuffers {
    fn drop(&mut self) {
        // The thread ends: push what is left and leave the uid rule's minimum.
        if let Some(slot) = self.slot {
            let refs = std::mem::take(&mut self.refs);
            let unrefs = std::mem::take(&mut self.unrefs);
            push(self.deferred, Some((slot, true)), refs, unrefs);
        }
    }
}

std::thread_local! {
    static LOCAL_IMMEDIATE: RefCell<ThreadBuffers> = const { RefCell::new(ThreadBuffers::new(false)) };
    static LOCAL_DEFERRED: RefCell<ThreadBuffers> = const { RefCell::new(ThreadBuffers::new(true)) };
}

fn with_local<R>(deferred: bool, f: impl FnOnce(&mut ThreadBuffers) -> R) -> Option<R> {
    let key = if deferred {
        &LOCAL_DEFERRED
    } else {
        &LOCAL_IMMEDIATE
    };
    key.try_with(|cell| cell.try_borrow_mut().ok().map(|mut b| f(&mut b)))
        .ok()
        .flatten()
}

/// What `record` did with an operation.
enum Recorded {
    Kept,
    /// Both buffers, taken because one is full.
    Full(usize, Vec<Op>, Vec<Op>),
    /// Not buffered: the dedicated thread, or a thread whose buffers are being torn down.
    Direct,
}

/// Records one operation in this thread's buffers, or pushes it alone when the thread has no
/// usable buffers.
fn record(deferred: bool, op: Op, is_ref: bool) {
    let recorded = with_local(deferred, |b| {
        if b.direct {
            return Recorded::Direct;
        }
        // Register before the first record: the registration uid bounds the unreferences this
        // thread's records must precede (see the README's proof).
        b.slot();
        if is_ref {
            b.refs.push(op);
        } else {
            b.unrefs.push(op);
        }
        match b.take_if_full() {
            Some((slot, refs, unrefs)) => Recorded::Full(slot, refs, unrefs),
            None => Recorded::Kept,
        }
    })
    .unwrap_or(Recorded::Direct);
    match recorded {
        Recorded::Kept => {}
        Recorded::Full(slot, refs, unrefs) => {
            let (_, spares) = push_and_refill(deferred, Some((slot, false)), refs, unrefs, true);
            if let Some((r, u)) = spares {
                // Reuse the emptied buffers unless frees made during the push started new ones.
                with_local(deferred, |b| {
                    if b.refs.capacity() == 0 {
                        b.refs = r;
                    }
                    if b.unrefs.capacity() == 0 {
                        b.unrefs = u;
                    }
                });
            }
        }
        Recorded::Direct => {
            let (refs, unrefs) = if is_ref {
                (vec![op], Vec::new())
            } else {
                (Vec::new(), vec![op])
            };
            push(deferred, None, refs, unrefs);
        }
    }
}

impl<const D: bool> BufferedScheme<D> {
    /// Pushes this thread's buffers now, full or not, and returns when they have been applied
    /// (for [`BufferedDeferred`], waits for the dedicated thread). Items whose last handle was
    /// dropped anywhere are freed once every thread that holds handles has pushed since.
    pub fn flush() {
        let taken = with_local(D, |b| {
            let slot = b.slot();
            (
                slot,
                std::mem::take(&mut b.refs),
                std::mem::take(&mut b.unrefs),
            )
        });
        let uid = match taken {
            Some((slot, refs, unrefs)) => push(D, Some((slot, false)), refs, unrefs),
            None => push(D, None, Vec::new(), Vec::new()),
        };
        if D {
            let c = central(D);
            let mut store = c.lock();
            while store.applied < uid {
                store = c.done.wait(store).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    /// Pushes this thread's buffers and takes it out of the uid rule's minimum, as if it
    /// ended: an idle thread then holds back no other thread's unreferences. It registers
    /// again, with a fresh uid, at its next clone or drop (a thread that ends and a new one).
    /// For a thread that counts once and then waits (one that builds a model's first events).
    pub fn leave() {
        let taken = with_local(D, |b| {
            b.slot.take().map(|slot| {
                (
                    slot,
                    std::mem::take(&mut b.refs),
                    std::mem::take(&mut b.unrefs),
                )
            })
        })
        .flatten();
        if let Some((slot, refs, unrefs)) = taken {
            push(D, Some((slot, true)), refs, unrefs);
        }
    }
}

// Safety: see the module docs and the README: a reference is applied before any unreference
// that could follow it (the uid rule), counts change only under the central lock, and an item
// is freed once, by the thread that took its count to zero, after releasing the lock.
unsafe impl<const D: bool> Scheme for BufferedScheme<D> {
    const NAME: &'static str = if D { "buffered-thread" } else { "buffered" };
    type Header = Count;
    type Local = ();

    fn new_header() -> Count {
        Count(UnsafeCell::new(1))
    }

    fn first_local(_: &Count) {}

    unsafe fn clone_ref(_: &Count, _: &(), raw: Raw) {
        record(D, Op(raw), true);
    }

    unsafe fn drop_ref(_: &mut (), raw: Raw) {
        record(D, Op(raw), false);
    }

    fn flush() {
        BufferedScheme::<D>::flush();
    }
}
