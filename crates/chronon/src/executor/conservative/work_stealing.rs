//! The lock-step protocol on a work-stealing runtime (seed 002 §3, its Cilk version), on a
//! dedicated rayon pool of `threads` threads.
//!
//! No thread owns an LP: every LP keeps its own pending set, and each lock-step
//! 1. computes, on the calling thread, GST (the smallest key pending anywhere; nothing is in
//!    transit between lock-steps) and InClock = min over LPs of (head time + the smallest
//!    lookahead of a link from that LP to *another* LP): nothing any LP sends during the
//!    lock-step can arrive below it. SafeTime = max(InClock, GST): every event with time
//!    `< InClock` runs, and so does the event with key GST (which nothing can precede);
//! 2. runs global events first when one is due before GST (every LP is quiescent here), and
//!    caps LP events at the next one, as the threads runtime does (`rounds.rs`); LP events
//!    they send go into their destinations' sets, and the lock-step starts over from 1;
//! 3. splits the LPs whose head is below SafeTime, in LP order, into groups of `threshold`
//!    and spawns one rayon task per group; a task runs each of its LPs' events below SafeTime
//!    in key order (an LP's sends to itself go back into its own set, so its zero-delay
//!    self-sends run where the sequential pop order puts them), and keeps sends to other LPs
//!    in its own buffer;
//! 4. after every task has finished, delivers the buffers group by group, in order, into the
//!    destinations' pending sets (a deterministic order; keys are unique, so the sets' pop
//!    order does not depend on it anyway).
//!
//! Determinism: an event run in a lock-step at time `t < InClock` on LP `i` can only be
//! preceded, in the sequential order restricted to `i`, by events already in `i`'s set or sent
//! by `i` itself: anything another LP sends in this lock-step has time `>= InClock`. This is
//! the argument of the load-balanced window (README "Load balancing") with every LP its own
//! execution unit; at zero lookahead SafeTime is GST and one event runs (README rule 3).
//! InClock here is one value for all LPs (the window-style bound at LP granularity), not the
//! per-worker link closure of `lockstep.rs`: with thousands of LPs a per-LP closure per
//! lock-step would cost more than the events, and the seed's runtimes compare *who executes*
//! under one rule. Zero-lookahead links therefore serialize a cascade to one event per
//! lock-step here, where the threads runtime runs non-crossing cascades inside a worker.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use super::shared::cap_key;
use super::ConservativeConfig;
use crate::error::{ModelError, Setting, SimError};
use crate::event::{Event, EventKey, Keyed, ENGINE_SENDER};
use crate::executor::global::GlobalQueue;
use crate::executor::links::Links;
use crate::executor::{finish_report, init_lps, LpSlot, RunConfig};
use crate::model::{CommitCtx, Ctx, LpId, LpStates, Model, Time};
use crate::queue::PendingSet;
use crate::stats::Report;

/// One LP: its slot and its own pending set.
struct Unit<S, Q> {
    id: LpId,
    slot: LpSlot<S>,
    queue: Q,
}

/// What one task produced.
struct TaskOut<P> {
    sent: Vec<Event<P>>,
    counters: Vec<i64>,
    events: u64,
    last_time: Time,
    /// The pool thread that ran the task.
    thread: usize,
    error: Option<SimError>,
}

/// What every task of one lock-step reads.
struct Step<'a, M> {
    model: &'a M,
    lps: LpId,
    links: &'a Links,
    below: Time,
    cap: EventKey,
    gst: EventKey,
}

struct States<'a, S, Q>(&'a mut [Unit<S, Q>]);

impl<S, Q> LpStates<S> for States<'_, S, Q> {
    fn state(&self, lp: LpId) -> &S {
        &self.0[lp as usize].slot.state
    }
    fn state_mut(&mut self, lp: LpId) -> &mut S {
        &mut self.0[lp as usize].slot.state
    }
}

