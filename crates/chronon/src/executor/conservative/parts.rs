//! The conservative family as the part runner (`crate::run`) drives it: one part of a run
//! across parts (a worker process, an MPI rank) over its transport, and the one report from
//! the parts' outputs, which a run on threads makes too (`over/threads.rs`).

#![cfg_attr(chronon_loom, allow(dead_code))] // runs across parts are not built under loom
use std::time::Instant;

use super::outcome::{protocol_figures, run_worker, worker_figures, WorkerResult};
use super::part::{set_up, Part};
use super::{ConservativeConfig, Protocol, Runtime, Shared, Worker};
use crate::error::{Setting, SimError};
use crate::event::{Event, EventKey};
use crate::executor::family::Family;
use crate::executor::part_out::{finish_ops, peak_rss_bytes, PartOut};
use crate::executor::{run_part_threads, RunConfig};
use crate::fingerprint::Fingerprint;
use crate::gsu::{Published, Snapshot};
use crate::model::{LpId, Model, ModelStats};
use crate::partition::Mapping;
use crate::placement::{mark_workers, touch_queue, Pinner};
use crate::queue::PendingSet;
use crate::stats::Report;
use crate::transport::Endpoint;

/// A conservative protocol and its settings, as a family.
pub(crate) struct Conservative<'c> {
    pub(crate) protocol: Protocol,
    pub(crate) cc: &'c ConservativeConfig,
}

impl<M: Model> Family<M> for Conservative<'_> {
    fn name(&self) -> &'static str {
        self.protocol.name()
    }

    fn threads(&self) -> usize {
        self.cc.threads
    }

    fn mapping(&self) -> &Mapping {
        &self.cc.mapping
    }

    fn refuse_across(
        &self,
        _model: &M,
        cfg: &RunConfig,
        across: Setting,
        parts: usize,
    ) -> Result<(), SimError> {
        let (count, what) = crate::executor::family::across_words(across);
        let cc = self.cc;
        if cc.runtime != Runtime::Threads {
            return Err(SimError::config(
                Setting::Runtime,
                format!(
                    "$runtime {} does not run across {what}; leave out {count} or $runtime",
                    cc.runtime.name()
                ),
            ));
        }
        cc.check_barrier(self.protocol, Some(across))?;
        if cc.dedicated != 1.0 || cc.shared_sets != 0 {
            return Err(SimError::config(Setting::Dedicated, format!("load balancing ($dedicated, $shared_sets) does not run across {what} yet (shared LPs would need their queues in shared memory); leave out {count} or those options")));
        }
        if across == Setting::Ranks
            && self.protocol == Protocol::NullMessage
            && !cfg.end.is_finite()
            && parts > 1
        {
            return Err(SimError::config(
                Setting::Executor,
                "$executor null-message over several ranks needs a finite end time",
            ));
        }
        Ok(())
    }

    fn settings(&self) -> String {
        format!("mapping={:?}", self.cc.mapping)
    }

    fn report(
        &self,
        _model: &M,
        cfg: &RunConfig,
        outs: Vec<PartOut>,
        stats: ModelStats,
    ) -> Result<Report, SimError> {
        report(cfg, self.protocol, self.cc, outs, stats)
    }
}

