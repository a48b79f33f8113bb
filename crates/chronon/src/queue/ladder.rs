//! A ladder queue (Tang, Goh and Thng, "Ladder Queue: An O(1) Priority Queue Structure for
//! Large-Scale Discrete Event Simulation", ACM TOMACS 15(3), 2005), adapted to a total order on
//! keys with ties, with a binary heap as the fallback of a bottom that cannot be split.
//!
//! Three tiers:
//! - **top**: an unsorted vector of the events at or after `top_start` (far future);
//! - **rungs**: bucket arrays, coarsest first; rung `i + 1` splits one bucket of rung `i`. A rung
//!   only takes events whose bucket index is at or past its dequeue cursor;
//! - **bottom**: a small vector sorted in descending key order, popped from its end, plus the
//!   **overflow**, a binary heap that takes the bottom's inserts once the bottom is full and
//!   cannot be turned into a rung. The bottom tier pops whichever of the two heads is smaller.
//!
//! Invariant (what makes the order exact): every event in `top` > every event in rung 0 > every
//! event in rung 1 > … > every event in the bottom tier (bottom and overflow), comparing full
//! keys. It holds because (a) routing uses the very same monotone bucket function that built
//! each rung, so two events with equal times always land in the same bucket, and an event lands
//! in a bucket after another only if its time is strictly larger; (b) `top_start` is the float
//! just above the largest time ever moved out of the top, so equal times never straddle the top
//! and a rung; (c) a spilled bottom becomes a new finest rung only together with the overflow
//! (which is empty then), and the event being pushed is routed into that rung. Within a bucket
//! order does not matter: a bucket is sorted by full key when it becomes the bottom. Events
//! smaller than everything popped so far (Time Warp re-inserts rolled-back events) fall through
//! every rung, whose cursors are past them, into the bottom tier, where they sort first.
//!
//! Cost: an insert writes one slot of one bucket's chunk (`chunks.rs`); a bucket is sorted once
//! when its turn comes (it holds a few events). Nothing is ever compared against the whole set,
//! which is why millions of pending events stay cheap where a heap walks log2(n) cache misses
//! per operation.
//!
//! Worst case, amortized O(log n) per operation. The plain ladder is quadratic when its bottom
//! grows: a bottom whose times are all equal cannot be split into a rung, nor can any bottom once
//! there are `MAX_RUNGS` rungs, and Time Warp produces both (equal times, and rolled-back events
//! inserted below every rung's cursor). Here a sorted insert only ever shifts fewer than
//! `BOTTOM_SPILL` events; a full bottom is scanned for a split at most once per `BOTTOM_SPILL`
//! inserts or per refill (`bottom_stuck` remembers a failed attempt until the bottom tier is
//! refilled, and the refill already paid O(n log n) to sort it); every other insert into a full
//! bottom is an O(log n) heap push, and a pop is O(1) from the bottom or O(log n) from the
//! overflow. Refills cost what they cost in the ladder: an event is bucketed at most once per
//! rung (at most `MAX_RUNGS + 1` times) and sorted once, when it reaches the bottom.
//!
//! Large tops: a top of at least `segments::SPLIT_MIN` (65 536) events
//! is first split in place into up to eight time segments, which sit between the top and rung 0
//! and are spread over a rung one at a time (`segments.rs`); a segment that has grown that large
//! by inserts (the latest one takes everything up to the top) is split again in turn. Spreading
//! the whole top at once would allocate buckets for all of it while its pages still hold it: a
//! resident peak of twice the pending set. A split costs two more passes over its events.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::binary_heap::MinFirst;
use super::chunks::{Bucket, Chunks, CHUNK};
use super::segments::{self, bucket_of, Segment, SEGMENTS};
use super::PendingSet;
use crate::event::Keyed;

/// A bucket with at most this many events is sorted straight into the bottom.
const SORT_MAX: usize = 64;
/// Events per bucket a new rung aims at.
const EVENTS_PER_BUCKET: usize = 4;
/// Events per page of the top (pages spare the top a reallocation that copies everything).
const TOP_PAGE: usize = segments::PAGE;
/// The most buckets in one rung.
const MAX_BUCKETS: usize = 1 << 15;
/// The most rungs; past it, buckets are sorted whatever their size.
const MAX_RUNGS: usize = 8;
/// A bottom this large takes no more sorted inserts: it is turned into a rung (if its times are
/// distinct and there are fewer than `MAX_RUNGS` rungs), or further inserts go to the overflow.
pub(super) const BOTTOM_SPILL: usize = 512;
/// Chunk slots a spread takes per event at most: a rung has one bucket per
/// `EVENTS_PER_BUCKET` events, each bucket's newest chunk may hold one event, and the chunks
/// full of events add one slot per event.
const SPREAD_SLOTS: usize = CHUNK / EVENTS_PER_BUCKET + 1;
/// Buckets past the one taken that a refill looks through for the next one to prefetch.
const PREFETCH_SCAN: usize = 8;
/// Chunks kept when no rung is left, as events per pending event (`Chunks::shrink_if_unused`).
const CHUNKS_KEPT: usize = 4;

