//! A bounded single-producer, single-consumer ring of records in shared memory, with a
//! minimum-timestamp register (the MOM / BH_min register of one link) and the bounded wait of
//! seed 000 §3.2: a sender waits at most a given time for space, then gets the unsent rest of
//! its batch back, so two processes that fill each other's rings never deadlock (each returns,
//! drains its own inbox, and retries). One ring per (sender, receiver) pair; the receiver's MOM
//! is the minimum over its incoming rings. This is Lamport's SPSC ring buffer (L. Lamport,
//! "Specifying Concurrent Program Modules", TOPLAS 1983) with monotone 64-bit positions.
//! Protocol, invariants and proof: README.md, "Ring".

use std::any::Any;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr::NonNull;
use std::sync::Arc;

use super::ShmSafe;
use crate::loom::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};

/// The shared part of a ring. Producer-written and consumer-written words sit on separate
/// cache lines.
#[repr(C, align(64))]
pub(crate) struct Header {
    /// Next position the producer writes (written by the producer only).
    tail: AtomicU64,
    _pad0: [u64; 7],
    /// Next position the consumer reads (written by the consumer only).
    head: AtomicU64,
    /// Bumped by the consumer when it frees space while a producer waits (a futex word).
    space: AtomicU32,
    /// 1 while a producer is (about to be) waiting for space.
    waiting: AtomicU32,
    /// Bits of a lower bound on the times of the records in the ring (`+inf`: none).
    min: AtomicU64,
    /// Number of slots (a power of two); never changes.
    cap: u64,
}

impl Header {
    fn new(cap: usize) -> Header {
        Header {
            tail: AtomicU64::new(0),
            _pad0: [0; 7],
            head: AtomicU64::new(0),
            space: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            min: AtomicU64::new(f64::INFINITY.to_bits()),
            cap: cap as u64,
        }
    }
}

type Slot<T> = UnsafeCell<MaybeUninit<T>>;

/// Where a ring lives: the header and the slots, kept alive by `_keep`.
struct Raw<T> {
    hdr: NonNull<Header>,
    slots: NonNull<Slot<T>>,
    mask: u64,
    _keep: Arc<dyn Any + Send + Sync>,
}

impl<T> Raw<T> {
    fn hdr(&self) -> &Header {
        // Safety: `hdr` points to an initialized header that `_keep` keeps mapped.
        unsafe { self.hdr.as_ref() }
    }
    fn slot(&self, pos: u64) -> *mut MaybeUninit<T> {
        // Safety: `pos & mask` < cap, and the slots array has `cap` elements.
        unsafe { (*self.slots.as_ptr().add((pos & self.mask) as usize)).get() }
    }
}

/// The bytes a ring of `cap` records of `T` takes in a segment (header + slots).
pub fn ring_bytes<T>(cap: usize) -> usize {
    slots_offset::<T>() + cap * size_of::<Slot<T>>()
}

fn slots_offset<T>() -> usize {
    size_of::<Header>().next_multiple_of(align_of::<T>())
}

fn check_cap(cap: usize) {
    assert!(
        cap.is_power_of_two(),
        "ring capacity must be a power of two, got {cap}"
    );
}

/// Heap storage for a ring used inside one process (tests, loom).
struct Local<T> {
    hdr: Box<Header>,
    slots: Box<[Slot<T>]>,
}
// Safety: the storage is only reached through `Producer`/`Consumer`, whose protocol makes the
// accesses race-free; `T: Send` values move between the two ends.
unsafe impl<T: Send> Send for Local<T> {}
// Safety: see `Send`.
unsafe impl<T: Send> Sync for Local<T> {}

/// A ring in process memory (for tests and loom models): its two ends.
pub fn local_ring<T: ShmSafe>(cap: usize) -> (Producer<T>, Consumer<T>) {
    check_cap(cap);
    let keep = Arc::new(Local::<T> {
        hdr: Box::new(Header::new(cap)),
        slots: (0..cap)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect(),
    });
    let raw = || Raw {
        hdr: NonNull::from(&*keep.hdr),
        slots: NonNull::new(keep.slots.as_ptr().cast_mut()).expect("slots"),
        mask: cap as u64 - 1,
        _keep: keep.clone() as Arc<dyn Any + Send + Sync>,
    };
    (Producer::new(raw()), Consumer::new(raw()))
}

/// Initializes an empty ring of `cap` records (a power of two) at `at`.
///
/// # Safety
/// `at` must be 64-byte aligned and valid for `ring_bytes::<T>(cap)` bytes that no one else
/// uses, and no `Producer`/`Consumer` may be attached to it yet.
pub unsafe fn init_ring<T>(at: NonNull<u8>, cap: usize) {
    check_cap(cap);
    // Safety: the caller gives us exclusive, aligned memory for the header.
    unsafe { at.cast::<Header>().as_ptr().write(Header::new(cap)) };
}