/// The smallest lookahead of a link from each LP to another LP (`+inf` when none).
fn out_lookaheads(links: &Links, n: LpId) -> Vec<Time> {
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

/// Run-wide figures: lock-steps, tasks, LPs run, events, the latest event time, and per pool
/// thread the events and tasks it ran (the report's `workers`).
struct Totals {
    rounds: u64,
    tasks: u64,
    active_lps: u64,
    processed: u64,
    last_time: Time,
    per_thread: Vec<(u64, u64)>,
}

/// Runs the lock-step protocol with `threshold` LPs per task.
pub(super) fn run<M: Model, Q: PendingSet<Event<M::Event>> + Send>(
    model: &M,
    cfg: &RunConfig,
    cc: &ConservativeConfig,
    threshold: usize,
) -> Result<Report, SimError> {
    let threads = cc.threads;
    let pool = pool(cfg, threads)?;
    let links = Links::new(model, cfg.lps)?;
    let la_out = out_lookaheads(&links, cfg.lps);
    let mut globals = GlobalQueue::for_run(model, cfg)?;
    let mut g = globals.next_time(cfg.end);
    let end = cfg.end;

    let init_start = Instant::now();
    let n_counters = model.counter_names().len();
    let mut counters = vec![0i64; n_counters];
    let mut units = init_units::<M, Q>(model, cfg, &mut counters)?;
    let mut report = Report::new("lockstep", threads, cfg.queue.name(), cfg.lps, end);
    report.init_s = init_start.elapsed().as_secs_f64();
    report.placement = crate::placement::Placement::none(
        cfg.pin,
        "not pinned: the work-stealing runtime runs its tasks on rayon's pool",
    );

    let start = Instant::now();
    let mut outs: Vec<TaskOut<M::Event>> = Vec::new();
    let mut totals = Totals {
        rounds: 0,
        tasks: 0,
        active_lps: 0,
        processed: 0,
        last_time: 0.0,
        per_thread: vec![(0, 0); threads],
    };
    let mut stopped = false;
    let mut failure: Option<SimError> = None;
    loop {
        if cfg.progress.stop_requested() {
            stopped = true;
            break;
        }
        let (gst, in_clock) = heads(&mut units, &la_out);
        let t_min = gst.map_or(Time::INFINITY, |k| k.time);
        if g < t_min && g < end && t_min.is_finite() {
            // The safe place: every LP event before `t_min` has run, none after it has.
            let mut states = States(&mut units);
            let mut sent = Vec::new();
            globals.run_before(model, cfg.lps, &mut states, t_min, end, &mut sent)?;
            g = globals.next_time(end);
            if !sent.is_empty() {
                // Maybe before GST: compute it and InClock again.
                for e in sent {
                    units[e.dst as usize].queue.push(e);
                }
                continue;
            }
        }
        let Some(gst) = gst else { break };
        if t_min >= end || t_min.is_nan() {
            break;
        }
        let cap = cap_key(g, end);
        let step = Step {
            model,
            lps: cfg.lps,
            links: &links,
            below: in_clock,
            cap,
            gst,
        };
        let mut active: Vec<&mut Unit<M::State, Q>> = units
            .iter_mut()
            .filter_map(|u| {
                let k = u.queue.peek()?.key();
                (k < cap && (k.time < in_clock || k == gst)).then_some(u)
            })
            .collect();
        let groups = active.len().div_ceil(threshold);
        while outs.len() < groups {
            outs.push(TaskOut {
                sent: Vec::new(),
                counters: vec![0; n_counters],
                events: 0,
                last_time: 0.0,
                thread: 0,
                error: None,
            });
        }
        let step = &step;
        pool.scope(|s| {
            for (group, out) in active.chunks_mut(threshold).zip(outs.iter_mut()) {
                s.spawn(move |_| run_group(step, group, out));
            }
        });
        totals.active_lps += active.len() as u64;
        drop(active);
        totals.rounds += 1;
        totals.tasks += groups as u64;
        let ran = deliver(
            &mut outs[..groups],
            &mut units,
            &mut counters,
            &mut totals,
            &mut failure,
        );
        if failure.is_some() {
            break;
        }
        cfg.progress.add_events(ran);
        cfg.progress.set_now(t_min);
    }
    let wall = start.elapsed().as_secs_f64();
    if let Some(e) = failure {
        return Err(e);
    }
    finish(
        model, cfg, units, &counters, &globals, totals, report, stopped, wall, threshold,
    )
}

/// The dedicated rayon pool of `threads` threads.
fn pool(cfg: &RunConfig, threads: usize) -> Result<rayon::ThreadPool, SimError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("chronon-ws-{i}"))
        .start_handler({
            let cfg = cfg.clone();
            move |_| cfg.enter_thread()
        })
        .build()
        .map_err(|e| {
            SimError::config(
                Setting::Lps,
                format!("cannot start the work-stealing pool: {e}"),
            )
        })
}

/// Every LP's slot with its own pending set, holding its initial events.
fn init_units<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    counters: &mut [i64],
) -> Result<Vec<Unit<M::State, Q>>, SimError> {
    let (slots, initial) = init_lps(model, cfg, counters)?;
    let mut units: Vec<Unit<M::State, Q>> = slots
        .into_iter()
        .enumerate()
        .map(|(i, slot)| Unit {
            id: i as LpId,
            slot,
            queue: Q::new(),
        })
        .collect();
    for ev in initial {
        units[ev.dst as usize].queue.push(ev);
    }
    Ok(units)
}

/// GST (the smallest pending key; `None`: nothing is pending) and InClock, in one pass over
/// the LPs' heads.
fn heads<S, P, Q: PendingSet<Event<P>>>(
    units: &mut [Unit<S, Q>],
    la_out: &[Time],
) -> (Option<EventKey>, Time) {
    let mut gst: Option<EventKey> = None;
    let mut in_clock = Time::INFINITY;
    for (u, la) in units.iter_mut().zip(la_out) {
        if let Some(k) = u.queue.peek().map(|e| e.key()) {
            if gst.is_none_or(|m| k < m) {
                gst = Some(k);
            }
            in_clock = in_clock.min(k.time + la);
        }
    }
    (gst, in_clock)
}

