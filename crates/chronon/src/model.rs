//! The model API: the [`Model`] trait users implement and the [`Ctx`] handlers act through.

use crate::error::ModelError;
use crate::event::Event;
use crate::limits::SizeHint;
pub use crate::model_stats::ModelStats;
pub(crate) use crate::model_stats::{StatKind, StatOp};
use crate::preempt::PlatformReturn;
use crate::rng::LpRng;

pub use crate::types::{LpId, Time};

/// A reverse handler ([`Model::reverse_handler`]): undoes one event of LP `ctx.me` at
/// `ctx.now`, taking the state after the event back to the state before it.
pub type ReverseFn<M> = fn(&M, &mut <M as Model>::State, &<M as Model>::Event, &ReverseCtx);

/// A simulation model: the behaviour of its logical processes (LPs).
///
/// Every LP has its own [`State`](Model::State), built by [`init`](Model::init). Events carry an
/// [`Event`](Model::Event) payload which is *moved* to the destination LP, never cloned or
/// serialized. Handlers see the world only through [`Ctx`]: the current time, their own id, the
/// LP's random stream and `send`. That is what lets every executor (sequential, conservative,
/// optimistic) run the same model and commit the same history.
///
/// Only `init` and `on_event` are required; the rest have defaults that most models keep.
pub trait Model: Send + Sync + 'static {
    /// Per-LP state. `Clone` so that optimistic executors can save copies of it.
    type State: Clone + Send + 'static;
    /// The payload events carry.
    type Event: Send + 'static;

    /// Builds LP `ctx.me()`'s state at time 0 and schedules its first events with `ctx.send`.
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Self::State;

    /// Handles one event at `ctx.now()` on LP `ctx.me()`.
    fn on_event(&self, state: &mut Self::State, event: &Self::Event, ctx: &mut Ctx<'_, Self>);

    /// The smallest delay this model ever gives a `send` to *another* LP after `init` (its
    /// lookahead). Conservative executors depend on it; every executor rejects a send to
    /// another LP below it. A send to the LP itself may take any delay >= 0. Default: 0.
    fn lookahead(&self) -> Time {
        0.0
    }

    /// The model's reverse handler, if it has one (reverse computation, as in ROSS): a function
    /// that undoes [`on_event`](Model::on_event). It is given the state *after* the event; on
    /// return that state must equal the state before. The engine itself restores the LP's
    /// random stream and send counter, and discards what the event sent. `None` (the default):
    /// optimistic executors save state copies instead. A model with one names it here, so the
    /// handler and the engine's knowledge of it cannot disagree:
    ///
    /// ```
    /// # use chronon::{Ctx, Model, ReverseCtx, ReverseFn};
    /// struct Counter;
    /// impl Counter {
    ///     fn undo(&self, n: &mut u64, _: &(), _: &ReverseCtx) {
    ///         *n -= 1;
    ///     }
    /// }
    /// impl Model for Counter {
    ///     type State = u64;
    ///     type Event = ();
    ///     fn init(&self, _: &mut Ctx<'_, Self>) -> u64 { 0 }
    ///     fn on_event(&self, n: &mut u64, _: &(), _: &mut Ctx<'_, Self>) { *n += 1; }
    ///     fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
    ///         Some(Self::undo)
    ///     }
    /// }
    /// ```
    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        None
    }

    /// Irreversible output for a committed event (printing, files, statistics that must not be
    /// rolled back). Called exactly once per committed event, in time order per LP, after the
    /// event is known never to be rolled back.
    fn commit(&self, event: &Self::Event, ctx: &CommitCtx) {
        let _ = (event, ctx);
    }

    /// Names of the model's counters (see [`Ctx::count`]); they appear in the report's
    /// `model_stats`.
    fn counter_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// Called once per LP, in LP order, at the end of the run, to add figures to the report.
    fn finish(&self, lp: LpId, state: &Self::State, stats: &mut ModelStats) {
        let _ = (lp, state, stats);
    }

    /// The links of LP `lp`: every *other* LP it may send to, each with that link's lookahead
    /// (the smallest delay it ever gives a send along it). `None` (the default) means "every LP,
    /// with [`lookahead`](Model::lookahead)". Sends to itself are always allowed, with any delay of 0
    /// or more. Conservative executors use the links to compute safe times; every
    /// executor rejects a send along an undeclared link or below its lookahead with a
    /// [`SimError::Model`](crate::SimError::Model). The null-message executor rejects, before
    /// running, a cycle of zero-lookahead links between its workers.
    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, Time)>> {
        let _ = lp;
        None
    }

    /// The times of the first *global events*: events that belong to no LP (periodic
    /// statistics, a change of the whole model at a given time). Each runs in
    /// [`on_global`](Model::on_global) after every LP event at or before its time and before
    /// any later one, with every LP stopped, on every executor alike. A global event only runs
    /// while some LP event is still pending after it, and never at or after the end time.
    fn global_events(&self) -> Vec<Time> {
        Vec::new()
    }

    /// Handles a global event: may read and change every LP's state, send LP events, write the
    /// model's statistics and schedule further global events (see [`GlobalCtx`]).
    /// Default: nothing.
    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let _ = ctx;
    }

    /// What the model allocates, for the size check [`Simulation::run`](crate::Simulation::run)
    /// makes before anything is allocated (see [`limits`](crate::limits)): events pending per LP,
    /// heap bytes per state and per payload, other tables. Default: one pending event per LP.
    fn size_hint(&self) -> SizeHint {
        SizeHint::pending(1)
    }

    /// The number of LPs, when the model knows it (most do: a PHOLD of 1024 LPs, a network of
    /// so many nodes). Then [`Simulation::lps`](crate::Simulation::lps) need not repeat it, and
    /// a count given there that differs is refused. `None` (the default): the simulation's
    /// `.lps(N)` gives it, and must.
    fn lp_count(&self) -> Option<LpId> {
        None
    }
}

