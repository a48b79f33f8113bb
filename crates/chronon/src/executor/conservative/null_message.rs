//! Chandy-Misra-Bryant null messages (seed 001 §2.2.1) between workers.
//!
//! Each worker is a partition; for every pair of workers joined by at least one LP link, the
//! channel register `chan[v -> w]` holds the time below which nothing will ever come from `v`
//! to `w` (the null message; raising it is sending one). A worker loops without barriers:
//! read its input channels (InClock = their minimum), receive its mailbox, execute its events
//! with time below InClock, flush its batches, then publish on every output channel its lower
//! bound on future events, `min(earliest pending, InClock)`, plus the link's lookahead — only
//! when that raises the channel, so null messages are batched per round of the loop. Sends
//! are pushed before the channel is raised and channels are read before the mailbox is taken,
//! so a raised channel always comes with every event sent below it.
//!
//! Every link between workers needs a positive lookahead: with zero lookahead a cycle
//! deadlocks (seed 001 §2.2.1) and equal-time cascades across workers would need key-level
//! channel clocks, so such links are rejected before the run starts, naming the cycle (or the
//! link). Global events run at a rendezvous: every worker has executed everything up to the
//! event and can receive nothing more before it. A global event at `g` may send an LP event
//! to any worker at any time after `g`, which that worker takes into its pending set on
//! leaving the rendezvous; so, while a global event at `g` is pending, a worker's null
//! messages promise at most `g` + the link's lookahead (its bound is `min(earliest pending,
//! InClock, g)`): what such an event makes it send is later than `g` + lookahead.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Instant;

use super::{Outcome, Worker};
use crate::error::{Setting, SimError};
use crate::event::{Event, Keyed};
use crate::gsu::{Published, Snapshot};
use crate::model::{Model, Time};
use crate::queue::PendingSet;
use crate::transport::Endpoint;

/// Rejects a link lookahead so small that a channel would need more than `cap` null messages
/// to reach the end time: a blocked worker advances its output channel by one link lookahead
/// per null message, so crossing `[0, end)` takes about `end / lookahead` of them. Without an
/// end time nothing is estimated (the run ends when no event is left).
pub(super) fn check_budget(
    link_la: &[Time],
    w: usize,
    end: Time,
    cap: u64,
) -> Result<(), SimError> {
    if !end.is_finite() {
        return Ok(());
    }
    let smallest = (0..w)
        .flat_map(|v| (0..w).map(move |x| (v, x)))
        .filter(|&(v, x)| v != x && link_la[v * w + x] > 0.0 && link_la[v * w + x].is_finite())
        .min_by(|a, b| link_la[a.0 * w + a.1].total_cmp(&link_la[b.0 * w + b.1]));
    let Some((v, x)) = smallest else {
        return Ok(());
    };
    let la = link_la[v * w + x];
    let needed = end / la;
    if needed > cap as f64 {
        return Err(SimError::config(Setting::Executor, format!(
            "$executor null-message with lookahead {la:e} (worker {v} -> {x}) would need about {needed:.3e} null messages per channel to reach end {end} (end / lookahead); the cap is {cap}: use $executor window, or a lookahead of at least {:e}, or raise the cap ($max_null_messages)",
            end / cap as f64
        )));
    }
    Ok(())
}

