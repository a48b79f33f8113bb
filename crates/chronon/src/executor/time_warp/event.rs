//! Processing one event (README.md, "Organisation"): the straggler check and primary
//! rollback, copy state saving's checkpoint, the handler, and the record with its sends and
//! counter deltas (or, for a safe event, its commit). `process` is inlined into the worker's
//! batch loop (worker.rs); what is rare on the path is out of line.

use std::time::Instant;

use super::history::{Extra, Info, Rec};
use super::lp::{Checkpoint, Sent};
use super::options::Saving;
use super::stats::commit_event;
use super::worker::Worker;
use crate::error::{ModelError, SimError};
use crate::event::{Event, EventKey};
use crate::model::{Ctx, LpMeta, Model, ReverseCtx};
use crate::queue::PendingSet;
use crate::tw_msg::{Msg, TwEvent};

/// An event past its prologue, with its LP's index among the worker's LPs.
pub(super) type Started<P> = (TwEvent<P>, usize);

impl<M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'_, '_, M, Q> {
    /// Runs one event: rolls its LP back first if the event is in the LP's past (primary
    /// rollback), saves state as configured, and records what it did.
    #[inline(always)]
    pub(super) fn process<const ALONE: bool>(
        &mut self,
        ev: TwEvent<M::Event>,
    ) -> Result<(), SimError> {
        // By reference: the event is moved once, into its record (each move of the 48-byte
        // event through a returned `Option` cost a store-forwarding stall).
        let Some(li) = self.prologue_at::<ALONE>(&ev)? else {
            return Ok(());
        };
        let sh = self.sh;
        let now = ev.time;
        let me = ev.dst;
        let lp = &mut self.lps[li];
        let meta = lp.meta;
        self.current = (me, now);
        let before = if ALONE {
            None
        } else {
            sh.check_eq.map(|_| lp.state.clone())
        };
        let sample = !ALONE && self.interval.samples_events() && self.stats.processed % 128 == 0;
        let t0 = sample.then(Instant::now);
        let timed = self.clocks[li].start();
        {
            let mut ctx = Ctx::new(
                now,
                me,
                sh.n,
                sh.lookahead,
                &mut lp.meta,
                &mut self.scratch.out,
                &mut self.scratch.deltas,
                &mut self.scratch.err,
            );
            sh.model.on_event(&mut lp.state, &ev.payload, &mut ctx);
        }
        self.clocks[li].stop(timed);
        self.epilogue::<ALONE>(ev, li, meta, before, t0)
    }

    /// What comes before an event's handler: the straggler check and primary rollback, and
    /// copy state saving's checkpoint. `None`: the rollback cancelled the event itself.
    #[inline(always)]
    pub(super) fn prologue(
        &mut self,
        ev: TwEvent<M::Event>,
    ) -> Result<Option<Started<M::Event>>, SimError> {
        Ok(self.prologue_at::<false>(&ev)?.map(|li| (ev, li)))
    }

    /// [`prologue`](Self::prologue) on a borrowed event: the index of its LP among the
    /// worker's LPs, or `None` when the rollback cancelled the event itself (then drop it).
    #[inline(always)]
    pub(super) fn prologue_at<const ALONE: bool>(
        &mut self,
        ev: &TwEvent<M::Event>,
    ) -> Result<Option<usize>, SimError> {
        let sh = self.sh;
        let li = self.mine.index(sh, ev.dst);
        if ALONE {
            // One worker runs its events in the sequential order (safe.rs, rule `Always`).
            debug_assert!(
                !self.lps[li].last_plain || ev.stacked() || ev.head() > self.lps[li].last_key(),
                "a straggler with one worker"
            );
        } else {
            let lp = &self.lps[li];
            // The LP keeps its last key by its state, so the common check does not touch the
            // history (a cache miss per event otherwise).
            let straggler = if lp.last_plain && !ev.stacked() {
                ev.head() < lp.last_key()
            } else {
                self.history
                    .get(lp.last)
                    .is_some_and(|last| self.orders.order(ev, &last.ev) == std::cmp::Ordering::Less)
            };
            if straggler && !self.roll_back_for(li, ev)? {
                return Ok(None);
            }
        }
        self.optimism.saw(ev.time);
        let lp = &mut self.lps[li];
        if !ALONE && sh.saving == Saving::Copy {
            let last = self.cold[li].checkpoints.back().map_or(0, |c| c.at);
            if lp.next() - last >= u64::from(self.interval.k()) {
                self.checkpoint(li);
            }
        }
        Ok(Some(li))
    }