/// A failed shared-heap allocation in a handler: a panic the engine reports as a resource
/// limit ([`SimError::Resource`](crate::SimError::Resource)).
#[cfg(target_os = "linux")]
#[cold]
fn heap_full(e: crate::shm::HeapError) -> ! {
    std::panic::panic_any(crate::error::HeapFull(e.to_string()))
}

/// Access to every LP's state, for global events (every LP is stopped while they run).
pub(crate) trait LpStates<S> {
    /// The state of LP `lp`.
    fn state(&self, lp: LpId) -> &S;
    /// The state of LP `lp`, to change it. An executor that keeps copies of states (Time
    /// Warp's copy state saving) notes which LPs were asked for.
    fn state_mut(&mut self, lp: LpId) -> &mut S;
}

/// What a global event handler ([`Model::on_global`]) sees and may do: the time, every LP's
/// state (to read, [`state`](GlobalCtx::state), or change, [`state_mut`](GlobalCtx::state_mut)),
/// sending LP events ([`send`](GlobalCtx::send)), the model's statistics (written into the
/// report's `model_stats`) and a way to schedule the next global event.
///
/// A global event at time `g` runs with every LP stopped where every LP event at or before
/// `g` has run and none after `g` has (on every executor: the sequential one, the conservative
/// ones at a barrier of every worker, Time Warp once GVT has passed `g` and before any LP event
/// after `g` runs). What it changes is therefore seen by every LP event after `g`, and by
/// nothing before, on every executor alike.
///
/// Keys: an event a global handler sends gets the key `(g + delay, ENGINE_SENDER, c)`
/// ([`ENGINE_SENDER`](crate::event::ENGINE_SENDER) as sender, `c` the next value of the
/// global-event queue's counter, taken in the order of the `send` calls and before the global
/// events the handler schedules): a key no LP ever gives (LPs send under their own ids), the
/// same under every executor, and kept by checkpoints with the queue. Among LP events at one
/// time it sorts after those LPs sent. A global event at `g` runs after every LP event at or
/// before `g`, those other global events sent at `g` included.
pub struct GlobalCtx<'a, M: Model + ?Sized> {
    pub(crate) now: Time,
    pub(crate) lps: LpId,
    pub(crate) states: &'a mut dyn LpStates<M::State>,
    pub(crate) stats: &'a mut ModelStats,
    pub(crate) series: &'a mut ModelSeries,
    pub(crate) scheduled: &'a mut Vec<Time>,
    /// The handler's sends: (destination, delay, payload), checked and keyed when it returns.
    pub(crate) sends: &'a mut Vec<(LpId, Time, M::Event)>,
}

