//! What one process holds of a mesh run, for both protocol families (the conservative
//! endpoint of `net.rs`, Time Warp's wires of `tw.rs` through `shared.rs`), over any record
//! type: its mapping of the mesh, the shared control segment (abort word, barrier) and its
//! process number, attached once ([`MeshPart::attach`]); the full-ring push and the barrier
//! that absorbs while it waits; and the copy transport ([`Copier`]).
//!
//! Each family brings its own *absorb* (how a worker moves its inbox into its stash): the
//! conservative one inside an odd GSU epoch that lowers its stash register (README.md beside
//! this folder, "Shared memory", X1), Time Warp's without a bracket (its BH_min reads the
//! stash under the worker's lock).

use std::io;

use super::ends::Ends;
use super::mesh::{mismatch, Mesh, Record};
use super::BARRIER_TIMEOUT;
use crate::shm::safe::deep_copy;
use crate::shm::{Control, Segment, ShmSafe};

/// One process's part of a mesh run (see the module doc).
pub(crate) struct MeshPart {
    pub(super) mesh: Mesh,
    pub(super) control: Control,
    /// This process's number (for the abort word).
    proc_index: u32,
}

impl std::fmt::Debug for MeshPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshPart")
            .field("workers", &self.mesh.workers())
            .field("proc", &self.proc_index)
            .finish_non_exhaustive()
    }
}

impl MeshPart {
    /// Attaches to a mesh segment (made by [`Mesh::create::<R>`](Mesh::create) with the same
    /// header size and worker count) and to the control segment, as process `proc_index`.
    pub(super) fn attach<R: Record>(
        seg: Segment,
        header: usize,
        control: Control,
        workers: usize,
        proc_index: u32,
    ) -> io::Result<MeshPart> {
        if control.workers() != workers {
            return Err(mismatch());
        }
        let mesh = Mesh::attach::<R>(seg, header, workers)?;
        Ok(MeshPart {
            mesh,
            control,
            proc_index,
        })
    }

    /// The number of workers over every process.
    #[inline]
    pub(super) fn workers(&self) -> usize {
        self.mesh.workers()
    }

    /// Whether some process asked every process to stop.
    #[inline]
    pub(super) fn aborted(&self) -> bool {
        self.control.aborted().is_some()
    }

    /// Asks every process to stop (this one failed).
    pub(super) fn abort(&self) {
        self.control.abort(self.proc_index);
    }

    /// Pushes `batch` (in order) into ring `(ends.me(), dst)`: when the ring stays full for
    /// the bounded wait, `absorb(ends)` (the receiver may be waiting for a ring of ours to
    /// drain) and a retry with the rest (`Ends::push`, which counts the full retries), until
    /// everything is pushed (`true`) or nobody will read the rest — the run was aborted, or
    /// `over()` — which stays in `batch` (`false`).
    pub(super) fn push<R: Record>(
        &self,
        ends: &mut Ends<R>,
        dst: usize,
        batch: &mut Vec<R>,
        absorb: impl FnMut(&mut Ends<R>),
        mut over: impl FnMut() -> bool,
    ) -> bool {
        ends.push(dst, batch, absorb, || self.aborted() || over())
    }

    /// Waits until every worker of every process is here, calling `absorb` (the waiting
    /// worker's) meanwhile, so that no sender stays blocked on a ring to it. `false`: the run
    /// was aborted.
    pub(super) fn barrier(&self, absorb: impl FnMut()) -> bool {
        let parties = self.workers() as u32;
        self.control
            .barrier_with(parties, BARRIER_TIMEOUT, absorb)
            .is_ok()
    }
}

/// The copy transport (`--payload copy`), for comparison with zero copy: what processes
/// that exchange bytes must do with a record's `BPtr` payloads. The sender copies them into
/// new items of its heap before the push, releasing the model's (the stand-in for a copy into
/// the ring); the receiver copies them again into its own receive heap
/// (`shm::local::Receiving`), releasing the sender's: how many copies of other processes'
/// payloads are alive depends on how far those processes run ahead, which nothing in this
/// process bounds (as for payloads decoded from other ranks). Off (zero copy, the default),
/// a value passes unchanged and a `BPtr` crosses as the pointer.
pub(crate) struct Copier<T>(Option<fn(T) -> T>);

impl<T> Clone for Copier<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Copier<T> {}

impl<T> std::fmt::Debug for Copier<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Copier").field(&self.on()).finish()
    }
}

impl<T: ShmSafe> Copier<T> {
    /// The copy transport if `on`, else zero copy.
    pub(super) fn new(on: bool) -> Copier<T> {
        Copier(on.then_some(deep_copy::<T> as fn(T) -> T))
    }
}

impl<T> Copier<T> {
    /// Whether payloads are copied.
    #[inline]
    pub(super) fn on(&self) -> bool {
        self.0.is_some()
    }

    /// `value` as sent: its payloads copied into new items (the model's released).
    #[inline]
    pub(super) fn sent(&self, value: T) -> T {
        match self.0 {
            Some(copy) => copy(value),
            None => value,
        }
    }

    /// `value` as received: its payloads copied into this thread's receive heap (the
    /// sender's released).
    #[inline]
    pub(super) fn received(&self, value: T) -> T {
        match self.0 {
            Some(copy) => {
                let _into = crate::shm::local::Receiving::enter();
                copy(value)
            }
            None => value,
        }
    }
}
