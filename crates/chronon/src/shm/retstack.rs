//! The return stack of a heap segment: a Treiber stack (R. K. Treiber, IBM RJ 5118, 1986) of
//! item offsets in shared memory, onto which any process pushes an item whose last reference
//! it dropped, and which only the owner empties, all at once, with one swap. Nodes are never
//! popped one by one, so there is no ABA problem; an item is on the stack at most once because
//! only the drop that takes its count to zero pushes it, and the owner reuses it only after
//! taking it off (README.md, "Heap", H1–H3).

use crate::loom::atomic::{AtomicU32, Ordering};

/// Pushes item `off` (whose link word is `next`) onto the stack at `head`. The caller's
/// writes before this call (the item's time-to-zero, the dropped value) are visible to the
/// owner once it has taken the item.
pub(crate) fn push(head: &AtomicU32, off: u32, next: &AtomicU32) {
    debug_assert_ne!(off, 0, "offset 0 is the empty stack");
    // Ordering: Relaxed: only the CAS below publishes the link.
    let mut h = head.load(Ordering::Relaxed);
    loop {
        // Ordering: Relaxed: as above; the item is ours until the CAS succeeds.
        next.store(h, Ordering::Relaxed);
        // Ordering: Release: the owner's Acquire swap sees `next` and everything this process
        // wrote to the item before. Failure Relaxed: we only retry with the new head.
        match head.compare_exchange_weak(h, off, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => h = now,
        }
    }
}

/// Takes the whole stack (owner only); returns the first offset (0: empty). Follow the list
/// with [`next_of`] through each item's link word.
pub(crate) fn take_all(head: &AtomicU32) -> u32 {
    // Ordering: Acquire pairs with every push's Release CAS: the release sequence of `head`
    // (CASes are read-modify-writes) carries every earlier push's writes too.
    head.swap(0, Ordering::Acquire)
}

/// The offset after the item whose link word is `next` (0: end).
pub(crate) fn next_of(next: &AtomicU32) -> u32 {
    // Ordering: Relaxed: made visible by `take_all`'s Acquire swap.
    next.load(Ordering::Relaxed)
}

/// Whether the stack at `head` looked empty (a hint: a push may land right after; the owner
/// then takes it at its next collection).
pub(crate) fn looks_empty(head: &AtomicU32) -> bool {
    // Ordering: Relaxed: only a hint to skip the swap; what a push published is read after
    // the Acquire swap in `take_all`, never after this load.
    head.load(Ordering::Relaxed) == 0
}
