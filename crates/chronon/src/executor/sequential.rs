//! The sequential executor: one pending-event set, events in key order, each committed as soon
//! as it runs. It defines the reference history that every parallel executor must reproduce.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use super::global::GlobalQueue;
use super::links::Links;
use super::{finish_report, init_lps_with, RunConfig};
use crate::error::{ModelError, SimError};
use crate::event::{Event, Keyed};
use crate::model::{CommitCtx, Ctx, Model};
use crate::prefetch::prefetch;
use crate::queue::{with_queue, PendingSet};
use crate::stats::Report;

/// How many events run between two looks at the progress figures and the stop flag.
const POLL_EVERY: u64 = 1 << 13;

pub(crate) fn run<M: Model>(model: &M, cfg: &RunConfig) -> Result<Report, SimError> {
    with_queue!(cfg.queue, run_with::<M>(model, cfg))
}

fn run_with<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
) -> Result<Report, SimError> {
    let init_start = Instant::now();
    let mut counters = vec![0i64; model.counter_names().len()];
    let mut queue = Q::new();
    let mut lps = init_lps_with(model, cfg, &mut counters, |ev| queue.push(ev))?;
    let links = Links::new(model, cfg.lps)?;
    let mut globals = GlobalQueue::for_run(model, cfg)?;
    let mut report = Report::new("seq", 1, cfg.queue.name(), cfg.lps, cfg.end);
    report.init_s = init_start.elapsed().as_secs_f64();
    report.placement = crate::placement::Placement::none(
        cfg.pin,
        "not pinned: the sequential executor runs on the calling thread",
    );

    let start = Instant::now();
    let lookahead = model.lookahead();
    let end = cfg.end;
    let n = cfg.lps;
    let progress = &*cfg.progress;
    let mut out: Vec<Event<M::Event>> = Vec::with_capacity(16);
    let mut error: Option<ModelError> = None;
    let mut processed = 0u64;
    let mut reported = 0u64;
    let mut last_time = 0.0;
    let mut current = (0, 0.0);
    let mut stopped = false;

    let outcome = catch_unwind(AssertUnwindSafe(|| {
        while let Some(ev) = queue.pop() {
            // The next event's LP record is most likely a cache miss (LPs are touched in
            // timestamp order, all over the table): start loading it while this one runs.
            if let Some(slot) = queue.peek().and_then(|next| lps.get(next.dst as usize)) {
                prefetch(slot);
            }
            let now = ev.time;
            if !globals.is_empty() && globals.next_time(end) < now {
                // Global events before this LP event run first (every LP is quiescent here).
                globals.run_before(model, n, &mut lps, now, end, &mut out)?;
                if !out.is_empty() {
                    // They sent LP events (after the global events' time, maybe before this
                    // one's): pop again.
                    for e in out.drain(..) {
                        queue.push(e);
                    }
                    queue.push(ev);
                    continue;
                }
            }
            if now >= end {
                queue.push(ev);
                break;
            }
            let slot = &mut lps[ev.dst as usize];
            current = (ev.dst, now);
            let timed = slot.cost.start();
            {
                let mut ctx = Ctx::new(
                    now,
                    ev.dst,
                    n,
                    lookahead,
                    &mut slot.meta,
                    &mut out,
                    &mut counters,
                    &mut error,
                );
                model.on_event(&mut slot.state, &ev.payload, &mut ctx);
            }
            slot.cost.stop(timed);
            if let Some(e) = error.take() {
                return Err(SimError::Model(e));
            }
            if links.declared {
                links.check(ev.dst, now, &out)?;
            }
            model.commit(&ev.payload, &CommitCtx { me: ev.dst, now });
            slot.digest.commit(&ev.key());
            crate::trace::committed(ev.dst, &ev.key());
            for e in out.drain(..) {
                queue.push(e);
            }
            last_time = now;
            processed += 1;
            if processed % POLL_EVERY == 0 {
                progress.add_events(processed - reported);
                reported = processed;
                progress.set_now(now);
                if progress.stop_requested() {
                    stopped = true;
                    break;
                }
            }
        }
        Ok(())
    }));
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(payload) => return Err(SimError::from_panic(current.0, current.1, payload.as_ref())),
    }
    progress.add_events(processed - reported);
    progress.set_now(last_time);
    let wall = start.elapsed().as_secs_f64();

    report.processed = processed;
    report.complete = !stopped;
    report.last_time = last_time;
    let end = cfg.stats_end(!stopped, last_time);
    finish_report(model, &lps, &counters, end, &mut report)?;
    globals.add_to(&mut report);
    report.set_wall(wall);
    report.pending_at_end = queue.len() as u64;
    if cfg.saving() && !stopped {
        let mut events = Vec::with_capacity(queue.len());
        while let Some(ev) = queue.pop() {
            events.push(ev);
        }
        super::checkpoint::write_split::<M>(cfg, (0, 1), lps, events, &counters, Some(&globals));
    }
    Ok(report)
}
