//! Waiting without livelock: spin with exponential backoff, then yield (up to 200 µs), then park with a
//! timeout; the thread that makes the condition true wakes the parked ones.
//!
//! Lost-wakeup freedom: a waiter stores `parked = true` and then re-reads the condition; the
//! waker makes the condition true and then reads `parked`. All four operations are SeqCst, so
//! in their total order either the waiter's re-read sees the condition (and it does not park)
//! or the waker's read sees `parked` (and unparks it). The park timeout is a second safety net.

use std::sync::OnceLock;

use crossbeam_utils::CachePadded;

use crate::loom::atomic::{AtomicBool, Ordering::SeqCst};

/// How long a waiter yields before it parks.
#[cfg(not(chronon_loom))]
const YIELD_FOR: std::time::Duration = std::time::Duration::from_micros(200);

#[derive(Debug, Default)]
struct Slot {
    parked: AtomicBool,
    thread: OnceLock<std::thread::Thread>,
}

/// One parking slot per thread index.
#[derive(Debug)]
pub(crate) struct Sleepers {
    slots: Box<[CachePadded<Slot>]>,
}

impl Sleepers {
    pub(crate) fn new(n: usize) -> Self {
        Sleepers {
            slots: (0..n).map(|_| CachePadded::new(Slot::default())).collect(),
        }
    }

    /// Returns once `ready()` is true; thread `me` spins, yields, then parks.
    #[cfg(not(chronon_loom))]
    pub(crate) fn wait_until(&self, me: usize, ready: impl Fn() -> bool) {
        let backoff = crossbeam_utils::Backoff::new();
        while !backoff.is_completed() {
            if ready() {
                return;
            }
            backoff.snooze();
        }
        // Then yield for a while (a round's imbalance is typically tens of microseconds, and a
        // park/unpark costs about as much), then park.
        let start = std::time::Instant::now();
        while start.elapsed() < YIELD_FOR {
            for _ in 0..16 {
                if ready() {
                    return;
                }
                std::thread::yield_now();
            }
        }
        let slot = &self.slots[me];
        let _ = slot.thread.get_or_init(std::thread::current);
        loop {
            slot.parked.store(true, SeqCst);
            if ready() {
                slot.parked.store(false, SeqCst);
                return;
            }
            std::thread::park_timeout(std::time::Duration::from_millis(1));
            slot.parked.store(false, SeqCst);
            if ready() {
                return;
            }
        }
    }

    /// Under loom: yield to the model checker until `ready()`.
    #[cfg(chronon_loom)]
    pub(crate) fn wait_until(&self, _me: usize, ready: impl Fn() -> bool) {
        while !ready() {
            crate::loom::thread::yield_now();
        }
    }

    /// Wakes every parked thread (call after making the condition true).
    pub(crate) fn wake_all(&self) {
        for s in self.slots.iter() {
            if s.parked.load(SeqCst) && s.parked.swap(false, SeqCst) {
                if let Some(t) = s.thread.get() {
                    t.unpark();
                }
            }
        }
    }

    /// Wakes thread `i` if it is parked.
    pub(crate) fn wake(&self, i: usize) {
        let s = &self.slots[i];
        if s.parked.load(SeqCst) && s.parked.swap(false, SeqCst) {
            if let Some(t) = s.thread.get() {
                t.unpark();
            }
        }
    }
}
