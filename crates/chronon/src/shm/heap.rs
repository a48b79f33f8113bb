//! A per-process shared heap of fixed-size items in size classes (seed 000 §3.3.3, "Shared
//! Heap"), and the free path that other processes use.
//!
//! Layout of one heap segment: a [`SegHeader`] (the size-class table and the return stack's
//! head), then, per class, `count` [`ItemHeader`]s packed together and, page aligned, the
//! `count` items' data (`stride` bytes apart). Only the owning process allocates, from private free lists, so allocation takes
//! no lock any other process contends for. An item whose last reference is dropped (in any
//! process) is pushed onto its segment's *return stack*, a Treiber stack in shared memory that
//! only pushes and that the owner empties with one swap (mimalloc's remote free lists in
//! spirit); the owner then keeps it *dormant* until a GVT above its time-to-zero arrives, and
//! only then reuses it. Protocol and proof: README.md, "Heap".

use std::cell::Cell;
use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::io;
use std::mem::{align_of, size_of};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::retstack;
use crate::loom::atomic::AtomicU32 as LinkWord;
use std::sync::Arc;

use super::heap_config::stride;
pub use super::heap_config::{HeapConfig, HeapError};
use super::registry::{self, SEGMENTS_PER_OWNER};
use super::{BPtr, Segment, ShmSafe};

/// The largest alignment an item's data gets.
pub const ITEM_ALIGN: usize = 32;
pub(super) const MAX_CLASSES: usize = 8;
const HEAP_MAGIC: u32 = 0x4250_7472; // "BPtr"

/// The header of every item.
#[repr(C, align(32))]
pub(crate) struct ItemHeader {
    /// References (`BPtr`s) to the item, in every process.
    pub(crate) refs: AtomicU32,
    /// The item's size class.
    class: u32,
    /// The next item on the return stack (an offset; 0 = end).
    next: LinkWord,
    /// Bytes of data the item's value occupies (what the copy transport copies).
    pub(crate) used: u32,
    /// Where the item's data is in its segment (data lives apart from the headers).
    pub(crate) data: u32,
    /// Bit 0: a `Slice` item's elements were written (`slice.rs`).
    pub(crate) flags: u32,
    /// Bits of the simulation time at which the count dropped to zero.
    pub(crate) ttz: AtomicU64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ClassInfo {
    size: u32,
    /// Bytes between two items' data.
    stride: u32,
    count: u32,
    /// The first item header (headers are `HEADER` bytes apart).
    first: u32,
    /// The first item's data.
    data: u32,
}

/// Bytes of an item header; headers of a class are packed together, apart from the data, so
/// the counts, links and times the heap works with stay in few cache lines and pages.
pub(super) const HEADER: u32 = size_of::<ItemHeader>() as u32;
#[cfg(not(chronon_loom))]
const _: () = assert!(size_of::<ItemHeader>() == 32);
pub(super) const PAGE: u32 = 4096;

#[repr(C, align(64))]
pub(super) struct SegHeader {
    magic: u32,
    classes: u32,
    class: [ClassInfo; MAX_CLASSES],
    /// Head of the return stack (offset of an item header; 0 = empty).
    returned: LinkWord,
}

/// A dormant item: its count reached zero at `ttz`; reusable once GVT passes it.
#[derive(Debug, Clone, Copy)]
struct Dormant {
    ttz: f64,
    seg: u32,
    off: u32,
}
impl PartialEq for Dormant {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == CmpOrdering::Equal
    }
}
impl Eq for Dormant {}
impl PartialOrd for Dormant {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Dormant {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        self.ttz
            .total_cmp(&o.ttz)
            .then((self.seg, self.off).cmp(&(o.seg, o.off)))
    }
}

/// Counts of a heap's items, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapStats {
    /// Segments the heap has (1 + growths).
    pub segments: usize,
    /// Items ready for reuse.
    pub free: usize,
    /// Items whose count reached zero, waiting for GVT.
    pub dormant: usize,
    /// Items handed out and not yet seen back (live, or returned but not yet collected).
    pub outstanding: usize,
}