/// After a lock-step's tasks: adds their counters and figures, keeps the earliest error, and
/// delivers their sends group by group in order (deterministic). Returns the events run.
fn deliver<S, P, Q: PendingSet<Event<P>>>(
    outs: &mut [TaskOut<P>],
    units: &mut [Unit<S, Q>],
    counters: &mut [i64],
    totals: &mut Totals,
    failure: &mut Option<SimError>,
) -> u64 {
    let mut ran = 0;
    let threads = totals.per_thread.len();
    for out in outs {
        for (c, x) in counters.iter_mut().zip(out.counters.iter_mut()) {
            *c += std::mem::take(x);
        }
        let events = std::mem::take(&mut out.events);
        ran += events;
        let t = &mut totals.per_thread[out.thread.min(threads - 1)];
        t.0 += events;
        t.1 += 1;
        totals.last_time = totals.last_time.max(out.last_time);
        if let Some(e) = out.error.take() {
            *failure = Some(earlier(e, failure.take()));
        }
        // Group order, then each task's send order: deterministic.
        for e in out.sent.drain(..) {
            units[e.dst as usize].queue.push(e);
        }
    }
    totals.processed += ran;
    ran
}

/// The report, once the last lock-step ran (a run that ends at a checkpoint's cut saves it).
#[allow(clippy::too_many_arguments)]
fn finish<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    units: Vec<Unit<M::State, Q>>,
    counters: &[i64],
    globals: &GlobalQueue,
    totals: Totals,
    mut report: Report,
    stopped: bool,
    wall: f64,
    threshold: usize,
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
    st.insert("runtime_work_stealing".into(), 1.0);
    st.insert("threshold".into(), threshold as f64);
    st.insert("rounds".into(), totals.rounds as f64);
    if totals.rounds > 0 {
        let r = totals.rounds as f64;
        st.insert("round_us".into(), wall * 1e6 / r);
        st.insert("events_per_round".into(), totals.processed as f64 / r);
        st.insert("tasks_per_round".into(), totals.tasks as f64 / r);
        st.insert("lps_per_round".into(), totals.active_lps as f64 / r);
    }
    for (events, tasks) in totals.per_thread {
        let mut m = std::collections::BTreeMap::new();
        m.insert("events".to_string(), events as f64);
        m.insert("tasks".to_string(), tasks as f64);
        report.workers.push(m);
    }
    Ok(report)
}

/// One task: runs each LP of `group` below the lock-step's SafeTime, in key order.
fn run_group<M: Model, Q: PendingSet<Event<M::Event>>>(
    step: &Step<'_, M>,
    group: &mut [&mut Unit<M::State, Q>],
    out: &mut TaskOut<M::Event>,
) {
    let mut current: (LpId, Time) = (0, 0.0);
    out.thread = rayon::current_thread_index().unwrap_or(0);
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), SimError> {
        let mut buf = Vec::with_capacity(16);
        let mut error: Option<ModelError> = None;
        for unit in group.iter_mut() {
            let mut first = true;
            loop {
                let run = match unit.queue.peek() {
                    Some(e) => {
                        let k = e.key();
                        k < step.cap && (k.time < step.below || (first && k == step.gst))
                    }
                    None => false,
                };
                first = false;
                if !run {
                    break;
                }
                let ev = unit.queue.pop().expect("the head exists");
                current = (unit.id, ev.time);
                execute(step, unit, ev, &mut buf, &mut error, out)?;
            }
        }
        Ok(())
    }));
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => out.error = Some(e),
        Err(payload) => {
            out.error = Some(SimError::from_panic(current.0, current.1, payload.as_ref()))
        }
    }
}

#[inline]
fn execute<M: Model, Q: PendingSet<Event<M::Event>>>(
    step: &Step<'_, M>,
    unit: &mut Unit<M::State, Q>,
    ev: Event<M::Event>,
    buf: &mut Vec<Event<M::Event>>,
    error: &mut Option<ModelError>,
    out: &mut TaskOut<M::Event>,
) -> Result<(), SimError> {
    let now = ev.time;
    let me = unit.id;
    let slot = &mut unit.slot;
    {
        let mut ctx = Ctx::new(
            now,
            me,
            step.lps,
            step.links.lookahead,
            &mut slot.meta,
            buf,
            &mut out.counters,
            error,
        );
        step.model.on_event(&mut slot.state, &ev.payload, &mut ctx);
    }
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
            out.sent.push(e);
        }
    }
    out.events += 1;
    out.last_time = out.last_time.max(now);
    Ok(())
}
