//! The time-stamp counter, the cycle figures of the barrier and reference-counting benches.

/// Reads the time-stamp counter (x86_64), or `None` elsewhere.
pub(crate) fn tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // Safety: `rdtsc` has no preconditions on x86_64 (it only reads a counter).
        #[allow(unused_unsafe)]
        let t = unsafe { core::arch::x86_64::_rdtsc() };
        Some(t)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}
