//! The lock-step protocol on a work-stealing runtime (seed 002 §3, its Cilk version), on a
//! dedicated rayon pool of `threads` threads.
//!
//! No thread owns an LP: every LP keeps its own pending set and inbox (`lp_step.rs`). Each
//! lock-step spawns the whole LP range by divide and conquer, as the seed's Cilk version
//! does: `rayon::join` splits the range in two (at a multiple of `threshold`) until a piece
//! holds at most `threshold` LPs, and each leaf task, for each of its LPs, moves the inbox
//! into the pending set, runs the events below SafeTime in key order and notes what is left
//! (`lp_step::run_units`). Each join returns the merge of its two halves, so the root hands
//! back the next lock-step's GST and InClock and the lock-step's events, counters and
//! earliest error: the scan for safe events and the reduction are the spawned work, and the
//! calling thread only decides SafeTime = max(InClock, GST) from the root's result:
//! 1. every event with time `< InClock` runs, and so does the event with key GST (which
//!    nothing can precede);
//! 2. global events run first when one is due before GST (between two lock-steps every LP is
//!    quiescent), and LP events are capped at the next one, as the threads runtime does
//!    (`rounds.rs`);
//! 3. sends to the LP itself go back into its own set (so its zero-delay self-sends run where
//!    the sequential pop order puts them); sends to another LP go into the destination's
//!    inbox, which the destination's leaf empties at the start of the next lock-step.
//!
//! Determinism: an event run in a lock-step at time `t < InClock` on LP `i` can only be
//! preceded, in the sequential order restricted to `i`, by events already in `i`'s set or
//! inbox, or sent by `i` itself: anything another LP sends in this lock-step has time
//! `>= InClock` (InClock is the smallest head time + out-lookahead over all LPs, counting the
//! events waiting in inboxes at their destinations), so it neither runs in this lock-step nor
//! precedes what does. Which thread runs a leaf, and in which order the leaves run or push
//! into an inbox, changes nothing: keys are unique, so a pending set's pop order does not
//! depend on its push order, and the reduction (min, sum, max, earliest error) does not
//! depend on the grouping. This is the argument of the load-balanced window (README "Load
//! balancing") with every LP its own execution unit; at zero lookahead SafeTime is GST and one
//! event runs (README rule 3). InClock here is one value for all LPs (the window-style bound
//! at LP granularity), not the per-worker link closure of `lockstep.rs`: with thousands of
//! LPs a per-LP closure per lock-step would cost more than the events, and the seed's
//! runtimes compare *who executes* under one rule. Zero-lookahead links therefore serialize a
//! cascade to one event per lock-step here, where the threads runtime runs non-crossing
//! cascades inside a worker.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::lp_step::{self, Inboxes, Partial, Step, Totals, Unit};
use super::shared::cap_key;
use super::ConservativeConfig;
use crate::error::{Setting, SimError};
use crate::event::Event;
use crate::executor::global::GlobalQueue;
use crate::executor::links::Links;
use crate::executor::RunConfig;
use crate::model::{Model, Time};
use crate::queue::PendingSet;
use crate::stats::Report;

/// Per pool thread: events and leaf tasks it ran.
struct PerThread(Vec<(AtomicU64, AtomicU64)>);

