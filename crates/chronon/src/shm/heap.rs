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

use super::registry::{self, SEGMENTS_PER_OWNER};
use super::{BPtr, Segment, ShmSafe};

/// The largest alignment an item's data gets.
pub const ITEM_ALIGN: usize = 32;
const MAX_CLASSES: usize = 8;
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
const HEADER: u32 = size_of::<ItemHeader>() as u32;
#[cfg(not(chronon_loom))]
const _: () = assert!(size_of::<ItemHeader>() == 32);
const PAGE: u32 = 4096;

#[repr(C, align(64))]
struct SegHeader {
    magic: u32,
    classes: u32,
    class: [ClassInfo; MAX_CLASSES],
    /// Head of the return stack (offset of an item header; 0 = empty).
    returned: LinkWord,
}

/// The size classes of a heap: item data sizes (bytes) and how many of each a segment holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapConfig {
    classes: Vec<(u32, u32)>,
    /// Segments a heap may have (1: no growth).
    max_segments: u32,
}

impl Default for HeapConfig {
    /// 64 B × 1024, 512 B × 256, 4 KiB × 64, 8 KiB × 32, 64 KiB × 8 (about 1.3 MiB in the
    /// first segment; growth segment k holds 2^k times as many).
    fn default() -> Self {
        HeapConfig {
            classes: vec![(64, 1024), (512, 256), (4096, 64), (8192, 32), (65536, 8)],
            max_segments: SEGMENTS_PER_OWNER,
        }
    }
}

impl HeapConfig {
    /// No classes yet; add them with [`class`](Self::class).
    pub fn empty() -> Self {
        HeapConfig {
            classes: Vec::new(),
            max_segments: SEGMENTS_PER_OWNER,
        }
    }

    /// At most `n` segments per heap (1 ..= 16; 1: the heap never grows, an allocation that
    /// finds its class empty fails with [`HeapError::Exhausted`]).
    pub fn max_segments(mut self, n: u32) -> Self {
        self.max_segments = n;
        self
    }

    /// The largest item data size.
    pub fn largest(&self) -> usize {
        self.classes.last().map_or(0, |c| c.0 as usize)
    }

    /// The size classes as (data bytes, items per segment).
    pub fn classes(&self) -> &[(u32, u32)] {
        &self.classes
    }

    /// Parses `SIZE:COUNT,SIZE:COUNT,...` (sizes in bytes, or with a `K`/`M` suffix for KiB
    /// and MiB, strictly growing), e.g. `64:1024,512:256,4K:64,64K:8`, and checks it.
    pub fn parse(text: &str) -> Result<HeapConfig, String> {
        let num = |t: &str| -> Result<u64, String> {
            let t = t.trim();
            let (digits, mul) = match t.strip_suffix(['K', 'k']) {
                Some(d) => (d, 1024),
                None => match t.strip_suffix(['M', 'm']) {
                    Some(d) => (d, 1024 * 1024),
                    None => (t, 1),
                },
            };
            digits
                .parse::<u64>()
                .ok()
                .and_then(|v| v.checked_mul(mul))
                .filter(|&v| v <= u64::from(u32::MAX))
                .ok_or_else(|| format!("'{t}' is not a size (bytes, or with K or M)"))
        };
        let mut cfg = HeapConfig::empty();
        for part in text.split(',') {
            let Some((size, count)) = part.split_once(':') else {
                return Err(format!(
                    "--heap-classes: '{part}' is not SIZE:COUNT (like 4K:64)"
                ));
            };
            cfg = cfg.class(num(size)? as u32, num(count)? as u32);
        }
        cfg.check()
            .map_err(|e| format!("--heap-classes {text}: {e}"))?;
        Ok(cfg)
    }

    /// Adds a class of `count` items of `size` data bytes each.
    pub fn class(mut self, size: u32, count: u32) -> Self {
        self.classes.push((size, count));
        self
    }

    /// Adds a class of `size`-byte items, as many as fit in `budget` bytes (at least one).
    pub fn class_budget(self, size: u32, budget: usize) -> Self {
        let count = (budget / item_bytes(size) as usize).max(1);
        self.class(size, u32::try_from(count).unwrap_or(u32::MAX))
    }

