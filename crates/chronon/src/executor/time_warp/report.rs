//! The Time Warp report's pieces: a worker's figures (rollbacks, commits, CPU, preemption,
//! ticks), their totals over the workers, and the events pending at the end.

use super::cancelled::Cancelled;
use super::lp::{TwCold, TwLp};
use super::options::Saving;
use super::stats::Stats;
use crate::model::Model;
use crate::queue::PendingSet;
use crate::transport::tw::Wires;
use crate::tw_msg::{Msg, TwEvent};

/// What a worker hands back: its LPs (with their costs, `crate::lp_cost`), committed counter
/// totals, figures, and whether it saw the run complete.
pub(super) type WorkerResult<M, Q> = (
    (Vec<TwLp<<M as Model>::State>>, Vec<crate::lp_cost::LpClock>),
    Vec<TwCold<<M as Model>::State, <M as Model>::Event>>,
    Vec<i64>,
    Stats,
    bool,
    (Q, Cancelled),
);

type Figure = fn(&super::preempt::PreemptStats) -> u64;

/// The preemption figures of the report (totals and per worker), by name.
const PREEMPT_FIGURES: [(&str, Figure); 11] = [
    ("preempt_started", |p| p.started),
    ("preemptions", |p| p.preemptions),
    ("preemptions_on_tick", |p| p.preemptions_on_tick),
    ("preempt_interrupts", |p| p.interrupts),
    ("preempt_interrupts_dropped", |p| p.interrupts_dropped),
    ("preempt_resumed", |p| p.resumed),
    ("preempt_discarded", |p| p.discarded),
    ("preempt_fallbacks", |p| p.fallbacks),
    ("preempt_checks", |p| p.checks),
    ("preempt_stacks", |p| p.stacks),
    ("preempt_restores", |p| p.restores),
];

/// The totals of the rollback-length, preemption and tick figures from the workers' figures
/// (a part sends its workers' maps to the coordinator).
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
    let ticks = [
        "ticks_delivered",
        "ticks_acted_on",
        "ticks_on_s",
        "preempt_interrupts_on",
    ];
    for name in names.chain(ticks) {
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
        m.insert(
            "preempt_interrupts_on".into(),
            f64::from(u8::from(p.interrupts_on)),
        );
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
