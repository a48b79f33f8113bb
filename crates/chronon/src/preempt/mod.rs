//! Preemptive Time Warp (seed 003 §2): execution contexts for events, check-and-switch at
//! platform-mode returns, and the pool of stacks they run on. The lock-step active-threads
//! runtime runs its light-weight threads on the same contexts and stacks. The protocol, its invariants and
//! the soundness argument for the one `unsafe` block are in README.md; the Time Warp side (which
//! context runs, resumes or is dropped) is `executor/time_warp/contexts.rs` and `preempt.rs`.

use std::cell::Cell;
use std::marker::PhantomData;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::comm::Mailbox;
use crate::types::Time;

pub(crate) mod ticks;

pub use ticks::{tick_overhead, TickOverhead};

/// Stack size of one execution context. Pages are committed on first touch, so an event that
/// uses little stack costs little memory; a guard page below catches overflow (a clean crash,
/// never silent corruption).
pub(crate) const STACK_BYTES: usize = 1 << 20;

/// What a handler's call into the engine does on its way back (seed 003 §2.2): under
/// preemptive Time Warp, check-and-switch; nothing elsewhere.
pub(crate) trait PlatformReturn {
    /// Called by `Ctx` at every platform-mode return of the event at time `now`.
    fn platform_return(&self, now: Time);
}

/// The source of BH_min: a lower bound on the timestamps of the messages and anti-messages
/// waiting in a worker's bottom-half queue (comm/README.md, I2).
pub(crate) trait BhMin {
    /// The register's current value (`+inf`: nothing waits).
    fn bh_min(&self) -> Time;
}

impl<T> BhMin for Mailbox<T> {
    #[inline(always)]
    fn bh_min(&self) -> Time {
        self.min_time()
    }
}

/// The check of check-and-switch: switch when something earlier than the running event may
/// wait. `bh_min` is a lower bound (never above a waiting message's time), so a message earlier
/// than `now` is never missed; a stale low value only costs a spurious switch.
#[inline(always)]
pub(crate) fn earlier_waits(bh_min: Time, now: Time) -> bool {
    bh_min < now
}

/// Check-and-switch as an event's context sees it: the worker's register, the way back to
/// the platform context, and the tick flag that lets a preemption point skip the register.
pub(crate) struct Switch<'y, R: BhMin + ?Sized> {
    register: &'y R,
    yielder: &'y Yielder<(), ()>,
    ticks: Option<&'y ticks::Flag>,
    /// Checks that read the register (for the report).
    checks: Cell<u64>,
    /// Platform-mode returns so far (APMS, the alpha rule).
    returns: Cell<u64>,
    /// Checks that a tick made due (ticks acted on).
    ticked: Cell<u64>,
}

impl<'y, R: BhMin + ?Sized> Switch<'y, R> {
    pub(crate) fn new(
        register: &'y R,
        yielder: &'y Yielder<(), ()>,
        ticks: Option<&'y ticks::Flag>,
    ) -> Self {
        Switch {
            register,
            yielder,
            ticks,
            checks: Cell::new(0),
            returns: Cell::new(0),
            ticked: Cell::new(0),
        }
    }

    /// Platform-mode returns so far.
    pub(crate) fn returns(&self) -> u64 {
        self.returns.get()
    }

    /// Register reads so far.
    pub(crate) fn checks(&self) -> u64 {
        self.checks.get()
    }

    /// Ticks acted on so far: checks that a tick made due.
    pub(crate) fn ticked(&self) -> u64 {
        self.ticked.get()
    }
}

impl<R: BhMin + ?Sized> PlatformReturn for Switch<'_, R> {
    #[inline]
    fn platform_return(&self, now: Time) {
        self.returns.set(self.returns.get() + 1);
        if let Some(t) = self.ticks {
            // Ticks on: the register is read only once a tick has come since the last check
            // (seed 003 §2.3: the tick is what makes a check due).
            match t.take_tick() {
                None => return,
                Some(true) => self.ticked.set(self.ticked.get() + 1),
                Some(false) => {}
            }
        }
        self.checks.set(self.checks.get() + 1);
        if earlier_waits(self.register.bh_min(), now) {
            // Off the CPU: the platform context resumes or drops this context later.
            self.yielder.suspend(());
        }
    }
}

/// How far a context got when the platform context regained the CPU.
pub(crate) enum Step<R> {
    /// It switched off the CPU at a platform-mode return.
    Suspended,
    /// It returned.
    Done(R),
}

/// An event's execution context: a stackful coroutine that may borrow data living for `'s`.
///
/// Soundness (README.md, "Borrows across a suspension"): the closure may only borrow data that
/// outlives `'s` (bound `F: 's`) and `Context<'s, _>` cannot outlive `'s` (the marker), so the
/// borrowed data lives as long as any code can run on the context's stack — which is only
/// inside `resume` or when the context is dropped (corosensei unwinds it then, running every
/// destructor on its stack). A context that is leaked instead never runs again, and its stack
/// (owned, never reused) only leaks.
pub(crate) struct Context<'s, R> {
    co: Coroutine<(), (), R, DefaultStack>,
    _borrows: PhantomData<&'s ()>,
}

impl<'s, R> Context<'s, R> {
    /// A context that will run `f` on `stack` (nothing runs before the first `resume`).
    pub(crate) fn new<F>(stack: DefaultStack, f: F) -> Self
    where
        F: FnOnce(&Yielder<(), ()>) -> R + 's,
    {
        // Safety: `with_stack_unchecked` requires the data `f` borrows to stay valid until the
        // coroutine completes or is dropped. `f: 's` borrows only data living for `'s`, and the
        // coroutine is owned by this `Context<'s, R>`, which the borrow checker keeps from
        // outliving `'s`; so every resume and the unwinding drop happen while `'s` is live.
        let co = unsafe { Coroutine::with_stack_unchecked(stack, move |y, ()| f(y)) };
        Context {
            co,
            _borrows: PhantomData,
        }
    }

    /// Runs the context until it switches off the CPU or returns. A panic inside it is
    /// propagated to the caller (the context is then finished).
    pub(crate) fn resume(&mut self) -> Step<R> {
        match self.co.resume(()) {
            CoroutineResult::Yield(()) => Step::Suspended,
            CoroutineResult::Return(r) => Step::Done(r),
        }
    }

    /// Whether the context ran before (it is suspended, not new).
    pub(crate) fn started(&self) -> bool {
        self.co.started()
    }

    /// Drops whatever the context was doing: unwinds its stack, running the destructors of
    /// everything on it, and returns the stack for reuse.
    pub(crate) fn discard(mut self) -> DefaultStack {
        self.co.force_unwind();
        self.co.into_stack()
    }

    /// The stack of a context that returned.
    pub(crate) fn into_stack(self) -> DefaultStack {
        self.co.into_stack()
    }
}

/// A worker's spare stacks (each with its guard page), so that starting a context maps no
/// memory once the pool is warm.
#[derive(Default)]
pub(crate) struct StackPool {
    spare: Vec<DefaultStack>,
    /// Stacks mapped so far.
    pub(crate) created: u64,
}

impl StackPool {
    /// A stack from the pool, or a new one (`Err`: the system refused the mapping).
    pub(crate) fn get(&mut self) -> std::io::Result<DefaultStack> {
        match self.spare.pop() {
            Some(s) => Ok(s),
            None => {
                self.created += 1;
                DefaultStack::new(STACK_BYTES)
            }
        }
    }

    /// Gives a stack back.
    pub(crate) fn put(&mut self, s: DefaultStack) {
        self.spare.push(s);
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, chronon_loom))]
mod loom_tests;
