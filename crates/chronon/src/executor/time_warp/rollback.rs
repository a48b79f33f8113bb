//! Rollback, anti-messages and annihilation (README.md, "Rollback, cancellation, annihilation").

use super::history::Extra;
use super::options::Saving;
use super::worker::Worker;
use crate::error::SimError;
use crate::event::EventKey;
use crate::model::{Ctx, LpId, Model, ReverseCtx};
use crate::queue::PendingSet;
use crate::tw_msg::{Anti, Msg, TwEvent};

impl<M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'_, '_, M, Q> {
    /// Applies the local anti-messages that rollbacks produced (they may roll back more).
    pub(super) fn settle(&mut self) -> Result<(), SimError> {
        while let Some(a) = self.scratch.local_antis.pop() {
            self.annihilate(a)?;
        }
        Ok(())
    }

    /// An anti-message for LP `a.dst`: rolls back past its event if processed (secondary
    /// rollback), otherwise remembers it so that the event is dropped where it is met.
    pub(super) fn annihilate(&mut self, a: Anti) -> Result<(), SimError> {
        let li = self.sh.local_of(a.dst);
        let lp = &self.lps[li];
        // Newest first, stopping at earlier times (committed records are older than GVT).
        let mut found = None;
        let (mut seq, mut number) = (lp.last, lp.next());
        while let Some(r) = self.history.get(seq) {
            number -= 1;
            if r.info.committed() || r.ev.time < a.key.time {
                break;
            }
            if r.ev.id == a.id {
                found = Some(number);
                break;
            }
            seq = r.prev;
        }
        match found {
            Some(at) => {
                self.stats.secondary += 1;
                self.rollback(li, at, Some(a.id))
            }
            None => {
                self.cancelled.insert(a.id, a.key.time);
                Ok(())
            }
        }
    }

    /// A primary rollback for straggler `ev` of LP `li`: undoes the LP's records that sort
    /// after it (newest first). `false`: the rollback's anti-messages cancelled `ev` itself
    /// (dropped from the order table; the caller drops the event). Out of line: rare, and
    /// inlined it cost every event registers and stack.
    #[cold]
    #[inline(never)]
    pub(super) fn roll_back_for(
        &mut self,
        li: usize,
        ev: &TwEvent<M::Event>,
    ) -> Result<bool, SimError> {
        let mut undo = 0;
        let mut seq = self.lps[li].last;
        while let Some(r) = self.history.get(seq) {
            if r.info.committed() || self.orders.order(&r.ev, ev) != std::cmp::Ordering::Greater {
                break;
            }
            undo += 1;
            seq = r.prev;
        }
        let at = self.lps[li].next() - undo;
        self.stats.primary += 1;
        self.rollback(li, at, None)?;
        self.settle()?;
        if self.cancelled.remove(ev.id, ev.time) {
            // The rollback's anti-messages cancelled this very event.
            self.orders.remove(ev);
            self.flush();
            return Ok(false);
        }
        Ok(true)
    }

