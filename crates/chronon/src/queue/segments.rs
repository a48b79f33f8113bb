//! A large ladder top split into time segments in place (see `ladder.rs`, "Large tops").
//!
//! Spreading a top of `n` events over a rung allocates the rung's buckets (exactly sized, so
//! every one of them is touched) while the top's pages still hold the events: the resident
//! memory peaks at twice the pending set. A top of at least [`SPLIT_MIN`] events is instead
//! first split into at most [`SEGMENTS`] segments of consecutive time ranges, each made of
//! pages like the top. The split reuses every page it empties for the segments it fills, so it
//! needs only a few pages more than the top; afterwards one segment at a time is spread over a
//! rung, so the peak is the pending set plus about one segment.
//!
//! Order: segments come from a histogram of the top's times with the monotone bucket function
//! of a rung (`bucket_of`), cut between bins, so every event of segment `j` is strictly earlier
//! than every event of segment `j + 1` (equal times share a bin). A segment's `start` is its
//! earliest time when it was cut; an event inserted later goes to the latest segment whose
//! `start` it reaches (or below all segments), which keeps that order.

use crate::event::Keyed;

/// Events per page (as in the top).
pub(super) const PAGE: usize = 1024;
/// The most segments one top is split into.
pub(super) const SEGMENTS: usize = 8;
/// Tops with at least this many events are split (2 MiB of 32-byte entries; measured on
/// PHOLD with 16 384 LPs, whose tops reach 10^5 events: the smaller spreads were faster too);
/// unit tests split small tops so that the ladder's property tests cover
/// both paths.
#[cfg(not(test))]
pub(super) const SPLIT_MIN: usize = 1 << 16;
#[cfg(test)]
pub(super) const SPLIT_MIN: usize = 300;
/// Bins of the histogram that places the cuts.
const BINS: usize = 1 << 15;

/// The bin of time `t` among `bins` bins of width `1 / inv_width` from `start`: monotone
/// non-decreasing in `t`, clamped to the bins.
#[inline(always)]
pub(super) fn bucket_of(t: f64, start: f64, inv_width: f64, bins: usize) -> usize {
    let q = (t - start) * inv_width;
    let last = bins - 1;
    if q >= last as f64 {
        last
    } else if q > 0.0 {
        q as usize
    } else {
        0
    }
}

/// Pages of unsorted events with times in `[min, max]`, all at or after `start`.
#[derive(Debug)]
pub(super) struct Segment<T> {
    pub(super) start: f64,
    pub(super) pages: Vec<Vec<T>>,
    pub(super) len: usize,
    pub(super) min: f64,
    pub(super) max: f64,
}

