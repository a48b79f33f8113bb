//! The round driver shared by the window and lock-step protocols.
//!
//! One round, on every worker:
//! 1. **receive**: take the mailbox (GSU `receive`), publish MOE (the earliest key), the
//!    protocol's bound, flags (error, stop) and — worker 0 — the next global event's time;
//! 2. **barrier**; then every worker takes what the barrier delivered (`Endpoint::settle`:
//!    nothing with threads and processes; over MPI the last round's events from other ranks,
//!    which the snapshot covers) and reads the same GSU snapshot (no worker receives or
//!    publishes before the next barrier; sends only add events later than every bound);
//! 3. if the snapshot carries a flag, everyone leaves; if a global event is due before the
//!    earliest LP event, worker 0 runs it while the others wait at a second barrier (the safe
//!    place of seed 001 §2.2.3); after that barrier every worker takes the LP events the global
//!    events sent to its LPs into its pending set, and if there were any, the round ends here
//!    (the snapshot's bounds do not cover them: the next round publishes them);
//! 4. **execute** every event below the worker's bound (and the globally smallest one);
//!    With load balancing (window only), each worker then claims shared LPs by atomic index
//!    and runs their events below the same bound (`balance.rs`, README "Load balancing");
//! 5. **flush** the outgoing batches, **round end** (`Endpoint::round_end`: a barrier; over MPI
//!    only the rank's threads meet, and the next snapshot barrier's one all-gather does the
//!    rest: one collective per round, transport/mpi/README.md "One collective per round").

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::lockstep::{self, Closure};
use super::{Outcome, Protocol, Worker};
use crate::error::SimError;
use crate::event::{Event, EventKey, Keyed};
use crate::gsu::{Published, Snapshot};
use crate::model::Model;
use crate::queue::PendingSet;
use crate::transport::Endpoint;

const FLAG_ERROR: u64 = 1;
const FLAG_STOP: u64 = 2;

pub(crate) fn run<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    w: &mut Worker<'_, '_, M, Q, X>,
    protocol: Protocol,
) -> Outcome {
    let sh = w.sh;
    let me = w.me;
    let end = sh.cfg.end;
    let mut snap = Snapshot::default();
    let mut closure = Closure::default();
    let mut failed = false;
    let mut outcome = Outcome::default();
    let mut bound_sum = 0.0;
    let mut shared = SharedRuns::default();
    loop {
        let t0 = Instant::now();
        let stop = me == 0 && sh.cfg.progress.stop_requested();
        let flags = if failed { FLAG_ERROR } else { 0 } | if stop { FLAG_STOP } else { 0 };
        // Ordering: written before the barrier that ends the last safe point, read after it.
        let next_global = f64::from_bits(sh.global_next.load(Ordering::Relaxed));
        receive(w, flags, next_global);
        let tw = Instant::now();
        if !w.ep.barrier() {
            outcome.stopped = true;
            break;
        }
        w.stats.wait_s += tw.elapsed().as_secs_f64();
        // What the barrier delivered (over MPI: the last round's sends from other ranks); the
        // snapshot already covers it.
        w.ep.settle(&mut w.queue, |q, e| q.push(e));
        w.ep.snapshot(&mut snap);
        let flags = snap.flags();
        if flags & FLAG_ERROR != 0 {
            break;
        }
        if flags & FLAG_STOP != 0 {
            outcome.stopped = true;
            break;
        }
        let min_key = snap.min_moe();
        let t_min = snap.lbts();
        let mut g = snap.workers[0].published.aux;
        if g < t_min && g < end && t_min.is_finite() {
            match safe_place(w, t_min, &mut failed) {
                Some((next, false)) => g = next,
                Some((_, true)) => {
                    // The global events sent LP events, maybe before `t_min` and below this
                    // round's bounds: run nothing this round; the next one publishes them.
                    if !w.ep.round_end() {
                        outcome.stopped = true;
                        break;
                    }
                    continue;
                }
                None => {
                    outcome.stopped = true;
                    break;
                }
            }
        }
        if t_min >= end || t_min.is_nan() {
            break;
        }
        let below = match protocol {
            // The window's LBTS (seed 001 §2.2.2, after YAWNS): min over workers of (earliest
            // event time + the worker's smallest outgoing lookahead), messages in transit
            // included (MOM + lookahead); no event sent below it can land below it. With zero
            // lookahead it is the global minimum time, and the globally smallest event still
            // runs (nothing can precede it), so every round makes progress.
            Protocol::Window => snap.min_bound(&sh.worker_la),
            _ => closure.in_clock(&snap, &sh.link_la, me),
        };
        bound_sum += (below.min(end) - t_min).max(0.0);
        let cap = if g == f64::NEG_INFINITY {
            // A global event failed: run nothing more; the next round reports it.
            EventKey {
                time: 0.0,
                seq: 0,
                src: 0,
            }
        } else {
            sh.cap(g)
        };
        w.stats.sync_s += t0.elapsed().as_secs_f64();
        let ran = match protocol {
            Protocol::Window => w.run_below(below, cap, Some(min_key)),
            _ => w.run_lockstep(below, cap, min_key, lockstep::frontier(&snap, me)),
        };
        if let Err(e) = ran {
            sh.record_error(e);
            failed = true;
        }
        if sh.balance.is_some() && !failed {
            if let Err(e) = shared.run(w, below, cap, min_key) {
                sh.record_error(e);
                failed = true;
            }
        }
        let t1 = Instant::now();
        w.flush();
        w.stats.rounds += 1;
        if me == 0 {
            sh.cfg.progress.set_now(t_min);
            w.report_progress();
        }
        let tw = Instant::now();
        if !w.ep.round_end() {
            outcome.stopped = true;
            break;
        }
        w.stats.wait_s += tw.elapsed().as_secs_f64();
        w.stats.sync_s += t1.elapsed().as_secs_f64();
    }
    if sh.balance.is_some() {
        outcome.extra.push(("shared_lp_runs", shared.runs as f64));
        outcome
            .extra
            .push(("foreign_shared_lp_runs", shared.foreign as f64));
        outcome.extra.push(("shared_events", shared.events as f64));
    }
    if w.stats.rounds > 0 {
        outcome
            .extra
            .push(("mean_window", bound_sum / w.stats.rounds as f64));
    }
    outcome
}

