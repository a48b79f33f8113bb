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

mod cost;
pub(crate) mod interrupt;
pub(crate) mod ticks;

pub use cost::{preemption_cost, PreemptionCost};
pub use interrupt::{platform_mode, PlatformAlloc};
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
    yielder: &'y Yielder<(), bool>,
    /// Cooperative ticks: a platform-mode return checks only once a tick made it due. `None`
    /// (no ticks, or ticks that interrupt): every return checks.
    ticks: Option<&'y ticks::Flag>,
    /// The running event's time (the check of a tick's interrupt compares BH_min with it).
    now: Time,
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
        yielder: &'y Yielder<(), bool>,
        ticks: Option<&'y ticks::Flag>,
        now: Time,
    ) -> Self {
        Switch {
            register,
            yielder,
            ticks,
            now,
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

    /// Off the CPU: the platform context resumes or drops this context later. The thread's
    /// mode is the platform context's while it is off (interrupt.rs: `leave`, `restore`).
    /// `interrupted`: the switch comes from a tick's trampoline (the context can then only be
    /// dropped without unwinding: `Context::discard`).
    fn switch_off(&self, interrupted: bool) {
        let mode = interrupt::leave();
        self.yielder.suspend(interrupted);
        interrupt::restore(mode);
    }
}

impl<R: BhMin + ?Sized> PlatformReturn for Switch<'_, R> {
    #[inline]
    fn platform_return(&self, now: Time) {
        if !interrupt::returns_to_application() {
            // Back into platform code, not the model's: nothing may switch it out.
            return;
        }
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
            self.switch_off(false);
        }
    }
}

impl<R: BhMin + ?Sized> interrupt::InterruptCheck for Switch<'_, R> {
    fn interrupted(&self) {
        // A check a tick made due.
        self.ticked.set(self.ticked.get() + 1);
        self.checks.set(self.checks.get() + 1);
        if earlier_waits(self.register.bh_min(), self.now) {
            self.switch_off(true);
        }
    }
}

/// How far a context got when the platform context regained the CPU.
pub(crate) enum Step<R> {
    /// It switched off the CPU: at a platform-mode return (`interrupted: false`), or from a
    /// tick's trampoline in application mode (`true`).
    Suspended { interrupted: bool },
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
    /// `None` only once the stack was taken back (`discard`, `into_stack`).
    co: Option<Coroutine<(), bool, R, DefaultStack>>,
    /// Whether the context's last switch came from a tick's interrupt: then it can only be
    /// dropped without unwinding (see [`discard`](Self::discard)).
    interrupted: bool,
    _borrows: PhantomData<&'s ()>,
}

impl<'s, R> Context<'s, R> {
    /// A context that will run `f` on `stack` (nothing runs before the first `resume`).
    pub(crate) fn new<F>(stack: DefaultStack, f: F) -> Self
    where
        F: FnOnce(&Yielder<(), bool>) -> R + 's,
    {
        // Safety: `with_stack_unchecked` requires the data `f` borrows to stay valid until the
        // coroutine completes or is dropped. `f: 's` borrows only data living for `'s`, and the
        // coroutine is owned by this `Context<'s, R>`, which the borrow checker keeps from
        // outliving `'s`; so every resume and the unwinding drop happen while `'s` is live.
        let co = unsafe { Coroutine::with_stack_unchecked(stack, move |y, ()| f(y)) };
        Context {
            co: Some(co),
            interrupted: false,
            _borrows: PhantomData,
        }
    }

    fn co(&mut self) -> &mut Coroutine<(), bool, R, DefaultStack> {
        self.co
            .as_mut()
            .expect("a context keeps its coroutine until it is taken apart")
    }

    /// Runs the context until it switches off the CPU or returns. A panic inside it is
    /// propagated to the caller (the context is then finished).
    pub(crate) fn resume(&mut self) -> Step<R> {
        self.interrupted = false;
        match self.co().resume(()) {
            CoroutineResult::Yield(interrupted) => {
                self.interrupted = interrupted;
                Step::Suspended { interrupted }
            }
            CoroutineResult::Return(r) => Step::Done(r),
        }
    }

    /// Whether the context's last switch came from a tick's interrupt.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// Whether the context ran before (it is suspended, not new).
    pub(crate) fn started(&self) -> bool {
        self.co.as_ref().is_some_and(|c| c.started())
    }

    /// Stops whatever the context was doing. One that switched off at a platform-mode return
    /// is unwound, running the destructors of everything on its stack. One that a tick
    /// switched off stopped at an arbitrary instruction, where no unwinding can start: it is
    /// reset without running anything more, and what its handler's stack owned is leaked
    /// (README.md, "Ticks that preempt": the executor keeps the context's own data off its
    /// stack, so the leak is only what the model's handler had allocated itself).
    fn stop(&mut self) {
        let interrupted = self.interrupted;
        let Some(co) = self.co.as_mut() else {
            return;
        };
        if !co.started() || co.done() {
            return;
        }
        if interrupted {
            // Safety: `force_reset` abandons the coroutine's stack without running the drops
            // of what is on it. Nothing there may be relied on to be dropped: the engine's own
            // frames (the closure, the switch, `Ctx`, the trampoline) hold only references,
            // raw pointers and plain values; the data they point to is owned outside the stack
            // (the Time Warp job's parts and event) and dropped by its owner; the model's
            // objects are leaked, which is memory-safe. The stack is never executed again
            // before a new coroutine reuses it from the top.
            unsafe { co.force_reset() };
        } else {
            co.force_unwind();
        }
    }

    /// Drops whatever the context was doing ([`stop`](Self::stop)) and returns the stack for
    /// reuse.
    pub(crate) fn discard(mut self) -> DefaultStack {
        self.stop();
        self.take_stack()
    }

    /// The stack of a context that returned.
    pub(crate) fn into_stack(mut self) -> DefaultStack {
        self.take_stack()
    }

    fn take_stack(&mut self) -> DefaultStack {
        self.co
            .take()
            .expect("a context keeps its coroutine until it is taken apart")
            .into_stack()
    }
}

impl<R> Drop for Context<'_, R> {
    /// A context dropped without `discard` (a worker unwinding from a panic, say) is stopped
    /// the same way: never unwound from an interrupt.
    fn drop(&mut self) {
        self.stop();
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

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod interrupt_tests;

#[cfg(all(test, chronon_loom))]
mod loom_tests;
