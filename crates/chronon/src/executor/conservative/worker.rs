//! One worker of a conservative run: its pending set, event execution, and the per-destination
//! batching of events for other workers. What the protocol decides (the bound below which a
//! worker may execute) is its caller's; this file only executes below a given bound and moves
//! the events it produced: local ones into its own pending set, remote ones into one outgoing
//! batch per destination worker, flushed through the worker's transport endpoint (the GSU and
//! the destination's mailbox between threads, a shared-memory ring between processes).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use super::{Shared, WorkerStats};
use crate::error::{ModelError, SimError};
use crate::event::{Event, EventKey, Keyed};
use crate::model::{CommitCtx, Ctx, LpId, Model, Time};
use crate::queue::PendingSet;
use crate::transport::Endpoint;

/// How events and lookahead are checked every so often for progress and stop requests.
const POLL_EVERY: u64 = 1 << 12;

/// One worker: its pending set, its outgoing batches and its figures.
pub(crate) struct Worker<'s, 'a, M: Model, Q, X> {
    pub me: usize,
    pub sh: &'s Shared<'a, M>,
    pub queue: Q,
    /// This worker's end of the transport (mailboxes and GSU, or shared-memory rings).
    pub ep: X,
    out: Vec<Event<M::Event>>,
    outbox: Vec<Vec<Event<M::Event>>>,
    pub counters: Vec<i64>,
    error: Option<ModelError>,
    current: (LpId, Time),
    pub stats: WorkerStats,
    reported: u64,
    pub last_time: Time,
    /// The earliest event sent to another worker since the last reset (lock-step).
    sent_min: Time,
}

