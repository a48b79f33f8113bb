//! The size classes of a shared heap ([`HeapConfig`]: parsing, checks, the bytes a segment
//! needs) and why an allocation fails ([`HeapError`]). The heap itself: `heap.rs`.

use std::io;
use std::mem::size_of;

use super::heap::{SegHeader, HEADER, ITEM_ALIGN, MAX_CLASSES, PAGE};
use super::registry::{self, SEGMENTS_PER_OWNER};

/// The size classes of a heap: item data sizes (bytes) and how many of each a segment holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapConfig {
    pub(super) classes: Vec<(u32, u32)>,
    /// Segments a heap may have (1: no growth).
    pub(super) max_segments: u32,
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

    /// The most segments a heap may have ([`max_segments`](Self::max_segments)).
    pub fn segment_limit(&self) -> u32 {
        self.max_segments
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
    pub(super) fn scaled(&self, k: u32) -> HeapConfig {
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

    pub(super) fn segment_bytes(&self) -> u64 {
        let items: u64 = self
            .classes
            .iter()
            .map(|&(s, c)| item_bytes(s) * u64::from(c) + 2 * u64::from(PAGE))
            .sum();
        size_of::<SegHeader>().next_multiple_of(ITEM_ALIGN) as u64 + items
    }
}

/// Bytes between two items' data.
pub(super) fn stride(size: u32) -> u32 {
    size.next_multiple_of(ITEM_ALIGN as u32)
}

/// Bytes one item of `size` costs (header and data).
pub(super) fn item_bytes(size: u32) -> u64 {
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
