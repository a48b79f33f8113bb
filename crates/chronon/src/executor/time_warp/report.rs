//! The Time Warp run report: the LPs reassembled in order, totals, the workers' figures.

use std::sync::atomic::Ordering;

use super::cancelled::Cancelled;
use super::lp::{TwCold, TwLp};
use super::options::Saving;
use super::options::TimeWarpConfig;
use super::shared::Shared;
use super::stats::Stats;
use crate::error::SimError;
use crate::executor::{finish_report, LpSlot, RunConfig};
use crate::model::Model;
use crate::queue::PendingSet;
use crate::stats::Report;
use crate::transport::tw::Wires;
use crate::tw_msg::{Msg, TwEvent};

/// What a worker hands back: its LPs, committed counter totals, figures, and whether it saw
/// the run complete.
pub(super) type WorkerResult<M, Q> = (
    Vec<TwLp<<M as Model>::State>>,
    Vec<TwCold<<M as Model>::State, <M as Model>::Event>>,
    Vec<i64>,
    Stats,
    bool,
    (Q, Cancelled),
);

#[allow(clippy::too_many_arguments)]
pub(super) fn finish<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    opts: &TimeWarpConfig,
    sh: Shared<'_, M>,
    results: Vec<WorkerResult<M, Q>>,
    mut counters: Vec<i64>,
    mut report: Report,
    wall: f64,
    saving: Saving,
) -> Result<Report, SimError> {
    // A run that ends at a checkpoint's cut: its pending events, every worker's. Every event
    // pending at a cut has the one-key order stack of an event sent with a positive delay (its
    // sender ran before the cut, it runs at or after it), so its entry holds its own key.
    let to_part = cfg.saving() && results.iter().all(|r| r.4);
    let Gathered {
        lps,
        stats,
        pending,
        complete,
        saved,
    } = gather(cfg, &sh, results, &mut counters, to_part);
    let last_time = stats.iter().map(|s| s.last_committed).fold(0.0, f64::max);
    let end = cfg.stats_end(complete, last_time);
    finish_report(model, &lps, &counters, end, &mut report)?;
    if to_part {
        let globals = sh.globals.queue.lock().unwrap_or_else(|p| p.into_inner());
        crate::executor::checkpoint::write_split::<M>(
            cfg,
            (0, usize::MAX),
            lps,
            saved,
            &counters,
            Some(&globals),
        );
    }
    let sum = |f: fn(&Stats) -> u64| stats.iter().map(f).sum::<u64>();
    report.processed = sum(|s| s.processed);
    report.rolled_back = sum(|s| s.rolled_back);
    report.complete = complete;
    report.last_time = last_time;
    report.pending_at_end = pending;
    report.set_wall(wall);
    sh.globals
        .queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .add_to(&mut report);
    insert_figures(&mut report, &stats, &sh, opts, saving);
    let window = sh.optimism.summary();
    window.insert_into(&mut report.executor_stats);
    report.workers = stats
        .iter()
        .map(|s| {
            let mut m = worker_figures(s, saving);
            if let Some(p) = sh.preempt {
                insert_preempt(&mut m, &s.preempt, p.ticks.is_some());
            }
            m
        })
        .collect();
    report.placement = sh.pinner.placement();
    report.gvt_series = sh.series.into_inner().unwrap_or_default();
    report.window_series = window.series;
    Ok(report)
}

/// What the workers handed back, put together: the LPs in LP order, each worker's figures,
/// the pending events at the end (and, at a checkpoint's cut, the events themselves), and
/// whether every worker saw the run complete.
struct Gathered<S, P> {
    lps: Vec<LpSlot<S>>,
    stats: Vec<Stats>,
    pending: u64,
    complete: bool,
    saved: Vec<crate::event::Event<P>>,
}

