//! Preemptive dispatch, the worker's side (preempt.rs: the rule that keeps the committed
//! history the sequential one, and the worker's preemption part): events started in contexts,
//! resumed, and dropped.

use std::rc::Rc;
use std::time::Instant;

use super::options::Saving;
use super::preempt::{Job, Parts, PartsBox};
use super::worker::Worker;
use crate::error::SimError;
use crate::model::{Ctx, Model, Time};
use crate::preempt::interrupt::Arm;
use crate::preempt::{BhMin, Context, Step, Switch};
use crate::queue::PendingSet;
use crate::transport::tw::Wires;
use crate::tw_msg::TwEvent;
use corosensei::stack::Stack;

/// Worker `w`'s BH_min as its contexts' checks read it: the mailbox register with threads; across
/// processes the minimum of its incoming rings' registers and of its stash (`Wires::bh_min`;
/// README.md, "BH_min across processes", says why that is a lower bound at the check).
struct Register<'s, P> {
    wires: &'s dyn Wires<P>,
    w: usize,
}

impl<P: Send + 'static> BhMin for Register<'_, P> {
    #[inline(always)]
    fn bh_min(&self) -> Time {
        self.wires.bh_min(self.w)
    }
}

impl<'s, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, '_, M, Q> {
    /// if one may run now. Returns whether something ran.
    pub(super) fn step_preemptive(&mut self, max_suspended: usize) -> Result<bool, SimError> {
        let qt = self.live_head();
        let job = self.preempt.earliest_job(&self.orders);
        let take_job = match (job, self.queue.peek()) {
            (Some(j), Some(q)) => self.preempt.jobs[j].ev.head() <= q.head(),
            (Some(_), None) => true,
            _ => false,
        };
        let t = if take_job {
            job.map_or(qt, |j| self.preempt.jobs[j].ev.time)
        } else {
            qt
        };
        if !self.admits(t) {
            return Ok(false);
        }
        if take_job {
            let j = self.preempt.jobs.swap_remove(job.unwrap_or_default());
            self.resume_job(j)?;
            return Ok(true);
        }
        let Some(ev) = self.queue.pop() else {
            return Ok(false);
        };
        let li = self.mine.index(self.sh, ev.dst);
        if let Some(j) = self.preempt.jobs.iter().position(|j| j.li == li) {
            if self.orders.order(&ev, &self.preempt.jobs[j].ev) == std::cmp::Ordering::Less {
                // Earlier than the suspended event of its LP: that context saw a state this
                // event changes. Drop it; its event is pending again.
                let job = self.preempt.jobs.swap_remove(j);
                self.discard_job(job, true)?;
            } else {
                // The LP's suspended event comes first (same head time): finish it first.
                self.queue.push(ev);
                let job = self.preempt.jobs.swap_remove(j);
                self.resume_job(job)?;
                return Ok(true);
            }
        }
        if self.preempt.jobs.len() >= max_suspended {
            self.preempt.stats.fallbacks += 1;
            self.process::<false>(ev)?;
        } else {
            self.start_job(ev)?;
        }
        Ok(true)
    }

