//! Preemptive Time Warp, the worker's side (README.md "Preemption", seed 003 §2.2): events run
//! in execution contexts (crate::preempt) that switch off the CPU when BH_min falls below the
//! running event's time; the platform context then flushes the bottom half and dispatches by
//! LTF among the pending events *and* the suspended contexts.
//!
//! The rule that keeps the committed history the sequential one: a context works on its LP's
//! state taken out of the LP (moved with copy state saving, a spare standing in; cloned with
//! reverse saving) and a copy of its bookkeeping, and buffers its sends and counter deltas; nothing of it
//! reaches the LP, the history or another worker until it returns. While an LP has a suspended
//! context no other event of that LP runs: an event that sorts before the suspended one drops
//! the context (its event is pending again), one that sorts after waits; every rollback of the
//! LP drops it too. So a context that returns saw exactly the state an uninterrupted run would
//! have seen, and a dropped one left no trace (a moved state is restored from the LP's
//! checkpoint).
//!
//! This file holds the worker's preemption part ([`Preemption`]: its suspended contexts, their
//! stacks, the spare states, its ticks and figures); `contexts.rs` starts, resumes and drops
//! the contexts.

use std::rc::Rc;
use std::time::Instant;

use super::lp::Orders;
use super::options::Ticks;
use crate::error::{ModelError, SimError};
use crate::event::Event;
use crate::model::{LpMeta, Model, Time};
use crate::preempt::ticks::{AlphaRule, Flag, Timer};
use crate::preempt::{Context, StackPool};
use crate::tw_msg::TwEvent;

/// What a context hands back when it returns: the LP's state and bookkeeping after the event,
/// and what the event sent, counted and raised.
pub(super) struct Parts<S, P> {
    pub(super) state: S,
    pub(super) meta: LpMeta,
    pub(super) out: Vec<Event<P>>,
    pub(super) counters: Vec<i64>,
    pub(super) err: Option<ModelError>,
    pub(super) checks: u64,
    pub(super) returns: u64,
    pub(super) ticked: u64,
}

/// A started event that has not returned: its context, the event (shared with the context,
/// which reads the payload), its LP and the LP's bookkeeping before it.
///
/// Field order matters: `ctx` is dropped before `parts`, which the context works on.
pub(super) struct Job<'s, M: Model> {
    pub(super) ctx: Context<'s, ()>,
    /// What the context works on, owned here rather than on the context's stack, so that a
    /// context a tick switched off (dropped without unwinding) leaks none of it.
    pub(super) parts: PartsBox<M::State, M::Event>,
    pub(super) ev: Rc<TwEvent<M::Event>>,
    pub(super) li: usize,
    pub(super) meta: LpMeta,
    pub(super) before: Option<M::State>,
    /// Whether the LP's state was moved into the context (a spare stands in the LP's place
    /// until it returns; dropping it then restores the state) rather than cloned.
    pub(super) moved: bool,
    /// Seconds on the CPU so far (measured only with ticks configured).
    pub(super) cpu_s: f64,
}

/// A context's [`Parts`] on the heap: the context reaches them through a raw pointer while it
/// lives, the job reads them only once it returned, and drops them in any case.
pub(super) struct PartsBox<S, P>(std::ptr::NonNull<Parts<S, P>>);

impl<S, P> PartsBox<S, P> {
    pub(super) fn new(p: Parts<S, P>) -> Self {
        PartsBox(std::ptr::NonNull::from(Box::leak(Box::new(p))))
    }

    /// The pointer the context works through.
    pub(super) fn as_ptr(&self) -> std::ptr::NonNull<Parts<S, P>> {
        self.0
    }

    /// The parts, once the context that worked on them has returned or been dropped.
    pub(super) fn into_inner(self) -> Parts<S, P> {
        let p = self.0;
        std::mem::forget(self);
        // Safety: the box came from `Box::leak` in `new` and is taken back once (`self` is
        // forgotten); the caller's context no longer exists or has finished, so nothing else
        // reaches it.
        *unsafe { Box::from_raw(p.as_ptr()) }
    }
}