/// # Safety
/// `at` was initialized by `init_ring::<T>` and `keep` keeps it mapped.
unsafe fn attach<T>(at: NonNull<u8>, keep: Arc<dyn Any + Send + Sync>) -> Raw<T> {
    let hdr = at.cast::<Header>();
    // Safety: initialized by `init_ring`; the capacity never changes.
    let cap = unsafe { hdr.as_ref().cap };
    // Safety: the slots follow the header inside the ring's bytes (`ring_bytes`).
    let slots = unsafe { at.add(slots_offset::<T>()) }.cast::<Slot<T>>();
    Raw {
        hdr,
        slots,
        mask: cap - 1,
        _keep: keep,
    }
}

/// The sending end of a ring. `Send` but not `Sync`: one thread of one process sends.
pub struct Producer<T> {
    raw: Raw<T>,
    tail: u64,
    _one_thread: PhantomData<*mut ()>,
}

/// The receiving end of a ring. `Send` but not `Sync`: one thread of one process receives.
pub struct Consumer<T> {
    raw: Raw<T>,
    _one_thread: PhantomData<*mut ()>,
}

// Safety: an end may move to another thread; it is `!Sync`, so one thread uses it at a time.
unsafe impl<T: ShmSafe> Send for Producer<T> {}
// Safety: see `Producer`.
unsafe impl<T: ShmSafe> Send for Consumer<T> {}

impl<T> std::fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("tail", &self.tail)
            .finish()
    }
}
impl<T: ShmSafe> std::fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("min_time", &self.min_time())
            .finish()
    }
}

impl<T: ShmSafe> Producer<T> {
    fn new(raw: Raw<T>) -> Self {
        let tail = raw.hdr().tail.load(SeqCst);
        Producer {
            raw,
            tail,
            _one_thread: PhantomData,
        }
    }

    /// The producer end of the ring at `at`.
    ///
    /// # Safety
    /// `at` was initialized by [`init_ring::<T>`](init_ring), `keep` keeps it mapped, and no
    /// other `Producer` of this ring exists in any process.
    pub unsafe fn attach(at: NonNull<u8>, keep: Arc<dyn Any + Send + Sync>) -> Self {
        // Safety: forwarded from the caller.
        Self::new(unsafe { attach(at, keep) })
    }

    /// Moves as many records from the front of `batch` into the ring as fit, without waiting;
    /// returns how many. `time` gives each record's timestamp, for the register.
    pub fn try_push_batch(&mut self, batch: &mut Vec<T>, time: impl Fn(&T) -> f64) -> usize {
        let hdr = self.raw.hdr();
        let head = hdr.head.load(SeqCst);
        let free = (self.raw.mask + 1) - (self.tail - head);
        let n = (free as usize).min(batch.len());
        if n == 0 {
            return 0;
        }
        let mut min = f64::INFINITY;
        for (i, v) in batch.drain(..n).enumerate() {
            min = min.min(time(&v));
            // Safety: positions tail..tail+n are free (the consumer has read every position
            // below `head`, and tail - head + n <= cap), so the consumer does not touch them
            // until the `tail` update below (P1) publishes them.
            unsafe { (*self.raw.slot(self.tail + i as u64)).write(v) };
        }
        self.tail += n as u64;
        // (P1) publish with a read-modify-write, then (P2) lower the register (README, R2).
        hdr.tail.fetch_add(n as u64, SeqCst);
        hdr.min.fetch_min(min.to_bits(), SeqCst);
        n
    }

    /// The first half of a wait for space: announces the waiter and says whether to sleep,
    /// returning the futex value to sleep on (README, R3). `None`: space is there.
    #[cfg_attr(all(chronon_loom, not(test)), allow(dead_code))]
    pub(crate) fn prepare_wait(&self) -> Option<u32> {
        let hdr = self.raw.hdr();
        // (W1) the futex value, (W2) announce, (W3) read `head` with a read-modify-write.
        let seen = hdr.space.load(SeqCst);
        hdr.waiting.swap(1, SeqCst);
        let head = hdr.head.fetch_add(0, SeqCst);
        if self.tail - head <= self.raw.mask {
            None
        } else {
            Some(seen)
        }
    }

    /// The register word (for tests).
    #[cfg(all(test, chronon_loom))]
    pub(crate) fn space_word(&self) -> u32 {
        self.raw.hdr().space.load(SeqCst)
    }
}

