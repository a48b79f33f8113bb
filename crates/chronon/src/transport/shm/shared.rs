//! The ends of one process's workers, shared by its threads: for a protocol whose transport is
//! one value that every worker thread of the process reaches (Time Warp's wires), each worker's
//! [`Ends`] behind its own lock, with a slot of the protocol's own per-worker state (its record
//! decoder, scratch), beside the process's [`MeshPart`] (the control segment's abort word and
//! the end-of-run barrier).

use std::io;
use std::sync::{Mutex, MutexGuard};

use super::ends::Ends;
use super::mesh::{mismatch, Record};
use super::part::MeshPart;

/// One worker's part: its ends and the protocol's state beside them.
pub(crate) struct Slot<R, S> {
    pub(crate) ends: Ends<R>,
    pub(crate) local: S,
}

/// The ends of workers `base..base + threads` of one process.
pub(crate) struct SharedEnds<R, S> {
    part: MeshPart,
    base: usize,
    /// `slots[w - base]`; each locked by its worker only (and once at the end), so never
    /// contended.
    slots: Vec<Mutex<Slot<R, S>>>,
}

impl<R, S> std::fmt::Debug for SharedEnds<R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedEnds")
            .field("part", &self.part)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl<R: Record, S> SharedEnds<R, S> {
    /// The ends of workers `base..base + threads` of the process that attached `part` (with
    /// records `R`); `local(w)` is worker `w`'s protocol state.
    pub(crate) fn new(
        part: MeshPart,
        base: usize,
        threads: usize,
        local: impl Fn(usize) -> S,
    ) -> io::Result<SharedEnds<R, S>> {
        if base + threads > part.workers() {
            return Err(mismatch());
        }
        let slots = (base..base + threads)
            .map(|w| {
                Mutex::new(Slot {
                    ends: part.mesh.ends::<R>(w),
                    local: local(w),
                })
            })
            .collect();
        Ok(SharedEnds { part, base, slots })
    }

    /// Worker `w`'s slot (`w` one of this process's workers).
    #[inline]
    pub(crate) fn lock(&self, w: usize) -> MutexGuard<'_, Slot<R, S>> {
        self.slots[w - self.base]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// After worker `w` stopped: waits until every worker of every process has (absorbing its
    /// inbox meanwhile, so that no sender stays blocked on it). `false`: the run was aborted.
    pub(crate) fn end_barrier(&self, w: usize) -> bool {
        self.part.barrier(|| {
            self.lock(w).ends.absorb();
        })
    }
}

impl<R, S> SharedEnds<R, S> {
    /// The process's part of the mesh run (its mapping, the control segment).
    #[inline]
    pub(crate) fn part(&self) -> &MeshPart {
        &self.part
    }
}