#[derive(Debug)]
struct Rung {
    start: f64,
    inv_width: f64,
    /// Buckets before `cur` are empty and never refilled.
    cur: usize,
    buckets: Vec<Bucket>,
}

impl Rung {
    /// The bucket of time `t`: monotone non-decreasing in `t`, clamped to the rung.
    #[inline(always)]
    fn index(&self, t: f64) -> usize {
        bucket_of(t, self.start, self.inv_width, self.buckets.len())
    }
}

/// The default pending-event set: a ladder queue (see the module documentation).
pub struct LadderQueue<T> {
    /// Pages of at most `TOP_PAGE` events; only the last one is not full.
    top: Vec<Vec<T>>,
    top_len: usize,
    top_min: f64,
    top_max: f64,
    top_start: f64,
    /// A large top split in time order, latest first (`segments.rs`): all of them lie between
    /// the top and rung 0.
    segments: Vec<Segment<T>>,
    /// Emptied pages of the top and the segments, for their next pages (`give_page`).
    pool: Vec<Vec<T>>,
    rungs: Vec<Rung>,
    /// The storage of every rung's buckets.
    chunks: Chunks<T>,
    /// Sorted in descending key order: the next event is the last.
    bottom: Vec<T>,
    /// Inserts into a full bottom that could not be split; non-empty only if `bottom_stuck`.
    overflow: BinaryHeap<MinFirst<T>>,
    /// The full bottom could not be turned into a rung: do not rescan it before the next refill.
    bottom_stuck: bool,
    len: usize,
    /// Events shifted by sorted inserts plus events scanned for a split: the two costs that grow
    /// with the bottom (tests bound it to check the worst case).
    #[cfg(test)]
    pub(super) work: u64,
}

impl<T> std::fmt::Debug for LadderQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LadderQueue")
            .field("len", &self.len)
            .field("top", &self.top_len)
            .field("segments", &self.segments.len())
            .field("rungs", &self.rungs.len())
            .field("bottom", &self.bottom.len())
            .field("overflow", &self.overflow.len())
            .finish()
    }
}

/// Events in rung buckets live in `chunks`, which cannot tell its filled slots from the rest:
/// the rungs' buckets drop them.
impl<T> Drop for LadderQueue<T> {
    fn drop(&mut self) {
        if !std::mem::needs_drop::<T>() {
            return;
        }
        let mut out: Vec<T> = Vec::new();
        for r in &mut self.rungs {
            for b in &mut r.buckets {
                self.chunks.drain_into(b, &mut out);
                out.clear();
            }
        }
    }
}

#[inline(always)]
fn desc<T: Keyed>(a: &T, b: &T) -> Ordering {
    b.key().cmp(&a.key())
}

impl<T: Keyed> LadderQueue<T> {
    /// Keeps an emptied page of the top or of a segment for the next one while the set is
    /// large enough to be split (the pages of a large top come from the thread that filled it,
    /// often not the one that drains it, whose allocator would not reuse them), and while the
    /// pool holds no more than an eighth of the set's events. A smaller set frees its pages (and
    /// the pool): the allocator reuses them for whatever comes next, which pooled pages cannot
    /// be.
    fn give_page(&mut self, v: Vec<T>) {
        debug_assert!(v.is_empty());
        if self.len < segments::SPLIT_MIN {
            if !self.pool.is_empty() {
                self.pool = Vec::new();
            }
        } else if v.capacity() == TOP_PAGE && self.pool.len() * TOP_PAGE < self.len / SEGMENTS {
            self.pool.push(v);
        }
    }

    /// Spreads `pages` (`len` events, times within `[min, max]`, `min < max`) over a new finest
    /// rung. Each page is freed as soon as it is spread.
    fn push_rung(&mut self, pages: Vec<Vec<T>>, len: usize, min: f64, max: f64) {
        let nb = (len / EVENTS_PER_BUCKET).clamp(2, MAX_BUCKETS);
        let mut rung = Rung {
            start: min,
            inv_width: nb as f64 / (max - min),
            cur: 0,
            buckets: vec![Bucket::EMPTY; nb],
        };
        for mut page in pages {
            for it in page.drain(..) {
                let b = rung.index(it.key().time);
                self.chunks.push(&mut rung.buckets[b], it);
            }
            self.give_page(page);
        }
        self.rungs.push(rung);
    }