/// Time series recorded by global events: name -> (time, value) points in time order. They
/// appear in the report's `model_series`, identical under every executor.
pub type ModelSeries = std::collections::BTreeMap<String, Vec<(Time, f64)>>;

impl<M: Model + ?Sized> std::fmt::Debug for GlobalCtx<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalCtx")
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl<M: Model + ?Sized> GlobalCtx<'_, M> {
    /// The time of this global event.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The number of LPs.
    pub fn lps(&self) -> LpId {
        self.lps
    }

    fn check_lp(&self, lp: LpId, what: &str) {
        assert!(
            lp < self.lps,
            "global event {what} LP {lp}, but there are {} LPs",
            self.lps
        );
    }

    /// LP `lp`'s state after every LP event at or before [`now`](GlobalCtx::now) (and what
    /// this and earlier global events changed). Panics if `lp` does not exist.
    pub fn state(&self, lp: LpId) -> &M::State {
        self.check_lp(lp, "read");
        self.states.state(lp)
    }

    /// LP `lp`'s state, to change it. The change is the LP's state from this global event on:
    /// every LP event after [`now`](GlobalCtx::now) sees it, under every executor (Time Warp
    /// never rolls an LP back to before it). Panics if `lp` does not exist (a panic in a
    /// global handler ends the run with [`SimError::Panic`](crate::SimError::Panic)).
    pub fn state_mut(&mut self, lp: LpId) -> &mut M::State {
        self.check_lp(lp, "changed");
        self.states.state_mut(lp)
    }

    /// Sends `payload` to LP `dst`, to arrive at `now() + delay`, like an LP's send but from
    /// no LP (its key: see [`GlobalCtx`]). The delay must be finite and > 0, and
    /// `now() + delay` must be later than `now()` in floating point: an event at `now()`
    /// itself would be an LP event at the global event's time that runs after it, while every
    /// LP event at that time has run before it. No lookahead or declared link applies (the
    /// event is placed directly into its destination's pending events while every LP is
    /// stopped). A bad destination or delay ends the run with a
    /// [`SimError::Model`](crate::SimError::Model) after the handler returns.
    pub fn send(&mut self, dst: LpId, delay: Time, payload: M::Event) {
        self.sends.push((dst, delay, payload));
    }

    /// The model's statistics; what is added here appears in the report's `model_stats`.
    pub fn stats(&mut self) -> &mut ModelStats {
        self.stats
    }

    /// Appends the point (`now`, `value`) to the time series `name` of the report's
    /// `model_series` (a statistic sampled over time, e.g. channel occupancy every minute).
    pub fn record(&mut self, name: &str, value: f64) {
        let now = self.now;
        self.series
            .entry(name.to_string())
            .or_default()
            .push((now, value));
    }

    /// The last point recorded in the series `name`, if any (for per-interval figures).
    pub fn last(&self, name: &str) -> Option<(Time, f64)> {
        self.series.get(name).and_then(|s| s.last().copied())
    }

    /// Schedules another global event `delay` after this one. The delay must be finite and
    /// > 0; anything else ends the run with a [`SimError::Model`](crate::SimError::Model).
    pub fn schedule(&mut self, delay: Time) {
        self.scheduled.push(delay);
    }
}