/// Puts the workers' results together (`counters`: the committed counters, to which each
/// worker's are added; `to_part`: keep the pending events for a checkpoint's part).
fn gather<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    cfg: &RunConfig,
    sh: &Shared<'_, M>,
    results: Vec<WorkerResult<M, Q>>,
    counters: &mut [i64],
    to_part: bool,
) -> Gathered<M::State, M::Event> {
    let mut complete = true;
    // In LP order as they come (block mapping: no second table of LPs at the end, which with
    // millions of LPs would raise the peak footprint); scattered through a table otherwise.
    let mut in_order: Vec<LpSlot<M::State>> = Vec::with_capacity(cfg.lps as usize);
    let mut all: Vec<Option<LpSlot<M::State>>> = Vec::new();
    let mut stats = Vec::new();
    let mut pending = 0;
    let mut saved = Vec::new();
    for (w, (lps, cold, c, st, done, (queue, cancelled))) in results.into_iter().enumerate() {
        complete &= done;
        let mut left = Vec::new();
        pending += pending_at_end(queue, cancelled, &*sh.wires, w, |e| {
            if to_part {
                left.push(e)
            }
        });
        for (a, b) in counters.iter_mut().zip(&c) {
            *a += b;
        }
        drop(cold);
        for e in left {
            debug_assert!(!e.stacked(), "an event pending at a cut is not stacked");
            let key = e.head();
            saved.push(crate::event::Event::new(key, e.dst, e.payload));
        }
        for (li, lp) in lps.into_iter().enumerate() {
            let id = sh.lp_id(w, li);
            let slot = LpSlot {
                state: lp.state,
                meta: lp.meta,
                digest: lp.digest,
            };
            if all.is_empty() && id as usize == in_order.len() {
                in_order.push(slot);
                continue;
            }
            if all.is_empty() {
                all = (0..cfg.lps).map(|_| None).collect();
                for (i, s) in in_order.drain(..).enumerate() {
                    all[i] = Some(s);
                }
            }
            all[id as usize] = Some(slot);
        }
        stats.push(st);
    }
    let lps = if all.is_empty() {
        in_order
    } else {
        all.into_iter()
            .map(|s| s.expect("every LP returns"))
            .collect()
    };
    Gathered {
        lps,
        stats,
        pending,
        complete,
        saved,
    }
}

/// The run's Time Warp figures (`executor_stats`): rollbacks, commits, GVT, memory, CPU and
/// preemption, summed over the workers' `stats`.
fn insert_figures<M: Model>(
    report: &mut Report,
    stats: &[Stats],
    sh: &Shared<'_, M>,
    opts: &TimeWarpConfig,
    saving: Saving,
) {
    let sum = |f: fn(&Stats) -> u64| stats.iter().map(f).sum::<u64>();
    let es = &mut report.executor_stats;
    let processed = report.processed.max(1) as f64;
    es.insert("efficiency".into(), report.committed as f64 / processed);
    es.insert("primary_rollbacks".into(), sum(|s| s.primary) as f64);
    es.insert("secondary_rollbacks".into(), sum(|s| s.secondary) as f64);
    es.insert("anti_messages".into(), sum(|s| s.antis) as f64);
    let longest = stats.iter().map(|s| s.rollback_max).max().unwrap_or(0);
    insert_rollback_lengths(
        es,
        report.rolled_back,
        sum(|s| s.primary + s.secondary),
        longest,
        sum(|s| s.rollback_ns),
    );
    es.insert("coasted_events".into(), sum(|s| s.coasted) as f64);
    es.insert("safe_commits".into(), sum(|s| s.safe) as f64);
    es.insert("early_commits".into(), sum(|s| s.safe_early) as f64);
    es.insert("checkpoints".into(), sum(|s| s.checkpoints) as f64);
    es.insert("gvt_rounds".into(), sh.gvt.rounds() as f64);
    es.insert(
        "peak_tracked_bytes".into(),
        sh.peak.load(Ordering::SeqCst) as f64,
    );
    es.insert(
        "reverse_computation".into(),
        f64::from(u8::from(saving == Saving::Reverse)),
    );
    if let Some(m) = opts.max_memory {
        es.insert("max_memory".into(), m as f64);
        let ms = sh.mem.summary();
        es.insert("memory_fixed_bytes".into(), ms.fixed as f64);
        es.insert("memory_correction_bytes".into(), ms.correction as f64);
        es.insert("memory_peak_estimate".into(), ms.peak_estimate as f64);
        es.insert("memory_cap_min".into(), ms.min_cap as f64);
        es.insert("memory_capped_rounds".into(), ms.capped_rounds as f64);
        es.insert("memory_rss_samples".into(), ms.rss_samples as f64);
        es.insert("memory_trims".into(), ms.trims as f64);
    }
    let (user, sys) = stats
        .iter()
        .fold((0.0, 0.0), |(u, y), s| (u + s.cpu_user, y + s.cpu_sys));
    insert_cpu(es, user, sys, report.committed);
    if sh.preempt.is_some() {
        for (name, f) in PREEMPT_FIGURES {
            es.insert(
                name.to_string(),
                stats.iter().map(|s| f(&s.preempt)).sum::<u64>() as f64,
            );
        }
        if sh.preempt.is_some_and(|p| p.ticks.is_some()) {
            let delivered: u64 = stats.iter().map(|s| s.preempt.ticks_delivered).sum();
            let on: f64 = stats.iter().map(|s| s.preempt.ticks_on_s).sum();
            es.insert("ticks_delivered".into(), delivered as f64);
            let acted: u64 = stats.iter().map(|s| s.preempt.ticks_acted_on).sum();
            es.insert("ticks_acted_on".into(), acted as f64);
            es.insert("ticks_on_s".into(), on);
        }
    }
}

