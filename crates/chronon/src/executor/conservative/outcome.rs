//! What a conservative worker's protocol loop hands back ([`run_worker`]: window and lock-step
//! rounds or null messages), and the figures the report makes of it, per worker and per run.

use super::{null_message, rounds, Protocol, Worker, WorkerStats};
use crate::event::Event;
use crate::model::{Model, Time};
use crate::queue::PendingSet;
use crate::stats::Report;
use crate::transport::Endpoint;

/// The protocol's own figures of a run: null messages sent, or the rounds (the most any worker
/// passed), their mean length and events per round.
pub(crate) fn protocol_figures(
    report: &mut Report,
    protocol: Protocol,
    rounds: f64,
    null_messages: f64,
    wall: f64,
) {
    let processed = report.processed as f64;
    let st = &mut report.executor_stats;
    if protocol == Protocol::NullMessage {
        st.insert("null_messages".into(), null_messages);
    } else {
        st.insert("rounds".into(), rounds);
        if rounds > 0.0 {
            st.insert("round_us".into(), wall * 1e6 / rounds);
            st.insert("events_per_round".into(), processed / rounds);
        }
    }
}

/// One worker's figures for the report.
pub(crate) fn worker_figures(
    protocol: Protocol,
    r: &WorkerResult,
    wall: f64,
) -> std::collections::BTreeMap<String, f64> {
    let s = &r.stats;
    let mut m = std::collections::BTreeMap::new();
    m.insert("events".to_string(), s.events as f64);
    if protocol == Protocol::NullMessage {
        m.insert("null_messages".to_string(), s.null_messages as f64);
    } else {
        m.insert("rounds".to_string(), s.rounds as f64);
    }
    m.insert("remote_sent".to_string(), s.remote_sent as f64);
    m.insert("batches_sent".to_string(), s.batches_sent as f64);
    m.insert("wait_s".to_string(), s.wait_s);
    m.insert("sync_s".to_string(), s.sync_s);
    m.insert("busy_s".to_string(), s.busy_s);
    if wall > 0.0 {
        m.insert("wait_share".to_string(), s.wait_s / wall);
        m.insert("sync_share".to_string(), s.sync_s / wall);
    }
    for (k, v) in &r.extra {
        m.insert(k.to_string(), *v);
    }
    m
}

/// What a protocol's worker loop returns besides its figures.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub stopped: bool,
    pub extra: Vec<(&'static str, f64)>,
}

/// Runs one worker's protocol loop and collects what the report needs from it.
pub(crate) fn run_worker<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    worker: &mut Worker<'_, '_, M, Q, X>,
    protocol: Protocol,
) -> WorkerResult {
    let outcome = match protocol {
        Protocol::Window | Protocol::Lockstep => rounds::run(worker, protocol),
        Protocol::NullMessage => null_message::run(worker),
    };
    worker.report_progress();
    let pending = worker.queue.len();
    if worker.sh.cfg.saving() && !outcome.stopped {
        let mut left = worker.sh.leftover.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(e) = worker.queue.pop() {
            left.push(e);
        }
    }
    WorkerResult {
        stats: std::mem::take(&mut worker.stats),
        counters: std::mem::take(&mut worker.counters),
        pending,
        last_time: worker.last_time,
        stopped: outcome.stopped,
        extra: outcome.extra,
    }
}

pub(crate) struct WorkerResult {
    pub stats: WorkerStats,
    pub counters: Vec<i64>,
    pub pending: usize,
    pub last_time: Time,
    pub stopped: bool,
    pub extra: Vec<(&'static str, f64)>,
}