impl<S, P> Drop for PartsBox<S, P> {
    fn drop(&mut self) {
        // Safety: as in `into_inner`: a `PartsBox` is dropped only after its job's context
        // (the `ctx` field, declared first in `Job`, or discarded before).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// A worker's ticks: its timer, the alpha rule, and how long ticks have run.
pub(super) struct Ticker {
    timer: Timer,
    rule: AlphaRule,
    since: Option<Instant>,
    on_s: f64,
    samples: u64,
    /// The rule wants ticks but the timer is stopped while the worker is idle (a tick in
    /// platform mode changes nothing and only costs); the next context started or resumed
    /// restarts it.
    paused: bool,
}

/// Per-worker preemption figures (the report's `preempt_*`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PreemptStats {
    /// Events started in a context.
    pub(super) started: u64,
    /// Switches off the CPU at a platform-mode return.
    pub(super) preemptions: u64,
    /// Those of `preemptions` whose check a tick made due (ticks running on this worker);
    /// the others came at a return whose check was due with ticks off (seed 003 Fig. 8's
    /// split: timer interrupts vs switches back from platform mode).
    pub(super) preemptions_on_tick: u64,
    /// Those of `preemptions` a tick made by interrupting the handler in application mode
    /// (the handler made no engine call: preempt/README.md, "Ticks that preempt").
    pub(super) interrupts: u64,
    /// Contexts a tick had interrupted that were then dropped without unwinding.
    pub(super) interrupts_dropped: u64,
    /// Suspended contexts resumed.
    pub(super) resumed: u64,
    /// Suspended contexts dropped (rollback, straggler for their LP, cancellation, run end).
    pub(super) discarded: u64,
    /// Events run to completion outside a context because `max_suspended` were suspended.
    pub(super) fallbacks: u64,
    /// Checks that read BH_min (in contexts that returned).
    pub(super) checks: u64,
    /// Stacks mapped.
    pub(super) stacks: u64,
    /// LP states restored after dropping a context that had taken the state (copy saving).
    pub(super) restores: u64,
    /// Ticks delivered to the worker's thread.
    pub(super) ticks_delivered: u64,
    /// Ticks acted on: checks of BH_min that a tick made due (in contexts that returned).
    pub(super) ticks_acted_on: u64,
    /// Wall seconds with ticks running.
    pub(super) ticks_on_s: f64,
    /// Whether ticks preempt by interrupt on this worker.
    pub(super) interrupts_on: bool,
    /// The alpha rule's means at the end: Δe (seconds) and APMS.
    pub(super) delta_e_s: f64,
    pub(super) apms: f64,
}

/// A worker's preemption part: its suspended contexts (at most `max_suspended`), the stacks
/// they run on, the states that stand in an LP's place while its state is moved into a context
/// (copy state saving), its ticks, and its figures.
pub(super) struct Preemption<'s, M: Model> {
    pub(super) jobs: Vec<Job<'s, M>>,
    pub(super) stacks: StackPool,
    pub(super) spare_states: Vec<M::State>,
    pub(super) stats: PreemptStats,
    ticker: Option<Ticker>,
    /// Whether this worker's ticks preempt by interrupt (configured, and the process can).
    pub(super) interrupts: bool,
}

impl<'s, M: Model> Preemption<'s, M> {
    pub(super) fn new() -> Self {
        Preemption {
            jobs: Vec::new(),
            stacks: StackPool::default(),
            spare_states: Vec::new(),
            stats: PreemptStats::default(),
            ticker: None,
            interrupts: false,
        }
    }

