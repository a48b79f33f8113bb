//! The ring mesh in one shared segment: a header region of a size the protocol gives (its own
//! registers), then one bounded SPSC ring (`shm::Producer`/`Consumer`) for every ordered pair
//! `(s, r)` of workers, `s ≠ r`. The parent creates the segment ([`Mesh::create`]); every
//! process attaches it ([`Mesh::attach`]) and hands each of its workers its ends
//! ([`Mesh::ends`], `ends.rs`). Records of any [`Record`] type travel the rings as values; one
//! mesh carries one type, named at `create`, `attach` and `ends` (checked).

use std::any::{Any, TypeId};
use std::io;
use std::ptr::NonNull;
use std::sync::Arc;

use super::ends::Ends;
use crate::shm::{init_ring, ring_bytes, Consumer, Producer, RingRegister, Segment, ShmSafe};

/// What a ring carries: moved between processes as a value (`ShmSafe`), with a time that the
/// ring's register bounds from below (the MOM / BH_min register of its link).
pub(crate) trait Record: ShmSafe {
    /// A lower bound for the register while this record waits in a ring (its timestamp).
    fn time(&self) -> f64;
}

/// Records per ring, unless `CHRONON_RING_CAP` says otherwise.
pub(crate) const RING_CAP: usize = 1024;

/// Records per ring for every protocol: `CHRONON_RING_CAP` (a power of two in 2..=2^20; read
/// by the parent and inherited by the worker processes, so both sides agree on the layout),
/// else [`RING_CAP`]. Small rings exercise the bounded wait (tests); large ones trade memory
/// for fewer waits.
pub(crate) fn ring_cap() -> usize {
    parse_ring_cap(std::env::var("CHRONON_RING_CAP").ok().as_deref())
}

/// [`ring_cap`] of the variable's value (`None`: unset); a value that is not a power of two
/// in range is ignored.
pub(super) fn parse_ring_cap(v: Option<&str>) -> usize {
    v.and_then(|v| v.parse::<usize>().ok())
        .filter(|c| c.is_power_of_two() && (2..=1 << 20).contains(c))
        .unwrap_or(RING_CAP)
}

/// The error of a process whose shared segments were made for another run.
pub(super) fn mismatch() -> io::Error {
    io::Error::other("the shared segments do not match this run (size or worker count)")
}

/// Where things are in the segment: the header, then the rings, `stride` bytes each.
#[derive(Clone, Copy, Debug)]
struct Layout {
    workers: usize,
    cap: usize,
    rings: usize,
    stride: usize,
    len: usize,
}

impl Layout {
    fn new<R>(header: usize, workers: usize) -> Layout {
        let rings = header.next_multiple_of(128);
        let cap = ring_cap();
        let stride = ring_bytes::<R>(cap).next_multiple_of(128);
        Layout {
            workers,
            cap,
            rings,
            stride,
            len: rings + workers * workers * stride,
        }
    }

    fn ring(&self, seg: &Segment, s: usize, r: usize) -> NonNull<u8> {
        assert!(s < self.workers && r < self.workers && s != r);
        let off = self.rings + (s * self.workers + r) * self.stride;
        assert!(off + self.stride <= seg.len());
        // Safety: in bounds (checked above).
        unsafe { seg.base().add(off) }
    }
}

/// One process's mapping of a ring mesh.
pub(crate) struct Mesh {
    seg: Arc<Segment>,
    layout: Layout,
    /// The record type the rings were laid out for (their stride depends on it).
    record: TypeId,
}

impl std::fmt::Debug for Mesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mesh")
            .field("workers", &self.layout.workers)
            .field("cap", &self.layout.cap)
            .finish_non_exhaustive()
    }
}

impl Mesh {
    /// Creates the segment for `workers` workers (parent side): `header` zero bytes at its
    /// start (page-aligned, for the caller to initialize before any process attaches), then
    /// every ring empty.
    pub(crate) fn create<R: Record>(header: usize, workers: usize) -> io::Result<Segment> {
        let layout = Layout::new::<R>(header, workers);
        let seg = Segment::create(layout.len)?;
        for s in 0..workers {
            for r in 0..workers {
                if r != s {
                    // Safety: ring (s, r) lies inside the fresh segment, 128-byte aligned, and
                    // no end is attached yet.
                    unsafe { init_ring::<R>(layout.ring(&seg, s, r), layout.cap) };
                }
            }
        }
        Ok(seg)
    }

    /// Attaches to a segment made by [`create`](Self::create) with the same `R`, header size
    /// and worker count.
    pub(crate) fn attach<R: Record>(
        seg: Segment,
        header: usize,
        workers: usize,
    ) -> io::Result<Mesh> {
        let layout = Layout::new::<R>(header, workers);
        if seg.len() < layout.len {
            return Err(mismatch());
        }
        Ok(Mesh {
            seg: Arc::new(seg),
            layout,
            record: TypeId::of::<R>(),
        })
    }

    /// Worker `me`'s ends: the producers of rings `(me, r)`, the consumers of rings `(s, me)`,
    /// an empty stash. Take them at most once per worker over every process (each ring has one
    /// producer and one consumer). `R` is the type given to `attach`.
    pub(crate) fn ends<R: Record>(&self, me: usize) -> Ends<R> {
        assert_eq!(
            TypeId::of::<R>(),
            self.record,
            "the mesh carries another record type"
        );
        let n = self.layout.workers;
        let out = (0..n)
            .map(|r| {
                (r != me).then(|| {
                    // Safety: ring (me, r) was initialized by `create`, `keep` keeps it mapped,
                    // and worker `me` is its only producer (one `ends` per worker).
                    unsafe { Producer::attach(self.layout.ring(&self.seg, me, r), self.keep()) }
                })
            })
            .collect();
        let inbox = (0..n)
            .filter(|&s| s != me)
            .map(|s| {
                // Safety: as above; worker `me` is ring (s, me)'s only consumer.
                let c =
                    unsafe { Consumer::attach(self.layout.ring(&self.seg, s, me), self.keep()) };
                (s, c)
            })
            .collect();
        Ends::new(me, out, inbox)
    }

    /// The register of ring `(s, r)`, readable by any worker (`None` on the diagonal).
    pub(crate) fn register(&self, s: usize, r: usize) -> Option<RingRegister> {
        (s != r).then(|| {
            // Safety: ring (s, r) was initialized by `create`; `keep` keeps it mapped.
            unsafe { RingRegister::attach(self.layout.ring(&self.seg, s, r), self.keep()) }
        })
    }

    /// The number of workers over every process.
    pub(crate) fn workers(&self) -> usize {
        self.layout.workers
    }

    /// Records per ring.
    #[cfg(test)]
    pub(super) fn cap(&self) -> usize {
        self.layout.cap
    }

    /// The start of the header region (page-aligned, as long as the `header` bytes given to
    /// `create`); kept mapped by [`keep`](Self::keep).
    pub(crate) fn header(&self) -> NonNull<u8> {
        self.seg.base()
    }

    /// A handle that keeps the segment mapped.
    pub(crate) fn keep(&self) -> Arc<dyn Any + Send + Sync> {
        self.seg.clone()
    }
}