impl<T> Segment<T> {
    fn new(start: f64) -> Self {
        Segment {
            start,
            pages: Vec::new(),
            len: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds an event at time `t`, in the last page if it has room, else in `page` (empty).
    #[inline]
    fn push_with(&mut self, item: T, t: f64, page: impl FnOnce() -> Vec<T>) {
        self.min = self.min.min(t);
        self.max = self.max.max(t);
        self.len += 1;
        match self.pages.last_mut() {
            Some(p) if p.len() < PAGE => p.push(item),
            _ => {
                let mut p = page();
                p.push(item);
                self.pages.push(p);
            }
        }
    }

    /// Adds an event inserted after the split (`t >= self.start`), taking a new page from
    /// `pool` when it needs one.
    #[inline]
    pub(super) fn push(&mut self, item: T, t: f64, pool: &mut Vec<Vec<T>>) {
        debug_assert!(t >= self.start);
        self.push_with(item, t, || new_page(pool));
    }
}

/// An empty page: one from `pool` (pages the ladder has emptied) or a new one.
#[inline]
pub(super) fn new_page<T>(pool: &mut Vec<Vec<T>>) -> Vec<T> {
    pool.pop().unwrap_or_else(|| Vec::with_capacity(PAGE))
}

/// Splits `pages` (`len` events, times in `[min, max]`, `min < max`) into segments, latest
/// first (so the earliest is popped first). Returns one segment when no cut is possible (one
/// bin holds nearly everything). The segments are built in the pages the split empties (and
/// `pool`'s); the pages left over go to `pool`.
pub(super) fn split<T: Keyed>(
    pages: Vec<Vec<T>>,
    len: usize,
    min: f64,
    max: f64,
    pool: &mut Vec<Vec<T>>,
) -> Vec<Segment<T>> {
    debug_assert!(min < max);
    let inv_width = BINS as f64 / (max - min);
    let mut counts = vec![0u32; BINS];
    for it in pages.iter().flatten() {
        counts[bucket_of(it.key().time, min, inv_width, BINS)] += 1;
    }
    // Cut after a bin once the segment holds its share; the last segment takes the rest.
    let share = len.div_ceil(SEGMENTS);
    let mut group = vec![0u8; BINS];
    let (mut g, mut acc) = (0usize, 0usize);
    for (b, &c) in counts.iter().enumerate() {
        group[b] = g as u8;
        acc += c as usize;
        if acc >= share && g + 1 < SEGMENTS {
            g += 1;
            acc = 0;
        }
    }
    drop(counts);
    // Empty trailing groups (the last cut fell on the last non-empty bin) are dropped below.
    let mut segs: Vec<Segment<T>> = (0..=g).map(|_| Segment::new(f64::NAN)).collect();
    for mut page in pages {
        for it in page.drain(..) {
            let t = it.key().time;
            let s = group[bucket_of(t, min, inv_width, BINS)] as usize;
            segs[s].push_with(it, t, || new_page(pool));
        }
        pool.push(page);
    }
    segs.retain(|s| s.len > 0);
    for s in segs.iter_mut() {
        s.start = s.min;
    }
    segs.reverse();
    segs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKey;

    fn key(time: f64, seq: u64) -> EventKey {
        EventKey { time, seq, src: 0 }
    }

    fn pages_of(keys: Vec<EventKey>) -> (Vec<Vec<EventKey>>, usize, f64, f64) {
        let len = keys.len();
        let min = keys.iter().map(|k| k.time).fold(f64::INFINITY, f64::min);
        let max = keys
            .iter()
            .map(|k| k.time)
            .fold(f64::NEG_INFINITY, f64::max);
        let pages = keys.chunks(PAGE).map(|c| c.to_vec()).collect();
        (pages, len, min, max)
    }

    /// Every event lands in exactly one segment; segments are ordered and strictly apart, each
    /// page but a segment's last is full, and a uniform top is cut into even parts.
    #[test]
    fn split_keeps_every_event_and_orders_the_segments() {
        let mut keys: Vec<EventKey> = (0..20_000u64)
            .map(|i| key(((i * 7919) % 20_000) as f64 * 0.5, i))
            .collect();
        // Equal times must not straddle a cut.
        keys.extend((0..3000u64).map(|i| key(2500.0, 100_000 + i)));
        let total = keys.len();
        let (pages, len, min, max) = pages_of(keys.clone());
        let segs = split(pages, len, min, max, &mut Vec::new());
        assert_eq!(segs.len(), SEGMENTS);
        let mut earliest_first: Vec<&Segment<EventKey>> = segs.iter().rev().collect();
        let mut seen: Vec<EventKey> = Vec::new();
        for (i, s) in earliest_first.iter().enumerate() {
            let items: Vec<EventKey> = s.pages.iter().flatten().copied().collect();
            assert_eq!(items.len(), s.len);
            assert!(s.len <= total / 2, "segment {i} holds {}", s.len);
            for p in &s.pages[..s.pages.len() - 1] {
                assert_eq!(p.len(), PAGE);
            }
            let lo = items.iter().map(|k| k.time).fold(f64::INFINITY, f64::min);
            let hi = items
                .iter()
                .map(|k| k.time)
                .fold(f64::NEG_INFINITY, f64::max);
            assert_eq!((lo, hi, s.start), (s.min, s.max, s.min));
            if let Some(next) = earliest_first.get(i + 1) {
                assert!(hi < next.min, "segment {i} overlaps the next");
            }
            seen.extend(items);
        }
        earliest_first.clear();
        seen.sort();
        keys.sort();
        assert_eq!(seen, keys);
    }

    /// A top whose events nearly all share one time cannot be cut evenly; nothing is lost.
    #[test]
    fn split_of_a_lopsided_top_keeps_every_event() {
        let mut keys: Vec<EventKey> = (0..5000u64).map(|i| key(1.0, i)).collect();
        keys.push(key(2.0, 9));
        let (pages, len, min, max) = pages_of(keys);
        let segs = split(pages, len, min, max, &mut Vec::new());
        assert_eq!(segs.iter().map(|s| s.len).sum::<usize>(), 5001);
        assert!(segs.len() <= 2);
        assert_eq!(segs.last().unwrap().min, 1.0);
    }
}