    /// Undoes LP `li`'s events numbered `at` and later: sends anti-messages for what they sent,
    /// restores state and bookkeeping, and puts the events back (except `annihilate`).
    pub(super) fn rollback(
        &mut self,
        li: usize,
        at: u64,
        annihilate: Option<u64>,
    ) -> Result<(), SimError> {
        let sh = self.sh;
        // Rollback length in events and wall time (report.rs, `rollback_*`).
        let t0 = std::time::Instant::now();
        let undone = self.lps[li].next() - at;
        // A suspended context of this LP saw a state the rollback changes (preempt.rs); the
        // state is restored below (copy) or stayed with the LP (reverse).
        self.discard_job_of(li, false)?;
        let me = sh.lp_id(self.w, li);
        let lp = &mut self.lps[li];
        while lp.next() > at {
            let d = self.history.take(lp.last);
            debug_assert!(!d.info.committed(), "a rollback below the commit point");
            // Send k carried the send counter `meta.seq + k`.
            for k in 0..d.info.sent() {
                let Extra::Sent(s) = self.history.extra(d.log_at + u64::from(k)) else {
                    unreachable!("a record's sends come first among its extras");
                };
                let anti = Anti {
                    dst: s.dst,
                    key: EventKey {
                        time: s.time,
                        seq: d.meta.seq + u64::from(k),
                        src: me,
                    },
                    id: s.id,
                };
                let o = sh.owner_of(s.dst);
                if o == self.w {
                    self.scratch.local_antis.push(anti);
                } else {
                    self.scratch.remote_antis.push((o, anti));
                }
                self.stats.antis += 1;
            }
            if let Some(undo) = sh.undo {
                self.current = (me, d.ev.time);
                let rctx = ReverseCtx { me, now: d.ev.time };
                undo(sh.model, &mut lp.state, &d.ev.payload, &rctx);
            }
            lp.meta = d.meta;
            // Also takes the LP's next number back by one (`TwLp::next`).
            lp.digest.uncommit(&self.orders.key(&d.ev));
            lp.last = d.prev;
            self.stats.rolled_back += 1;
            if Some(d.ev.id) != annihilate {
                self.queue.push(d.ev);
            } else {
                self.orders.remove(&d.ev);
            }
        }
        // Oldest first (the list is newest first): a receiver that processed several of the
        // cancelled events rolls back once, past all of them, at the first anti-message, and
        // then finds each later one's event unprocessed and only drops it. Newest first, each
        // anti-message would be a rollback of its own, each coasting forward again. The order
        // among anti-messages of one rollback is free: each follows its own event, sent
        // before the rollback began.
        while let Some((o, anti)) = self.scratch.remote_antis.pop() {
            self.endpoint.send(&*sh.wires, o, Msg::Anti(anti));
        }
        match self.history.get(lp.last) {
            Some(d) => lp.set_last_key(self.orders.key(&d.ev), !d.ev.stacked()),
            // Only committed events (or none) precede: nothing new sorts before them.
            None => lp.forget_last_key(),
        }
        if sh.saving == Saving::Copy {
            self.restore(li, at, me);
        }
        self.stats.rollback_max = self.stats.rollback_max.max(undone);
        self.stats.rollback_ns += t0.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// Copy state saving: LP `li` (`me`) gets the state of its newest checkpoint at or before
    /// its event number `at` and coasts forward (re-runs its events, their sends and counts
    /// dropped: they were recorded when the events first ran) up to `at`.
    fn restore(&mut self, li: usize, at: u64, me: LpId) {
        let sh = self.sh;
        let lp = &mut self.lps[li];
        let cold = &mut self.cold[li];
        while cold.checkpoints.back().is_some_and(|c| c.at > at) {
            cold.checkpoints.pop_back();
            self.census.checkpoints -= 1;
        }
        let c = cold
            .checkpoints
            .back()
            .expect("a checkpoint at or below the commit point");
        lp.state = c.state.clone();
        lp.meta = c.meta;
        // Events c.at.. are in the coast log up to `arena_base`, then in the arena: collect
        // the arena part (newest first) from the LP's chain.
        debug_assert!(
            c.at >= cold.coast_base,
            "the coast log reaches back to the checkpoint"
        );
        self.scratch.coast_seqs.clear();
        let mut seq = lp.last;
        for _ in cold.arena_base.max(c.at)..at {
            self.scratch.coast_seqs.push(seq);
            seq = self.history.get(seq).expect("a record to coast over").prev;
        }
        let from_log =
            (c.at..cold.arena_base.min(at)).map(|i| &cold.coast[(i - cold.coast_base) as usize]);
        let from_arena = self
            .scratch
            .coast_seqs
            .iter()
            .rev()
            .map(|&s| &self.history.get(s).expect("a record to coast over").ev);
        for ev in from_log.chain(from_arena) {
            let now = ev.time;
            self.current = (me, now);
            {
                let mut ctx = Ctx::new(
                    now,
                    me,
                    sh.n,
                    sh.lookahead,
                    &mut lp.meta,
                    &mut self.scratch.coast_out,
                    &mut self.scratch.coast_deltas,
                    &mut self.scratch.err,
                );
                sh.model.on_event(&mut lp.state, &ev.payload, &mut ctx);
            }
            // What a coasted event sends and counts was recorded when it first ran.
            drop_coasted_sends(&mut self.scratch.coast_out);
            self.scratch.coast_deltas.iter_mut().for_each(|c| *c = 0);
            self.scratch.err = None;
            self.stats.coasted += 1;
        }
    }
}

/// Drops what a coasted event sent. A shared-heap item whose count drops to zero here was
/// made by the coasted handler itself: whatever else the handler could reach (the state
/// restored from a checkpoint, the events coasted over) the checkpoint and the logs still
/// hold. No record, state or message refers to it, so no rollback can need it again (a
/// rollback that coasts over the event makes a new one): it is reusable at once, instead
/// of waiting for GVT to pass the event's time. Otherwise every rollback's coasting would
/// hold up to two items per coasted event until GVT moved on, however much the worker holds
/// back its speculation.
fn drop_coasted_sends<P>(sends: &mut Vec<crate::event::Event<P>>) {
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    let _made_here = crate::shm::FreedAt::new(f64::NEG_INFINITY);
    sends.clear();
}