    /// Starts `ev` in a context of its own and runs it until it returns or switches off.
    fn start_job(&mut self, ev: TwEvent<M::Event>) -> Result<(), SimError> {
        let Some((ev, li)) = self.prologue(ev)? else {
            return Ok(());
        };
        let sh = self.sh;
        let (state, moved) = self.context_state(li);
        let lp = &self.lps[li];
        let parts = PartsBox::new(Parts {
            state,
            meta: lp.meta,
            out: Vec::new(),
            counters: vec![0; self.scratch.deltas.len()],
            err: None,
            checks: 0,
            returns: 0,
            ticked: 0,
        });
        let meta = lp.meta;
        let before = sh.check_eq.map(|_| lp.state.clone());
        let stack = self.preempt.stacks.get().map_err(|e| {
            SimError::Resource(format!(
                "cannot map a {} KiB stack for an event context: {e}; lower --max-suspended",
                crate::preempt::STACK_BYTES >> 10
            ))
        })?;
        // Ticks preempt by interrupt only with room above the stack's guard page.
        let limit = self.preempt.interrupts.then(|| stack.limit().get());
        let ev = Rc::new(ev);
        // The context reads its event through a pointer: the job holds the one `Rc` (a
        // context dropped without unwinding must not keep a count of it).
        let event = std::ptr::NonNull::from(&*ev);
        let w = self.w;
        // Ticks that interrupt leave every platform-mode return its check (seed 003 §2.2: the
        // return checks, the tick interrupts application mode); cooperative ticks gate the
        // checks at returns instead, so that long computations check once per tick.
        let gate = match limit {
            Some(_) => None,
            None => self.preempt.tick_flag(&sh.tick_flags[w]),
        };
        let p = parts.as_ptr();
        let ctx = Context::new(stack, move |y| {
            // Safety: the job owns the parts and touches them only once this closure has
            // returned or its context was dropped (`PartsBox`); nothing else reaches them.
            let p = unsafe { &mut *p.as_ptr() };
            // Safety: the job holds the event's `Rc` until its context returned or was
            // dropped, and only reads it meanwhile.
            let event = unsafe { event.as_ref() };
            let register = Register {
                wires: &*sh.wires,
                w,
            };
            let sw = Switch::new(&register, y, gate, event.time);
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
                let _armed = limit.map(|l| Arm::new(&sw, l));
                sh.model.on_event(&mut p.state, &event.payload, &mut ctx);
            }
            p.checks = sw.checks();
            p.returns = sw.returns();
            p.ticked = sw.ticked();
        });
        self.preempt.stats.started += 1;
        self.resume_job(Job {
            ctx,
            parts,
            ev,
            li,
            meta,
            before,
            moved,
            cpu_s: 0.0,
        })
    }

    /// (it joins the suspended ones). A cancelled event's context is dropped instead.
    fn resume_job(&mut self, mut job: Job<'s, M>) -> Result<(), SimError> {
        if self.cancelled.contains(job.ev.id, job.ev.time) {
            return self.discard_job(job, true);
        }
        if job.ctx.started() {
            self.preempt.stats.resumed += 1;
        }
        // A panic inside the context propagates out of `resume` and names this LP and time.
        self.current = (job.ev.dst, job.ev.time);
        self.preempt.unpause_ticks();
        if let Some(flag) = self.preempt.tick_flag(&self.sh.tick_flags[self.w]) {
            // Ticks that came in platform mode change nothing.
            flag.clear();
        }
        // Every slice is timed: the tick rule and the LP's cost (`crate::lp_cost`) use it.
        let t0 = Instant::now();
        let step = job.ctx.resume();
        job.cpu_s += t0.elapsed().as_secs_f64();
        match step {
            Step::Suspended { interrupted } => {
                self.preempt.stats.preemptions += 1;
                self.preempt.stats.interrupts += u64::from(interrupted);
                // While ticks run, a check happens only when a tick made it due (`Flag::
                // take_tick`), and only this thread turns them on or off (`tick_rule`, in
                // platform mode): the timer's state now is the one the check saw.
                if self.preempt.ticking() {
                    self.preempt.stats.preemptions_on_tick += 1;
                }
                self.preempt.jobs.push(job);
                Ok(())
            }
            Step::Done(()) => {
                self.preempt.stacks.put(job.ctx.into_stack());
                let mut p = job.parts.into_inner();
                let ev = Rc::try_unwrap(job.ev)
                    .unwrap_or_else(|_| unreachable!("the context returned its event"));
                let lp = &mut self.lps[job.li];
                let old = std::mem::replace(&mut lp.state, p.state);
                lp.meta = p.meta;
                // An event in a context has its CPU time over every slice it ran measured.
                self.clocks[job.li].took((job.cpu_s * 1e9) as u64);
                // The stand-in (or, where the state was cloned, the state before the event)
                // stands in for the next context's LP.
                if self.sh.saving == Saving::Copy
                    && self.preempt.spare_states.len() <= self.preempt.jobs.len()
                {
                    self.preempt.spare_states.push(old);
                }
                self.scratch.out.append(&mut p.out);
                for (a, b) in self.scratch.deltas.iter_mut().zip(&p.counters) {
                    *a += b;
                }
                self.scratch.err = p.err;
                self.preempt.stats.checks += p.checks;
                self.preempt.stats.ticks_acted_on += p.ticked;
                self.preempt
                    .tick_rule(job.cpu_s, p.returns, &self.sh.tick_flags[self.w]);
                self.epilogue::<false>(ev, job.li, job.meta, job.before, None)
            }
        }
    }

    /// exists yet, the context works on a clone.
    fn context_state(&mut self, li: usize) -> (M::State, bool) {
        let lp = &mut self.lps[li];
        if self.sh.saving == Saving::Copy {
            if let Some(spare) = self.preempt.spare_states.pop() {
                return (std::mem::replace(&mut lp.state, spare), true);
            }
        }
        (lp.state.clone(), false)
    }

    /// restores it itself.
    fn discard_job(&mut self, job: Job<'s, M>, restore: bool) -> Result<(), SimError> {
        self.preempt.stats.discarded += 1;
        self.preempt.stats.interrupts_dropped += u64::from(job.ctx.interrupted());
        self.preempt.stacks.put(job.ctx.discard());
        drop(job.parts);
        let ev = Rc::try_unwrap(job.ev)
            .unwrap_or_else(|_| unreachable!("a discarded context dropped its event"));
        if job.moved && restore {
            // A rollback of no event: the LP's state and bookkeeping as after its last
            // processed event (rollback.rs), not counted as a rollback.
            let (max, ns) = (self.stats.rollback_max, self.stats.rollback_ns);
            let next = self.lps[job.li].next();
            self.rollback(job.li, next, None)?;
            (self.stats.rollback_max, self.stats.rollback_ns) = (max, ns);
            self.preempt.stats.restores += 1;
        }
        if self.cancelled.remove(ev.id, ev.time) {
            self.orders.remove(&ev);
            return Ok(());
        }
        self.queue.push(ev);
        Ok(())
    }

    /// as in [`discard_job`](Self::discard_job).
    #[inline]
    pub(super) fn discard_job_of(&mut self, li: usize, restore: bool) -> Result<(), SimError> {
        if self.preempt.jobs.is_empty() {
            return Ok(());
        }
        if let Some(j) = self.preempt.jobs.iter().position(|j| j.li == li) {
            let job = self.preempt.jobs.swap_remove(j);
            self.discard_job(job, restore)?;
        }
        Ok(())
    }

    /// LP's state restored; the spare states go.
    pub(crate) fn release_contexts(&mut self) -> Result<(), SimError> {
        let mut result = Ok(());
        while let Some(job) = self.preempt.jobs.pop() {
            if let Err(e) = self.discard_job(job, true) {
                result = result.and(Err(e));
            }
        }
        self.preempt.spare_states.clear();
        self.preempt.stats.stacks = self.preempt.stacks.created;
        self.preempt.tick_figures(&self.sh.tick_flags[self.w]);
        result
    }
}
