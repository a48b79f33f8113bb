//! The lock-step protocol on light-weight threads (seed 002 §3, its Active threads version):
//! `threads` worker threads, each the scheduler of many light-weight threads that each own
//! `threshold` consecutive LPs for the whole run.
//!
//! A light-weight thread is a stackful coroutine (`crate::preempt::Context`, corosensei) on its
//! own stack. Light-weight thread `c` owns LPs `[c·threshold, (c+1)·threshold)` and is bound to
//! worker `c mod threads` for the whole run (corosensei coroutines are not `Send`, and the
//! seed's Active threads also bind their bundles to processors), so the round-robin spreads
//! consecutive LP blocks, and their load, over the workers. Each lock-step:
//! 1. the coordinator (the calling thread) publishes SafeTime (InClock, GST and the cap at the
//!    next global event) and meets the workers at the start barrier;
//! 2. each worker resumes its light-weight threads in turn; one runs its LPs' safe events
//!    (`lp_step::run_units`: inbox into pending set, events below SafeTime in key order, what
//!    is left noted), leaves its partial result and yields back to its worker's scheduler
//!    until the next lock-step; the worker merges the partials of its light-weight threads;
//! 3. at the end barrier the coordinator merges the workers' partials (in worker order) into
//!    the next GST and InClock, and runs the global events due before GST while every LP is
//!    quiescent, as the other runtimes do.
//!
//! Memory: each LP keeps its own send buffer and its own inbox for the whole run, so the
//! storage of the events an LP sends is reused every lock-step (`lp_step.rs`, shared with the
//! work-stealing runtime), and each light-weight thread's stack is mapped once.
//!
//! Determinism: the argument of `work_stealing.rs`; who runs a piece, and in which order, does
//! not matter.

use std::cell::{Cell, RefCell};
use std::sync::Mutex;
use std::time::Instant;

use super::lp_step::{self, Inboxes, MUnit, Partial, Step, Totals};
use super::shared::cap_key;
use super::ConservativeConfig;
use crate::barrier::{Barrier, BarrierKind};
use crate::error::{Setting, SimError};
use crate::event::{Event, EventKey};
use crate::executor::global::GlobalQueue;
use crate::executor::links::Links;
use crate::executor::RunConfig;
use crate::model::{Model, Time};
use crate::preempt::{Context, StackPool, Step as CoStep};
use crate::queue::PendingSet;
use crate::stats::Report;

/// What the coordinator publishes for one lock-step (`None`: stop).
#[derive(Clone, Copy)]
struct Bound {
    below: Time,
    cap: EventKey,
    gst: Option<EventKey>,
}

/// What the coordinator and the workers share.
struct Control<'a, M: Model, Q> {
    model: &'a M,
    lps: crate::model::LpId,
    links: &'a Links,
    la_out: &'a [Time],
    inboxes: &'a Inboxes<M::Event>,
    pieces: &'a [Mutex<Vec<MUnit<M, Q>>>],
    n_counters: usize,
    threads: usize,
    bound: Mutex<Option<Bound>>,
    barrier: Box<dyn Barrier>,
    /// Each worker's merged partial of the last lock-step, and its figures (events, pieces).
    slots: Vec<Mutex<(Option<Partial>, u64, u64)>>,
    /// A worker that could not map its stacks.
    failed: Mutex<Option<SimError>>,
}

