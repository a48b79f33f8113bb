//! One Time Warp worker: its state, its loop, and how it picks and processes events.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

use super::cancelled::Cancelled;
use super::history::{Extra, History, Info, Rec};
use super::interval::Interval;
use super::lp::{Checkpoint, Msg, Orders, Sent, TwCold, TwEvent, TwLp};
use super::memory::Census;
use super::optimism::Tracker;
use super::options::Saving;
use super::preempt::Preemption;
use super::round::Round;
use super::safe::SafeRule;
use super::scratch::Scratch;
use super::shared::{Mine, Shared, MEMORY_EVERY, POLL_EVERY};
use super::stats::commit_event;
use super::stats::Stats;
use super::transport::Endpoint;
use crate::error::{ModelError, SimError};
use crate::event::{Event, EventKey};
use crate::model::{Ctx, LpId, LpMeta, Model, ReverseCtx, Time};
use crate::queue::PendingSet;

/// The most events a worker runs in a row between two looks at its mailbox, GVT and the abort
/// flag (they cost a few shared-memory loads per look; a message waits at most this many
/// events longer, which only delays its delivery, as a slower worker would).
const BATCH: u64 = 16;

/// Under the lookahead safe rule (safe.rs), a worker whose events have passed its safe bound
/// starts a GVT round once it ran at least `gvt_every / EARLY_ROUND` events since it last
/// started one, instead of waiting for all `gvt_every`: a fresher GVT lets its next events
/// commit as they run, with no record. The bound keeps rounds from following each other
/// back to back where the lookahead is short against the events per round.
const EARLY_ROUND: u64 = 4;

/// An event past its prologue, with its LP's index among the worker's LPs.
pub(super) type Started<P> = (TwEvent<P>, usize);

/// A Time Warp worker: its LPs, their pending set and history (the core), and its parts, each
/// defined, with its invariants and the methods that touch it alone, in its own file.
pub(super) struct Worker<'s, 'a, M: Model, Q> {
    pub(super) w: usize,
    pub(super) sh: &'s Shared<'a, M>,
    /// Which LPs are this worker's.
    pub(super) mine: Mine,
    pub(super) lps: Vec<TwLp<M::State>>,
    /// The cold halves of `lps`, at the same indices, under copy state saving; empty under
    /// reverse state saving (which reads none).
    pub(super) cold: Vec<TwCold<M::State, M::Event>>,
    /// The processed events of every LP of this worker, in processing order (history.rs).
    pub(super) history: History<M::Event>,
    pub(super) queue: Q,
    /// The order stacks of the stacked events this worker holds (lp.rs).
    pub(super) orders: Orders,
    pub(super) cancelled: Cancelled,
    /// The id of the next event this worker sends.
    pub(super) next_id: u64,
    /// The committed counter totals.
    pub(super) counters: Vec<i64>,
    /// The LP and time of the handler running (named by a panic).
    pub(super) current: (LpId, Time),
    /// Its queued remote sends (transport.rs).
    pub(super) endpoint: Endpoint<M::Event>,
    /// Handler output and rollback lists between their use (scratch.rs).
    pub(super) scratch: Scratch<M::Event>,
    /// GVT, the rounds, the safe bound, the next global event (round.rs).
    pub(super) round: Round,
    /// The checkpoint interval (interval.rs).
    pub(super) interval: Interval,
    /// Counts behind the memory estimate (memory.rs).
    pub(super) census: Census,
    /// What this worker hands the optimism controller (optimism.rs).
    pub(super) optimism: Tracker,
    /// Suspended contexts, stacks, ticks (preempt.rs).
    pub(super) preempt: Preemption<'s, M>,
    pub(super) stats: Stats,
}