#[cfg(not(chronon_loom))]
impl<T: ShmSafe> Producer<T> {
    /// Sends `batch` (in order), waiting at most `timeout` for space (seed 000 §3.2's bounded
    /// wait). `Ok` when everything was sent; `Err(Full)` with the unsent records still in
    /// `batch` when the time ran out: drain your own inbox, then retry.
    pub fn push_batch(
        &mut self,
        batch: &mut Vec<T>,
        time: impl Fn(&T) -> f64,
        timeout: std::time::Duration,
    ) -> Result<(), Full> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            self.try_push_batch(batch, &time);
            if batch.is_empty() {
                return Ok(());
            }
            let mut round = 0u32;
            loop {
                match self.prepare_wait() {
                    None => break,
                    Some(seen) => {
                        let now = std::time::Instant::now();
                        if now >= deadline {
                            return Err(Full {
                                unsent: batch.len(),
                            });
                        }
                        if round < 8 {
                            std::thread::yield_now();
                        } else {
                            let slice = (deadline - now).min(std::time::Duration::from_millis(1));
                            super::futex::wait(&self.raw.hdr().space, seen, slice);
                        }
                        round += 1;
                    }
                }
            }
        }
    }
}

/// A read-only view of a ring's register, for any process and thread: the MOM reads of a
/// snapshot (`Control::snapshot`) are done by workers that are not the ring's consumer.
pub struct RingRegister {
    hdr: NonNull<Header>,
    _keep: Arc<dyn Any + Send + Sync>,
}

// Safety: it only loads one atomic word of a header that `_keep` keeps mapped.
unsafe impl Send for RingRegister {}
// Safety: see `Send`.
unsafe impl Sync for RingRegister {}

impl std::fmt::Debug for RingRegister {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingRegister")
            .field("min_time", &self.min_time())
            .finish()
    }
}

impl RingRegister {
    /// The register of the ring at `at`.
    ///
    /// # Safety
    /// `at` was initialized by [`init_ring`] and `keep` keeps it mapped.
    pub unsafe fn attach(at: NonNull<u8>, keep: Arc<dyn Any + Send + Sync>) -> Self {
        RingRegister {
            hdr: at.cast(),
            _keep: keep,
        }
    }

    /// As [`Consumer::min_time`].
    pub fn min_time(&self) -> f64 {
        // Safety: an initialized header, kept mapped by `_keep`.
        f64::from_bits(unsafe { self.hdr.as_ref() }.min.load(SeqCst))
    }
}

/// A bounded wait for ring space ran out; the unsent records are still in the caller's batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full {
    /// How many records were not sent.
    pub unsent: usize,
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ring full: {} records not sent", self.unsent)
    }
}
impl std::error::Error for Full {}

impl<T: ShmSafe> Consumer<T> {
    fn new(raw: Raw<T>) -> Self {
        Consumer {
            raw,
            _one_thread: PhantomData,
        }
    }

    /// The consumer end of the ring at `at`.
    ///
    /// # Safety
    /// `at` was initialized by [`init_ring::<T>`](init_ring), `keep` keeps it mapped, and no
    /// other `Consumer` of this ring exists in any process.
    pub unsafe fn attach(at: NonNull<u8>, keep: Arc<dyn Any + Send + Sync>) -> Self {
        // Safety: forwarded from the caller.
        Self::new(unsafe { attach(at, keep) })
    }

    /// A lower bound on the timestamps of the records in the ring (`+inf` when none): never
    /// above a record that is in it (README, R2). Any process may read it (the MOM register).
    pub fn min_time(&self) -> f64 {
        f64::from_bits(self.raw.hdr().min.load(SeqCst))
    }

    /// A read-only view of this ring's register, for other threads (loom models).
    #[cfg(all(test, chronon_loom))]
    pub(crate) fn register(&self) -> RingRegister {
        RingRegister {
            hdr: self.raw.hdr,
            _keep: self.raw._keep.clone(),
        }
    }

    /// Takes every record published so far, in order, handing each to `f`; returns how many.
    pub fn drain(&mut self, mut f: impl FnMut(T)) -> usize {
        let hdr = self.raw.hdr();
        // (C1) reset the register, then (C2) read how far the producer has published, with a
        // read-modify-write (README, R2).
        hdr.min.store(f64::INFINITY.to_bits(), SeqCst);
        let tail = hdr.tail.fetch_add(0, SeqCst);
        let head = hdr.head.load(SeqCst);
        for pos in head..tail {
            // Safety: positions head..tail were written and published by the producer's store
            // of `tail` (read above), and it will not touch them until `head` passes them.
            f(unsafe { (*self.raw.slot(pos)).assume_init_read() });
        }
        if tail != head {
            // (C3) free the slots, then (C4) wake a waiting producer (README, R3); both are
            // read-modify-writes.
            hdr.head.fetch_add(tail - head, SeqCst);
            if hdr.waiting.swap(0, SeqCst) != 0 {
                hdr.space.fetch_add(1, SeqCst);
                #[cfg(not(chronon_loom))]
                super::futex::wake_all(&hdr.space);
            }
        }
        (tail - head) as usize
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        let hdr = self.raw.hdr();
        let tail = hdr.tail.load(SeqCst);
        let head = hdr.head.load(SeqCst);
        for pos in head..tail {
            // Safety: as in `drain`: published, unread records; dropped once, then freed.
            unsafe { (*self.raw.slot(pos)).assume_init_drop() };
        }
        hdr.head.store(tail, SeqCst);
    }
}
