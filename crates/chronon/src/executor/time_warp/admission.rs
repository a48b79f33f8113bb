//! Which event a Time Warp worker runs next: the live head of its pending set (cancelled
//! events dropped in front of it) and whether it is admitted now (end time, next global event,
//! optimism window, uncommitted-event cap, a near-full shared heap).
//!
//! A shared heap near full (a size class more than half handed out and not yet
//! reusable, `Heap::tight`) is a bound like the memory cap: the worker runs only events at or
//! before GVT and starts GVT rounds, so fossil collection and GVT make items reusable again
//! instead of speculation filling the heap; a run the sequential executor completes with a
//! heap then completes under Time Warp too.

use crate::model::{Model, Time};
use crate::prefetch::prefetch;
use crate::queue::PendingSet;

use super::worker::Worker;
use crate::tw_msg::TwEvent;

/// Calls of [`heap_tight`] between two looks at the heap.
const HEAP_LOOK_EVERY: u32 = 64;

thread_local! {
    /// This thread's last look at its heap and the calls left before the next one.
    static HEAP_TIGHT: std::cell::Cell<(bool, u32)> = const { std::cell::Cell::new((false, 0)) };
}

/// Whether this worker thread's shared heap has a class near full, looked at afresh when
/// `fresh` or every `HEAP_LOOK_EVERY` calls.
#[inline]
fn heap_tight(fresh: bool) -> bool {
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    {
        HEAP_TIGHT.with(|h| {
            let (tight, left) = h.get();
            if fresh || left == 0 {
                let tight = crate::shm::thread_heap_tight();
                h.set((tight, HEAP_LOOK_EVERY));
                tight
            } else {
                h.set((tight, left - 1));
                tight
            }
        })
    }
    #[cfg(not(all(target_os = "linux", not(chronon_loom))))]
    {
        let _ = fresh;
        false
    }
}

impl<M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'_, '_, M, Q> {
    /// The next event to run, if one may run now (before the end time, inside the optimism
    /// window, under the uncommitted-event cap).
    ///
    /// `fast`: an admission bound from [`batch_limit`](Self::batch_limit): an event before
    /// the end time and at or before it is admitted without [`admits`](Self::admits).
    #[inline(always)]
    pub(super) fn next_event(&mut self, fast: Time) -> Option<TwEvent<M::Event>> {
        let t = self.live_head();
        let admitted = (t < self.sh.end && t <= fast) || self.admits(t);
        if !admitted {
            return None;
        }
        let ev = self.queue.pop();
        // The next event's LP record is most likely a cache miss (LPs are touched in
        // timestamp order, all over the table; even std PHOLD's 128 KiB of records miss: the
        // pending set's traffic evicts them): start loading it while this one runs.
        if let Some(dst) = self.queue.peek().map(|next| next.dst) {
            if let Some(lp) = self.lps.get(self.mine.index(self.sh, dst)) {
                prefetch(lp);
            }
        }
        ev
    }

    /// A bound under which every event of the next `budget` is admitted: what
    /// [`admits`](Self::admits) compares with, when the uncommitted-event cap cannot be reached
    /// in `budget` events (each event adds at most one uncommitted); `-inf` otherwise (then
    /// each event goes through `admits`). Events after the bound go through `admits` too, so
    /// the window's blocked flag is set exactly as before.
    #[inline]
    pub(super) fn batch_limit(&self, budget: u64) -> Time {
        if self.uncommitted().saturating_add(budget) > self.sh.mem.cap() {
            return Time::NEG_INFINITY;
        }
        if heap_tight(true) {
            // GVT rounds free what speculation holds; until then, only events at GVT run.
            self.sh.gvt.try_start();
            return Time::NEG_INFINITY;
        }
        (self.round.gvt + self.sh.optimism.window()).min(self.round.global_next)
    }

    /// Whether an event at time `t` may run now (before the end time and the next global
    /// event, inside the optimism window, under the uncommitted-event cap; at or before GVT
    /// while the shared heap is near full).
    #[inline]
    pub(super) fn admits(&mut self, t: Time) -> bool {
        if t >= self.sh.end || t > self.round.global_next {
            return false;
        }
        // `max_uncommitted` without a memory bound, at most that under one.
        let cap = self.sh.mem.cap();
        let limit = if self.uncommitted() >= cap || heap_tight(false) {
            self.round.gvt
        } else {
            let limit = self.round.gvt + self.sh.optimism.window();
            self.optimism.block(t > limit);
            limit
        };
        t <= limit
    }

    /// Events processed and neither committed nor rolled back.
    #[inline]
    fn uncommitted(&self) -> u64 {
        let st = &self.stats;
        st.processed - st.committed - st.rolled_back
    }

    /// The time of the earliest pending event that is not cancelled (`+inf`: none); drops the
    /// cancelled ones in front of it.
    #[inline(always)]
    pub(super) fn live_head(&mut self) -> Time {
        let t = self.queue.peek().map_or(Time::INFINITY, |h| h.time);
        if !self.cancelled.may_hold(t) {
            // Commonly: nothing cancelled at or before the head (cancelled.rs).
            return t;
        }
        self.live_head_cancelled()
    }

    /// [`live_head`](Self::live_head) when some pending events may be cancelled.
    #[inline(never)]
    fn live_head_cancelled(&mut self) -> Time {
        while let Some(head) = self.queue.peek() {
            let (id, time) = (head.id, head.time);
            if self.cancelled.remove(id, time) {
                if let Some(e) = self.queue.pop() {
                    self.orders.remove(&e);
                }
                continue;
            }
            self.cancelled.refresh();
            return time;
        }
        Time::INFINITY
    }
}
