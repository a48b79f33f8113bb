//! One Time Warp worker: its state (the core and its parts) and its loop. Processing one event
//! is event.rs; picking it, admission.rs.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

use super::cancelled::Cancelled;
use super::endpoint::Endpoint;
use super::history::History;
use super::interval::Interval;
use super::lp::{Orders, TwCold, TwLp};
use super::memory::Census;
use super::optimism::Tracker;
use super::preempt::Preemption;
use super::round::Round;
use super::safe::SafeRule;
use super::scratch::Scratch;
use super::shared::{Mine, Shared, MEMORY_EVERY, POLL_EVERY};
use super::stats::Stats;
use crate::error::SimError;
use crate::model::{LpId, Model, Time};
use crate::queue::PendingSet;
use crate::tw_msg::TwEvent;

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

/// A Time Warp worker: its LPs, their pending set and history (the core), and its parts, each
/// defined, with its invariants and the methods that touch it alone, in its own file.
pub(super) struct Worker<'s, 'a, M: Model, Q> {
    pub(super) w: usize,
    pub(super) sh: &'s Shared<'a, M>,
    /// Which LPs are this worker's.
    pub(super) mine: Mine,
    pub(super) lps: Vec<TwLp<M::State>>,
    /// What each of `lps` cost, at the same indices (beside them: an LP's record stays 64
    /// bytes).
    pub(super) clocks: Vec<crate::lp_cost::LpClock>,
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
    /// Its queued remote sends (endpoint.rs).
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
            clocks: vec![Default::default(); lps.len()],
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
            let ran = self.run_some(every, &mut since_gvt, reported.0)?;
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
                    if self.idle(&backoff, &mut idle_since, &mut reported) {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Runs what may run now: up to a batch of events, or one preemptive step. `since_gvt`
    /// counts the events since this worker last started a GVT round (`every`: how many start
    /// one), `polled` the events processed at the last progress poll. Returns whether anything
    /// ran.
    #[inline]
    fn run_some(&mut self, every: u64, since_gvt: &mut u64, polled: u64) -> Result<bool, SimError> {
        let sh = self.sh;
        if let Some(p) = sh.preempt {
            return self.step_preemptive(p.max_suspended);
        }
        // Up to BATCH events in a row without the loop's looks, stopping where one of the
        // per-event checks of the loop is due (none is skipped).
        let p = self.stats.processed;
        let mut budget = BATCH
            .min(every.saturating_sub(*since_gvt).max(1))
            .min(POLL_EVERY - (p - polled).min(POLL_EVERY - 1));
        if sh.mem.bounded() {
            budget = budget.min(MEMORY_EVERY - p % MEMORY_EVERY);
        }
        // Admission for the whole batch where the uncommitted-event cap cannot bind inside it
        // (GVT, the window and the next global event change only at the loop's top): one
        // comparison per event instead of `admits`.
        let fast = self.batch_limit(budget);
        let n = if sh.safe == SafeRule::Always {
            self.batch::<true>(budget, fast)?
        } else {
            self.batch::<false>(budget, fast)?
        };
        *since_gvt += n.saturating_sub(1);
        Ok(n > 0)
    }

    /// A loop turn that ran nothing: the idle span starts (if it has not), the memory figures
    /// and a GVT round are brought up to date, and the worker backs off, then naps. Returns
    /// whether a stop was requested (the progress figures published).
    fn idle(
        &mut self,
        backoff: &Backoff,
        idle_since: &mut Option<Instant>,
        reported: &mut (u64, u64),
    ) -> bool {
        let sh = self.sh;
        idle_since.get_or_insert_with(Instant::now);
        if sh.progress.stop_requested() {
            self.publish_progress(reported);
            return true;
        }
        self.update_memory();
        sh.gvt.try_start();
        if backoff.is_completed() {
            // Idle: no ticks while asleep (they would only cost), and a wait that ticks cannot
            // stretch (ticks.rs, `nap`).
            self.preempt.pause_ticks();
            sh.idle_wait(Duration::from_micros(50));
        } else {
            backoff.snooze();
        }
        false
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
}