    /// `--check-reverse`: the reverse handler must take LP `li`'s state after `ev` back to
    /// `before`, the state `ev` started from (out of line: a debugging option).
    #[cold]
    #[inline(never)]
    fn check_reverse(
        &self,
        li: usize,
        ev: &TwEvent<M::Event>,
        before: &M::State,
    ) -> Result<(), SimError> {
        let sh = self.sh;
        let (Some(eq), Some(undo)) = (sh.check_eq, sh.undo) else {
            return Ok(());
        };
        let mut undone = self.lps[li].state.clone();
        let rctx = ReverseCtx {
            me: ev.dst,
            now: ev.time,
        };
        undo(sh.model, &mut undone, &ev.payload, &rctx);
        if eq(&undone, before) {
            return Ok(());
        }
        Err(SimError::Model(ModelError {
            lp: ev.dst,
            time: ev.time,
            message: "the reverse handler did not restore the state the event started from (checked by --check-reverse)".into(),
        }))
    }

    /// Copy state saving's checkpoint of LP `li` before its next event (out of line: once
    /// per `k` events).
    #[inline(never)]
    fn checkpoint(&mut self, li: usize) {
        let lp = &self.lps[li];
        let sample = self.stats.checkpoints % 128 == 0;
        let t0 = sample.then(Instant::now);
        self.cold[li].checkpoints.push_back(Checkpoint {
            at: lp.next(),
            state: lp.state.clone(),
            meta: lp.meta,
        });
        if let Some(t0) = t0 {
            self.interval.saved(t0.elapsed().as_nanos() as f64);
        }
        self.stats.checkpoints += 1;
        self.census.checkpoints += 1;
    }

    /// Copy state saving: a checkpoint of LP `li` as it is now, replacing one at the same
    /// event number: a global event changed the state (global.rs), so no rollback may restore
    /// an older checkpoint and coast forward from it (that would lose the change).
    pub(super) fn checkpoint_changed(&mut self, li: usize) {
        let cold = &mut self.cold[li];
        let at = self.lps[li].next();
        if cold.checkpoints.back().is_some_and(|c| c.at == at) {
            cold.checkpoints.pop_back();
            self.census.checkpoints -= 1;
        }
        debug_assert!(cold.checkpoints.back().is_none_or(|c| c.at < at));
        let lp = &self.lps[li];
        cold.checkpoints.push_back(Checkpoint {
            at,
            state: lp.state.clone(),
            meta: lp.meta,
        });
        self.stats.checkpoints += 1;
        self.census.checkpoints += 1;
    }