pub(crate) fn run<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    w: &mut Worker<'_, '_, M, Q, X>,
) -> Outcome {
    let sh = w.sh;
    let me = w.me;
    let nw = sh.workers;
    let end = sh.cfg.end;
    let ins: Vec<usize> = (0..nw)
        .filter(|&v| v != me && sh.link_la[v * nw + me].is_finite())
        .collect();
    let outs: Vec<(usize, Time)> = (0..nw)
        .filter(|&x| x != me && sh.link_la[me * nw + x].is_finite())
        .map(|x| (x, sh.link_la[me * nw + x]))
        .collect();
    let mut sent: Vec<f64> = vec![0.0; outs.len()];
    let min_la = outs.iter().map(|o| o.1).fold(f64::INFINITY, f64::min);
    let mut outcome = Outcome::default();
    let mut next_global = f64::from_bits(sh.global_next.load(SeqCst));
    let read_in = |ep: &X| {
        ins.iter()
            .map(|&v| ep.channel(v, me))
            .fold(f64::INFINITY, f64::min)
    };
    let mut loops = 0u64;
    loop {
        let t0 = Instant::now();
        if w.ep.aborted() {
            outcome.stopped = sh.error.lock().map(|e| e.is_none()).unwrap_or(false);
            break;
        }
        if me == 0 && loops % 64 == 0 && sh.cfg.progress.stop_requested() {
            w.ep.abort();
            outcome.stopped = true;
            break;
        }
        loops += 1;
        // 1. Input channels first, then the mailbox (see the module docs).
        let in_clock = read_in(&w.ep);
        w.ep.receive(
            &mut w.queue,
            |q, e| q.push(e),
            |q| Published {
                moe: q.peek().map_or(Published::IDLE.moe, |e| e.key()),
                ..Published::IDLE
            },
        );
        // 2. Null messages before executing: nothing this worker will ever send is earlier than
        //    min(earliest pending, InClock) + lookahead, and announcing it now lets the
        //    neighbours run while this worker executes (no leapfrogging).
        let head_t = w.head().map_or(f64::INFINITY, |k| k.time);
        raise(w, &outs, &mut sent, head_t.min(in_clock).min(next_global));
        // 3. Execute below InClock.
        let cap = sh.cap(next_global);
        w.stats.sync_s += t0.elapsed().as_secs_f64();
        // At most one lookahead per slice, then announce again: a neighbour that is one slice
        // ahead never waits for a whole long step of ours (no anti-phase leapfrogging).
        let below = in_clock.min(head_t + min_la);
        let done = match w.run_below(below, cap, None) {
            Ok(n) => n,
            Err(e) => {
                sh.record_error(e);
                w.ep.abort();
                break;
            }
        };
        let t1 = Instant::now();
        w.flush();
        if done > 0 {
            for &(x, _) in &outs {
                w.ep.wake(x);
            }
        }
        // 4. Null messages again, from the new earliest event (after the sends: a raised channel
        //    comes with every event sent below it).
        let head = w.head();
        let head_t = head.map_or(f64::INFINITY, |k| k.time);
        let lb = head_t.min(in_clock);
        raise(w, &outs, &mut sent, lb.min(next_global));
        if me == 0 {
            sh.cfg.progress.set_now(lb.min(end));
        }
        // 5. A global event due, the end, or wait for input.
        if next_global < end && head_t > next_global && in_clock > next_global {
            next_global = rendezvous(w, head);
            w.stats.sync_s += t1.elapsed().as_secs_f64();
            continue;
        }
        if head_t >= end && in_clock >= end {
            break;
        }
        if head_t >= end && next_global >= end && quiescent(w, head) {
            // Nothing is left anywhere before the end (GSU snapshot: no pending event, no
            // message in transit): close every output channel and stop, instead of letting
            // null messages creep up to the end (or forever, without an end time).
            raise(w, &outs, &mut sent, f64::INFINITY);
            break;
        }
        if done == 0 {
            let tw = Instant::now();
            w.ep.wait_until(|ep| ep.aborted() || ep.has_mail() || read_in(ep) > in_clock);
            w.stats.wait_s += tw.elapsed().as_secs_f64();
        }
        w.stats.sync_s += t1.elapsed().as_secs_f64();
    }
    outcome
}

/// Whether a GSU snapshot shows no event before the end anywhere, in transit included (this
/// worker first publishes its own earliest event, `head`).
fn quiescent<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    w: &mut Worker<'_, '_, M, Q, X>,
    head: Option<crate::event::EventKey>,
) -> bool {
    let sh = w.sh;
    let mine = Published {
        moe: head.unwrap_or(Published::IDLE.moe),
        ..Published::IDLE
    };
    let mut snap = Snapshot::default();
    w.ep.publish_and_snapshot(&mine, &mut snap) >= sh.cfg.end
}

/// Raises every output channel whose bound `lb + lookahead` moved up (one null message each).
fn raise<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    w: &mut Worker<'_, '_, M, Q, X>,
    outs: &[(usize, Time)],
    sent: &mut [f64],
    lb: Time,
) {
    for (i, &(x, la)) in outs.iter().enumerate() {
        let b = lb + la;
        if b > sent[i] {
            sent[i] = b;
            w.ep.raise_channel(x, b);
            w.stats.null_messages += 1;
            w.ep.wake(x);
        }
    }
}

/// Every worker arrives with nothing left before the next global event; the last to arrive
/// runs the global events due (before the earliest pending LP event, messages in transit
/// included) and releases the others. Returns the next global event's time.
fn rendezvous<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    w: &mut Worker<'_, '_, M, Q, X>,
    head: Option<crate::event::EventKey>,
) -> Time {
    let sh = w.sh;
    w.ep.publish(&Published {
        moe: head.unwrap_or(Published::IDLE.moe),
        ..Published::IDLE
    });
    let tw = Instant::now();
    let _ = w.ep.rendezvous(|ep| {
        let mut snap = Snapshot::default();
        ep.snapshot(&mut snap);
        let t_min = snap.lbts();
        let next = if t_min.is_finite() {
            match sh.run_globals(t_min) {
                Ok((n, _)) => n,
                Err(e) => {
                    sh.record_error(e);
                    ep.abort();
                    f64::INFINITY
                }
            }
        } else {
            f64::INFINITY
        };
        sh.global_next.store(next.to_bits(), SeqCst);
    });
    w.stats.wait_s += tw.elapsed().as_secs_f64();
    // What the global events sent to this worker's LPs, before it raises a channel or runs
    // anything.
    w.take_global_sends();
    f64::from_bits(sh.global_next.load(SeqCst))
}