impl<'s, 'a, M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>
    Worker<'s, 'a, M, Q, X>
{
    pub(crate) fn new(sh: &'s Shared<'a, M>, queue: Q, ep: X) -> Self {
        Worker {
            me: ep.me(),
            sh,
            queue,
            ep,
            out: Vec::with_capacity(16),
            outbox: (0..sh.workers).map(|_| Vec::new()).collect(),
            counters: vec![0; sh.model.counter_names().len()],
            error: None,
            current: (0, 0.0),
            stats: WorkerStats::default(),
            reported: 0,
            last_time: 0.0,
            sent_min: Time::INFINITY,
        }
    }

    /// The key of this worker's next event.
    #[inline]
    pub(crate) fn head(&mut self) -> Option<EventKey> {
        self.queue.peek().map(|e| e.key())
    }

    /// Pops the head (which exists) and starts loading the next head's LP slot: LPs are touched
    /// in timestamp order, all over the table, so the slot is most likely a cache miss.
    #[inline(always)]
    fn pop_head(&mut self) -> Event<M::Event> {
        let ev = self.queue.pop().expect("the head exists");
        if let Some(next) = self.queue.peek() {
            self.sh.lps.prefetch(next.dst);
        }
        ev
    }

    /// Executes, in key order, every event with time `< below` and key `< cap`, and also the
    /// event with key `extra` if it is this worker's head. A panic or model error is returned.
    pub(crate) fn run_below(
        &mut self,
        below: Time,
        cap: EventKey,
        extra: Option<EventKey>,
    ) -> Result<u64, SimError> {
        self.counted(|w| {
            if let (Some(x), Some(h)) = (extra, w.head()) {
                if x == h && h < cap {
                    let ev = w.pop_head();
                    w.execute(ev)?;
                }
            }
            loop {
                match w.queue.peek() {
                    Some(e) if e.time < below && e.key() < cap => {}
                    _ => break,
                }
                let ev = w.pop_head();
                w.execute(ev)?;
            }
            Ok(())
        })
    }

    /// Lock-step: executes, in key order, first the event with key `gst` if it is this worker's
    /// head (the event at GST, which nothing can precede), then every head with time
    /// `< below` and key `< cap`, stopping at the first head of a *crossing* LP
    /// ([`Shared::crossing`]) whose time is not below `frontier`: the earliest time at which
    /// another worker may hold an event, lowered by every event this round sends to another
    /// worker (`lockstep.rs`). Returns the number executed.
    pub(crate) fn run_lockstep(
        &mut self,
        below: Time,
        cap: EventKey,
        gst: EventKey,
        frontier: Time,
    ) -> Result<u64, SimError> {
        self.counted(|w| {
            w.sent_min = Time::INFINITY;
            if w.head() == Some(gst) && gst < cap {
                let ev = w.pop_head();
                w.execute(ev)?;
            }
            loop {
                match w.queue.peek() {
                    Some(e) if e.time < below && e.key() < cap => {
                        if w.sh.crossing[e.dst as usize] && !(e.time < frontier.min(w.sent_min)) {
                            break;
                        }
                    }
                    _ => break,
                }
                let ev = w.pop_head();
                w.execute(ev)?;
            }
            Ok(())
        })
    }

    /// Runs `f` (which executes events) under `catch_unwind`, adds its wall time to the busy
    /// time, and returns the number of events it executed; a panic becomes
    /// `SimError::Panic` naming the LP and time of the event that was running.
    fn counted(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<(), SimError>,
    ) -> Result<u64, SimError> {
        let start = Instant::now();
        let before = self.stats.events;
        let outcome = catch_unwind(AssertUnwindSafe(|| f(self)));
        self.stats.busy_s += start.elapsed().as_secs_f64();
        let done = self.stats.events - before;
        match outcome {
            Ok(Ok(())) => Ok(done),
            Ok(Err(e)) => Err(e),
            Err(payload) => Err(SimError::from_panic(
                self.current.0,
                self.current.1,
                payload.as_ref(),
            )),
        }
    }

    /// Runs shared LP `i` (claimed for this round): its events with time `< below` and key
    /// `< cap` in key order, and the event with key `extra` if it is the LP's head. Returns the
    /// number run.
    pub(crate) fn run_shared(
        &mut self,
        i: u32,
        below: Time,
        cap: EventKey,
        extra: Option<EventKey>,
    ) -> Result<u64, SimError> {
        self.counted(|w| {
            let b = w.sh.balance.as_ref().expect("load balancing is on");
            let mut first = true;
            loop {
                // The lock is not held while the event runs: its sends may go to this LP.
                let ev = {
                    let (_, mut q) = b.lock(i);
                    match q.peek().map(|e| e.key()) {
                        Some(k) if k < cap && (k.time < below || (first && Some(k) == extra)) => {
                            q.pop()
                        }
                        _ => None,
                    }
                };
                first = false;
                match ev {
                    Some(ev) => w.execute(ev)?,
                    None => break,
                }
            }
            Ok(())
        })
    }

    #[inline]
    fn execute(&mut self, ev: Event<M::Event>) -> Result<(), SimError> {
        let sh = self.sh;
        let now = ev.time;
        let dst = ev.dst;
        self.current = (dst, now);
        debug_assert!(
            sh.owner[dst as usize] as usize == self.me
                || sh.balance.as_ref().is_some_and(|b| b.is_shared(dst))
        );
        // Safety: `dst` is owned by this worker (its events only ever reach this worker's
        // queue) or is a shared LP this worker claimed for the round (one claimant per round,
        // rounds separated by barriers), and while workers run only an LP's owner or claimant
        // touches its slot (lp_table/README, README "Load balancing").
        let slot = unsafe { sh.lps.get_mut(dst) };
        let timed = slot.cost.start();
        {
            let mut ctx = Ctx::new(
                now,
                dst,
                sh.cfg.lps,
                sh.links.lookahead,
                &mut slot.meta,
                &mut self.out,
                &mut self.counters,
                &mut self.error,
            );
            sh.model.on_event(&mut slot.state, &ev.payload, &mut ctx);
        }
        slot.cost.stop(timed);
        if let Some(e) = self.error.take() {
            self.out.clear();
            return Err(SimError::Model(e));
        }
        if sh.links.declared {
            if let Err(e) = sh.links.check(dst, now, &self.out) {
                self.out.clear();
                return Err(SimError::Model(e));
            }
        }
        sh.model.commit(&ev.payload, &CommitCtx { me: dst, now });
        slot.digest.commit(&ev.key());
        crate::trace::committed(dst, &ev.key());
        for e in self.out.drain(..) {
            if let Some(b) = &sh.balance {
                if b.is_shared(e.dst) {
                    b.push(e);
                    continue;
                }
            }
            let w = sh.owner[e.dst as usize] as usize;
            if w == self.me {
                self.queue.push(e);
            } else {
                self.sent_min = self.sent_min.min(e.time);
                self.outbox[w].push(e);
            }
        }
        // The latest, not the last: with shared LPs a worker may run an earlier event last.
        self.last_time = self.last_time.max(now);
        self.stats.events += 1;
        if self.stats.events % POLL_EVERY == 0 {
            sh.cfg
                .progress
                .add_events(self.stats.events - self.reported);
            self.reported = self.stats.events;
        }
        Ok(())
    }

    /// Takes into the pending set the LP events that the global events of the last safe point
    /// sent to this worker's LPs ([`Shared::run_globals`]); every worker calls it after the
    /// barrier (or rendezvous) that ends the safe point, before it runs anything.
    pub(crate) fn take_global_sends(&mut self) {
        let mine = std::mem::take(
            &mut *self.sh.global_sends[self.me]
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for e in mine {
            self.queue.push(e);
        }
    }

    /// Sends every outgoing batch (one per destination worker) through the transport.
    pub(crate) fn flush(&mut self) {
        for w in 0..self.outbox.len() {
            if !self.outbox[w].is_empty() {
                let batch = std::mem::take(&mut self.outbox[w]);
                self.stats.remote_sent += batch.len() as u64;
                self.stats.batches_sent += 1;
                self.ep.send(w, batch);
            }
        }
    }

    /// Reports the events not yet counted in the progress figures.
    pub(crate) fn report_progress(&mut self) {
        self.sh
            .cfg
            .progress
            .add_events(self.stats.events - self.reported);
        self.reported = self.stats.events;
    }
}