/// What [`Model::commit`] learns about the committed event.
#[derive(Clone, Copy, Debug)]
pub struct CommitCtx {
    /// The LP that executed the event.
    pub me: LpId,
    /// The event's timestamp.
    pub now: Time,
}

/// What a reverse handler ([`Model::reverse_handler`]) learns about the event it undoes.
#[derive(Clone, Copy, Debug)]
pub struct ReverseCtx {
    /// The LP that executed the event.
    pub me: LpId,
    /// The event's timestamp.
    pub now: Time,
}

/// The per-LP bookkeeping that the engine owns and saves with the state: the random stream and
/// the send counter. Rolling an LP back restores both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LpMeta {
    /// The LP's random stream.
    pub rng: LpRng,
    /// The LP's send counter: the next event it sends gets this `seq`.
    pub seq: u64,
}

impl LpMeta {
    /// The meta of LP `lp` at the start of a run with seed `seed`.
    pub fn new(seed: u64, lp: LpId) -> Self {
        LpMeta {
            rng: LpRng::for_lp(seed, lp),
            seq: 0,
        }
    }
}

/// A handler's view of the simulation: time, identity, randomness, sending and counters.
///
/// Sends are checked: a send to an LP that does not exist, or with a negative, non-finite or
/// below-lookahead delay, is recorded as a [`ModelError`] and ends the run with that error after
/// the handler returns.
pub struct Ctx<'a, M: Model + ?Sized> {
    now: Time,
    me: LpId,
    lps: LpId,
    min_delay: Time,
    meta: &'a mut LpMeta,
    out: &'a mut Vec<Event<M::Event>>,
    counters: &'a mut [i64],
    error: &'a mut Option<ModelError>,
    /// Preemptive Time Warp only: where a platform-mode return checks whether an earlier
    /// message waits and switches the event off the CPU (crate::preempt).
    switch: Option<&'a dyn PlatformReturn>,
}

impl<M: Model + ?Sized> std::fmt::Debug for Ctx<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("now", &self.now)
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