/// The owner's side of one process's shared heap. Only its owner allocates (`&mut self`);
/// any process holding a [`BPtr`] into it may drop references.
#[derive(Debug)]
pub struct Heap {
    owner: u32,
    config: HeapConfig,
    segs: Vec<Arc<Segment>>,
    /// Per class: free items as (segment index, offset).
    free: Vec<Vec<(u32, u32)>>,
    /// Per class: items never handed out, as (segment index, next offset, end offset); their
    /// headers are written when first handed out, so memory no item used is never touched.
    fresh: Vec<Vec<(u32, u32, u32)>>,
    dormant: BinaryHeap<Reverse<Dormant>>,
    gvt: f64,
    outstanding: usize,
    /// Per class: items handed out and not back on the free list (live, returned but not
    /// collected, or dormant): what [`tight`](Self::tight) weighs.
    held: Vec<usize>,
}

impl Heap {
    /// Creates process `owner`'s heap (its first segment, heap number
    /// `owner * SEGMENTS_PER_OWNER`), mapped and announced in this process. GVT starts at
    /// `-inf`: nothing dormant is reused until [`set_gvt`](Self::set_gvt) says so. A
    /// conservative executor calls `set_gvt(f64::INFINITY)` once: then items are reused as soon
    /// as their count drops to zero.
    pub fn new(owner: u32, config: HeapConfig) -> io::Result<Heap> {
        config.check()?;
        if owner >= registry::MAX_OWNERS {
            return Err(io::Error::other(format!("owner {owner} out of range")));
        }
        let classes = config.classes.len();
        let mut heap = Heap {
            owner,
            free: vec![Vec::new(); classes],
            fresh: vec![Vec::new(); config.classes.len()],
            config,
            segs: Vec::new(),
            dormant: BinaryHeap::new(),
            gvt: f64::NEG_INFINITY,
            outstanding: 0,
            held: vec![0; classes],
        };
        heap.grow(None)?;
        Ok(heap)
    }

    /// The owner number (heap numbers `owner * 16 ..`).
    pub fn owner(&self) -> u32 {
        self.owner
    }

    /// The heap number of this heap's segment `k`.
    pub fn heap_number(&self, k: usize) -> u32 {
        self.owner * SEGMENTS_PER_OWNER + k as u32
    }

    /// This heap's segments (to hand their descriptors to other processes).
    pub fn segments(&self) -> &[Arc<Segment>] {
        &self.segs
    }

    /// Adds a segment: the first holds every class with its configured count; a growth
    /// segment `k` holds only class `only`, 2^k times its count (halved until the segment
    /// stays under 4 GiB), so 16 segments hold up to 65 535 times the first one's items of the
    /// class that ran out, and the other classes take no memory.
    fn grow(&mut self, only: Option<usize>) -> io::Result<()> {
        let k = self.segs.len() as u32;
        if k >= self.config.max_segments {
            return Err(io::Error::other("heap has its last segment"));
        }
        let plan = match only {
            None => self.config.clone(),
            Some(c) => {
                let scaled = self.config.scaled(k);
                HeapConfig {
                    classes: scaled
                        .classes
                        .iter()
                        .enumerate()
                        .map(|(i, &(s, n))| (s, if i == c { n } else { 0 }))
                        .collect(),
                    max_segments: self.config.max_segments,
                }
            }
        };
        let seg = Segment::create(plan.segment_bytes() as usize)?;
        let mut hdr = SegHeader {
            magic: HEAP_MAGIC,
            classes: self.config.classes.len() as u32,
            class: [ClassInfo {
                size: 0,
                stride: 0,
                count: 0,
                first: 0,
                data: 0,
            }; MAX_CLASSES],
            returned: LinkWord::new(0),
        };
        let mut at = size_of::<SegHeader>().next_multiple_of(ITEM_ALIGN) as u32;
        for (c, &(size, count)) in plan.classes.iter().enumerate() {
            let st = stride(size);
            // The class's headers, then (page aligned) its data.
            let first = at;
            let data = (first + HEADER * count).next_multiple_of(PAGE);
            hdr.class[c] = ClassInfo {
                size,
                stride: st,
                count,
                first,
                data,
            };
            if count > 0 {
                self.fresh[c].push((k, first, first + HEADER * count));
            }
            at = (data + st * count).next_multiple_of(PAGE);
        }
        // Safety: the header fits at the start of the fresh segment, which no one else knows.
        unsafe { seg.base().cast::<SegHeader>().as_ptr().write(hdr) };
        let seg = registry::register(self.heap_number(k as usize), seg)?;
        self.segs.push(seg);
        Ok(())
    }