/// One part of a run across parts (a worker process of `--procs`, or a rank of an MPI run):
/// `part = (p, parts)`; its workers are `p * W + t`. Builds every LP (deterministic: the same
/// states, streams and initial events in every part), keeps its own workers' initial events,
/// runs its workers (each over the endpoint `endpoint(its number)` makes, inside its thread;
/// each publishes its first key and passes a start barrier before any runs: G0 across parts,
/// so a transport's registers need no seeding), passes the end barriers (drain, TMC check), and returns its
/// report; `states` gets its own LPs' final states (for `Model::finish` requests).
pub(super) fn run_part<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    model: &M,
    cfg: &RunConfig,
    family: &Conservative<'_>,
    part: (usize, usize),
    states: &mut Vec<Option<M::State>>,
    endpoint: &(dyn Fn(usize) -> X + Sync),
) -> Result<PartOut, SimError> {
    let (protocol, cc) = (family.protocol, family.cc);
    let (p, threads) = (part.0, cc.threads);
    let base = p * threads;
    let Part {
        shared,
        queues,
        first,
        init_counters,
        init_s,
    } = set_up::<M, Q>(
        model,
        cfg,
        protocol,
        cc,
        part.1 * threads,
        base..base + threads,
    )?;
    let pinner = Pinner::new(cfg.pin, part.1 * threads);
    let start = Instant::now();
    let results = run_part_threads(cfg, &pinner, base, queues, touch_queue, |me, q| {
        part_worker(&shared, q, endpoint(me), first[me - base], protocol)
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    // Stopped by another process (its error, or a stop request under null messages): this
    // process's figures cover what it committed; the parent returns the other's error if it
    // has one, else an incomplete report.
    let all = shared.lps.into_vec();
    let lps = &all;
    let mine = |lp: usize| shared.owner[lp] as usize / threads == p;
    let fingerprint = Fingerprint::from_digests(
        lps.iter()
            .enumerate()
            .filter(|(i, _)| mine(*i))
            .map(|(i, s)| (i as LpId, &s.digest)),
    )
    .0;
    let committed = lps
        .iter()
        .enumerate()
        .filter(|(i, _)| mine(*i))
        .map(|(_, s)| s.digest.count())
        .sum();
    let costs = lps
        .iter()
        .enumerate()
        .filter(|(i, _)| mine(*i))
        .map(|(i, s)| (i as LpId, s.cost.cost()))
        .collect();
    let finish = finish_ops(
        model,
        cfg.known_end(!results.iter().any(|r| r.0.stopped)),
        lps.iter()
            .enumerate()
            .filter(|(i, _)| mine(*i))
            .map(|(i, s)| (i as LpId, &s.state)),
    )?;
    let mut counters = init_counters;
    for (r, _, _) in &results {
        for (c, x) in counters.iter_mut().zip(&r.counters) {
            *c += x;
        }
    }
    let stopped = results.iter().any(|r| r.0.stopped);
    let mut written = Ok(());
    if let Some(mut part) = cfg.part_writer::<M>(p, &counters).filter(|_| !stopped) {
        for (i, s) in all.iter().enumerate().filter(|(i, _)| mine(*i)) {
            part.lp(i as LpId, s);
        }
        for e in shared
            .leftover
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            part.event(e);
        }
        written = part.finish();
        cfg.part_done(written.clone());
    }
    *states = all
        .into_iter()
        .enumerate()
        .map(|(i, s)| mine(i).then_some(s.state))
        .collect();
    let mut workers: Vec<_> = results
        .iter()
        .map(|r| worker_figures(protocol, &r.0, wall_s))
        .collect();
    mark_workers(&pinner.placement(), &mut workers);
    Ok(PartOut {
        result: Ok(()),
        fingerprint,
        committed,
        processed: results.iter().map(|r| r.0.stats.events).sum(),
        pending: results.iter().map(|r| r.0.pending as u64).sum(),
        in_transit: results.iter().map(|r| r.1 as u64).sum(),
        tmc_left: results.iter().map(|r| r.2).sum(),
        stopped,
        last_time: results.iter().map(|r| r.0.last_time).fold(0.0, f64::max),
        init_s,
        wall_s,
        peak_rss: peak_rss_bytes(),
        counters,
        finish,
        figures: Default::default(),
        series: Vec::new(),
        workers,
        trace: Vec::new(),
        lp_costs: costs,
        part_error: written.err(),
    })
}

/// One worker of a part, on its own thread: publishes its first key and passes the start
/// barrier (G0 across parts: every worker's first event is published before any worker runs,
/// so a transport's registers need no seeding), runs the protocol, then the end: a barrier
/// (nobody sends any more), the drain of what is left for it (events at or after the end,
/// kept when the run ends at a checkpoint's cut), another barrier, and worker 0's snapshot,
/// whose TMC total must be 0 (G2). Returns its result, what it drained and that TMC total.
fn part_worker<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    shared: &Shared<'_, M>,
    q: Q,
    mut ep: X,
    first: EventKey,
    protocol: Protocol,
) -> (WorkerResult, usize, i64) {
    ep.publish(&Published {
        moe: first,
        ..Published::IDLE
    });
    let started = ep.barrier();
    let me = ep.me();
    let mut worker = Worker::new(shared, q, ep);
    let mut r = if started {
        run_worker(&mut worker, protocol)
    } else {
        WorkerResult {
            stats: Default::default(),
            counters: vec![0; shared.model.counter_names().len()],
            pending: worker.queue.len(),
            last_time: 0.0,
            stopped: true,
            extra: Vec::new(),
        }
    };
    let (mut left, mut tmc) = (0, 0);
    if started && worker.ep.barrier() {
        let mut kept = Vec::new();
        let keep = shared.cfg.saving() && !r.stopped;
        left = worker.ep.receive(
            &mut kept,
            |kept, e| {
                if keep {
                    kept.push(e)
                }
            },
            |_| Published::IDLE,
        );
        shared
            .leftover
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&mut kept);
        if worker.ep.barrier() {
            if me == 0 {
                let mut snap = Snapshot::default();
                worker.ep.snapshot(&mut snap);
                tmc = snap.in_transit();
            }
        } else {
            r.stopped = true;
        }
    } else {
        r.stopped = true;
    }
    worker.ep.figures(&mut r.extra);
    (r, left, tmc)
}

