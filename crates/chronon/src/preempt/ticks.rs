//! Fine-grain ticks (seed 003 §2.3): the flag a tick sets and a check takes.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Set by a tick, taken by the next check at a platform-mode return.
#[derive(Debug, Default)]
pub(crate) struct Flag(AtomicBool);

impl Flag {
    /// Marks a check as due (async-signal-safe: one atomic store).
    #[inline(always)]
    pub(crate) fn raise(&self) {
        // Ordering: Relaxed — the flag carries no data; a late view only delays one check.
        self.0.store(true, Relaxed);
    }

    /// Whether a check is due; clears the flag.
    #[inline(always)]
    pub(crate) fn take(&self) -> bool {
        // Ordering: Relaxed, as in `raise`; the load first keeps the common case a plain read.
        if self.0.load(Relaxed) {
            self.0.store(false, Relaxed);
            true
        } else {
            false
        }
    }
}
