//! The global phase, a worker's side of it (global.rs: the rule, the barriers, why every LP
//! state is the state at the global event's time).

use super::shared::Shared;
use super::worker::Worker;
use crate::error::SimError;
use crate::model::{LpId, LpStates, Model, Time};
use crate::queue::PendingSet;
use crate::tw_msg::TwEvent;

/// Every LP's state, read through the workers' tables during a global phase.
struct PhaseStates<'x, 'a, M: Model> {
    sh: &'x Shared<'a, M>,
}

impl<M: Model> LpStates<M::State> for PhaseStates<'_, '_, M> {
    fn state(&self, lp: LpId) -> &M::State {
        let table = self.sh.globals.table(self.sh.owner_of(lp));
        // Safety: during a global phase every worker has published its LP table and waits at
        // barrier C without touching it (module docs); `local_of` is an index into it.
        unsafe { &(*table.add(self.sh.local_of(lp))).state }
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
                let view = PhaseStates { sh };
                match q.run_before(sh.model, sh.n, &view, before, sh.end) {
                    Ok(()) => q.next_time(sh.end),
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
        self.round.global_next = gl.next();
        Ok(())
    }
}