    /// What comes after an event's handler: checks, the record with its sends and counter
    /// deltas (taken from `self.scratch.out`, `self.scratch.deltas`, `self.scratch.err`), and the sends themselves.
    /// `meta` and `before` are the LP's bookkeeping and (for `--check-reverse`) state before.
    #[inline(always)]
    pub(super) fn epilogue<const ALONE: bool>(
        &mut self,
        ev: TwEvent<M::Event>,
        li: usize,
        meta: LpMeta,
        before: Option<M::State>,
        t0: Option<Instant>,
    ) -> Result<(), SimError> {
        let sh = self.sh;
        let now = ev.time;
        let me = ev.dst;
        if sh.links.declared && self.scratch.err.is_none() {
            // Deferred like every model error: reported only if this event commits.
            if let Err(e) = sh.links.check(me, now, &self.scratch.out) {
                self.scratch.err = Some(e);
            }
        }
        if let Some(t0) = t0 {
            self.interval.ran(t0.elapsed().as_nanos() as f64);
        }
        if let Some(before) = before {
            self.check_reverse(li, &ev, &before)?;
        }
        let error = self.scratch.err.take().map(Box::new);
        if error.is_some() {
            // A failed handler's sends never leave; the error is reported if the event commits.
            self.scratch.out.clear();
        }
        // A safe event commits now, with no record (safe.rs): no straggler or anti-message can
        // reach it, and its LP's older records commit first.
        let safe = error.is_none() && self.safe_now(li, now);
        // The record's extras: its sends, then its counter deltas.
        let log_at = if safe { 0 } else { self.history.log_next() };
        let sent = self.send_all::<ALONE>(&ev, meta, safe);
        let counts = self.count_deltas(safe);
        let lp = &mut self.lps[li];
        let key = self.orders.key(&ev);
        lp.set_last_key(key, !ev.stacked());
        // Also the LP's next number (`TwLp::next`).
        lp.digest.commit(&key);
        if safe {
            // Its counter deltas went to the committed counters above.
            commit_event(
                sh.model,
                (&ev, &key),
                std::iter::empty(),
                &mut self.counters,
                &mut self.stats,
            );
            self.stats.safe += 1;
            self.orders.remove(&ev);
        } else {
            let is_error = error.is_some();
            lp.last = self.history.push(
                Rec {
                    ev,
                    meta,
                    prev: lp.last,
                    log_at,
                    info: Info::new(sent, counts, is_error),
                },
                error,
            );
        }
        self.stats.processed += 1;
        // The sends are pushed by the loop once per batch (run_loop), not per event.
        Ok(())
    }

    /// The handler's sends (taken from `self.scratch.out`): each gets its id and goes into the
    /// pending set (an LP of this worker) or the endpoint (another worker's); unless the event
    /// is `safe`, each is noted among its record's extras. Returns how many there were.
    #[inline(always)]
    fn send_all<const ALONE: bool>(
        &mut self,
        ev: &TwEvent<M::Event>,
        meta: LpMeta,
        safe: bool,
    ) -> u32 {
        let sh = self.sh;
        let mut sent = 0u32;
        let head = ev.head();
        let mine = self.mine;
        for e in self.scratch.out.drain(..) {
            // Taken apart into scalars, so that the entry is built from registers (moving the
            // event whole read fields the handler had just written narrower: a store-forwarding
            // stall per send).
            let Event {
                time,
                seq,
                src,
                dst,
                payload,
                ..
            } = e;
            let key = EventKey { time, seq, src };
            let mut id = self.next_id;
            self.next_id += 1;
            debug_assert_eq!(
                seq,
                meta.seq + u64::from(sent),
                "sends are numbered from meta.seq"
            );
            let here = ALONE || mine.owns(sh, dst);
            if key > head {
                // The common case: a plain entry.
                let tw = TwEvent {
                    time,
                    seq,
                    id,
                    src,
                    dst,
                    payload,
                };
                if here {
                    self.queue.push(tw);
                } else {
                    let o = sh.owner_of(dst);
                    self.endpoint.send(&*sh.wires, o, Msg::Event(tw, None));
                }
            } else {
                let (tw, stack) = self.orders.child(ev, Event::new(key, dst, payload), id);
                id = tw.id;
                if here {
                    if let Some(s) = stack {
                        self.orders.insert(id, s);
                    }
                    self.queue.push(tw);
                } else {
                    let o = sh.owner_of(dst);
                    self.endpoint.send(&*sh.wires, o, Msg::Event(tw, stack));
                }
            }
            if !safe {
                self.history.push_extra(Extra::Sent(Sent { dst, time, id }));
            }
            sent += 1;
        }
        sent
    }

    /// The handler's counter deltas (taken from `self.scratch.deltas`, left zero): into the
    /// committed counters for a `safe` event, otherwise among its record's extras. Returns how
    /// many were not zero.
    #[inline(always)]
    fn count_deltas(&mut self, safe: bool) -> u16 {
        let mut counts = 0u16;
        for (i, c) in self.scratch.deltas.iter_mut().enumerate() {
            if *c != 0 {
                if safe {
                    self.counters[i] += *c;
                } else {
                    self.history.push_extra(Extra::Count(i as u32, *c));
                }
                *c = 0;
                counts += 1;
            }
        }
        counts
    }
}
