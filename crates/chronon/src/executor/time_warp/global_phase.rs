//! The global phase, a worker's side of it (global.rs: the rule, the barriers, why every LP
//! state is the state at the global event's time and why what the global events change stays).

use super::options::Saving;
use super::shared::Shared;
use super::worker::Worker;
use crate::error::SimError;
use crate::model::{LpId, LpStates, Model, Time};
use crate::queue::PendingSet;
use crate::tw_msg::TwEvent;

/// The id space of the events global events send: that of worker `workers` (the initial
/// events'), upper half. Initial events take its lower half (fewer than 2^47 of them); a
/// global event's send is numbered by its key's counter, which is unique.
fn sent_id(workers: usize, seq: u64) -> u64 {
    ((workers as u64) << 48) | (1 << 47) | (seq & ((1 << 47) - 1))
}

/// Every LP's state, read and written through the workers' tables during a global phase, and
/// the LPs written (owner, index among its LPs).
struct PhaseStates<'x, 'a, M: Model> {
    sh: &'x Shared<'a, M>,
    changed: Vec<(usize, usize)>,
}

impl<M: Model> PhaseStates<'_, '_, M> {
    fn slot(&self, lp: LpId) -> (usize, usize, *mut super::lp::TwLp<M::State>) {
        let w = self.sh.owner_of(lp);
        let li = self.sh.local_of(lp);
        // Safety (of the callers' dereference): during a global phase every worker has
        // published its LP table and waits at barrier C without touching it (global.rs);
        // `local_of` is an index into it.
        (w, li, unsafe { self.sh.globals.table(w).add(li) })
    }
}

impl<M: Model> LpStates<M::State> for PhaseStates<'_, '_, M> {
    fn state(&self, lp: LpId) -> &M::State {
        let (_, _, p) = self.slot(lp);
        // Safety: see `slot`; no `&mut` made by `state_mut` is live (it borrows `self`).
        unsafe { &(*p).state }
    }

    fn state_mut(&mut self, lp: LpId) -> &mut M::State {
        let (w, li, p) = self.slot(lp);
        // Repeats are dropped before the list is handed out.
        self.changed.push((w, li));
        // Safety: see `slot`; this thread is the only one touching any table now, and the
        // reference borrows `self` mutably, so no other one made through this view is live.
        unsafe { &mut (*p).state }
    }
}

impl<M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'_, '_, M, Q> {
    /// The global phase (module docs). Every worker calls it once GVT is above `global_next`.
    pub(super) fn global_phase(&mut self) -> Result<(), SimError> {
        let sh = self.sh;
        let gl = &sh.globals;
        if !gl.barrier(&sh.abort) {
            return Ok(());
        }
        self.drain()?;
        let head = self.live_head();
        gl.publish(self.w, head, self.lps.as_mut_ptr());
        if !gl.barrier(&sh.abort) {
            return Ok(());
        }
        if self.w == 0 {
            let before = gl.earliest();
            let next = if before.is_finite() {
                let mut q = gl.queue.lock().unwrap_or_else(|p| p.into_inner());
                let mut view = PhaseStates {
                    sh,
                    changed: Vec::new(),
                };
                let mut sent = Vec::new();
                match q.run_before(sh.model, sh.n, &mut view, before, sh.end, &mut sent) {
                    Ok(()) => {
                        for e in sent {
                            let id = sent_id(sh.workers, e.seq);
                            gl.handed(sh.owner_of(e.dst))
                                .sent
                                .push(TwEvent::plain(e, id));
                        }
                        view.changed.sort_unstable();
                        view.changed.dedup();
                        for (w, li) in view.changed {
                            gl.handed(w).changed.push(li);
                        }
                        q.next_time(sh.end)
                    }
                    Err(e) => {
                        sh.fail(e);
                        Time::INFINITY
                    }
                }
            } else {
                // No LP event left: no global event may run (as under every executor).
                Time::INFINITY
            };
            gl.set_next(next);
        }
        if !gl.barrier(&sh.abort) {
            return Ok(());
        }
        let (sent, changed) = {
            let mut h = gl.handed(self.w);
            (std::mem::take(&mut h.sent), std::mem::take(&mut h.changed))
        };
        for e in sent {
            self.accept(e, None);
        }
        if sh.saving == Saving::Copy {
            for li in changed {
                self.checkpoint_changed(li);
            }
        }
        self.round.global_next = gl.next();
        Ok(())
    }
}
