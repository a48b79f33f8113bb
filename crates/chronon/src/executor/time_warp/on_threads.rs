//! The end of a Time Warp run on threads: the workers' results gathered (the LPs in LP order,
//! each worker's figures, what is pending), a checkpoint's part written where the run ends at a
//! cut, and the report made as for one part of a run across parts (`parts.rs`).

use super::options::{Saving, TimeWarpConfig};
use super::report::{insert_preempt, pending_at_end, worker_figures, WorkerResult};
use super::shared::Shared;
use super::stats::Stats;
use crate::error::SimError;
use crate::executor::part_out::PartOut;
use crate::executor::{lp_totals, LpSlot, RunConfig};
use crate::model::Model;
use crate::queue::PendingSet;
use crate::stats::Report;
use crate::tw_msg::TwEvent;

/// The report of a run on threads, once every worker has stopped: the run as one part
/// ([`parts::report`](super::parts::report), the report of a run across parts too), with
/// what only threads have: the global events' figures and the placement of the workers.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    opts: &TimeWarpConfig,
    sh: Shared<'_, M>,
    results: Vec<WorkerResult<M, Q>>,
    mut counters: Vec<i64>,
    built: Report,
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
    let (fingerprint, committed, model_stats) = lp_totals(model, &lps, &counters, end)?;
    let costs = crate::executor::slot_costs(&lps);
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
    let (figures, series) = super::parts::part_figures(&sh, opts);
    let mut out = PartOut::ok();
    out.lp_costs = costs;
    out.fingerprint = fingerprint.0;
    out.committed = committed;
    out.processed = stats.iter().map(|s| s.processed).sum();
    out.pending = pending;
    out.stopped = !complete;
    out.last_time = last_time;
    out.init_s = built.init_s;
    out.wall_s = wall;
    out.figures = figures;
    out.series = series;
    out.workers = stats
        .iter()
        .map(|s| {
            let mut m = worker_figures(s, saving);
            if let Some(p) = sh.preempt {
                insert_preempt(&mut m, &s.preempt, p.ticks.is_some());
            }
            m
        })
        .collect();
    let placement = sh.pinner.placement();
    crate::placement::mark_workers(&placement, &mut out.workers);
    let mut report = super::parts::report(model, cfg, built.threads, opts, vec![out], model_stats);
    report.placement = placement;
    sh.globals
        .queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .add_to(&mut report);
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
    for (w, ((lps, clocks), cold, c, st, done, (queue, cancelled))) in
        results.into_iter().enumerate()
    {
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
        for (li, (lp, cost)) in lps.into_iter().zip(clocks).enumerate() {
            let id = sh.lp_id(w, li);
            let slot = LpSlot {
                state: lp.state,
                meta: lp.meta,
                digest: lp.digest,
                cost,
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
