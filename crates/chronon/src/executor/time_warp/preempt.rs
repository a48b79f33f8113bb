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

use std::rc::Rc;
use std::time::Instant;

use super::lp::TwEvent;
use super::options::Ticks;
use super::shared::{Saving, Shared};
use super::transport::Wires;
use super::worker::Worker;
use crate::error::{ModelError, SimError};
use crate::event::Event;
use crate::model::{Ctx, LpMeta, Model, Time};
use crate::preempt::ticks::{AlphaRule, Flag, Timer};
use crate::preempt::{BhMin, Context, Step, Switch};
use crate::queue::PendingSet;

/// Worker `w`'s BH_min as its contexts' checks read it: the mailbox register with threads; across
/// processes the minimum of its incoming rings' registers and of its stash (`Wires::bh_min`;
/// README.md, "BH_min across processes", says why that is a lower bound at the check).
struct Register<'s, P> {
    wires: &'s Wires<P>,
    w: usize,
}

impl<P: Send + 'static> BhMin for Register<'_, P> {
    #[inline(always)]
    fn bh_min(&self) -> Time {
        self.wires.bh_min(self.w)
    }
}

/// Preemption settings shared by the workers.
#[derive(Clone, Copy, Debug)]
pub(super) struct Config {
    pub(super) max_suspended: usize,
    pub(super) ticks: Option<Ticks>,
}

/// What a context hands back when it returns: the LP's state and bookkeeping after the event,
/// and what the event sent, counted and raised.
pub(super) struct Parts<S, P> {
    state: S,
    meta: LpMeta,
    out: Vec<Event<P>>,
    counters: Vec<i64>,
    err: Option<ModelError>,
    checks: u64,
    returns: u64,
    ticked: u64,
}

/// A started event that has not returned: its context, the event (shared with the context,
/// which reads the payload), its LP and the LP's bookkeeping before it.
pub(super) struct Job<'s, M: Model> {
    ctx: Context<'s, Parts<M::State, M::Event>>,
    ev: Rc<TwEvent<M::Event>>,
    li: usize,
    meta: LpMeta,
    before: Option<M::State>,
    /// Whether the LP's state was moved into the context (a spare stands in the LP's place
    /// until it returns; dropping it then restores the state) rather than cloned.
    moved: bool,
    /// Seconds on the CPU so far (measured only with ticks configured).
    cpu_s: f64,
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
    /// The alpha rule's means at the end: Δe (seconds) and APMS.
    pub(super) delta_e_s: f64,
    pub(super) apms: f64,
}

impl<'s, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, '_, M, Q> {
    /// Preemptive dispatch: runs the earliest of the pending events and the suspended contexts,
    /// if one may run now. Returns whether something ran.
    pub(super) fn step_preemptive(&mut self, max_suspended: usize) -> Result<bool, SimError> {
        let qt = self.live_head();
        let job = self.earliest_job();
        let take_job = match (job, self.queue.peek()) {
            (Some(j), Some(q)) => self.jobs[j].ev.head() <= q.head(),
            (Some(_), None) => true,
            _ => false,
        };
        let t = if take_job {
            job.map_or(qt, |j| self.jobs[j].ev.time)
        } else {
            qt
        };
        if !self.admits(t) {
            return Ok(false);
        }
        if take_job {
            let j = self.jobs.swap_remove(job.unwrap_or_default());
            self.resume_job(j)?;
            return Ok(true);
        }
        let Some(ev) = self.queue.pop() else {
            return Ok(false);
        };
        let li = self.mine.index(self.sh, ev.dst);
        if let Some(j) = self.jobs.iter().position(|j| j.li == li) {
            if self.orders.order(&ev, &self.jobs[j].ev) == std::cmp::Ordering::Less {
                // Earlier than the suspended event of its LP: that context saw a state this
                // event changes. Drop it; its event is pending again.
                let job = self.jobs.swap_remove(j);
                self.discard_job(job, true)?;
            } else {
                // The LP's suspended event comes first (same head time): finish it first.
                self.queue.push(ev);
                let job = self.jobs.swap_remove(j);
                self.resume_job(job)?;
                return Ok(true);
            }
        }
        if self.jobs.len() >= max_suspended {
            self.pstats.fallbacks += 1;
            self.process::<false>(ev)?;
        } else {
            self.start_job(ev)?;
        }
        Ok(true)
    }