impl<'a, M: Model + ?Sized> Ctx<'a, M> {
    /// Builds a context. For executors: `min_delay` is the model's lookahead (0 during `init`);
    /// sent events are appended to `out`; counter deltas are added to `counters`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn new(
        now: Time,
        me: LpId,
        lps: LpId,
        min_delay: Time,
        meta: &'a mut LpMeta,
        out: &'a mut Vec<Event<M::Event>>,
        counters: &'a mut [i64],
        error: &'a mut Option<ModelError>,
    ) -> Self {
        // The time-to-zero of a `BPtr` dropped on this thread from now on.
        #[cfg(target_os = "linux")]
        crate::shm::set_time(now);
        Ctx {
            now,
            me,
            lps,
            min_delay,
            meta,
            out,
            counters,
            error,
            switch: None,
        }
    }

    /// Makes every platform-mode return of this context a check-and-switch (preemptive Time
    /// Warp, crate::preempt).
    #[inline]
    pub(crate) fn set_switch(&mut self, switch: &'a dyn PlatformReturn) {
        self.switch = Some(switch);
    }

    /// A platform-mode return: under preemptive Time Warp, the event may be switched off the
    /// CPU here (and resumed later, or dropped by a rollback); otherwise nothing.
    #[inline(always)]
    fn platform_return(&self) {
        if let Some(s) = self.switch {
            s.platform_return(self.now);
        }
    }

    /// Platform mode for the rest of an engine call, under preemptive Time Warp: a tick then
    /// switches nothing until the call returns (crate::preempt, "Ticks that preempt").
    #[inline(always)]
    fn engine_call(&self) -> Option<crate::preempt::interrupt::Platform> {
        self.switch
            .map(|_| crate::preempt::interrupt::Platform::enter())
    }

    /// A place in a long computation where the engine may take the event off the CPU: under
    /// preemptive Time Warp (`--preempt`), when a message or anti-message earlier than this
    /// event waits for one of the worker's LPs, the event is suspended here and either resumed
    /// later with nothing lost or, if the earlier message rolls this LP back, dropped (its
    /// stack unwound, its state changes and sends discarded). Elsewhere it does nothing and
    /// costs one branch. Handlers that call it must keep no effects outside `state` and `ctx`
    /// that a dropped event would leave behind (the usual rule for optimistic execution).
    #[inline(always)]
    pub fn preemption_point(&mut self) {
        let _p = self.engine_call();
        self.platform_return();
    }

    /// The current simulated time: the timestamp of the event being handled (0 in `init`).
    #[inline(always)]
    pub fn now(&self) -> Time {
        self.now
    }

    /// The LP handling the event.
    #[inline(always)]
    pub fn me(&self) -> LpId {
        self.me
    }

    /// The number of LPs in the simulation.
    #[inline(always)]
    pub fn lps(&self) -> LpId {
        self.lps
    }

    /// This LP's random stream (restored on rollback).
    #[inline(always)]
    pub fn rng(&mut self) -> &mut LpRng {
        let _p = self.engine_call();
        self.platform_return();
        &mut self.meta.rng
    }

    /// Sends `payload` to LP `dst`, to arrive at `now() + delay`. A send to another LP waits
    /// at least the model's lookahead; a send to this LP itself (a service completion, a
    /// timer) may take any delay >= 0: it crosses no channel between workers, so no executor
    /// needs the lookahead for it (docs/conservative.md, "Self-sends").
    #[inline(always)]
    pub fn send(&mut self, dst: LpId, delay: Time, payload: M::Event) {
        let _p = self.engine_call();
        let time = self.now + delay + 0.0; // `+ 0.0` turns a -0.0 into +0.0
        let allowed = delay >= self.min_delay || (dst == self.me && delay >= 0.0);
        if dst >= self.lps || !allowed || !time.is_finite() {
            self.reject(dst, delay);
            return;
        }
        let seq = self.meta.seq;
        self.meta.seq = seq + 1;
        self.out.push(Event {
            time,
            seq,
            src: self.me,
            dst,
            tag: 0,
            payload,
        });
        self.platform_return();
    }

    /// Whether LP `dst` is held by this process: always true in a run in one process; in a
    /// worker process of a multi-process run (`--procs`) or an MPI rank, whether `dst`'s worker
    /// is one of this process's. An event to such an LP stays in this process's memory (see
    /// [`partition::in_this_process`](crate::partition::in_this_process)); one to any other LP
    /// must be [`ShmSafe`](crate::shm::ShmSafe) data that means the same in every process.
    #[inline]
    pub fn same_process(&self, dst: LpId) -> bool {
        crate::partition::in_this_process(dst)
    }

    /// Moves `value` into this worker thread's shared heap and returns the one reference to
    /// it: an 8-byte [`BPtr`](crate::shm::BPtr) that may travel in events to any worker, in
    /// this process or another (`--procs`), without copying `value`. In a single-process run
    /// it is an ordinary shared pointer. Panics (reported as a resource limit, `SimError::Resource`, with the LP and
    /// time) if `value` fits no size class or the heap cannot grow: see
    /// [`try_alloc_shared`](Self::try_alloc_shared).
    #[cfg(target_os = "linux")]
    pub fn alloc_shared<T: crate::shm::ShmSafe>(&mut self, value: T) -> crate::shm::BPtr<T> {
        self.try_alloc_shared(value)
            .unwrap_or_else(|e| heap_full(e))
    }

    /// [`alloc_shared`](Self::alloc_shared), with the failure returned.
    #[cfg(target_os = "linux")]
    pub fn try_alloc_shared<T: crate::shm::ShmSafe>(
        &mut self,
        value: T,
    ) -> Result<crate::shm::BPtr<T>, crate::shm::HeapError> {
        crate::shm::with_thread_heap(|h| h.alloc(value)).and_then(|r| r)
    }

    /// A shared-heap byte array of `len` bytes, zeroed, then written by `fill` (see
    /// [`alloc_shared`](Self::alloc_shared); panics the same way).
    #[cfg(target_os = "linux")]
    pub fn alloc_bytes_with(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> crate::shm::BPtr<crate::shm::Bytes> {
        crate::shm::with_thread_heap(|h| h.alloc_bytes_with(len, fill))
            .and_then(|r| r)
            .unwrap_or_else(|e| heap_full(e))
    }

    /// A shared-heap array of `len` bytes that are never written or read (the seed's
    /// untouched payload: its memory is reserved and travels; see
    /// [`Heap::alloc_untouched`](crate::shm::Heap::alloc_untouched)).
    #[cfg(target_os = "linux")]
    pub fn alloc_untouched(&mut self, len: usize) -> crate::shm::BPtr<crate::shm::Bytes> {
        crate::shm::with_thread_heap(|h| h.alloc_untouched::<u8>(len))
            .and_then(|r| r)
            .unwrap_or_else(|e| heap_full(e))
    }

    /// A shared-heap copy of `src` (see [`alloc_shared`](Self::alloc_shared)).
    #[cfg(target_os = "linux")]
    pub fn alloc_slice<T: crate::shm::ShmSafe + Copy>(
        &mut self,
        src: &[T],
    ) -> crate::shm::BPtr<crate::shm::Slice<T>> {
        crate::shm::with_thread_heap(|h| h.alloc_slice(src))
            .and_then(|r| r)
            .unwrap_or_else(|e| heap_full(e))
    }

    /// Adds `delta` to the model counter `index` (see [`Model::counter_names`]). Counters are
    /// integers so that their totals do not depend on the order in which workers add them.
    #[inline(always)]
    pub fn count(&mut self, index: usize, delta: i64) {
        let _p = self.engine_call();
        match self.counters.get_mut(index) {
            Some(c) => {
                *c += delta;
                self.platform_return();
            }
            None => {
                if self.error.is_none() {
                    *self.error = Some(ModelError {
                        lp: self.me,
                        time: self.now,
                        message: format!(
                            "counter {index} does not exist (the model names {} counters)",
                            self.counters.len()
                        ),
                    });
                }
            }
        }
    }

    /// Fails this event with `message`: the run ends with a model error naming this LP and
    /// time (the first error an event records counts; its sends are dropped), as a rejected
    /// send does. Under Time Warp the error counts only if the event commits: an event that a
    /// rollback undoes takes its error with it, so an error met on a path that never happens
    /// (an optimistic event that saw a message a straggler cancels) does not end the run. For a
    /// handler that finds it cannot go on (a binding's handler that raised); return after it.
    pub fn fail(&mut self, message: impl Into<String>) {
        let _p = self.engine_call();
        if self.error.is_none() {
            *self.error = Some(ModelError {
                lp: self.me,
                time: self.now,
                message: message.into(),
            });
        }
    }

    #[cold]
    fn reject(&mut self, dst: LpId, delay: Time) {
        if self.error.is_some() {
            return;
        }
        let message = if dst >= self.lps {
            format!(
                "sent an event to LP {dst}, but the simulation has {} LPs (0..={})",
                self.lps,
                self.lps - 1
            )
        } else if !delay.is_finite() || delay < 0.0 {
            format!("sent an event with delay {delay}; delays must be finite and >= 0")
        } else if delay < self.min_delay {
            format!(
                "sent an event to LP {dst} with delay {delay}, below the model's declared lookahead {}: a send to another LP must wait at least the lookahead (declare a smaller Model::lookahead, or delay the send; sends to the LP itself may take any delay)",
                self.min_delay
            )
        } else {
            format!("sent an event with delay {delay} that overflows the time axis")
        };
        *self.error = Some(ModelError {
            lp: self.me,
            time: self.now,
            message,
        });
    }
}
