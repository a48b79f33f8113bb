//! Rollback, anti-messages and annihilation (README.md, "Rollback, cancellation, annihilation").

use super::lp::{Anti, Msg, TwEvent};
use super::shared::*;
use super::worker::*;
use crate::error::SimError;
use crate::event::{EventKey, Keyed};
use crate::model::{Ctx, Model, ReverseCtx};
use crate::queue::PendingSet;

impl<'s, 'a, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, 'a, M, Q> {
    /// Applies the local anti-messages that rollbacks produced (they may roll back more).
    pub(super) fn settle(&mut self) -> Result<(), SimError> {
        while let Some(a) = self.local_antis.pop() {
            self.annihilate(a)?;
        }
        Ok(())
    }

    /// An anti-message for LP `a.dst`: rolls back past its event if processed (secondary
    /// rollback), otherwise remembers it so that the event is dropped where it is met.
    pub(super) fn annihilate(&mut self, a: Anti) -> Result<(), SimError> {
        let li = self.sh.local_of(a.dst);
        let lp = &self.lps[li];
        let mut found = None;
        for (i, d) in lp.done.iter().enumerate().rev() {
            if d.ev.ev.time < a.key.time {
                break;
            }
            if d.ev.id == a.id {
                found = Some(i);
                break;
            }
        }
        match found {
            Some(i) => {
                let at = lp.base + i as u64;
                debug_assert!(
                    at >= self.cold[li].committed,
                    "an anti-message for a committed event"
                );
                self.stats.secondary += 1;
                self.rollback(li, at, Some(a.id))
            }
            None => {
                self.cancelled.insert(a.id);
                Ok(())
            }
        }
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
        let lp = &mut self.lps[li];
        let cold = &mut self.cold[li];
        let me = lp.id;
        while lp.next_index() > at {
            let d = lp.done.pop_back().expect("a record above `at`");
            // The log holds sends 1.. of the record, last on top; send k carried the send
            // counter `meta.seq + k`.
            for k in (0..d.sent).rev() {
                let s = if k == 0 {
                    d.first_sent
                } else {
                    cold.sent.pop_back().expect("a send record")
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
                    self.local_antis.push(anti);
                } else {
                    if self.outbox[o].is_empty() {
                        self.out_dirty.push(o);
                    }
                    self.outbox[o].push(Msg::Anti(anti));
                }
                self.stats.antis += 1;
            }
            for _ in 1..d.counts {
                cold.counts.pop_back();
            }
            self.census.done -= 1;
            self.census.sent -= u64::from(d.sent.saturating_sub(1));
            self.census.counts -= u64::from(d.counts.saturating_sub(1));
            if sh.saving == Saving::Reverse {
                self.current = (me, d.ev.ev.time);
                let rctx = ReverseCtx {
                    me,
                    now: d.ev.ev.time,
                };
                sh.model.reverse(&mut lp.state, &d.ev.ev.payload, &rctx);
            }
            lp.meta = d.meta;
            self.stats.rolled_back += 1;
            if Some(d.ev.id) != annihilate {
                self.queue.push(d.ev);
            }
        }
        match lp.done.back() {
            Some(d) => {
                lp.last_key = d.ev.ev.key();
                lp.last_plain = d.ev.stack.is_none();
            }
            None => {
                // Only committed events (or none) precede: nothing new sorts before them.
                lp.last_key.time = 0.0;
                lp.last_key.src = 0;
                lp.last_key.seq = 0;
                lp.last_plain = true;
            }
        }
        if sh.saving == Saving::Copy {
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
            for idx in c.at..at {
                let d = &lp.done[(idx - lp.base) as usize];
                let now = d.ev.ev.time;
                self.current = (me, now);
                {
                    let mut ctx = Ctx::new(
                        now,
                        me,
                        sh.n,
                        sh.lookahead,
                        &mut lp.meta,
                        &mut self.coast_out,
                        &mut self.coast_scratch,
                        &mut self.err,
                    );
                    sh.model.on_event(&mut lp.state, &d.ev.ev.payload, &mut ctx);
                }
                // What a coasted event sends and counts was recorded when it first ran.
                self.coast_out.clear();
                self.coast_scratch.iter_mut().for_each(|c| *c = 0);
                self.err = None;
                self.stats.coasted += 1;
            }
        }
        Ok(())
    }
}
