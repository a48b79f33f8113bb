//! Global events under Time Warp (seed 001 §2.2.3): a global event at time `g` sees every LP's
//! state after every LP event at or before `g` and before any later one, as under every other
//! executor, and may change any LP's state and send LP events after `g`.
//!
//! **Rule.** No worker processes an LP event later than the next global event's time `g`
//! (`Worker::global_next`; events *at* `g` order before the global event and do run): Time Warp
//! neither speculates nor commits past `g` before the global event at `g` has run. Once the
//! published GVT is above `g`, no event at or before `g` is unprocessed or in flight, so none
//! can roll an LP back to `g` or earlier, and no LP has run past `g`: every LP state is exactly
//! the state at `g`. Every worker then sees the same GVT above the same `g` (GVT only grows and
//! `g` changes only inside the phase) and enters the *global phase*:
//!
//! 1. barrier A: every worker has stopped processing and sending;
//! 2. each worker drains its mailbox (every message sent before A is in it), drops cancelled
//!    heads, and publishes the time of its earliest live pending event and its LP table;
//! 3. barrier B; worker 0 runs, in key order, the global events before the earliest pending LP
//!    event (`GlobalQueue::run_before`, the rule every executor uses: a global event runs only
//!    while an LP event is pending after it, and not at or after an LP event one of them
//!    sent), reading and writing the states through the tables; it hands each worker the LP
//!    events sent to its LPs and the LPs whose states it changed, and publishes the next
//!    global event's time;
//! 4. barrier C: every worker takes the events sent to it into its pending set (ids from an
//!    id space no worker sends from), under copy state saving saves a checkpoint of each LP of
//!    its own whose state was changed, takes the new `g` and goes on.
//!
//! Between A and C no worker touches its LPs except worker 0, which the barriers order after
//! every other worker's writes and before their next reads. A global event runs once, on
//! committed states (nothing at or before `g` can be rolled back), so its output is committed
//! once. Why the changes stay: every later rollback goes back to a time after `g` (after GVT),
//! so it undoes only events that ran after the phase: reverse computation undoes them back to
//! the changed state, and copy state saving restores a checkpoint at or after the LP's event
//! count at the phase — the one taken in step 4 when the LP was changed, never an older one
//! from which coasting forward would lose the change.
//!
//! **GVT.** A worker's GVT report is at most the smallest time after its `g` (`next_up(g)`),
//! until it has left the phase: a round whose reports straddle the phase thus cannot pass an
//! event the phase sends (at `g + delay > g`) to a worker that reported before it. Every round
//! reaches `next_up(g) > g` once everything at or before `g` has run, so the phase still comes.
//! The cost: speculation stops at each global event's time until GVT catches up.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Duration;

use crossbeam_utils::Backoff;

use super::lp::TwLp;
use crate::executor::global::GlobalQueue;
use crate::model::Time;
use crate::tw_msg::TwEvent;

/// The global events of a run and the phase that runs them.
pub(super) struct Globals<S, P> {
    pub(super) queue: Mutex<GlobalQueue>,
    /// Bits of the next global event's time (`+inf`: none before the end).
    next: AtomicU64,
    workers: usize,
    arrived: AtomicUsize,
    generation: AtomicU64,
    /// Per worker, during a phase: its earliest live pending event's time (bits).
    heads: Box<[AtomicU64]>,
    /// Per worker, during a phase: its LP table.
    tables: Box<[AtomicPtr<TwLp<S>>]>,
    /// Per worker, during a phase: the LP events the global events sent to its LPs, and the
    /// indices (among its LPs) of those whose states they changed.
    handed: Box<[Mutex<Handed<P>>]>,
}

/// What worker 0 hands a worker at the end of a phase (module docs, step 3).
pub(super) struct Handed<P> {
    pub(super) sent: Vec<TwEvent<P>>,
    pub(super) changed: Vec<usize>,
}

impl<S, P> Globals<S, P> {
    pub(super) fn new(queue: GlobalQueue, end: Time, workers: usize) -> Self {
        let next = queue.next_time(end);
        Globals {
            queue: Mutex::new(queue),
            next: AtomicU64::new(next.to_bits()),
            workers,
            arrived: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            heads: (0..workers)
                .map(|_| AtomicU64::new(Time::INFINITY.to_bits()))
                .collect(),
            tables: (0..workers)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            handed: (0..workers)
                .map(|_| {
                    Mutex::new(Handed {
                        sent: Vec::new(),
                        changed: Vec::new(),
                    })
                })
                .collect(),
        }
    }

    /// Worker `w`'s share of a phase's output (module docs, steps 3 and 4).
    pub(super) fn handed(&self, w: usize) -> std::sync::MutexGuard<'_, Handed<P>> {
        self.handed[w].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next global event's time (`+inf`: none).
    pub(super) fn next(&self) -> Time {
        f64::from_bits(self.next.load(SeqCst))
    }

    /// Worker `w`'s part of a phase, between barriers A and B: its earliest live pending
    /// event's time and its LP table.
    pub(super) fn publish(&self, w: usize, head: Time, table: *mut TwLp<S>) {
        self.heads[w].store(head.to_bits(), SeqCst);
        self.tables[w].store(table, SeqCst);
    }

    /// After barrier B: the earliest pending LP event's time over every worker.
    pub(super) fn earliest(&self) -> Time {
        self.heads
            .iter()
            .map(|h| f64::from_bits(h.load(SeqCst)))
            .fold(Time::INFINITY, f64::min)
    }

    /// Worker `w`'s LP table, as published for the phase.
    pub(super) fn table(&self, w: usize) -> *mut TwLp<S> {
        self.tables[w].load(SeqCst)
    }

    /// Worker 0, after barrier B: the next global event's time.
    pub(super) fn set_next(&self, t: Time) {
        self.next.store(t.to_bits(), SeqCst);
    }

    /// Waits until every worker has arrived; `false` if the run aborts first.
    pub(super) fn barrier(&self, abort: &AtomicBool) -> bool {
        let generation = self.generation.load(SeqCst);
        if self.arrived.fetch_add(1, SeqCst) + 1 == self.workers {
            self.arrived.store(0, SeqCst);
            self.generation.fetch_add(1, SeqCst);
            return true;
        }
        let backoff = Backoff::new();
        while self.generation.load(SeqCst) == generation {
            if abort.load(SeqCst) {
                return false;
            }
            if backoff.is_completed() {
                // A wait that the worker's ticks cannot stretch (ticks.rs, `nap`).
                crate::preempt::ticks::nap(Duration::from_micros(50));
            } else {
                backoff.snooze();
            }
        }
        true
    }
}