    /// The suspended context whose event comes first, if any.
    pub(super) fn earliest_job(&self, orders: &Orders) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, j) in self.jobs.iter().enumerate() {
            if best
                .is_none_or(|b| orders.order(&j.ev, &self.jobs[b].ev) == std::cmp::Ordering::Less)
            {
                best = Some(i);
            }
        }
        best
    }

    /// The earliest time of a suspended event (`+inf`: none), for GVT reports: a suspended
    /// event is unprocessed.
    pub(super) fn suspended_min(&self) -> Time {
        self.jobs
            .iter()
            .map(|j| j.ev.time)
            .fold(Time::INFINITY, Time::min)
    }

    /// The tick flag a context's checks consult (`None`: ticks off, every check reads BH_min).
    pub(super) fn tick_flag<'f>(&self, flag: &'f Flag) -> Option<&'f Flag> {
        self.ticker.as_ref().map(|_| flag)
    }

    /// Whether the tick timer runs now (a preemption now is one a tick made due).
    pub(super) fn ticking(&self) -> bool {
        self.ticker.as_ref().is_some_and(|t| t.timer.armed())
    }

    /// Sets up worker `w`'s tick timer, raising `flag`, when `ticks` are configured (on its
    /// own thread).
    pub(super) fn init_ticks(
        &mut self,
        ticks: Option<Ticks>,
        flag: &Flag,
        w: usize,
    ) -> Result<(), SimError> {
        let Some(t) = ticks else {
            return Ok(());
        };
        let timer = Timer::new(flag, t.period_us).map_err(|e| {
            SimError::Resource(format!("cannot create a tick timer for worker {w}: {e}"))
        })?;
        self.ticker = Some(Ticker {
            timer,
            rule: AlphaRule::new(t.period_us, t.alpha),
            since: None,
            on_s: 0.0,
            samples: 0,
            paused: false,
        });
        self.interrupts = t.interrupts && crate::preempt::interrupt::available();
        if self.interrupts {
            crate::preempt::interrupt::mark_used();
        }
        Ok(())
    }

    /// The alpha rule: one event's CPU time and platform-mode returns; every 32 events, ticks
    /// start or stop (seed 003 Eq. 1-2), gating the worker's `flag`.
    pub(super) fn tick_rule(&mut self, cpu_s: f64, returns: u64, flag: &Flag) {
        let Some(t) = &mut self.ticker else {
            return;
        };
        t.rule.sample(cpu_s, returns);
        t.samples += 1;
        if t.samples % 32 != 0 {
            return;
        }
        let want = t.rule.wants_ticks();
        if want != t.timer.armed() {
            t.timer.set(want);
            flag.set_gating(t.timer.armed());
            if t.timer.armed() {
                t.since = Some(Instant::now());
            } else if let Some(s) = t.since.take() {
                t.on_s += s.elapsed().as_secs_f64();
            }
        }
    }

    /// Stops the ticks while the worker is idle (before it sleeps), if they run.
    pub(super) fn pause_ticks(&mut self) {
        if let Some(t) = &mut self.ticker {
            if t.timer.armed() {
                t.timer.set(false);
                t.paused = !t.timer.armed();
                if let Some(s) = t.since.take() {
                    t.on_s += s.elapsed().as_secs_f64();
                }
            }
        }
    }

    /// Restarts ticks that [`pause_ticks`](Self::pause_ticks) stopped (a context is about to
    /// run).
    #[inline]
    pub(super) fn unpause_ticks(&mut self) {
        if let Some(t) = self.ticker.as_mut().filter(|t| t.paused) {
            t.paused = false;
            t.timer.set(true);
            if t.timer.armed() {
                t.since = Some(Instant::now());
            }
        }
    }

    /// The tick figures for the report (and ticks stopped); `flag` is the worker's.
    pub(super) fn tick_figures(&mut self, flag: &Flag) {
        if let Some(t) = &mut self.ticker {
            t.timer.set(false);
            if let Some(s) = t.since.take() {
                t.on_s += s.elapsed().as_secs_f64();
            }
            let p = &mut self.stats;
            p.ticks_delivered = flag.delivered();
            p.ticks_on_s = t.on_s;
            p.interrupts_on = self.interrupts;
            p.delta_e_s = t.rule.delta_e;
            p.apms = t.rule.apms;
        }
    }
}
