//! A conservative run on the threads of one process (the threads transport: mailboxes and the
//! GSU, `transport/threads/`): checks, the part's set-up, the worker threads, and the report,
//! made as for one part of a run across parts (`parts.rs`).

use std::time::Instant;

use super::super::outcome::{run_worker, worker_figures, WorkerResult};
use super::super::part::{set_up, Part};
use super::super::parts;
use super::super::{ConservativeConfig, Protocol, Shared, Worker};
use crate::error::SimError;
use crate::event::Event;
use crate::executor::part_out::PartOut;
use crate::executor::{lp_totals, run_part_threads, LpSlot, RunConfig};
use crate::model::Model;
use crate::placement::{touch_queue, Pinner};
use crate::queue::{with_queue, PendingSet};
use crate::stats::Report;
use crate::transport::threads::ThreadNet;

/// Runs `model` with `protocol`.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
) -> Result<Report, SimError> {
    with_queue!(cfg.queue, run_with::<M>(model, cfg, protocol, cc))
}

fn run_with<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
) -> Result<Report, SimError> {
    let w = cc.threads;
    cc.check_balance(protocol)?;
    cc.check_runtime(protocol)?;
    cc.check_barrier(protocol, None)?;
    match cc.runtime {
        super::super::Runtime::WorkStealing { threshold } => {
            return super::super::work_stealing::run::<M, Q>(model, cfg, cc, threshold)
        }
        super::super::Runtime::ActiveThreads { threshold } => {
            return super::super::active_threads::run::<M, Q>(model, cfg, cc, threshold)
        }
        super::super::Runtime::Threads => {}
    }
    let Part {
        shared,
        queues,
        first,
        init_counters: counters,
        init_s,
    } = set_up::<M, Q>(model, cfg, protocol, cc, w, 0..w)?;
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
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    let ran = Ran {
        results,
        counters,
        init_s,
        placement: pinner.placement(),
        wall,
    };
    finish(model, cfg, protocol, cc, shared, &net, ran)
}

/// What a run on threads leaves once every worker has stopped: each worker's result, the
/// counters after init, init's seconds, where the workers ran and their wall time.
struct Ran {
    results: Vec<WorkerResult>,
    counters: Vec<i64>,
    init_s: f64,
    placement: crate::placement::Placement,
    wall: f64,
}

/// The report of a run on threads, once every worker has stopped: the run as one part
/// ([`parts::report`], the report of a run across parts too), with what only threads have: the
/// shared sets' figures, the global events' and the barrier's.
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
        init_s,
        placement,
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
    let stopped = results.iter().any(|r| r.stopped);
    let last_time = results.iter().map(|r| r.last_time).fold(0.0, f64::max);
    let end = cfg.stats_end(!stopped, last_time);
    let (fingerprint, committed, stats) = lp_totals(model, &lps, &counters, end)?;
    let costs = crate::executor::slot_costs(&lps);
    let mut pending: usize = results.iter().map(|r| r.pending).sum();
    if let Some(b) = &balance {
        pending += b.pending();
    }
    // Every worker has stopped: what is still in a mailbox was sent by a committed event and
    // is pending too (null messages leave without waiting for events at or after the end).
    // The GSU's TMC registers count it — the count a transport that cannot drain another
    // process's mailbox will rely on; here the drain checks it.
    let mut left = shared
        .leftover
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let saving = cfg.saving() && !stopped;
    let in_transit = net.drain_at_end(|e| {
        if saving {
            left.push(e)
        }
    });
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
    let mut out = PartOut::ok();
    out.lp_costs = costs;
    out.fingerprint = fingerprint.0;
    out.committed = committed;
    out.processed = results.iter().map(|r| r.stats.events).sum();
    out.pending = pending as u64;
    out.in_transit = in_transit as u64;
    out.stopped = stopped;
    out.last_time = last_time;
    out.init_s = init_s;
    out.wall_s = wall;
    out.workers = results
        .iter()
        .map(|r| worker_figures(protocol, r, wall))
        .collect();
    crate::placement::mark_workers(&placement, &mut out.workers);
    let mut report = parts::report(cfg, protocol, cc, vec![out], stats)?;
    report.placement = placement;
    globals.add_to(&mut report);
    let st = &mut report.executor_stats;
    if let Some(b) = &balance {
        st.insert("dedicated".into(), b.dedicated);
        st.insert("shared_sets".into(), b.sets.len() as f64);
        st.insert("shared_lps".into(), b.shared_lps() as f64);
    }
    // Null messages meet at no barrier.
    if let (crate::barrier::BarrierKind::Tree { fan_in }, false) =
        (cc.barrier, protocol == Protocol::NullMessage)
    {
        st.insert("tree_fan_in".into(), fan_in as f64);
    }
    Ok(report)
}