/// The one report of a conservative run from its parts' outputs (one part for a run on
/// threads): fingerprint parts added, counts summed, per-worker figures concatenated, `stats`
/// (computed in LP order) as `model_stats`, the protocol's figures.
pub(crate) fn report(
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    outs: Vec<PartOut>,
    stats: ModelStats,
) -> Result<Report, SimError> {
    let mut report = Report::new(
        protocol.name(),
        cc.threads,
        cfg.queue.name(),
        cfg.lps,
        cfg.end,
    );
    let mut fingerprint = 0u64;
    let (mut pending, mut in_transit, mut tmc_left) = (0u64, 0u64, 0i64);
    let mut rounds = 0f64;
    let mut wall = 0f64;
    report.lp_costs = crate::lp_cost::gather(
        cfg.lps,
        outs.iter().flat_map(|o| o.lp_costs.iter().copied()),
    );
    for o in outs {
        fingerprint = fingerprint.wrapping_add(o.fingerprint);
        report.committed += o.committed;
        report.processed += o.processed;
        pending += o.pending;
        in_transit += o.in_transit;
        tmc_left += o.tmc_left;
        report.complete &= !o.stopped;
        report.last_time = report.last_time.max(o.last_time);
        report.init_s = report.init_s.max(o.init_s);
        wall = wall.max(o.wall_s);
        for w in o.workers {
            rounds = rounds.max(w.get("rounds").copied().unwrap_or(0.0));
            report.workers.push(w);
        }
    }
    if tmc_left != 0 {
        return Err(SimError::Process(format!(
            "internal error: {tmc_left} messages counted in transit after every worker drained its rings"
        )));
    }
    report.fingerprint = Fingerprint(fingerprint);
    cfg.progress.set_now(report.last_time);
    report.model_stats = stats;
    report.set_wall(wall);
    report.pending_at_end = pending + in_transit;
    let st = &mut report.executor_stats;
    st.insert("in_transit_at_end".into(), in_transit as f64);
    let nulls: f64 = report
        .workers
        .iter()
        .filter_map(|w| w.get("null_messages"))
        .sum();
    protocol_figures(&mut report, protocol, rounds, nulls, wall);
    Ok(report)
}
