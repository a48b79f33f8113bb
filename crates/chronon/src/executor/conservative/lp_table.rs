//! The LP table: every LP's slot, shared by the workers under an ownership protocol instead of
//! a lock. See `README.md` in this folder.

use std::cell::UnsafeCell;

use crate::executor::LpSlot;
use crate::model::{LpId, LpStates};

/// Every LP's slot. While workers run, slot `i` is touched only by the worker that owns LP `i`
/// (or, for a shared LP under load balancing, by the one worker that claimed it this round);
/// at a safe point (every worker parked at a barrier) one thread may read them all.
pub(crate) struct LpTable<S> {
    slots: Box<[UnsafeCell<LpSlot<S>>]>,
}

impl<S> std::fmt::Debug for LpTable<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LpTable")
            .field("lps", &self.slots.len())
            .finish()
    }
}

// Safety: a slot is only accessed under the ownership protocol above (one owner at a time, and
// hand-overs go through barriers, which order the accesses); `S: Send` lets it move between
// the threads that own it in turn.
unsafe impl<S: Send> Sync for LpTable<S> {}

impl<S> LpTable<S> {
    pub(crate) fn new(slots: Vec<LpSlot<S>>) -> Self {
        LpTable {
            slots: slots.into_iter().map(UnsafeCell::new).collect(),
        }
    }

    /// LP `lp`'s slot, mutably.
    ///
    /// # Safety
    /// The caller is the worker that owns `lp` (or claimed shared LP `lp` for this round) and
    /// no other reference to this slot is live:
    /// only the owner calls this while workers run, and `AllStates` is used only at safe points.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get_mut(&self, lp: LpId) -> &mut LpSlot<S> {
        // Safety: exclusivity is the caller's contract (see above).
        unsafe { &mut *self.slots[lp as usize].get() }
    }

    /// Starts loading LP `lp`'s slot into the cache (a hint: nothing is read or written, so
    /// any worker may ask, whoever owns the slot).
    #[inline(always)]
    pub(crate) fn prefetch(&self, lp: LpId) {
        if let Some(cell) = self.slots.get(lp as usize) {
            crate::prefetch::prefetch_raw(cell.get().cast_const());
        }
    }

    pub(crate) fn into_vec(self) -> Vec<LpSlot<S>> {
        self.slots
            .into_vec()
            .into_iter()
            .map(UnsafeCell::into_inner)
            .collect()
    }
}

/// Access to every state, for global events at a safe point.
pub(crate) struct AllStates<'a, S>(pub &'a LpTable<S>);

impl<S> LpStates<S> for AllStates<'_, S> {
    fn state(&self, lp: LpId) -> &S {
        // Safety: `AllStates` is built only at a safe point, where every other worker waits at
        // a barrier (or rendezvous) whose crossing orders its earlier writes before this read
        // and this read before its later writes.
        unsafe { &(*self.0.slots[lp as usize].get()).state }
    }

    fn state_mut(&mut self, lp: LpId) -> &mut S {
        // Safety: as for `state`: at a safe point this thread is the only one touching any
        // slot, and the returned reference borrows `self` mutably, so no other reference made
        // through this view is live while it is.
        unsafe { &mut (*self.0.slots[lp as usize].get()).state }
    }
}
