//! The lock-step protocol at LP granularity, shared by the work-stealing (`work_stealing.rs`)
//! and active-threads (`active_threads.rs`) runtimes: what one piece of a lock-step does to
//! its LPs, and what it hands back so that the next lock-step's SafeTime needs no serial pass.
//!
//! Every LP keeps its own pending set and its own inbox. A lock-step with SafeTime bound
//! `below` (= InClock) and GST `gst` runs, for each LP of a piece ([`run_units`]):
//! 1. the LP's inbox (events other LPs sent it in the previous lock-step) moves into its
//!    pending set;
//! 2. every event with key `< cap` and time `< below` runs in key order, and so does the event
//!    with key `gst` (which nothing can precede); sends to the LP itself go back into its set,
//!    sends to another LP into that LP's inbox (one mutex per LP, held only for the push);
//! 3. the piece's [`Partial`] takes the LP's head key and head time + the LP's smallest
//!    out-lookahead, and for every send to another LP its key and its time + the destination's
//!    out-lookahead (that event will be the destination's pending event next lock-step).
//!
//! Reduced over every piece (in any grouping: min, sum and max are associative and
//! commutative), the partials give the next lock-step's GST (the smallest pending key
//! anywhere: nothing is in transit between lock-steps except in inboxes, whose events the
//! senders counted) and InClock (nothing any LP sends in the next lock-step can arrive below
//! it). The determinism argument is in `work_stealing.rs`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use crate::error::{ModelError, SimError};
use crate::event::{Event, EventKey, Keyed, ENGINE_SENDER};
use crate::executor::links::Links;
use crate::executor::{finish_report, init_lps, LpSlot, RunConfig};
use crate::model::{CommitCtx, Ctx, LpId, LpStates, Model, Time};
use crate::queue::PendingSet;
use crate::stats::Report;

/// One LP: its slot, its own pending set and its own send buffer (kept across events and
/// lock-steps, so a warm LP's sends allocate nothing).
pub(super) struct Unit<S, P, Q> {
    pub(super) id: LpId,
    pub(super) slot: LpSlot<S>,
    pub(super) queue: Q,
    buf: Vec<Event<P>>,
}

/// The unit of an LP of model `M` with pending set `Q`.
pub(super) type MUnit<M, Q> = Unit<<M as Model>::State, <M as Model>::Event, Q>;

/// Each LP's inbox: what other LPs sent it during the current lock-step. A drained inbox keeps
/// its capacity for the next lock-step.
pub(super) struct Inboxes<P>(Vec<Mutex<Vec<Event<P>>>>);

impl<P> Inboxes<P> {
    pub(super) fn new(lps: LpId) -> Self {
        Inboxes((0..lps).map(|_| Mutex::new(Vec::new())).collect())
    }

    fn push(&self, e: Event<P>) {
        let mut ib = self.0[e.dst as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        ib.push(e);
    }

    /// Moves LP `id`'s inbox into its pending set.
    fn drain_into<Q: PendingSet<Event<P>>>(&self, id: LpId, queue: &mut Q) {
        let mut ib = self.0[id as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for e in ib.drain(..) {
            queue.push(e);
        }
    }
}

/// What every piece of one lock-step reads.
pub(super) struct Step<'a, M: Model> {
    pub(super) model: &'a M,
    pub(super) lps: LpId,
    pub(super) links: &'a Links,
    /// Each LP's smallest lookahead to another LP.
    pub(super) la_out: &'a [Time],
    pub(super) inboxes: &'a Inboxes<M::Event>,
    /// InClock: events with time below it run.
    pub(super) below: Time,
    /// No event with key at or above it runs (the next global event).
    pub(super) cap: EventKey,
    /// GST: the event with this key runs too (`None`: the pass only gathers the heads).
    pub(super) gst: Option<EventKey>,
}

/// What a piece of a lock-step hands back; [`Partial::merge`] reduces two pieces.
pub(super) struct Partial {
    /// The smallest pending key after the piece (its LPs' heads and its sends to others).
    pub(super) gst: Option<EventKey>,
    /// The smallest head time + out-lookahead after the piece, sends included.
    pub(super) in_clock: Time,
    pub(super) events: u64,
    /// LPs that ran at least one event.
    pub(super) lps_run: u64,
    pub(super) last_time: Time,
    pub(super) counters: Vec<i64>,
    pub(super) error: Option<SimError>,
}

impl Partial {
    pub(super) fn new(counters: usize) -> Self {
        Partial {
            gst: None,
            in_clock: Time::INFINITY,
            events: 0,
            lps_run: 0,
            last_time: 0.0,
            counters: vec![0; counters],
            error: None,
        }
    }

    /// Counts `key` as pending on an LP whose smallest out-lookahead is `la`.
    #[inline]
    pub(super) fn pending(&mut self, key: EventKey, la: Time) {
        if self.gst.is_none_or(|m| key < m) {
            self.gst = Some(key);
        }
        self.in_clock = self.in_clock.min(key.time + la);
    }