/// Runs the lock-step protocol with leaves of at most `threshold` LPs.
pub(super) fn run<M: Model, Q: PendingSet<Event<M::Event>> + Send>(
    model: &M,
    cfg: &RunConfig,
    cc: &ConservativeConfig,
    threshold: usize,
) -> Result<Report, SimError> {
    let threads = cc.threads;
    let pool = pool(cfg, threads)?;
    let links = Links::new(model, cfg.lps)?;
    let la_out = lp_step::out_lookaheads(&links, cfg.lps);
    let inboxes = Inboxes::new(cfg.lps);
    let mut globals = GlobalQueue::for_run(model, cfg)?;
    let mut g = globals.next_time(cfg.end);
    let end = cfg.end;

    let init_start = Instant::now();
    let n_counters = model.counter_names().len();
    let mut counters = vec![0i64; n_counters];
    let mut units = lp_step::init_units::<M, Q>(model, cfg, &mut counters)?;
    let mut report = Report::new("lockstep", threads, cfg.queue.name(), cfg.lps, end);
    report.init_s = init_start.elapsed().as_secs_f64();
    report.placement = crate::placement::Placement::none(
        cfg.pin,
        "not pinned: the work-stealing runtime runs its tasks on rayon's pool",
    );

    let start = Instant::now();
    let per_thread = PerThread((0..threads).map(|_| Default::default()).collect());
    let leaves = units.len().div_ceil(threshold) as u64;
    let mut totals = Totals::default();
    let mut step = Step {
        model,
        lps: cfg.lps,
        links: &links,
        la_out: &la_out,
        inboxes: &inboxes,
        below: Time::NEG_INFINITY,
        cap: cap_key(g, end),
        gst: None,
    };
    // A first pass runs nothing (no GST, nothing below -inf): it gathers the heads.
    let mut heads = spawn(&pool, &step, &mut units, threshold, n_counters, &per_thread);
    let mut stopped = false;
    let mut failure: Option<SimError> = None;
    loop {
        if cfg.progress.stop_requested() {
            stopped = true;
            break;
        }
        let t_min = heads.gst.map_or(Time::INFINITY, |k| k.time);
        if g < t_min && g < end && t_min.is_finite() {
            // The safe place: every LP event before `t_min` has run, none after it has.
            let per = units.len().max(1);
            let mut all = [&mut units[..]];
            let mut states = lp_step::States {
                pieces: &mut all,
                per,
            };
            let mut sent = Vec::new();
            globals.run_before(model, cfg.lps, &mut states, t_min, end, &mut sent)?;
            // LP events the global events sent: pending now, so in GST and InClock.
            states.deliver(sent, &la_out, &mut heads);
            g = globals.next_time(end);
        }
        let Some(gst) = heads.gst else { break };
        if gst.time >= end || gst.time.is_nan() {
            break;
        }
        step.below = heads.in_clock;
        step.cap = cap_key(g, end);
        step.gst = Some(gst);
        heads = spawn(&pool, &step, &mut units, threshold, n_counters, &per_thread);
        totals.rounds += 1;
        totals.pieces += leaves;
        totals.active_lps += heads.lps_run;
        totals.processed += heads.events;
        totals.last_time = totals.last_time.max(heads.last_time);
        for (c, x) in counters.iter_mut().zip(&heads.counters) {
            *c += x;
        }
        if let Some(e) = heads.error.take() {
            failure = Some(e);
            break;
        }
        cfg.progress.add_events(heads.events);
        cfg.progress.set_now(t_min);
    }
    let wall = start.elapsed().as_secs_f64();
    if let Some(e) = failure {
        return Err(e);
    }
    lp_step::drain_all(&inboxes, &mut units);
    let mut report = lp_step::finish(
        model, cfg, units, &counters, &globals, &totals, report, stopped, wall,
    )?;
    lp_step::runtime_figures(
        &mut report,
        "work_stealing",
        threshold,
        ("leaves", leaves),
        per_thread
            .0
            .into_iter()
            .map(|(e, t)| (e.into_inner(), t.into_inner())),
    );
    Ok(report)
}

/// One lock-step: the divide and conquer over every LP on `pool`, reduced to one partial.
fn spawn<M: Model, Q: PendingSet<Event<M::Event>> + Send>(
    pool: &rayon::ThreadPool,
    step: &Step<'_, M>,
    units: &mut [Unit<M::State, M::Event, Q>],
    threshold: usize,
    n_counters: usize,
    per_thread: &PerThread,
) -> Partial {
    pool.install(|| split(step, units, threshold, n_counters, per_thread))
}

/// Splits `units` at a multiple of `threshold` until a piece has at most `threshold` LPs, runs
/// the leaves (`lp_step::run_units`) and merges the halves on the way back.
fn split<M: Model, Q: PendingSet<Event<M::Event>> + Send>(
    step: &Step<'_, M>,
    units: &mut [Unit<M::State, M::Event, Q>],
    threshold: usize,
    n_counters: usize,
    per_thread: &PerThread,
) -> Partial {
    if units.len() <= threshold {
        let mut part = Partial::new(n_counters);
        lp_step::run_units(step, units, &mut part);
        let i = rayon::current_thread_index().unwrap_or(0);
        let t = &per_thread.0[i.min(per_thread.0.len() - 1)];
        // Ordering: figures only, read after the pool's join, which orders them.
        t.0.fetch_add(part.events, Ordering::Relaxed);
        t.1.fetch_add(1, Ordering::Relaxed);
        return part;
    }
    let leaves = units.len().div_ceil(threshold);
    let (a, b) = units.split_at_mut(leaves / 2 * threshold);
    let (pa, pb) = rayon::join(
        || split(step, a, threshold, n_counters, per_thread),
        || split(step, b, threshold, n_counters, per_thread),
    );
    pa.merge(pb)
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
