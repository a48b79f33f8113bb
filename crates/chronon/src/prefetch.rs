//! Cache prefetch hints: start loading a record the caller will touch soon (the executors'
//! next LP record, the queue's next bucket). No effect on results.

/// Asks the CPU to start loading the first (at most two) cache lines of `*r`: a hint that
/// hides the cache miss of a record the executor will touch soon. No effect on results.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    prefetch_raw(r as *const T);
}

/// [`prefetch`] through a pointer, for a record the caller may not borrow (another worker's
/// turn to touch it may not have ended): the hint neither reads nor writes `*p`, so any
/// address is sound; it helps only where `p` points at a live `T`.
#[inline(always)]
pub(crate) fn prefetch_raw<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = p.cast::<i8>();
        for line in 0..std::mem::size_of::<T>().div_ceil(64).min(2) {
            // Safety: a prefetch never faults and has no architectural effect, whatever the
            // address; `wrapping_add` has no bounds requirement.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(line * 64)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