/// Runs the lock-step protocol with `threshold` LPs per light-weight thread.
pub(super) fn run<M: Model, Q: PendingSet<Event<M::Event>> + Send>(
    model: &M,
    cfg: &RunConfig,
    cc: &ConservativeConfig,
    threshold: usize,
) -> Result<Report, SimError> {
    let threads = cc.threads;
    let links = Links::new(model, cfg.lps)?;
    let la_out = lp_step::out_lookaheads(&links, cfg.lps);
    let inboxes = Inboxes::new(cfg.lps);
    let mut globals = GlobalQueue::for_run(model, cfg)?;

    let init_start = Instant::now();
    let n_counters = model.counter_names().len();
    let mut counters = vec![0i64; n_counters];
    let mut units = lp_step::init_units::<M, Q>(model, cfg, &mut counters)?.into_iter();
    let mut pieces = Vec::new();
    loop {
        let piece: Vec<_> = units.by_ref().take(threshold).collect();
        if piece.is_empty() {
            break;
        }
        pieces.push(Mutex::new(piece));
    }
    let mut report = Report::new("lockstep", threads, cfg.queue.name(), cfg.lps, cfg.end);
    report.init_s = init_start.elapsed().as_secs_f64();
    report.placement = crate::placement::Placement::none(
        cfg.pin,
        "not pinned: each light-weight thread is bound to a worker thread, the workers to no core",
    );
    let ctl = Control {
        model,
        lps: cfg.lps,
        links: &links,
        la_out: &la_out,
        inboxes: &inboxes,
        pieces: &pieces,
        n_counters,
        threads,
        bound: Mutex::new(None),
        barrier: BarrierKind::default().build(threads + 1),
        slots: (0..threads).map(|_| Mutex::new((None, 0, 0))).collect(),
        failed: Mutex::new(None),
    };
    let start = Instant::now();
    let mut totals = Totals::default();
    let (stopped, result) = std::thread::scope(|s| {
        for w in 0..threads {
            let ctl = &ctl;
            let cfg = cfg.clone();
            std::thread::Builder::new()
                .name(format!("chronon-at-{w}"))
                .spawn_scoped(s, move || {
                    cfg.enter_thread();
                    worker(ctl, w)
                })
                .expect("the system starts a worker thread");
        }
        let out = coordinate(&ctl, cfg, &mut globals, &mut counters, &mut totals);
        // Every exit of `coordinate` lands here: the workers stop at the next start barrier.
        publish(&ctl, None);
        out
    });
    let wall = start.elapsed().as_secs_f64();
    result?;
    let figures: Vec<(u64, u64)> = ctl
        .slots
        .iter()
        .map(|s| {
            let s = s.lock().unwrap_or_else(|p| p.into_inner());
            (s.1, s.2)
        })
        .collect();
    drop(ctl);
    let lwts = pieces.len();
    let mut units: Vec<_> = pieces
        .into_iter()
        .flat_map(|p| p.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    lp_step::drain_all(&inboxes, &mut units);
    let mut report = lp_step::finish(
        model, cfg, units, &counters, &globals, &totals, report, stopped, wall,
    )?;
    lp_step::runtime_figures(
        &mut report,
        "active_threads",
        threshold,
        ("light_weight_threads", lwts as u64),
        figures,
    );
    Ok(report)
}

/// Publishes `bound` and meets the workers at the start barrier.
fn publish<M: Model, Q>(ctl: &Control<'_, M, Q>, bound: Option<Bound>) {
    *ctl.bound.lock().unwrap_or_else(|p| p.into_inner()) = bound;
    ctl.barrier.wait(ctl.threads);
}

/// One lock-step under `bound`, as the coordinator sees it: the workers' partials merged in
/// worker order.
fn lock_step<M: Model, Q>(ctl: &Control<'_, M, Q>, bound: Bound) -> Partial {
    publish(ctl, Some(bound));
    ctl.barrier.wait(ctl.threads);
    let mut all = Partial::new(ctl.n_counters);
    for slot in &ctl.slots {
        let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = s.0.take() {
            all = all.merge(p);
        }
    }
    all
}

/// The coordinator's loop: SafeTime from the last lock-step's partial, global events at the
/// safe place, one lock-step. Returns whether the run was stopped.
fn coordinate<M: Model, Q: PendingSet<Event<M::Event>>>(
    ctl: &Control<'_, M, Q>,
    cfg: &RunConfig,
    globals: &mut GlobalQueue,
    counters: &mut [i64],
    totals: &mut Totals,
) -> (bool, Result<(), SimError>) {
    let end = cfg.end;
    let mut g = globals.next_time(end);
    // A first pass runs nothing (no GST, nothing below -inf): it gathers the heads.
    let mut bound = Bound {
        below: Time::NEG_INFINITY,
        cap: cap_key(g, end),
        gst: None,
    };
    let mut heads = lock_step(ctl, bound);
    if let Some(e) = ctl.failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return (false, Err(e));
    }
    loop {
        if cfg.progress.stop_requested() {
            return (true, Ok(()));
        }
        let t_min = heads.gst.map_or(Time::INFINITY, |k| k.time);
        if g < t_min && g < end && t_min.is_finite() {
            // The safe place: every LP event before `t_min` has run, none after it has.
            let mut guards: Vec<_> = ctl
                .pieces
                .iter()
                .map(|p| p.lock().unwrap_or_else(|p| p.into_inner()))
                .collect();
            let mut all: Vec<&mut [MUnit<M, Q>]> = guards.iter_mut().map(|g| &mut g[..]).collect();
            let per = all.first().map_or(1, |p| p.len().max(1));
            let mut states = lp_step::States {
                pieces: &mut all,
                per,
            };
            let mut sent = Vec::new();
            if let Err(e) =
                globals.run_before(ctl.model, ctl.lps, &mut states, t_min, end, &mut sent)
            {
                return (false, Err(e));
            }
            // LP events the global events sent: pending now, so in GST and InClock.
            states.deliver(sent, ctl.la_out, &mut heads);
            g = globals.next_time(end);
        }
        let Some(gst) = heads.gst else {
            return (false, Ok(()));
        };
        if gst.time >= end || gst.time.is_nan() {
            return (false, Ok(()));
        }
        bound = Bound {
            below: heads.in_clock,
            cap: cap_key(g, end),
            gst: Some(gst),
        };
        heads = lock_step(ctl, bound);
        totals.rounds += 1;
        totals.pieces += ctl.pieces.len() as u64;
        totals.active_lps += heads.lps_run;
        totals.processed += heads.events;
        totals.last_time = totals.last_time.max(heads.last_time);
        for (c, x) in counters.iter_mut().zip(&heads.counters) {
            *c += x;
        }
        if let Some(e) = heads.error.take() {
            return (false, Err(e));
        }
        cfg.progress.add_events(heads.events);
        cfg.progress.set_now(t_min);
    }
}