    /// Hands out a never-used item of class `c`, writing its header.
    fn take_fresh(&mut self, c: usize) -> Option<(u32, u32)> {
        let r = self.fresh[c].last_mut()?;
        let (k, off) = (r.0, r.1);
        r.1 += HEADER;
        if r.1 >= r.2 {
            self.fresh[c].pop();
        }
        let base = self.segs[k as usize].base().as_ptr();
        // Safety: the segment starts with the header written in `grow`.
        let ci = unsafe { (*base.cast::<SegHeader>()).class[c] };
        let data = ci.data + (off - ci.first) / HEADER * ci.stride;
        // Safety: `off` is an unused item of segment `k` of this heap, ITEM_ALIGN aligned; no
        // `BPtr` can refer to it, so this thread is its only user.
        unsafe {
            self.segs[k as usize]
                .base()
                .as_ptr()
                .add(off as usize)
                .cast::<ItemHeader>()
                .write(ItemHeader {
                    refs: AtomicU32::new(0),
                    class: c as u32,
                    next: LinkWord::new(0),
                    used: 0,
                    data,
                    flags: 0,
                    ttz: AtomicU64::new(0),
                })
        };
        Some((k, off))
    }

    fn class_for(&self, size: usize, align: usize) -> Result<usize, HeapError> {
        if align > ITEM_ALIGN {
            return Err(HeapError::TooLarge {
                size,
                align,
                largest: self.config.largest(),
            });
        }
        self.config
            .classes
            .iter()
            .position(|&(s, _)| s as usize >= size)
            .ok_or(HeapError::TooLarge {
                size,
                align,
                largest: self.config.largest(),
            })
    }

    /// Takes a free item for `size` data bytes of alignment `align` (collecting and growing as
    /// needed) with `refs = 1` and `used = size`: (heap number, offset, the data's address).
    /// The caller must write the value before the `BPtr` is made.
    pub(crate) fn alloc_raw(
        &mut self,
        size: usize,
        align: usize,
    ) -> Result<(u32, u32, *mut u8), HeapError> {
        let c = self.class_for(size, align)?;
        // A returned item first (its memory is warm), then a never-used one, then growth.
        if self.free[c].is_empty() {
            self.collect();
        }
        let (k, off) = match self.free[c].pop() {
            Some(item) => item,
            None => match self.take_fresh(c) {
                Some(item) => item,
                None => {
                    self.grow(Some(c)).map_err(|e| {
                        if self.segs.len() as u32 >= self.config.max_segments {
                            HeapError::Exhausted {
                                class_size: self.config.classes[c].0,
                                segments: self.segs.len() as u32,
                            }
                        } else {
                            HeapError::Io(e)
                        }
                    })?;
                    self.take_fresh(c).expect("a fresh item after growth")
                }
            },
        };
        let base = self.segs[k as usize].base().as_ptr();
        // Safety: (k, off) is a free item of this heap: no `BPtr` refers to it (its count
        // reached zero and it came back through the return stack, or it was never used), so
        // this process is its only user until the `BPtr` made from it is shared.
        let data = unsafe {
            let item = &mut *base.add(off as usize).cast::<ItemHeader>();
            // Ordering: Relaxed: a debug check of a value this process synchronized with in
            // `collect` (or wrote itself).
            debug_assert_eq!(item.refs.load(Ordering::Relaxed), 0);
            // Ordering: Relaxed: the item reaches another thread or process only through a
            // send that publishes it (ring `tail` store, SeqCst), as for `Arc::new`.
            item.refs.store(1, Ordering::Relaxed);
            item.used = size as u32;
            item.flags = 0;
            base.add(item.data as usize)
        };
        self.outstanding += 1;
        self.held[c] += 1;
        Ok((self.heap_number(k as usize), off, data))
    }

    /// Moves `value` into a free item of the smallest class it fits and returns the one
    /// reference to it. Collects returned items first if the class is empty, and grows the
    /// heap by a segment (announced in the directory) if it is still empty.
    pub fn alloc<T: ShmSafe>(&mut self, value: T) -> Result<BPtr<T>, HeapError> {
        let (heap, off, data) = self.alloc_raw(size_of::<T>(), align_of::<T>())?;
        // Safety: `data` is the data of a fresh item of at least `size_of::<T>()` bytes,
        // ITEM_ALIGN aligned (≥ `align_of::<T>()`, checked by `class_for`), ours alone.
        unsafe { data.cast::<T>().write(value) };
        Ok(BPtr::from_parts(heap, off))
    }

