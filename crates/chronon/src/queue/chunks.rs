//! The storage of a ladder's rung buckets: every bucket is a list of fixed-capacity chunks taken
//! from one pool that the ladder keeps (the protocol and its proof: `README.md`, "Buckets in
//! chunks").
//!
//! A bucket that was a `Vec` of its own was allocated when its rung was spread, grew (a
//! reallocation and a copy) when later inserts reached it, and was freed when it became the
//! bottom: three allocator calls per bucket of about four events, a tenth of a PHOLD run's CPU.
//! A chunk never grows: a bucket whose newest chunk is full links a fresh one in front of it,
//! and a bucket drained into the bottom returns its chunks to the pool, which keeps their
//! buffers. In a steady state nothing is allocated at all.

use std::mem::MaybeUninit;

/// Events per chunk.
pub(super) const CHUNK: usize = 8;
/// Chunks of one bucket `prefetch` loads at most.
const PREFETCH_CHUNKS: usize = 4;
/// No chunk.
const NIL: u32 = u32::MAX;

/// A bucket: its newest chunk (the one being filled) and its event count.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bucket {
    head: u32,
    len: u32,
}

impl Bucket {
    pub(super) const EMPTY: Bucket = Bucket { head: NIL, len: 0 };

    #[inline(always)]
    pub(super) fn len(self) -> usize {
        self.len as usize
    }

    #[inline(always)]
    pub(super) fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// The pool of chunks every bucket of one ladder draws from.
///
/// Invariant (what makes `drain_into`'s reads sound): the slots of chunk `c` are
/// `data[c * CHUNK..(c + 1) * CHUNK]`; a bucket of `len` events owns `ceil(len / CHUNK)` chunks,
/// linked from its head through `next`; every chunk but the head is full, and the head's first
/// `(len - 1) % CHUNK + 1` slots are filled. A filled slot holds an initialized event that
/// nothing else owns; every other slot (free chunks', the head's rest) may hold garbage.
pub(super) struct Chunks<T> {
    /// The slots of every chunk ever made, `CHUNK` per chunk.
    data: Vec<MaybeUninit<T>>,
    /// The next older chunk of the same bucket (`NIL`: the bucket's oldest).
    next: Vec<u32>,
    /// Chunks in no bucket.
    free: Vec<u32>,
}

impl<T> std::fmt::Debug for Chunks<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunks")
            .field("chunks", &self.next.len())
            .field("free", &self.free.len())
            .finish()
    }
}

