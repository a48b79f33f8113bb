//! Load balancing for the window executor (seed 001 §3.4): the shared LP sets.
//!
//! A shared LP belongs to no worker. Its pending events live in its own queue behind a mutex
//! (senders push there directly, from any worker); each window round, after its dedicated
//! LPs, every worker claims shared LPs by atomic index ([`Cursor`]) — starting with set
//! `me % N`, then the others in turn — and runs each claimed LP's events below the LBTS. A
//! set's *home* worker (`set % W`) resets its cursor and publishes the earliest key of its
//! LPs, between rounds. Protocol and proof sketch: `README.md`, "Load balancing".

use std::sync::{Mutex, MutexGuard};

use crossbeam_utils::CachePadded;

use super::claim::Cursor;
use crate::event::{Event, EventKey, Keyed};
use crate::gsu::Published;
use crate::model::{LpId, Time};
use crate::partition::DEDICATED;
use crate::queue::{HeapQueue, PendingSet};

/// The shared sets of one run.
pub(crate) struct Balance<E> {
    /// The dedicated fraction (for the report).
    pub dedicated: f64,
    /// Per LP: its index among the shared LPs, or [`DEDICATED`].
    index: Vec<u32>,
    /// Per shared LP (by index): the LP and its pending events.
    queues: Vec<(LpId, Mutex<HeapQueue<Event<E>>>)>,
    /// Per set: its shared LPs' indices, in LP order.
    pub sets: Vec<Vec<u32>>,
    /// Per set: this round's claim cursor.
    pub cursors: Vec<CachePadded<Cursor>>,
    /// The smallest lookahead of a link from a shared LP to another LP (`+inf` when none).
    pub la: Time,
}

impl<E> std::fmt::Debug for Balance<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Balance")
            .field("dedicated", &self.dedicated)
            .field("shared_lps", &self.queues.len())
            .field("sets", &self.sets.len())
            .finish_non_exhaustive()
    }
}

impl<E: Send> Balance<E> {
    /// From `set_of` (per LP, its set or [`DEDICATED`]; see `partition::shared_split`).
    pub(crate) fn new(dedicated: f64, set_of: &[u32], sets: usize, la: Time) -> Self {
        let mut index = vec![DEDICATED; set_of.len()];
        let mut queues = Vec::new();
        let mut members = vec![Vec::new(); sets];
        for (lp, &s) in set_of.iter().enumerate() {
            if s != DEDICATED {
                index[lp] = queues.len() as u32;
                members[s as usize].push(queues.len() as u32);
                queues.push((lp as LpId, Mutex::new(HeapQueue::new())));
            }
        }
        Balance {
            dedicated,
            index,
            queues,
            sets: members,
            cursors: (0..sets).map(|_| CachePadded::new(Cursor::new())).collect(),
            la,
        }
    }

    /// Whether `lp` is shared.
    #[inline]
    pub(crate) fn is_shared(&self, lp: LpId) -> bool {
        self.index[lp as usize] != DEDICATED
    }

    /// The number of shared LPs.
    pub(crate) fn shared_lps(&self) -> usize {
        self.queues.len()
    }

    /// Shared LP `i`: its id and its queue, locked.
    #[inline]
    pub(crate) fn lock(&self, i: u32) -> (LpId, MutexGuard<'_, HeapQueue<Event<E>>>) {
        let (lp, q) = &self.queues[i as usize];
        (*lp, q.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Delivers `e` to its (shared) destination's queue.
    #[inline]
    pub(crate) fn push(&self, e: Event<E>) {
        let i = self.index[e.dst as usize];
        self.lock(i).1.push(e);
    }

    /// Between rounds, for worker `me` of `workers`: resets the cursors of the sets it is home
    /// to and returns the earliest key of their LPs' events.
    pub(crate) fn home_round(&self, me: usize, workers: usize) -> EventKey {
        let mut moe = Published::IDLE.moe;
        for s in (me..self.sets.len()).step_by(workers) {
            self.cursors[s].reset();
            for &i in &self.sets[s] {
                if let Some(k) = self.lock(i).1.peek().map(|e| e.key()) {
                    moe = moe.min(k);
                }
            }
        }
        moe
    }

    /// Hands every event still pending in shared LPs to `each`.
    pub(crate) fn drain(&self, mut each: impl FnMut(Event<E>)) {
        for i in 0..self.queues.len() as u32 {
            let mut q = self.lock(i);
            while let Some(e) = q.1.pop() {
                each(e);
            }
        }
    }

    /// Events still pending in shared LPs.
    pub(crate) fn pending(&self) -> usize {
        (0..self.queues.len() as u32)
            .map(|i| self.lock(i).1.len())
            .sum()
    }
}