    /// A new item in this heap holding a byte copy of the `used` bytes of item (`heap`,
    /// `off`) (of any process's heap), with one reference: the copy transport's copy. The
    /// caller must make the copy's value valid on its own (`ShmSafe::fixup_copy`).
    ///
    /// # Safety
    /// (`heap`, `off`) is an item the caller holds a reference to (so it is live and mapped).
    pub(crate) unsafe fn copy_item(
        &mut self,
        heap: u32,
        off: u32,
    ) -> Result<(u32, u32), HeapError> {
        let base = registry::base(heap);
        // Safety: the caller holds a reference, so the item is live, initialized, and
        // immutable while shared.
        let (src, used, flags) = unsafe {
            let item = &*base.add(off as usize).cast::<ItemHeader>();
            (base.add(item.data as usize), item.used as usize, item.flags)
        };
        let (h, o, dst) = self.alloc_raw(used, ITEM_ALIGN)?;
        self.set_flags(h, o, flags);
        // Safety: `dst` is a fresh item of at least `used` bytes, `src` a live one; they are
        // different items, so they do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, used) };
        Ok((h, o))
    }

    /// Sets the flags of item (`heap`, `off`) of this heap, which the caller just allocated.
    pub(crate) fn set_flags(&mut self, heap: u32, off: u32, flags: u32) {
        let k = (heap - self.owner * SEGMENTS_PER_OWNER) as usize;
        // Safety: (k, off) is an item of this heap that the caller allocated and has not
        // shared yet.
        unsafe {
            (*self.segs[k]
                .base()
                .as_ptr()
                .add(off as usize)
                .cast::<ItemHeader>())
            .flags = flags
        };
    }

    /// Takes in every item whose count reached zero (in any process) since the last call,
    /// makes it dormant, and frees the dormant items GVT has passed.
    pub fn collect(&mut self) {
        for (k, seg) in self.segs.iter().enumerate() {
            let base = seg.base().as_ptr();
            // Safety: the segment starts with the header written in `grow`.
            let hdr = unsafe { &*base.cast::<SegHeader>() };
            if retstack::looks_empty(&hdr.returned) {
                continue;
            }
            // The items' `next` and `ttz`, written before their push, are visible (README, H2).
            let mut off = retstack::take_all(&hdr.returned);
            while off != 0 {
                // Safety: offsets on the return stack are item headers of this segment, and
                // the swap above made this list ours alone.
                let item = unsafe { &*base.add(off as usize).cast::<ItemHeader>() };
                if self.gvt == f64::INFINITY {
                    // Every time-to-zero is passed: straight back to the free list.
                    self.free[item.class as usize].push((k as u32, off));
                    self.held[item.class as usize] -= 1;
                } else {
                    self.dormant.push(Reverse(Dormant {
                        // Ordering: Relaxed: made visible by the Acquire swap above.
                        ttz: f64::from_bits(item.ttz.load(Ordering::Relaxed)),
                        seg: k as u32,
                        off,
                    }));
                }
                self.outstanding -= 1;
                off = retstack::next_of(&item.next);
            }
        }
        while let Some(Reverse(d)) = self.dormant.peek().copied() {
            if !(d.ttz < self.gvt || self.gvt == f64::INFINITY) {
                break;
            }
            self.dormant.pop();
            // Safety: `d` is an item header of segment `d.seg` of this heap.
            let class = unsafe {
                (*self.segs[d.seg as usize]
                    .base()
                    .as_ptr()
                    .add(d.off as usize)
                    .cast::<ItemHeader>())
                .class
            };
            self.free[class as usize].push((d.seg, d.off));
            self.held[class as usize] -= 1;
        }
    }