impl<T> Chunks<T> {
    pub(super) fn new() -> Self {
        Chunks {
            data: Vec::new(),
            next: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Appends `item` to bucket `b`. Reads only `b`: the slot's place follows from its count.
    #[inline(always)]
    pub(super) fn push(&mut self, b: &mut Bucket, item: T) {
        let fill = b.len as usize % CHUNK;
        if fill == 0 {
            self.link_new(b);
        }
        self.data[b.head as usize * CHUNK + fill] = MaybeUninit::new(item);
        b.len += 1;
    }

    /// Puts an empty chunk in front of bucket `b`.
    #[inline]
    fn link_new(&mut self, b: &mut Bucket) {
        let c = match self.free.pop() {
            Some(c) => c,
            None => {
                let c = u32::try_from(self.next.len())
                    .ok()
                    .filter(|&c| c != NIL)
                    .expect("fewer than 2^32 - 1 chunks");
                self.data
                    .resize_with(self.data.len() + CHUNK, MaybeUninit::uninit);
                self.next.push(NIL);
                c
            }
        };
        self.next[c as usize] = b.head;
        b.head = c;
    }

    /// Moves every event of bucket `b` to the end of `out` (in no particular order) and
    /// returns its chunks to the pool; `b` is empty afterwards.
    pub(super) fn drain_into(&mut self, b: &mut Bucket, out: &mut Vec<T>) {
        let len = b.len();
        out.reserve(len);
        let mut c = b.head;
        // The head holds the rest of `len` past whole chunks; every older chunk is full.
        let mut fill = if len == 0 { 0 } else { (len - 1) % CHUNK + 1 };
        while c != NIL {
            let base = c as usize * CHUNK;
            for slot in &self.data[base..base + fill] {
                // Safety: a bucket's filled slots hold initialized events that only the bucket
                // owns (the invariant above); `b` is emptied below, so each is read once.
                out.push(unsafe { slot.assume_init_read() });
            }
            self.free.push(c);
            c = self.next[c as usize];
            fill = CHUNK;
        }
        *b = Bucket::EMPTY;
    }

    /// Starts loading the events of bucket `b` (at most its `PREFETCH_CHUNKS` newest chunks)
    /// into the cache: a hint, it reads nothing.
    #[inline]
    pub(super) fn prefetch(&self, b: Bucket) {
        let mut c = b.head;
        for _ in 0..PREFETCH_CHUNKS {
            if c == NIL {
                return;
            }
            let base = self.data[c as usize * CHUNK..].as_ptr();
            for line in (0..CHUNK * std::mem::size_of::<T>()).step_by(128) {
                crate::prefetch::prefetch_raw(base.cast::<[u8; 128]>().wrapping_byte_add(line));
            }
            c = self.next[c as usize];
        }
    }

    /// Events the pool can hold (free chunks included): what it keeps resident.
    pub(super) fn capacity(&self) -> usize {
        self.data.len()
    }

    /// Frees the chunks past the first `keep` when every chunk is free (no bucket holds one).
    pub(super) fn shrink_if_unused(&mut self, keep: usize) {
        if self.free.len() == self.next.len() && self.next.len() > keep {
            self.data.truncate(keep * CHUNK);
            self.data.shrink_to_fit();
            self.next.truncate(keep);
            self.next.shrink_to_fit();
            // Lowest indices last, so that they are reused first.
            self.free.clear();
            self.free.extend((0..keep as u32).rev());
            self.free.shrink_to_fit();
        }
    }

    /// Whether every chunk is free.
    #[cfg(test)]
    pub(super) fn all_free(&self) -> bool {
        self.free.len() == self.next.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets keep exactly their events across chunk boundaries; drained chunks are reused
    /// before any new one is made, and a shrink keeps only the first chunks.
    #[test]
    fn buckets_keep_their_events_and_chunks_are_reused() {
        let mut pool = Chunks::new();
        let mut a = Bucket::EMPTY;
        let mut b = Bucket::EMPTY;
        for i in 0..(3 * CHUNK as u32 + 1) {
            pool.push(&mut a, i);
            pool.push(&mut b, 1000 + i);
        }
        assert_eq!(a.len(), 3 * CHUNK + 1);
        let made = pool.capacity();
        assert_eq!(made, 8 * CHUNK);
        let mut out = Vec::new();
        pool.drain_into(&mut a, &mut out);
        out.sort_unstable();
        assert_eq!(out, (0..(3 * CHUNK as u32 + 1)).collect::<Vec<_>>());
        assert!(a.is_empty());
        // a's four chunks are reused: no new chunk for as many events.
        for i in 0..(4 * CHUNK as u32) {
            pool.push(&mut a, i);
        }
        assert_eq!(pool.capacity(), made);
        pool.shrink_if_unused(2);
        assert_eq!(pool.capacity(), made, "chunks in use are never freed");
        let mut rest = Vec::new();
        pool.drain_into(&mut a, &mut rest);
        pool.drain_into(&mut b, &mut rest);
        assert_eq!(rest.len(), 4 * CHUNK + 3 * CHUNK + 1);
        assert!(pool.all_free());
        pool.shrink_if_unused(2);
        assert_eq!(pool.capacity(), 2 * CHUNK);
        for i in 0..(2 * CHUNK as u32 + 1) {
            pool.push(&mut a, i);
        }
        assert_eq!(pool.capacity(), 3 * CHUNK);
    }
}
