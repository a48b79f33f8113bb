//! One shared count per item: a mutex, two atomic adds, and compare-and-exchange (seed 001
//! §3.3.1–3.3.2).

use crate::loom::atomic::{fence, AtomicUsize, Ordering};
use crate::loom::Mutex;

use super::{Raw, Scheme};

/// The count behind a mutex (seed 001 §3.3.1): the simplest thread-safe count, and the slowest.
#[derive(Debug)]
pub enum Locked {}

// Safety: the count changes only under the mutex; the drop that takes it to zero frees the
// item after releasing the lock, and no other handle exists then.
unsafe impl Scheme for Locked {
    const NAME: &'static str = "locked";
    type Header = Mutex<usize>;
    type Local = ();

    fn new_header() -> Mutex<usize> {
        Mutex::new(1)
    }

    fn first_local(_: &Mutex<usize>) {}

    unsafe fn clone_ref(header: &Mutex<usize>, _: &(), _: Raw) {
        *header.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }

    unsafe fn drop_ref(_: &mut (), raw: Raw) {
        // Safety: the caller's handle keeps the header alive until the count reaches zero.
        let header = unsafe { &*raw.header::<Self>() };
        let last = {
            let mut count = header.lock().unwrap_or_else(|e| e.into_inner());
            *count -= 1;
            *count == 0
        };
        if last {
            // Safety: the count reached zero under the lock: this was the last handle.
            unsafe { raw.free() }
        }
    }
}

/// An atomic add whose old value is never read (seed 001 §3.3.2): x86 compiles it to
/// `lock add` for a clone and `lock sub` + a flag test for a drop.
#[derive(Debug)]
pub enum LockAdd {}

// Safety: the classic atomic count (as `std::sync::Arc`): the decrement that reaches zero is
// the last reference; Release on every decrement and an Acquire fence before the free order
// every handle's use of the value before the free.
unsafe impl Scheme for LockAdd {
    const NAME: &'static str = "lock-add";
    type Header = AtomicUsize;
    type Local = ();

    fn new_header() -> AtomicUsize {
        AtomicUsize::new(1)
    }

    fn first_local(_: &AtomicUsize) {}

    unsafe fn clone_ref(header: &AtomicUsize, _: &(), _: Raw) {
        // Ordering: a new reference is made from an existing one, which already keeps the
        // item alive; nothing is published by the increment.
        header.fetch_add(1, Ordering::Relaxed);
    }

    unsafe fn drop_ref(_: &mut (), raw: Raw) {
        // Safety: the caller's handle keeps the header alive until this decrement.
        let header = unsafe { &*raw.header::<Self>() };
        // Ordering: Release publishes this handle's uses of the value to the last dropper.
        if header.fetch_sub(1, Ordering::Release) == 1 {
            // Ordering: pairs with every other handle's Release decrement.
            fence(Ordering::Acquire);
            // Safety: the count reached zero: this was the last handle.
            unsafe { raw.free() }
        }
    }
}

/// Exchange-and-add (seed 001 §3.3.2, the seed's fastest lockless count): `lock xadd`, whose
/// old value a clone checks for overflow.
#[derive(Debug)]
pub enum XAdd {}

// Safety: as `LockAdd`; the overflow check aborts before the count could wrap to zero.
unsafe impl Scheme for XAdd {
    const NAME: &'static str = "xadd";
    type Header = AtomicUsize;
    type Local = ();

    fn new_header() -> AtomicUsize {
        AtomicUsize::new(1)
    }

    fn first_local(_: &AtomicUsize) {}

    unsafe fn clone_ref(header: &AtomicUsize, _: &(), _: Raw) {
        // Ordering: as `LockAdd::clone_ref`.
        let old = header.fetch_add(1, Ordering::Relaxed);
        if old > isize::MAX as usize {
            // A count this high means leaked handles; wrapping would free a live item.
            std::process::abort();
        }
    }

    unsafe fn drop_ref(local: &mut (), raw: Raw) {
        // Safety: the same protocol as `LockAdd`, for the same handle.
        unsafe { LockAdd::drop_ref(local, raw) }
    }
}

/// Compare-and-exchange (seed 001 §3.3.2): a clone retries until its increment lands; a drop
/// that reads a count of one is the last holder and frees without writing (the seed's "read
/// first" variant, cheaper for items referenced once or twice).
#[derive(Debug)]
pub enum Cas {}

// Safety: a count of one read by a holder means no other handle exists, and none can be made
// (a clone needs a handle), so the holder may free. Otherwise the compare-exchange lowers the
// count by one without losing a concurrent change.
unsafe impl Scheme for Cas {
    const NAME: &'static str = "cas";
    type Header = AtomicUsize;
    type Local = ();

    fn new_header() -> AtomicUsize {
        AtomicUsize::new(1)
    }

    fn first_local(_: &AtomicUsize) {}

    unsafe fn clone_ref(header: &AtomicUsize, _: &(), _: Raw) {
        // Ordering: as `LockAdd::clone_ref`: nothing is published by an increment.
        let mut cur = header.load(Ordering::Relaxed);
        loop {
            match header.compare_exchange_weak(cur, cur + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => cur = now,
            }
        }
    }

    unsafe fn drop_ref(_: &mut (), raw: Raw) {
        // Safety: the caller's handle keeps the header alive until its decrement lands.
        let header = unsafe { &*raw.header::<Self>() };
        // Ordering: Acquire on the load pairs with the Release decrements of the other
        // handles, so their uses of the value happen before a free that reads one.
        let mut cur = header.load(Ordering::Acquire);
        loop {
            if cur == 1 {
                // Safety: this holder is the only one (see the impl's safety comment).
                unsafe { raw.free() };
                return;
            }
            // Ordering: Release publishes this handle's uses to the holder that frees.
            match header.compare_exchange_weak(cur, cur - 1, Ordering::Release, Ordering::Acquire) {
                Ok(_) => return,
                Err(now) => cur = now,
            }
        }
    }
}