    /// The suspended context whose event comes first, if any.
    fn earliest_job(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, j) in self.jobs.iter().enumerate() {
            if best.is_none_or(|b| {
                self.orders.order(&j.ev, &self.jobs[b].ev) == std::cmp::Ordering::Less
            }) {
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

    /// Starts `ev` in a context of its own and runs it until it returns or switches off.
    fn start_job(&mut self, ev: TwEvent<M::Event>) -> Result<(), SimError> {
        let Some((ev, li)) = self.prologue(ev)? else {
            return Ok(());
        };
        let sh = self.sh;
        let (state, moved) = self.context_state(li);
        let lp = &self.lps[li];
        let parts = Parts {
            state,
            meta: lp.meta,
            out: Vec::new(),
            counters: vec![0; self.scratch.len()],
            err: None,
            checks: 0,
            returns: 0,
            ticked: 0,
        };
        let meta = lp.meta;
        let before = sh.check_eq.map(|_| lp.state.clone());
        let stack = self.stacks.get().map_err(|e| {
            SimError::Resource(format!(
                "cannot map a {} KiB stack for an event context: {e}; lower --max-suspended",
                crate::preempt::STACK_BYTES >> 10
            ))
        })?;
        let ev = Rc::new(ev);
        let event = Rc::clone(&ev);
        let w = self.w;
        let flag = self.tick_flag();
        let ctx = Context::new(stack, move |y| {
            let mut p = parts;
            let register = Register {
                wires: &sh.wires,
                w,
            };
            let sw = Switch::new(&register, y, flag);
            {
                let mut ctx = Ctx::new(
                    event.time,
                    event.dst,
                    sh.n,
                    sh.lookahead,
                    &mut p.meta,
                    &mut p.out,
                    &mut p.counters,
                    &mut p.err,
                );
                ctx.set_switch(&sw);
                sh.model.on_event(&mut p.state, &event.payload, &mut ctx);
            }
            p.checks = sw.checks();
            p.returns = sw.returns();
            p.ticked = sw.ticked();
            p
        });
        self.pstats.started += 1;
        self.resume_job(Job {
            ctx,
            ev,
            li,
            meta,
            before,
            moved,
            cpu_s: 0.0,
        })
    }

    /// Runs a context until it returns (the event is recorded as processed) or switches off
    /// (it joins the suspended ones). A cancelled event's context is dropped instead.
    fn resume_job(&mut self, mut job: Job<'s, M>) -> Result<(), SimError> {
        if self.cancelled.contains(job.ev.id, job.ev.time) {
            return self.discard_job(job, true);
        }
        if job.ctx.started() {
            self.pstats.resumed += 1;
        }
        // A panic inside the context propagates out of `resume` and names this LP and time.
        self.current = (job.ev.dst, job.ev.time);
        self.unpause_ticks();
        let t0 = self.ticker.as_ref().map(|_| {
            // Ticks that came in platform mode change nothing.
            self.sh.tick_flags[self.w].clear();
            Instant::now()
        });
        let step = job.ctx.resume();
        if let Some(t0) = t0 {
            job.cpu_s += t0.elapsed().as_secs_f64();
        }
        match step {
            Step::Suspended => {
                self.pstats.preemptions += 1;
                // While ticks run, a check happens only when a tick made it due (`Flag::
                // take_tick`), and only this thread turns them on or off (`tick_rule`, in
                // platform mode): the timer's state now is the one the check saw.
                if self.ticker.as_ref().is_some_and(|t| t.timer.armed()) {
                    self.pstats.preemptions_on_tick += 1;
                }
                self.jobs.push(job);
                Ok(())
            }
            Step::Done(mut p) => {
                self.stacks.put(job.ctx.into_stack());
                let ev = Rc::try_unwrap(job.ev)
                    .unwrap_or_else(|_| unreachable!("the context returned its event"));
                let lp = &mut self.lps[job.li];
                let old = std::mem::replace(&mut lp.state, p.state);
                lp.meta = p.meta;
                // The stand-in (or, where the state was cloned, the state before the event)
                // stands in for the next context's LP.
                if self.sh.saving == Saving::Copy && self.spare_states.len() <= self.jobs.len() {
                    self.spare_states.push(old);
                }
                self.out.append(&mut p.out);
                for (a, b) in self.scratch.iter_mut().zip(&p.counters) {
                    *a += b;
                }
                self.err = p.err;
                self.pstats.checks += p.checks;
                self.pstats.ticks_acted_on += p.ticked;
                self.tick_rule(job.cpu_s, p.returns);
                self.epilogue::<false>(ev, job.li, job.meta, job.before, None)
            }
        }
    }

    /// The state a context starts from, and whether it was moved out of the LP. With copy state
    /// saving the LP's state is *moved* into the context and a spare state stands in its place
    /// (no clone per event: the LP's state is the only one the event may change, and while the
    /// context lives nothing reads the LP's state — README.md, "Moving the state"); dropping
    /// the context restores it from the LP's checkpoint. With reverse state saving (nothing
    /// to restore from: a reverse handler cannot undo half an event) and while no spare
    /// exists yet, the context works on a clone.
    fn context_state(&mut self, li: usize) -> (M::State, bool) {
        let lp = &mut self.lps[li];
        if self.sh.saving == Saving::Copy {
            if let Some(spare) = self.spare_states.pop() {
                return (std::mem::replace(&mut lp.state, spare), true);
            }
        }
        (lp.state.clone(), false)
    }

    /// Drops a suspended context (its stack unwound, its state and sends discarded); its
    /// event is pending again unless an anti-message cancelled it. `restore`: where the
    /// context took the LP's state, give the LP its state back (the one after its last
    /// processed event: checkpoint, then coasting forward); a rollback that follows at once
    /// restores it itself.
    fn discard_job(&mut self, job: Job<'s, M>, restore: bool) -> Result<(), SimError> {
        self.pstats.discarded += 1;
        self.stacks.put(job.ctx.discard());
        let ev = Rc::try_unwrap(job.ev)
            .unwrap_or_else(|_| unreachable!("a discarded context dropped its event"));
        if job.moved && restore {
            // A rollback of no event: the LP's state and bookkeeping as after its last
            // processed event (rollback.rs), not counted as a rollback.
            let (max, ns) = (self.stats.rollback_max, self.stats.rollback_ns);
            let next = self.lps[job.li].next();
            self.rollback(job.li, next, None)?;
            (self.stats.rollback_max, self.stats.rollback_ns) = (max, ns);
            self.pstats.restores += 1;
        }
        if self.cancelled.remove(ev.id, ev.time) {
            self.orders.remove(&ev);
            return Ok(());
        }
        self.queue.push(ev);
        Ok(())
    }

    /// Drops LP `li`'s suspended context, if any (before anything changes the LP); `restore`
    /// as in [`discard_job`](Self::discard_job).
    #[inline]
    pub(super) fn discard_job_of(&mut self, li: usize, restore: bool) -> Result<(), SimError> {
        if self.jobs.is_empty() {
            return Ok(());
        }
        if let Some(j) = self.jobs.iter().position(|j| j.li == li) {
            let job = self.jobs.swap_remove(j);
            self.discard_job(job, restore)?;
        }
        Ok(())
    }

    /// At the end of the run: every suspended context is dropped, its event pending and its
    /// LP's state restored; the spare states go.
    pub(crate) fn release_contexts(&mut self) -> Result<(), SimError> {
        let mut result = Ok(());
        while let Some(job) = self.jobs.pop() {
            if let Err(e) = self.discard_job(job, true) {
                result = result.and(Err(e));
            }
        }
        self.spare_states.clear();
        self.pstats.stacks = self.stacks.created;
        self.tick_figures();
        result
    }

    /// The tick flag a context's checks consult (`None`: ticks off, every check reads BH_min).
    fn tick_flag(&self) -> Option<&'s Flag> {
        let sh: &'s Shared<'_, M> = self.sh;
        self.ticker.as_ref().map(|_| &sh.tick_flags[self.w])
    }

    /// Sets up this worker's tick timer when ticks are configured (on its own thread).
    pub(super) fn init_ticks(&mut self) -> Result<(), SimError> {
        let Some(t) = self.sh.preempt.and_then(|p| p.ticks) else {
            return Ok(());
        };
        let timer = Timer::new(&self.sh.tick_flags[self.w], t.period_us).map_err(|e| {
            SimError::Resource(format!(
                "cannot create a tick timer for worker {}: {e}",
                self.w
            ))
        })?;
        self.ticker = Some(Ticker {
            timer,
            rule: AlphaRule::new(t.period_us, t.alpha),
            since: None,
            on_s: 0.0,
            samples: 0,
            paused: false,
        });
        Ok(())
    }

    /// The alpha rule: one event's CPU time and platform-mode returns; every 32 events, ticks
    /// start or stop (seed 003 Eq. 1-2).
    fn tick_rule(&mut self, cpu_s: f64, returns: u64) {
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
            self.sh.tick_flags[self.w].set_gating(t.timer.armed());
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
    fn unpause_ticks(&mut self) {
        if let Some(t) = self.ticker.as_mut().filter(|t| t.paused) {
            t.paused = false;
            t.timer.set(true);
            if t.timer.armed() {
                t.since = Some(Instant::now());
            }
        }
    }

    /// The tick figures for the report (and ticks stopped).
    fn tick_figures(&mut self) {
        if let Some(t) = &mut self.ticker {
            t.timer.set(false);
            if let Some(s) = t.since.take() {
                t.on_s += s.elapsed().as_secs_f64();
            }
            let p = &mut self.pstats;
            p.ticks_delivered = self.sh.tick_flags[self.w].delivered();
            p.ticks_on_s = t.on_s;
            p.delta_e_s = t.rule.delta_e;
            p.apms = t.rule.apms;
        }
    }
}
