//! A ladder queue (Tang, Goh and Thng, "Ladder Queue: An O(1) Priority Queue Structure for
//! Large-Scale Discrete Event Simulation", ACM TOMACS 15(3), 2005), adapted to a total order on
//! keys with ties.
//!
//! Three tiers:
//! - **top**: an unsorted vector of the events at or after `top_start` (far future);
//! - **rungs**: bucket arrays, coarsest first; rung `i + 1` splits one bucket of rung `i`. A rung
//!   only takes events whose bucket index is at or past its dequeue cursor;
//! - **bottom**: a small vector sorted in descending key order, popped from its end.
//!
//! Invariant (what makes the order exact): every event in `top` > every event in rung 0 > every
//! event in rung 1 > … > every event in `bottom`, comparing full keys. It holds because
//! (a) routing uses the very same monotone bucket function that built each rung, so two events
//! with equal times always land in the same bucket, and an event lands in a bucket after another
//! only if its time is strictly larger; (b) `top_start` is the float just above the largest time
//! ever moved out of the top, so equal times never straddle the top and a rung. Within a
//! bucket order does not matter: a bucket is sorted by full key when it becomes the bottom.
//!
//! Cost: an insert is a push onto one bucket's vector; a bucket is sorted once when its turn
//! comes (it holds a few events). Nothing is ever compared against the whole set, which is why
//! millions of pending events stay cheap where a heap walks log2(n) cache misses per operation.

use std::cmp::Ordering;

use super::PendingSet;
use crate::event::Keyed;

/// A bucket with at most this many events is sorted straight into the bottom.
const SORT_MAX: usize = 64;
/// Events per bucket a new rung aims at.
const EVENTS_PER_BUCKET: usize = 4;
/// The most buckets in one rung.
const MAX_BUCKETS: usize = 1 << 21;
/// The most rungs; past it, buckets are sorted whatever their size.
const MAX_RUNGS: usize = 8;
/// A bottom larger than this (with distinct times) is turned into a rung.
const BOTTOM_SPILL: usize = 512;
/// Empty vectors kept for reuse as buckets.
const SPARE_MAX: usize = 256;

#[derive(Debug)]
struct Rung<T> {
    start: f64,
    inv_width: f64,
    /// Buckets before `cur` are empty and never refilled.
    cur: usize,
    buckets: Vec<Vec<T>>,
}

impl<T> Rung<T> {
    /// The bucket of time `t`: monotone non-decreasing in `t`, clamped to the rung.
    #[inline(always)]
    fn index(&self, t: f64) -> usize {
        let q = (t - self.start) * self.inv_width;
        let last = self.buckets.len() - 1;
        if q >= last as f64 {
            last
        } else if q > 0.0 {
            q as usize
        } else {
            0
        }
    }
}

/// The default pending-event set: a ladder queue (see the module documentation).
pub struct LadderQueue<T> {
    top: Vec<T>,
    top_min: f64,
    top_max: f64,
    top_start: f64,
    rungs: Vec<Rung<T>>,
    /// Sorted in descending key order: the next event is the last.
    bottom: Vec<T>,
    len: usize,
    spare: Vec<Vec<T>>,
}

impl<T> std::fmt::Debug for LadderQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LadderQueue")
            .field("len", &self.len)
            .field("top", &self.top.len())
            .field("rungs", &self.rungs.len())
            .field("bottom", &self.bottom.len())
            .finish()
    }
}

#[inline(always)]
fn desc<T: Keyed>(a: &T, b: &T) -> Ordering {
    b.key().cmp(a.key())
}

impl<T: Keyed> LadderQueue<T> {
    fn take_spare(&mut self, capacity: usize) -> Vec<T> {
        match self.spare.pop() {
            Some(mut v) => {
                v.reserve_exact(capacity);
                v
            }
            None => Vec::with_capacity(capacity),
        }
    }

    fn give_spare(&mut self, v: Vec<T>) {
        debug_assert!(v.is_empty());
        if v.capacity() > 0 && self.spare.len() < SPARE_MAX {
            self.spare.push(v);
        }
    }