    /// Whether some class is near full: more than half of what it could ever hold
    /// (its items now, plus every item the segments the heap may still add could give it) is
    /// handed out and not yet reusable. An optimistic executor then holds back speculation
    /// until GVT frees items (Time Warp's worker loop), so that a run the sequential executor
    /// completes with this heap also completes optimistically.
    pub fn tight(&self) -> bool {
        let spare_segments = self
            .config
            .max_segments
            .saturating_sub(self.segs.len() as u32);
        (0..self.held.len()).any(|c| {
            let held = self.held[c];
            if held == 0 {
                return false;
            }
            let fresh: usize = self.fresh[c]
                .iter()
                .map(|r| ((r.2 - r.1) / HEADER) as usize)
                .sum();
            // Growth segment k holds 2^k times the first segment's items (`HeapConfig::scaled`).
            let per_segment = self.config.classes[c].1 as usize;
            let k0 = self.segs.len() as u32;
            let growth: usize = (k0..k0 + spare_segments)
                .map(|k| per_segment.saturating_mul(1usize << k.min(40)))
                .fold(0usize, usize::saturating_add);
            let available = self.free[c].len() + fresh + growth;
            held > available
        })
    }

    /// Tells the heap a new GVT (or LBTS): dormant items whose time-to-zero is strictly below
    /// it become reusable (all of them once it is `+inf`). GVT never goes down.
    pub fn set_gvt(&mut self, gvt: f64) {
        if gvt > self.gvt {
            self.gvt = gvt;
        }
        self.collect();
    }

    /// Switches a heap that reused items at once (GVT `+inf`) to reuse deferred past GVT,
    /// starting at `gvt`: called once when an optimistic executor first reports its GVT on
    /// this thread (`shm::set_thread_gvt`). Items freed before stay free.
    pub fn defer_reuse(&mut self, gvt: f64) {
        self.collect();
        self.gvt = gvt;
    }

    /// Items handed out and not yet seen back (after collecting what came back).
    pub fn outstanding(&mut self) -> usize {
        self.collect();
        self.outstanding
    }

    /// Item counts (after collecting what came back).
    pub fn stats(&mut self) -> HeapStats {
        self.collect();
        HeapStats {
            segments: self.segs.len(),
            free: self.free.iter().map(Vec::len).sum::<usize>()
                + self
                    .fresh
                    .iter()
                    .enumerate()
                    .map(|(c, rs)| {
                        let _ = c;
                        rs.iter()
                            .map(|r| ((r.2 - r.1) / HEADER) as usize)
                            .sum::<usize>()
                    })
                    .sum::<usize>(),
            dormant: self.dormant.len(),
            outstanding: self.outstanding,
        }
    }
}

thread_local! {
    static NOW: Cell<f64> = const { Cell::new(f64::INFINITY) };
}

/// Sets this thread's simulation time: a `BPtr` dropped on this thread records it as its
/// item's time-to-zero. Until a thread sets it, it is `+inf` (the item then waits for a GVT of
/// `+inf`, which is safe and, under a conservative executor, immediate).
pub fn set_time(now: f64) {
    NOW.with(|n| n.set(now));
}

/// This thread's simulation time (see [`set_time`]).
pub fn time() -> f64 {
    NOW.with(Cell::get)
}

/// This thread's simulation time (for freed items' time-to-zero) set to a time for as long as
/// it lives, then put back (on every path out, errors included).
#[cfg(not(chronon_loom))]
pub(crate) struct FreedAt(f64);

#[cfg(not(chronon_loom))]
impl FreedAt {
    pub(crate) fn new(at: f64) -> FreedAt {
        let was = time();
        set_time(at);
        FreedAt(was)
    }
}

#[cfg(not(chronon_loom))]
impl Drop for FreedAt {
    fn drop(&mut self) {
        set_time(self.0);
    }
}

/// Returns the item at (`heap`, `off`) to its owner: called once, by whoever dropped its last
/// reference, after dropping the value (README, H1–H2).
///
/// # Safety
/// The caller dropped the item's last reference, so no other process uses it.
pub(crate) unsafe fn give_back(heap: u32, off: u32, ttz: f64) {
    let base = registry::base(heap);
    // Safety: `base` maps heap `heap`, whose segment starts with its header; `off` is an item.
    let (hdr, item) = unsafe {
        (
            &*base.cast::<SegHeader>(),
            &*base.add(off as usize).cast::<ItemHeader>(),
        )
    };
    // Ordering: Relaxed: published by the push's Release CAS.
    item.ttz.store(ttz.to_bits(), Ordering::Relaxed);
    retstack::push(&hdr.returned, off, &item.next);
}