type Figure = fn(&super::preempt::PreemptStats) -> u64;

/// The preemption figures of the report (totals and per worker), by name.
const PREEMPT_FIGURES: [(&str, Figure); 9] = [
    ("preempt_started", |p| p.started),
    ("preemptions", |p| p.preemptions),
    ("preemptions_on_tick", |p| p.preemptions_on_tick),
    ("preempt_resumed", |p| p.resumed),
    ("preempt_discarded", |p| p.discarded),
    ("preempt_fallbacks", |p| p.fallbacks),
    ("preempt_checks", |p| p.checks),
    ("preempt_stacks", |p| p.stacks),
    ("preempt_restores", |p| p.restores),
];

/// Across processes (procs.rs): the totals of the rollback-length, preemption and tick figures
/// from the workers' figures (each process sends its workers' maps to the parent).
#[cfg_attr(chronon_loom, allow(dead_code))] // procs.rs is not built under loom
pub(super) fn totals_from_workers(
    es: &mut std::collections::BTreeMap<String, f64>,
    workers: &[std::collections::BTreeMap<String, f64>],
    rolled_back: u64,
) {
    let sum = |k: &str| -> f64 { workers.iter().filter_map(|w| w.get(k)).sum() };
    let longest = workers
        .iter()
        .filter_map(|w| w.get("rollback_length_max"))
        .fold(0.0, |a: f64, b| a.max(*b));
    insert_rollback_lengths(
        es,
        rolled_back,
        sum("rollbacks") as u64,
        longest as u64,
        (sum("rollback_wall_s") * 1e9).round() as u64,
    );
    let names = PREEMPT_FIGURES.iter().map(|(n, _)| *n);
    for name in names.chain(["ticks_delivered", "ticks_acted_on", "ticks_on_s"]) {
        if workers.iter().any(|w| w.contains_key(name)) {
            es.insert(name.to_string(), sum(name));
        }
    }
}

/// A worker's preemption figures (`--preempt`), and its tick figures when ticks are on.
pub(super) fn insert_preempt(
    m: &mut std::collections::BTreeMap<String, f64>,
    p: &super::preempt::PreemptStats,
    ticks: bool,
) {
    for (name, f) in PREEMPT_FIGURES {
        m.insert(name.to_string(), f(p) as f64);
    }
    if ticks {
        m.insert("ticks_delivered".into(), p.ticks_delivered as f64);
        m.insert("ticks_acted_on".into(), p.ticks_acted_on as f64);
        m.insert("ticks_on_s".into(), p.ticks_on_s);
        m.insert("delta_e_us".into(), p.delta_e_s * 1e6);
        m.insert("apms".into(), p.apms);
    }
}