    /// Spreads `items` (times within `[min, max]`, `min < max`) over a new finest rung.
    fn push_rung(&mut self, mut items: Vec<T>, min: f64, max: f64) {
        let nb = (items.len() / EVENTS_PER_BUCKET).clamp(2, MAX_BUCKETS);
        let mut rung = Rung {
            start: min,
            inv_width: nb as f64 / (max - min),
            cur: 0,
            buckets: Vec::with_capacity(nb),
        };
        // Counting pass so that every bucket is allocated once, at its exact size.
        rung.buckets.resize_with(nb, Vec::new);
        let mut counts = vec![0u32; nb];
        for it in &items {
            counts[rung.index(it.key().time)] += 1;
        }
        for (b, &c) in counts.iter().enumerate() {
            if c > 0 {
                rung.buckets[b] = self.take_spare(c as usize);
            }
        }
        for it in items.drain(..) {
            let b = rung.index(it.key().time);
            rung.buckets[b].push(it);
        }
        self.give_spare(items);
        self.rungs.push(rung);
    }

    /// Makes `items` the bottom (the bottom must be empty).
    fn set_bottom(&mut self, mut items: Vec<T>) {
        debug_assert!(self.bottom.is_empty());
        items.sort_unstable_by(desc);
        let old = std::mem::replace(&mut self.bottom, items);
        self.give_spare(old);
    }

    /// Refills the empty bottom from the finest rung or the top. `len > 0` must hold.
    fn refill(&mut self) {
        loop {
            if let Some(r) = self.rungs.last_mut() {
                while r.cur < r.buckets.len() && r.buckets[r.cur].is_empty() {
                    r.cur += 1;
                }
                if r.cur == r.buckets.len() {
                    let r = self.rungs.pop().expect("a rung");
                    for b in r.buckets {
                        self.give_spare(b);
                    }
                    continue;
                }
                let bucket = std::mem::take(&mut r.buckets[r.cur]);
                r.cur += 1;
                if bucket.len() <= SORT_MAX || self.rungs.len() >= MAX_RUNGS {
                    self.set_bottom(bucket);
                    return;
                }
                let (min, max) = time_range(&bucket);
                if min < max {
                    self.push_rung(bucket, min, max);
                } else {
                    self.set_bottom(bucket);
                    return;
                }
            } else {
                debug_assert!(!self.top.is_empty());
                let fresh = self.take_spare(0);
                let items = std::mem::replace(&mut self.top, fresh);
                let (min, max) = (self.top_min, self.top_max);
                // Everything at or below `max` now lives below the top.
                self.top_start = max.next_up();
                self.top_min = f64::INFINITY;
                self.top_max = f64::NEG_INFINITY;
                if items.len() <= SORT_MAX || !(min < max) {
                    self.set_bottom(items);
                    return;
                }
                self.push_rung(items, min, max);
            }
        }
    }

    #[cold]
    fn spill_bottom(&mut self) {
        let (min, max) = time_range(&self.bottom);
        if min < max && self.rungs.len() < MAX_RUNGS {
            let items = std::mem::take(&mut self.bottom);
            // The new finest rung holds exactly the old bottom, so the tier order still holds.
            self.push_rung(items, min, max);
        }
    }
}

fn time_range<T: Keyed>(items: &[T]) -> (f64, f64) {
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    for it in items {
        let t = it.key().time;
        min = min.min(t);
        max = max.max(t);
    }
    (min, max)
}

impl<T: Keyed + Send> PendingSet<T> for LadderQueue<T> {
    fn new() -> Self {
        LadderQueue {
            top: Vec::new(),
            top_min: f64::INFINITY,
            top_max: f64::NEG_INFINITY,
            top_start: f64::NEG_INFINITY,
            rungs: Vec::new(),
            bottom: Vec::new(),
            len: 0,
            spare: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, item: T) {
        self.len += 1;
        let t = item.key().time;
        if t >= self.top_start {
            self.top_min = self.top_min.min(t);
            self.top_max = self.top_max.max(t);
            self.top.push(item);
            return;
        }
        for r in self.rungs.iter_mut() {
            let b = r.index(t);
            if b >= r.cur {
                r.buckets[b].push(item);
                return;
            }
        }
        let pos = self
            .bottom
            .partition_point(|x| x.key() > item.key());
        self.bottom.insert(pos, item);
        if self.bottom.len() > BOTTOM_SPILL {
            self.spill_bottom();
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<T> {
        if self.bottom.is_empty() {
            if self.len == 0 {
                self.top_start = f64::NEG_INFINITY;
                return None;
            }
            self.refill();
        }
        self.len -= 1;
        self.bottom.pop()
    }

    #[inline]
    fn peek(&mut self) -> Option<&T> {
        if self.bottom.is_empty() {
            if self.len == 0 {
                return None;
            }
            self.refill();
        }
        self.bottom.last()
    }

    fn len(&self) -> usize {
        self.len
    }
}