/// Step 1 of a round: takes what waits for this worker into its queue and publishes its MOE,
/// its bound (with load balancing, the shared sets it is home to count too), `flags` and
/// `next_global` (the next global event's time, read by everyone from worker 0's registers).
fn receive<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    w: &mut Worker<'_, '_, M, Q, X>,
    flags: u64,
    next_global: f64,
) {
    let sh = w.sh;
    let la = sh.worker_la[w.me];
    // Load balancing: nobody sends or claims between the last barrier and the next one, so
    // the shared sets this worker is home to are quiescent here.
    let shared_moe = match &sh.balance {
        Some(b) => b.home_round(w.me, sh.workers),
        None => Published::IDLE.moe,
    };
    let shared_la = sh.balance.as_ref().map_or(f64::INFINITY, |b| b.la);
    w.ep.receive(
        &mut w.queue,
        |q, e| q.push(e),
        |q| {
            let moe = q.peek().map_or(Published::IDLE.moe, |e| e.key());
            Published {
                moe: moe.min(shared_moe),
                bound: (moe.time + la).min(shared_moe.time + shared_la),
                flags,
                aux: next_global,
            }
        },
    );
}

/// Step 3 of a round, at the safe place (every LP event before `t_min` has run, none after
/// it has): worker 0 runs the global events before `t_min` while the others wait at a
/// barrier; after it every worker takes the LP events they sent to its LPs. Returns the next
/// global event's time (`-inf`: a global event failed, and `failed` is set on worker 0) and
/// whether the global events sent anything, or `None` when the barrier was aborted.
fn safe_place<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    w: &mut Worker<'_, '_, M, Q, X>,
    t_min: f64,
    failed: &mut bool,
) -> Option<(f64, bool)> {
    let sh = w.sh;
    if w.me == 0 {
        let (next, sent) = match sh.run_globals(t_min) {
            Ok(r) => r,
            Err(e) => {
                sh.record_error(e);
                *failed = true;
                (f64::NEG_INFINITY, false)
            }
        };
        // Ordering: the barrier below publishes both.
        sh.global_next.store(next.to_bits(), Ordering::Relaxed);
        sh.global_sent.store(sent, Ordering::Relaxed);
    }
    let tw = Instant::now();
    if !w.ep.barrier() {
        return None;
    }
    w.stats.wait_s += tw.elapsed().as_secs_f64();
    // Ordering: written before the barrier above (the sends under their mutexes too).
    let sent = sh.global_sent.load(Ordering::Relaxed);
    if sent {
        w.take_global_sends();
    }
    Some((f64::from_bits(sh.global_next.load(Ordering::Relaxed)), sent))
}

/// Load balancing's figures on one worker: shared LPs it ran events of, those of them the
/// mapping gave another worker (the balancing at work), and the events.
#[derive(Default)]
struct SharedRuns {
    runs: u64,
    foreign: u64,
    events: u64,
}

impl SharedRuns {
    /// Step 4 with load balancing: claims shared LPs by atomic index, starting from this
    /// worker's own set, and runs their events below `below` and `cap`.
    fn run<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
        &mut self,
        w: &mut Worker<'_, '_, M, Q, X>,
        below: f64,
        cap: EventKey,
        min_key: EventKey,
    ) -> Result<(), SimError> {
        let sh = w.sh;
        let Some(b) = &sh.balance else {
            return Ok(());
        };
        let n = b.sets.len();
        for k in 0..n {
            let s = (w.me + k) % n;
            while let Some(j) = b.cursors[s].claim(b.sets[s].len()) {
                let lp = b.sets[s][j];
                let done = w.run_shared(lp, below, cap, Some(min_key))?;
                self.runs += u64::from(done > 0);
                self.foreign += u64::from(done > 0 && sh.owner[lp as usize] as usize != w.me);
                self.events += done;
            }
        }
        Ok(())
    }
}