/// A worker: the scheduler of light-weight threads `w, w + threads, ...`, which it creates on
/// its own thread and resumes once per lock-step until the coordinator publishes no bound.
fn worker<M: Model, Q: PendingSet<Event<M::Event>>>(ctl: &Control<'_, M, Q>, w: usize) {
    // What the running light-weight thread reads and leaves: one at a time per worker.
    let bound: Cell<Option<Bound>> = Cell::new(None);
    let out: RefCell<Option<Partial>> = RefCell::new(None);
    let mut stacks = StackPool::default();
    let mut lwts = Vec::new();
    for c in (w..ctl.pieces.len()).step_by(ctl.threads) {
        let stack = match stacks.get() {
            Ok(s) => s,
            Err(e) => {
                let msg = format!("cannot map a light-weight thread's stack: {e}");
                *ctl.failed.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(SimError::config(Setting::Threads, msg));
                lwts.clear();
                break;
            }
        };
        let (bound, out) = (&bound, &out);
        lwts.push(Context::new(stack, move |y| {
            // Runs one lock-step per resume, then yields to the worker until the next one.
            while let Some(b) = bound.get() {
                let step = Step {
                    model: ctl.model,
                    lps: ctl.lps,
                    links: ctl.links,
                    la_out: ctl.la_out,
                    inboxes: ctl.inboxes,
                    below: b.below,
                    cap: b.cap,
                    gst: b.gst,
                };
                let mut part = Partial::new(ctl.n_counters);
                {
                    let mut units = ctl.pieces[c].lock().unwrap_or_else(|p| p.into_inner());
                    lp_step::run_units(&step, &mut units, &mut part);
                }
                *out.borrow_mut() = Some(part);
                y.suspend(false);
            }
        }));
    }
    let (mut events, mut pieces) = (0u64, 0u64);
    loop {
        ctl.barrier.wait(w);
        let b = *ctl.bound.lock().unwrap_or_else(|p| p.into_inner());
        bound.set(b);
        let mut acc = Partial::new(ctl.n_counters);
        for lwt in &mut lwts {
            if let CoStep::Suspended { .. } = lwt.resume() {
                if let Some(p) = out.borrow_mut().take() {
                    events += p.events;
                    pieces += 1;
                    acc = acc.merge(p);
                }
            }
        }
        if b.is_none() {
            break;
        }
        *ctl.slots[w].lock().unwrap_or_else(|p| p.into_inner()) = (Some(acc), events, pieces);
        ctl.barrier.wait(w);
    }
}
