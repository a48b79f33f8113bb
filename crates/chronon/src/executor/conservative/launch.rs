//! Starting a conservative run: checks, initial events, the worker threads, and the report.

use std::time::Instant;

use super::part::{set_up, Part};
use super::{null_message, rounds};
use super::{ConservativeConfig, Protocol, Shared, Worker, WorkerStats};
use crate::error::{ConfigError, Setting, SimError};
use crate::event::Event;
use crate::executor::{finish_report, run_part_threads, LpSlot, RunConfig};
use crate::model::{Model, Time};
use crate::placement::{touch_queue, Pinner};
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::stats::Report;
use crate::transport::threads::ThreadNet;
use crate::transport::Endpoint;

/// Runs `model` with `protocol`.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
) -> Result<Report, SimError> {
    match cfg.queue {
        QueueKind::Heap => run_with::<M, HeapQueue<Event<M::Event>>>(model, cfg, protocol, cc),
        QueueKind::Ladder => run_with::<M, LadderQueue<Event<M::Event>>>(model, cfg, protocol, cc),
    }
}

fn run_with<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
) -> Result<Report, SimError> {
    let w = cc.threads;
    if w == 0 {
        return Err(ConfigError::new(Setting::Threads, 0, "it must be at least 1").into());
    }
    cc.check_balance(protocol)?;
    cc.check_runtime(protocol)?;
    cc.check_barrier(protocol, None)?;
    match cc.runtime {
        super::Runtime::WorkStealing { threshold } => {
            return super::work_stealing::run::<M, Q>(model, cfg, cc, threshold)
        }
        super::Runtime::Threads => {}
    }
    let Part {
        shared,
        queues,
        first,
        init_counters: counters,
        init_s,
    } = set_up::<M, Q>(model, cfg, protocol, cc, w, 0..w)?;
    let mut report = Report::new(protocol.name(), w, cfg.queue.name(), cfg.lps, cfg.end);
    report.init_s = init_s;
    // The GSU is seeded with every queue's first event before any worker runs (G0 in
    // gsu/README.md): a worker that starts idle must not see the others as idle before they
    // publish.
    let net = ThreadNet::new(&first, cc.barrier.build(w));
    let pinner = Pinner::new(cfg.pin, w);
    let start = Instant::now();
    let results = run_part_threads(cfg, &pinner, 0, queues, touch_queue, |me, q| {
        run_worker(&mut Worker::new(&shared, q, net.endpoint(me)), protocol)
    });
    let wall = start.elapsed().as_secs_f64();
    report.placement = pinner.placement();
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    let ran = Ran {
        results,
        counters,
        report,
        wall,
    };
    finish(model, cfg, protocol, cc, shared, &net, ran)
}

/// What a run on threads leaves once every worker has stopped: each worker's result, the
/// counters after init, the report so far and the wall time of the workers.
struct Ran {
    results: Vec<WorkerResult>,
    counters: Vec<i64>,
    report: Report,
    wall: f64,
}

/// The report of a run on threads, once every worker has stopped: counters, model
/// statistics, what is pending at the end (a run that ends at a checkpoint's cut saves it),
/// the protocol's figures and each worker's.
fn finish<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    mut shared: Shared<'_, M>,
    net: &ThreadNet<M::Event>,
    ran: Ran,
) -> Result<Report, SimError> {
    let Ran {
        results,
        mut counters,
        mut report,
        wall,
    } = ran;
    let balance = shared.balance.take();
    let globals = shared
        .globals
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let lps: Vec<LpSlot<M::State>> = shared.lps.into_vec();
    for r in &results {
        for (c, x) in counters.iter_mut().zip(&r.counters) {
            *c += x;
        }
    }
    report.processed = results.iter().map(|r| r.stats.events).sum();
    report.complete = !results.iter().any(|r| r.stopped);
    report.last_time = results.iter().map(|r| r.last_time).fold(0.0, f64::max);
    cfg.progress.set_now(report.last_time);
    let end = cfg.stats_end(report.complete, report.last_time);
    finish_report(model, &lps, &counters, end, &mut report)?;
    globals.add_to(&mut report);
    report.set_wall(wall);
    let mut pending: usize = results.iter().map(|r| r.pending).sum();
    if let Some(b) = &balance {
        pending += b.pending();
        let st = &mut report.executor_stats;
        st.insert("dedicated".into(), b.dedicated);
        st.insert("shared_sets".into(), b.sets.len() as f64);
        st.insert("shared_lps".into(), b.shared_lps() as f64);
    }
    // Every worker has stopped: what is still in a mailbox was sent by a committed event and
    // is pending too (null messages leave without waiting for events at or after the end).
    // The GSU's TMC registers count it — the count a transport that cannot drain another
    // process's mailbox will rely on; here the drain checks it.
    let mut left = shared
        .leftover
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let saving = cfg.saving() && report.complete;
    let in_transit = net.drain_at_end(|e| {
        if saving {
            left.push(e)
        }
    });
    pending += in_transit as usize;
    if saving {
        if let Some(b) = &balance {
            b.drain(|e| left.push(e));
        }
        crate::executor::checkpoint::write_split::<M>(
            cfg,
            (0, usize::MAX),
            lps,
            left,
            &counters,
            Some(&globals),
        );
    }
    report.pending_at_end = pending as u64;
    report
        .executor_stats
        .insert("in_transit_at_end".into(), in_transit as f64);
    // Null messages meet at no barrier.
    if let (crate::barrier::BarrierKind::Tree { fan_in }, false) =
        (cc.barrier, protocol == Protocol::NullMessage)
    {
        report
            .executor_stats
            .insert("tree_fan_in".into(), fan_in as f64);
    }
    let rounds = results.iter().map(|r| r.stats.rounds).max().unwrap_or(0);
    let nulls: u64 = results.iter().map(|r| r.stats.null_messages).sum();
    protocol_figures(&mut report, protocol, rounds as f64, nulls as f64, wall);
    for r in results {
        report.workers.push(worker_figures(protocol, &r, wall));
    }
    Ok(report)
}

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