impl<'s, 'a, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, 'a, M, Q> {
    pub(super) fn new(
        w: usize,
        sh: &'s Shared<'a, M>,
        lps: Vec<TwLp<M::State>>,
        cold: Vec<TwCold<M::State, M::Event>>,
        queue: Q,
        ncounters: usize,
    ) -> Self {
        let census = Census {
            checkpoints: cold.iter().map(|l| l.checkpoints.len() as u64).sum(),
            ..Census::default()
        };
        Worker {
            w,
            sh,
            mine: Mine::new(w, sh),
            lps,
            cold,
            history: History::default(),
            queue,
            orders: Orders::default(),
            cancelled: Cancelled::default(),
            next_id: (w as u64) << 48,
            counters: vec![0; ncounters],
            current: (0, 0.0),
            endpoint: Endpoint::new(w, sh.workers),
            scratch: Scratch::new(ncounters),
            round: Round::new(sh.globals.next()),
            interval: Interval::new(sh.fixed_k, sh.saving),
            census,
            optimism: Tracker::default(),
            preempt: Preemption::new(),
            stats: Stats::default(),
        }
    }

    /// The worker's loop. Returns whether the run completed (GVT reached the end time) rather
    /// than stopping on request; errors abort every worker.
    pub(super) fn run_loop(&mut self) -> Result<bool, SimError> {
        let start = Instant::now();
        let outcome = self.rounds();
        self.stats.loop_ns = start.elapsed().as_nanos() as u64;
        // Sends still queued (none before the end time once the run completed) go out, so
        // that the report counts them among the pending events.
        self.flush();
        outcome
    }

    /// Ends an idle span (adding it to `idle_ns`) if one is open; returns the time now.
    fn end_idle(&mut self, since: &mut Option<Instant>) -> Instant {
        let now = Instant::now();
        if let Some(t) = since.take() {
            self.stats.idle_ns += now.duration_since(t).as_nanos() as u64;
        }
        now
    }

    /// [`run_loop`](Self::run_loop) up to its last flush.
    fn rounds(&mut self) -> Result<bool, SimError> {
        let sh = self.sh;
        let backoff = Backoff::new();
        let mut since_gvt = 0u64;
        // (processed, rolled back) as last published to the progress display.
        let mut reported = (0u64, 0u64);
        // Since when the loop has run no event (a clock read where that starts and ends, and
        // around GVT reports and fossil collection: none per event).
        let mut idle_since: Option<Instant> = None;
        let flag = &sh.tick_flags[self.w];
        self.preempt
            .init_ticks(sh.preempt.and_then(|p| p.ticks), flag, self.w)?;
        loop {
            if sh.abort.load(Ordering::SeqCst) {
                return Ok(false);
            }
            self.drain()?;
            if let Some(r) = self.round.due(sh.gvt.active_round()) {
                // Drain after seeing the round (README, rule R1), push every send made so far
                // (rule R2), then report.
                let t = self.end_idle(&mut idle_since);
                self.drain()?;
                self.flush();
                self.report_gvt(r);
                self.stats.gvt_ns += t.elapsed().as_nanos() as u64;
            }
            let g = sh.gvt.gvt();
            if g > self.round.gvt {
                let t = self.end_idle(&mut idle_since);
                self.fossil(g)?;
                self.stats.fossil_ns += t.elapsed().as_nanos() as u64;
                sh.progress.set_now(g.min(sh.end));
            }
            if g > self.round.global_next {
                // Every LP event up to the next global event has run and committed.
                self.global_phase()?;
                continue;
            }
            if self.round.gvt >= sh.end {
                self.publish_progress(&mut reported);
                return Ok(true);
            }
            // Under a memory cap, rounds start twice per cap's worth of events, so that fossil
            // collection keeps up with a small cap.
            let every = if sh.mem.bounded() {
                sh.gvt_every.min(sh.mem.cap() / 2).max(1)
            } else {
                sh.gvt_every
            };
            let ran = match sh.preempt {
                None => {
                    // Up to BATCH events in a row without the polls above, stopping where one
                    // of the per-event checks below is due (none is skipped).
                    let p = self.stats.processed;
                    let mut budget = BATCH
                        .min(every.saturating_sub(since_gvt).max(1))
                        .min(POLL_EVERY - (p - reported.0).min(POLL_EVERY - 1));
                    if sh.mem.bounded() {
                        budget = budget.min(MEMORY_EVERY - p % MEMORY_EVERY);
                    }
                    // Admission for the whole batch where the uncommitted-event cap cannot
                    // bind inside it (GVT, the window and the next global event change only
                    // at the loop's top): one comparison per event instead of `admits`.
                    let fast = self.batch_limit(budget);
                    let n = if sh.safe == SafeRule::Always {
                        self.batch::<true>(budget, fast)?
                    } else {
                        self.batch::<false>(budget, fast)?
                    };
                    since_gvt += n.saturating_sub(1);
                    n > 0
                }
                Some(p) => self.step_preemptive(p.max_suspended)?,
            };
            // The batch's remote sends, pushed when due (at the latest before the loop's next
            // report, as rule R2 and the safe-event proof need).
            self.flush_when_due(!ran);
            match ran {
                true => {
                    if idle_since.is_some() {
                        self.end_idle(&mut idle_since);
                    }
                    backoff.reset();
                    since_gvt += 1;
                    let past_safe = sh.safe.follows_gvt()
                        && self.optimism.horizon() >= self.round.safe_until
                        && since_gvt >= every / EARLY_ROUND;
                    if since_gvt >= every || past_safe {
                        since_gvt = 0;
                        sh.gvt.try_start();
                    }
                    let p = self.stats.processed;
                    // Without a bound the figures are only for the report: GVT reports update them.
                    if p % MEMORY_EVERY == 0 && sh.mem.bounded() {
                        self.update_memory();
                    }
                    if p - reported.0 >= POLL_EVERY {
                        self.publish_progress(&mut reported);
                        if sh.progress.stop_requested() {
                            return Ok(false);
                        }
                    }
                }
                false => {
                    idle_since.get_or_insert_with(Instant::now);
                    if sh.progress.stop_requested() {
                        self.publish_progress(&mut reported);
                        return Ok(false);
                    }
                    self.update_memory();
                    sh.gvt.try_start();
                    if backoff.is_completed() {
                        // Idle: no ticks while asleep (they would only cost), and a wait
                        // that ticks cannot stretch (ticks.rs, `nap`).
                        self.preempt.pause_ticks();
                        sh.idle_wait(Duration::from_micros(50));
                    } else {
                        backoff.snooze();
                    }
                }
            }
        }
    }

    /// Adds what this worker processed and rolled back since `reported` to the progress
    /// display (the rollback column of `progress.csv` and `chronon report`'s rollbacks plot).
    fn publish_progress(&self, reported: &mut (u64, u64)) {
        let now = (self.stats.processed, self.stats.rolled_back);
        self.sh.progress.add_events(now.0 - reported.0);
        self.sh.progress.add_rolled_back(now.1 - reported.1);
        *reported = now;
    }

    /// Runs up to `budget` events in a row (admitted under `fast`, see `next_event`);
    /// returns how many ran. Out of line, with `process` inlined, so that the per-event path
    /// is one loop.
    ///
    /// `ALONE`: the run has one worker in all and every event is safe
    /// ([`SafeRule::Always`]): the worker runs every event in key order and is the only
    /// sender, so no straggler can come and every LP is its own. The checks that cannot fire
    /// then (straggler, owner of a send, copy state saving's checkpoint, `--check-reverse`,
    /// which rule `Always` out) are compiled out of that copy of the loop; nothing else
    /// differs.
    #[inline(never)]
    fn batch<const ALONE: bool>(&mut self, budget: u64, fast: Time) -> Result<u64, SimError> {
        let mut n = 0;
        while n < budget {
            let Some(ev) = self.next_event(fast) else {
                break;
            };
            self.process::<ALONE>(ev)?;
            n += 1;
        }
        Ok(n)
    }

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
                    self.endpoint.send(&sh.wires, o, Msg::Event(tw, None));
                }
            } else {
                let (tw, stack) = self.orders.child(&ev, Event::new(key, dst, payload), id);
                id = tw.id;
                if here {
                    if let Some(s) = stack {
                        self.orders.insert(id, s);
                    }
                    self.queue.push(tw);
                } else {
                    let o = sh.owner_of(dst);
                    self.endpoint.send(&sh.wires, o, Msg::Event(tw, stack));
                }
            }
            if !safe {
                self.history.push_extra(Extra::Sent(Sent { dst, time, id }));
            }
            sent += 1;
        }
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
        let lp = &mut self.lps[li];
        let key = self.orders.key(&ev);
        lp.set_last_key(key, !ev.stacked());
        // Also the LP's next number (`TwLp::next`).
        lp.digest.commit(&key);
        if safe {
            // Its counter deltas went to the committed counters above.
            commit_event(
                sh.model,
                &ev,
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
}