    /// Makes `items` the bottom (the bottom tier must be empty).
    fn set_bottom(&mut self, items: Vec<T>) {
        debug_assert!(self.bottom.is_empty() && self.overflow.is_empty());
        self.bottom = items;
        self.sort_bottom();
    }

    /// Sorts the bottom just filled (the overflow is empty) and lets it be scanned for a split
    /// again.
    fn sort_bottom(&mut self) {
        debug_assert!(self.overflow.is_empty());
        self.bottom_stuck = false;
        self.bottom.sort_unstable_by(desc);
    }

    /// Events in the rungs' buckets: all but the top's, the segments' and the bottom tier's.
    fn in_rungs(&self) -> usize {
        let segments: usize = self.segments.iter().map(|s| s.len).sum();
        self.len - self.top_len - segments - self.bottom.len() - self.overflow.len()
    }

    /// Segments of a split top not yet spread (tests).
    #[cfg(test)]
    pub(super) fn segments(&self) -> usize {
        self.segments.len()
    }

    /// Refills the empty bottom tier from the finest rung or the top. `len > 0` must hold.
    fn refill(&mut self) {
        loop {
            let rungs = self.rungs.len();
            if let Some(r) = self.rungs.last_mut() {
                while r.cur < r.buckets.len() && r.buckets[r.cur].is_empty() {
                    r.cur += 1;
                }
                if r.cur == r.buckets.len() {
                    self.rungs.pop();
                    if self.rungs.is_empty() {
                        self.chunks
                            .shrink_if_unused(self.len * CHUNKS_KEPT / CHUNK + 64);
                    }
                    continue;
                }
                let mut bucket = std::mem::replace(&mut r.buckets[r.cur], Bucket::EMPTY);
                r.cur += 1;
                let len = bucket.len();
                debug_assert!(self.bottom.is_empty());
                self.chunks.drain_into(&mut bucket, &mut self.bottom);
                if len <= SORT_MAX || rungs >= MAX_RUNGS {
                    // The next bucket becomes the bottom once this one is popped: its events,
                    // scattered in chunks, load meanwhile.
                    let ahead = r.buckets[r.cur..].iter().take(PREFETCH_SCAN);
                    if let Some(&next) = ahead.into_iter().find(|b| !b.is_empty()) {
                        self.chunks.prefetch(next);
                    }
                    self.sort_bottom();
                    return;
                }
                let (min, max) = time_range(&self.bottom);
                if min < max {
                    // Too large to sort: split over a finer rung.
                    let items = std::mem::take(&mut self.bottom);
                    self.push_rung(vec![items], len, min, max);
                } else {
                    self.sort_bottom();
                    return;
                }
            } else if let Some(seg) = self.segments.pop() {
                // The latest segment takes every insert up to the top, so it may have grown.
                if self.spread(seg.pages, seg.len, seg.min, seg.max) {
                    return;
                }
            } else {
                debug_assert!(self.top_len > 0);
                let pages = std::mem::take(&mut self.top);
                let len = std::mem::take(&mut self.top_len);
                let (min, max) = (self.top_min, self.top_max);
                // Everything at or below `max` now lives below the top.
                self.top_start = max.next_up();
                self.top_min = f64::INFINITY;
                self.top_max = f64::NEG_INFINITY;
                if self.spread(pages, len, min, max) {
                    return;
                }
            }
        }
    }

    /// Moves `pages` (`len` events, times in `[min, max]`) below: into the bottom (sorted)
    /// when they are few or share one time, and returns true; else into segments when they
    /// are many (`segments.rs`: the rung is built from the earliest one at the next step), or
    /// over a new finest rung.
    fn spread(&mut self, mut pages: Vec<Vec<T>>, len: usize, min: f64, max: f64) -> bool {
        if len >= segments::SPLIT_MIN && min < max {
            let mut parts = segments::split(pages, len, min, max, &mut self.pool);
            if parts.len() > 1 {
                // All of them are earlier than the segments already here.
                self.segments.append(&mut parts);
                return false;
            }
            // Nearly everything in one histogram bin: spread it as it is.
            let one = parts.pop().expect("a segment");
            pages = one.pages;
        }
        if len <= SORT_MAX || !(min < max) {
            let mut all = pages.pop().unwrap_or_default();
            for mut p in pages {
                all.append(&mut p);
                self.give_page(p);
            }
            self.set_bottom(all);
            return true;
        }
        self.push_rung(pages, len, min, max);
        false
    }