    pub(crate) fn check(&self) -> io::Result<()> {
        let bad = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, m));
        if self.classes.is_empty() || self.classes.len() > MAX_CLASSES {
            return bad(format!(
                "1..={MAX_CLASSES} size classes, got {}",
                self.classes.len()
            ));
        }
        if self.classes.windows(2).any(|w| w[0].0 >= w[1].0) {
            return bad("size classes must grow strictly".into());
        }
        if self.classes.iter().any(|&(s, c)| s == 0 || c == 0) {
            return bad("size classes need a size and a count above 0".into());
        }
        if self.max_segments == 0 || self.max_segments > SEGMENTS_PER_OWNER {
            return bad(format!(
                "a heap has 1..={SEGMENTS_PER_OWNER} segments, got {}",
                self.max_segments
            ));
        }
        if self.segment_bytes() > u32::MAX as u64 {
            return bad("a heap segment must stay under 4 GiB".into());
        }
        Ok(())
    }

    /// The classes of growth segment `k`: the counts times 2^k, halved until the segment
    /// fits in 4 GiB (never below the configured counts).
    fn scaled(&self, k: u32) -> HeapConfig {
        let mut shift = k.min(31);
        loop {
            let c = HeapConfig {
                classes: self
                    .classes
                    .iter()
                    .map(|&(s, n)| (s, n.saturating_mul(1 << shift)))
                    .collect(),
                max_segments: self.max_segments,
            };
            if shift == 0 || c.segment_bytes() <= u64::from(u32::MAX) {
                return c;
            }
            shift -= 1;
        }
    }

    fn segment_bytes(&self) -> u64 {
        let items: u64 = self
            .classes
            .iter()
            .map(|&(s, c)| item_bytes(s) * u64::from(c) + 2 * u64::from(PAGE))
            .sum();
        size_of::<SegHeader>().next_multiple_of(ITEM_ALIGN) as u64 + items
    }
}

/// Bytes between two items' data.
fn stride(size: u32) -> u32 {
    size.next_multiple_of(ITEM_ALIGN as u32)
}

/// Bytes one item of `size` costs (header and data).
fn item_bytes(size: u32) -> u64 {
    u64::from(HEADER) + u64::from(stride(size))
}

/// Why an allocation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HeapError {
    /// The value is larger than the largest class, or more aligned than [`ITEM_ALIGN`].
    TooLarge {
        /// Its size in bytes.
        size: usize,
        /// Its alignment.
        align: usize,
        /// The largest class's item size (0: unknown).
        largest: usize,
    },
    /// The class is empty and the heap already has its last segment.
    Exhausted {
        /// The class's item size.
        class_size: u32,
        /// The segments the heap has.
        segments: u32,
    },
    /// Every heap number of this process is taken (256 owners × 16 segments over all
    /// processes; see `shm::local`).
    NoHeapNumber,
    /// The OS refused a new segment.
    Io(io::Error),
}

impl std::fmt::Display for HeapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeapError::TooLarge {
                size,
                align,
                largest,
            } => write!(
                f,
                "a {size}-byte value (alignment {align}) fits no size class of the shared heap (the largest holds {largest} bytes, aligned to {ITEM_ALIGN}; add a class with --heap-classes)"
            ),
            HeapError::Exhausted {
                class_size,
                segments,
            } => write!(
                f,
                "shared heap class of {class_size}-byte items is full in all {segments} segments of the heap (more items per class or more segments: --heap-classes, --heap-segments)"
            ),
            HeapError::NoHeapNumber => write!(
                f,
                "no shared heap number is left in this process: at most {} threads may hold a shared heap at once",
                registry::MAX_OWNERS
            ),
            HeapError::Io(e) => write!(f, "cannot create a shared heap segment: {e}"),
        }
    }
}
impl std::error::Error for HeapError {}

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
        let mut heap = Heap {
            owner,
            free: vec![Vec::new(); config.classes.len()],
            fresh: vec![Vec::new(); config.classes.len()],
            config,
            segs: Vec::new(),
            dormant: BinaryHeap::new(),
            gvt: f64::NEG_INFINITY,
            outstanding: 0,
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
        }
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