    /// Both pieces as one.
    pub(super) fn merge(mut self, other: Partial) -> Partial {
        if let Some(k) = other.gst {
            self.pending(k, Time::INFINITY);
        }
        self.in_clock = self.in_clock.min(other.in_clock);
        self.events += other.events;
        self.lps_run += other.lps_run;
        self.last_time = self.last_time.max(other.last_time);
        for (c, x) in self.counters.iter_mut().zip(other.counters) {
            *c += x;
        }
        if let Some(e) = other.error {
            self.error = Some(earlier(e, self.error.take()));
        }
        self
    }
}

/// The smallest lookahead of a link from each LP to another LP (`+inf` when none).
pub(super) fn out_lookaheads(links: &Links, n: LpId) -> Vec<Time> {
    (0..n)
        .map(|lp| match links.of(lp) {
            None if n > 1 => links.lookahead,
            None => Time::INFINITY,
            Some(ls) => ls
                .iter()
                .filter(|l| l.0 != lp)
                .map(|l| l.1)
                .fold(Time::INFINITY, f64::min),
        })
        .collect()
}

/// Of two errors, the one at the earliest (time, LP), as `Shared::record_error` chooses.
fn earlier(a: SimError, b: Option<SimError>) -> SimError {
    let rank = |e: &SimError| match e {
        SimError::Model(m) => (m.time, m.lp),
        SimError::Panic { lp, time, .. } => (*time, *lp),
        _ => (f64::INFINITY, ENGINE_SENDER),
    };
    match b {
        Some(b) if rank(&b) <= rank(&a) => b,
        _ => a,
    }
}

/// Every LP's slot with its own pending set, holding its initial events.
pub(super) fn init_units<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    counters: &mut [i64],
) -> Result<Vec<MUnit<M, Q>>, SimError> {
    let (slots, initial) = init_lps(model, cfg, counters)?;
    let mut units: Vec<MUnit<M, Q>> = slots
        .into_iter()
        .enumerate()
        .map(|(i, slot)| Unit {
            id: i as LpId,
            slot,
            queue: Q::new(),
            buf: Vec::new(),
        })
        .collect();
    for ev in initial {
        units[ev.dst as usize].queue.push(ev);
    }
    Ok(units)
}

/// The LPs held as consecutive pieces of `per` LPs (the last may be shorter), as global events
/// see them at the safe place (every LP quiescent).
pub(super) struct States<'a, 'b, S, P, Q> {
    pub(super) pieces: &'a mut [&'b mut [Unit<S, P, Q>]],
    pub(super) per: usize,
}

impl<S, P, Q> States<'_, '_, S, P, Q> {
    fn unit(&mut self, lp: LpId) -> &mut Unit<S, P, Q> {
        let i = lp as usize;
        &mut self.pieces[i / self.per][i % self.per]
    }
}

impl<S, P, Q: PendingSet<Event<P>>> States<'_, '_, S, P, Q> {
    /// Hands the LP events that global events sent to their LPs' pending sets and adds their
    /// keys to `heads`, the partial the next lock-step's SafeTime comes from.
    pub(super) fn deliver(&mut self, sent: Vec<Event<P>>, la_out: &[Time], heads: &mut Partial) {
        for e in sent {
            heads.pending(e.key(), la_out[e.dst as usize]);
            self.unit(e.dst).queue.push(e);
        }
    }
}

impl<S, P, Q> LpStates<S> for States<'_, '_, S, P, Q> {
    fn state(&self, lp: LpId) -> &S {
        let i = lp as usize;
        &self.pieces[i / self.per][i % self.per].slot.state
    }

    fn state_mut(&mut self, lp: LpId) -> &mut S {
        &mut self.unit(lp).slot.state
    }
}

/// One piece of a lock-step: runs each of `units` below SafeTime in key order and adds its
/// heads and sends to `part` (module doc). A model error or panic stops the piece and is
/// recorded in `part.error`.
pub(super) fn run_units<M: Model, Q: PendingSet<Event<M::Event>>>(
    step: &Step<'_, M>,
    units: &mut [Unit<M::State, M::Event, Q>],
    part: &mut Partial,
) {
    let mut current: (LpId, Time) = (0, 0.0);
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), SimError> {
        let mut error: Option<ModelError> = None;
        for unit in units.iter_mut() {
            step.inboxes.drain_into(unit.id, &mut unit.queue);
            let mut first = true;
            let mut ran = false;
            while let Some(k) = unit.queue.peek().map(|e| e.key()) {
                let due = k.time < step.below || (first && Some(k) == step.gst);
                if k >= step.cap || !due {
                    break;
                }
                first = false;
                ran = true;
                let ev = unit.queue.pop().expect("the head exists");
                current = (unit.id, ev.time);
                execute(step, unit, ev, &mut error, part)?;
            }
            part.lps_run += ran as u64;
            if let Some(k) = unit.queue.peek().map(|e| e.key()) {
                part.pending(k, step.la_out[unit.id as usize]);
            }
        }
        Ok(())
    }));
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => part.error = Some(earlier(e, part.error.take())),
        Err(payload) => {
            let e = SimError::from_panic(current.0, current.1, payload.as_ref());
            part.error = Some(earlier(e, part.error.take()));
        }
    }
}

