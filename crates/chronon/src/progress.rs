//! Live progress and stop requests, shared between a running simulation and its observers.
//!
//! Protocol: the executor's workers publish monotone figures (events done, simulated time
//! reached) every few thousand events; an observer (the CLI's progress bar) reads them; anyone
//! (a Ctrl-C handler) may raise the stop flag, which workers poll at the same cadence and then
//! finish cleanly, marking the report incomplete. No data is handed over through these atomics —
//! each is a self-contained value — so relaxed ordering is enough: a reader may see a slightly
//! old figure, never a torn one, and a stop request is seen within one polling period.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Progress figures and the stop flag of one run.
#[derive(Debug, Default)]
pub struct Progress {
    events: AtomicU64,
    now_bits: AtomicU64,
    stop: AtomicBool,
}

impl Progress {
    /// Fresh figures, no stop requested.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop as soon as it can; its report is then marked incomplete.
    pub fn request_stop(&self) {
        // Ordering: the flag carries no data; workers only need to see it eventually.
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was requested.
    #[inline]
    pub fn stop_requested(&self) -> bool {
        // Ordering: see `request_stop`.
        self.stop.load(Ordering::Relaxed)
    }

    /// Events processed so far (committed, for executors that do not roll back).
    pub fn events(&self) -> u64 {
        // Ordering: an independent counter; a stale value is fine for display.
        self.events.load(Ordering::Relaxed)
    }

    /// Simulated time reached so far (a lower bound on every worker's clock).
    pub fn now(&self) -> f64 {
        // Ordering: an independent value; a stale value is fine for display.
        f64::from_bits(self.now_bits.load(Ordering::Relaxed))
    }

    /// Adds `events` to the count.
    #[inline]
    pub fn add_events(&self, events: u64) {
        // Ordering: an independent counter (see the module documentation).
        self.events.fetch_add(events, Ordering::Relaxed);
    }

    /// Publishes the simulated time reached.
    #[inline]
    pub fn set_now(&self, now: f64) {
        // Ordering: an independent value (see the module documentation).
        self.now_bits.store(now.to_bits(), Ordering::Relaxed);
    }
}
