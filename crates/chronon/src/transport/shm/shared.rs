//! The ends of one process's workers, shared by its threads: for a protocol whose transport is
//! one value that every worker thread of the process reaches (Time Warp's wires), each worker's
//! [`Ends`] behind its own lock, with a slot of the protocol's own per-worker state (its record
//! decoder, scratch), and the control segment's abort word and end-of-run barrier.

use std::any::Any;
use std::io;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

use super::ends::Ends;
use super::mesh::{Mesh, Record};
use super::BARRIER_TIMEOUT;
use crate::shm::{Control, Segment};

/// One worker's part: its ends and the protocol's state beside them.
pub(crate) struct Slot<R, S> {
    pub(crate) ends: Ends<R>,
    pub(crate) local: S,
}

/// The ends of workers `base..base + threads` of process `proc_index`.
pub(crate) struct SharedEnds<R, S> {
    mesh: Mesh,
    control: Control,
    proc_index: u32,
    base: usize,
    /// `slots[w - base]`; each locked by its worker only (and once at the end), so never
    /// contended.
    slots: Vec<Mutex<Slot<R, S>>>,
}

impl<R, S> std::fmt::Debug for SharedEnds<R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedEnds")
            .field("workers", &self.mesh.workers())
            .field("proc", &self.proc_index)
            .finish_non_exhaustive()
    }
}

impl<R: Record, S> SharedEnds<R, S> {
    /// Attaches to a mesh segment (made by [`Mesh::create::<R>`](Mesh::create) with the same
    /// header size and worker count) as process `proc_index` whose workers are
    /// `base..base + threads`; `local(w)` is worker `w`'s protocol state.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn attach(
        seg: Segment,
        header: usize,
        control: Control,
        workers: usize,
        proc_index: u32,
        base: usize,
        threads: usize,
        local: impl Fn(usize) -> S,
    ) -> io::Result<SharedEnds<R, S>> {
        if control.workers() != workers || base + threads > workers {
            return Err(io::Error::other(
                "the shared segments do not match this run (size or worker count)",
            ));
        }
        let mesh = Mesh::attach::<R>(seg, header, workers)?;
        let slots = (base..base + threads)
            .map(|w| {
                Mutex::new(Slot {
                    ends: mesh.ends::<R>(w),
                    local: local(w),
                })
            })
            .collect();
        Ok(SharedEnds {
            mesh,
            control,
            proc_index,
            base,
            slots,
        })
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
        let parties = self.mesh.workers() as u32;
        self.control
            .barrier_with(parties, BARRIER_TIMEOUT, || {
                self.lock(w).ends.absorb();
            })
            .is_ok()
    }
}

impl<R, S> SharedEnds<R, S> {
    /// The start of the mesh's header region (the protocol's registers).
    pub(crate) fn header(&self) -> NonNull<u8> {
        self.mesh.header()
    }

    /// A handle that keeps the segment mapped.
    pub(crate) fn keep(&self) -> Arc<dyn Any + Send + Sync> {
        self.mesh.keep()
    }

    /// Whether some process asked every process to stop.
    #[inline]
    pub(crate) fn aborted(&self) -> bool {
        self.control.aborted().is_some()
    }

    /// Asks every process to stop (this one failed).
    pub(crate) fn abort(&self) {
        self.control.abort(self.proc_index);
    }
}