#[inline]
fn execute<M: Model, Q: PendingSet<Event<M::Event>>>(
    step: &Step<'_, M>,
    unit: &mut Unit<M::State, M::Event, Q>,
    ev: Event<M::Event>,
    error: &mut Option<ModelError>,
    part: &mut Partial,
) -> Result<(), SimError> {
    let now = ev.time;
    let me = unit.id;
    let slot = &mut unit.slot;
    let buf = &mut unit.buf;
    let timed = slot.cost.start();
    {
        let mut ctx = Ctx::new(
            now,
            me,
            step.lps,
            step.links.lookahead,
            &mut slot.meta,
            buf,
            &mut part.counters,
            error,
        );
        step.model.on_event(&mut slot.state, &ev.payload, &mut ctx);
    }
    slot.cost.stop(timed);
    if let Some(e) = error.take() {
        buf.clear();
        return Err(SimError::Model(e));
    }
    if step.links.declared {
        if let Err(e) = step.links.check(me, now, buf) {
            buf.clear();
            return Err(SimError::Model(e));
        }
    }
    step.model.commit(&ev.payload, &CommitCtx { me, now });
    slot.digest.commit(&ev.key());
    crate::trace::committed(me, &ev.key());
    for e in buf.drain(..) {
        if e.dst == me {
            unit.queue.push(e);
        } else {
            part.pending(e.key(), step.la_out[e.dst as usize]);
            step.inboxes.push(e);
        }
    }
    part.events += 1;
    part.last_time = part.last_time.max(now);
    Ok(())
}

/// Run-wide figures: lock-steps, pieces run, LPs that ran, events, the latest event time.
#[derive(Default)]
pub(super) struct Totals {
    pub(super) rounds: u64,
    pub(super) pieces: u64,
    pub(super) active_lps: u64,
    pub(super) processed: u64,
    pub(super) last_time: Time,
}

/// The report, once the last lock-step ran (a run that ends at a checkpoint's cut saves it).
/// `units`: every LP in LP order, inboxes drained.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    units: Vec<Unit<M::State, M::Event, Q>>,
    counters: &[i64],
    globals: &crate::executor::global::GlobalQueue,
    totals: &Totals,
    mut report: Report,
    stopped: bool,
    wall: f64,
) -> Result<Report, SimError> {
    let pending: usize = units.iter().map(|u| u.queue.len()).sum();
    let (lps, mut queues): (Vec<LpSlot<M::State>>, Vec<Q>) =
        units.into_iter().map(|u| (u.slot, u.queue)).unzip();
    report.processed = totals.processed;
    report.complete = !stopped;
    report.last_time = totals.last_time;
    cfg.progress.set_now(totals.last_time);
    let end = cfg.stats_end(report.complete, report.last_time);
    finish_report(model, &lps, counters, end, &mut report)?;
    globals.add_to(&mut report);
    report.set_wall(wall);
    report.pending_at_end = pending as u64;
    if cfg.saving() && !stopped {
        let mut events = Vec::with_capacity(pending);
        for q in &mut queues {
            while let Some(e) = q.pop() {
                events.push(e);
            }
        }
        crate::executor::checkpoint::write_split::<M>(
            cfg,
            (0, usize::MAX),
            lps,
            events,
            counters,
            Some(globals),
        );
    }
    let st = &mut report.executor_stats;
    st.insert("rounds".into(), totals.rounds as f64);
    if totals.rounds > 0 {
        let r = totals.rounds as f64;
        st.insert("round_us".into(), wall * 1e6 / r);
        st.insert("events_per_round".into(), totals.processed as f64 / r);
        st.insert("tasks_per_round".into(), totals.pieces as f64 / r);
        st.insert("lps_per_round".into(), totals.active_lps as f64 / r);
    }
    Ok(report)
}

/// Moves every inbox into its LP's pending set (after the last lock-step).
pub(super) fn drain_all<S, P, Q: PendingSet<Event<P>>>(
    inboxes: &Inboxes<P>,
    units: &mut [Unit<S, P, Q>],
) {
    for u in units {
        inboxes.drain_into(u.id, &mut u.queue);
    }
}

/// A runtime's own figures in its report: its name's marker (`runtime_<name>` = 1), the
/// threshold, its count of execution units (`unit` = `count`), and per worker thread the
/// events and tasks it ran.
pub(super) fn runtime_figures(
    report: &mut Report,
    runtime: &str,
    threshold: usize,
    unit: (&str, u64),
    per_worker: impl IntoIterator<Item = (u64, u64)>,
) {
    let st = &mut report.executor_stats;
    st.insert(format!("runtime_{runtime}"), 1.0);
    st.insert("threshold".into(), threshold as f64);
    st.insert(unit.0.into(), unit.1 as f64);
    for (events, tasks) in per_worker {
        let mut m = std::collections::BTreeMap::new();
        m.insert("events".to_string(), events as f64);
        m.insert("tasks".to_string(), tasks as f64);
        report.workers.push(m);
    }
}