    /// Inserts into the bottom tier an event that every rung's cursor is past.
    #[inline]
    fn push_bottom(&mut self, item: T) {
        if self.bottom.len() >= BOTTOM_SPILL {
            if self.spill_bottom() {
                // The old bottom is now the finest rung (cursor 0): the event belongs there.
                let r = self.rungs.last_mut().expect("the spilled rung");
                let b = r.index(item.key().time);
                self.chunks.push(&mut r.buckets[b], item);
            } else {
                self.overflow.push(MinFirst(item));
            }
            return;
        }
        let key = item.key();
        let pos = self.bottom.partition_point(|x| x.key() > key);
        #[cfg(test)]
        {
            self.work += (self.bottom.len() - pos) as u64;
        }
        self.bottom.insert(pos, item);
    }

    /// Turns the full bottom into a new finest rung if its times are distinct and a rung is
    /// left; returns whether it did. A failure is remembered until the next refill.
    #[cold]
    fn spill_bottom(&mut self) -> bool {
        if self.bottom_stuck {
            return false;
        }
        // Only a stuck bottom has an overflow.
        debug_assert!(self.overflow.is_empty());
        if self.rungs.len() < MAX_RUNGS {
            #[cfg(test)]
            {
                self.work += self.bottom.len() as u64;
            }
            let (min, max) = time_range(&self.bottom);
            if min < max {
                let items = std::mem::take(&mut self.bottom);
                let len = items.len();
                // The new finest rung holds exactly the old bottom, so the tier order still holds.
                self.push_rung(vec![items], len, min, max);
                return true;
            }
        }
        self.bottom_stuck = true;
        false
    }

    /// Whether the bottom tier's next event is the overflow's head (the overflow is non-empty).
    #[inline]
    fn overflow_first(&self) -> bool {
        match (self.bottom.last(), self.overflow.peek()) {
            (Some(b), Some(h)) => h.0.key() < b.key(),
            (None, h) => h.is_some(),
            (Some(_), None) => false,
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
            top_len: 0,
            top_min: f64::INFINITY,
            top_max: f64::NEG_INFINITY,
            top_start: f64::NEG_INFINITY,
            segments: Vec::new(),
            pool: Vec::new(),
            rungs: Vec::new(),
            chunks: Chunks::new(),
            bottom: Vec::new(),
            overflow: BinaryHeap::new(),
            bottom_stuck: false,
            len: 0,
            #[cfg(test)]
            work: 0,
        }
    }

    #[inline]
    fn push(&mut self, item: T) {
        self.len += 1;
        let t = item.key().time;
        if t >= self.top_start {
            self.top_min = self.top_min.min(t);
            self.top_max = self.top_max.max(t);
            self.top_len += 1;
            match self.top.last_mut() {
                Some(page) if page.len() < TOP_PAGE => page.push(item),
                _ => {
                    let mut page = segments::new_page(&mut self.pool);
                    page.push(item);
                    self.top.push(page);
                }
            }
            return;
        }
        if self.segments.last().is_some_and(|s| t >= s.start) {
            // The latest segment whose start `t` reaches (the earliest one qualifies).
            let s = self.segments.iter_mut().find(|s| t >= s.start);
            s.expect("a segment").push(item, t, &mut self.pool);
            return;
        }
        for r in self.rungs.iter_mut() {
            let b = r.index(t);
            if b >= r.cur {
                self.chunks.push(&mut r.buckets[b], item);
                return;
            }
        }
        self.push_bottom(item);
    }

    #[inline]
    fn pop(&mut self) -> Option<T> {
        if !self.overflow.is_empty() && self.overflow_first() {
            self.len -= 1;
            return self.overflow.pop().map(|m| m.0);
        }
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
        if !self.overflow.is_empty() && self.overflow_first() {
            return self.overflow.peek().map(|m| &m.0);
        }
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

    /// What the set holds resident, and what its next spread may add: the events outside the
    /// rungs (top, segments, bottom), every chunk (free ones included), the chunks a spread of
    /// at most `SPLIT_MIN` events may take beyond the free ones (`SPREAD_SLOTS` per event),
    /// and for a set large enough to be split, the page pool (at most an eighth of the events).
    fn peak_factor(&self) -> f64 {
        let len = self.len.max(1);
        let in_chunks = self.in_rungs();
        let free_slots = self.chunks.capacity() - in_chunks;
        let spread = (SPREAD_SLOTS * len.min(segments::SPLIT_MIN)).saturating_sub(free_slots);
        let pool = if len >= segments::SPLIT_MIN {
            len / SEGMENTS
        } else {
            0
        };
        (len - in_chunks + self.chunks.capacity() + spread + pool) as f64 / len as f64
    }
}