/// One worker's figures in the report's `workers`.
pub(super) fn worker_figures(s: &Stats, saving: Saving) -> std::collections::BTreeMap<String, f64> {
    let mut m = std::collections::BTreeMap::new();
    m.insert("processed".into(), s.processed as f64);
    m.insert("committed".into(), s.committed as f64);
    m.insert("safe_commits".into(), s.safe as f64);
    m.insert("early_commits".into(), s.safe_early as f64);
    m.insert("rolled_back".into(), s.rolled_back as f64);
    m.insert("primary_rollbacks".into(), s.primary as f64);
    m.insert("secondary_rollbacks".into(), s.secondary as f64);
    m.insert("anti_messages".into(), s.antis as f64);
    insert_rollback_lengths(
        &mut m,
        s.rolled_back,
        s.primary + s.secondary,
        s.rollback_max,
        s.rollback_ns,
    );
    m.insert("coasted_events".into(), s.coasted as f64);
    m.insert("checkpoints".into(), s.checkpoints as f64);
    m.insert("gvt_reports".into(), s.reports as f64);
    if saving == Saving::Copy {
        m.insert("checkpoint_interval".into(), s.checkpoint_interval as f64);
    }
    m.insert("peak_tracked_bytes".into(), s.peak_bytes as f64);
    insert_cpu(&mut m, s.cpu_user, s.cpu_sys, s.committed);
    let secs = |ns: u64| ns as f64 * 1e-9;
    m.insert("loop_s".into(), secs(s.loop_ns));
    m.insert("idle_s".into(), secs(s.idle_ns));
    m.insert("gvt_s".into(), secs(s.gvt_ns));
    m.insert("fossil_s".into(), secs(s.fossil_ns));
    let other = s.idle_ns + s.gvt_ns + s.fossil_ns;
    m.insert("busy_s".into(), secs(s.loop_ns.saturating_sub(other)));
    m.insert(
        "efficiency".into(),
        s.committed as f64 / s.processed.max(1) as f64,
    );
    m
}

/// Rollback length: how many rollbacks, the events each undid (mean and
/// longest) and the wall time they took, in total and per rollback. A rollback is one primary
/// (straggler) or secondary (anti-message) rollback of one LP; its wall time is what undoing
/// its events took (anti-messages, reverse handlers or checkpoint restore and coasting), not
/// the wall time the undone events had run for (that would need a clock read per event).
pub(super) fn insert_rollback_lengths(
    m: &mut std::collections::BTreeMap<String, f64>,
    rolled_back: u64,
    rollbacks: u64,
    longest: u64,
    ns: u64,
) {
    let per = |x: f64| {
        if rollbacks == 0 {
            0.0
        } else {
            x / rollbacks as f64
        }
    };
    m.insert("rollbacks".into(), rollbacks as f64);
    m.insert("rollback_length_mean".into(), per(rolled_back as f64));
    m.insert("rollback_length_max".into(), longest as f64);
    m.insert("rollback_wall_s".into(), ns as f64 * 1e-9);
    m.insert("rollback_wall_mean_us".into(), per(ns as f64 * 1e-3));
}

/// The events a worker leaves scheduled and uncommitted once every worker has stopped: its
/// pending set and its mailbox, less the positives that an anti-message cancels. On a
/// complete run none of them was processed (nothing at or after the end runs), so an
/// anti-message can only cancel a positive here, never roll anything back.
///
/// `keep` gets each of them (a run that ends at a checkpoint's cut saves them).
pub(super) fn pending_at_end<P: Send + 'static, Q: PendingSet<TwEvent<P>>>(
    mut queue: Q,
    mut cancelled: Cancelled,
    wires: &dyn Wires<P>,
    w: usize,
    mut keep: impl FnMut(TwEvent<P>),
) -> u64 {
    // The mailbox's events are kept until every anti-message in it is known; the pending set's
    // are counted as they are popped (a list of them cost 16 bytes an event at the run's end:
    // 160 MB at 1 M LPs, above the memory bound).
    let mut mail = Vec::new();
    wires.leftovers(w, &mut |m| match m {
        Msg::Event(e, _) => mail.push(e),
        Msg::Anti(a) => cancelled.insert(a.id, a.key.time),
    });
    let mut live = 0;
    for e in mail {
        if !cancelled.remove(e.id, e.time) {
            live += 1;
            keep(e);
        }
    }
    while let Some(e) = queue.pop() {
        if !cancelled.remove(e.id, e.time) {
            live += 1;
            keep(e);
        }
    }
    live
}

/// The CPU figures of a worker (or of all of them): user and system seconds of its thread, and
/// committed events per CPU second, so that a slow worker shows up as cost, not only as wall
/// time. Nothing is inserted where the OS reports no per-thread times.
pub(super) fn insert_cpu(
    m: &mut std::collections::BTreeMap<String, f64>,
    user: f64,
    sys: f64,
    events: u64,
) {
    if user + sys <= 0.0 {
        return;
    }
    m.insert("cpu_user_s".into(), user);
    m.insert("cpu_sys_s".into(), sys);
    m.insert("events_per_cpu_s".into(), events as f64 / (user + sys));
}
