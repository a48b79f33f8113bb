//! What every worker of a conservative run shares: the LP table, links and lookaheads, the
//! global-event queue, the first error; and each worker's figures.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;

use super::balance::Balance;
use super::lp_table::{self, LpTable};
use crate::error::SimError;
use crate::event::{EventKey, ENGINE_SENDER};
use crate::executor::global::GlobalQueue;
use crate::executor::links::Links;
use crate::executor::RunConfig;
use crate::model::{Model, Time};

/// Per-worker figures for the report.
#[derive(Clone, Debug, Default)]
pub(crate) struct WorkerStats {
    pub events: u64,
    pub rounds: u64,
    pub null_messages: u64,
    pub remote_sent: u64,
    pub batches_sent: u64,
    /// Seconds waiting at barriers (or for input bounds, under null messages).
    pub wait_s: f64,
    /// Seconds in synchronization: waiting plus receiving, publishing and computing bounds.
    pub sync_s: f64,
    pub busy_s: f64,
}

/// What every worker shares.
pub(crate) struct Shared<'a, M: Model> {
    pub model: &'a M,
    pub cfg: &'a RunConfig,
    pub lps: LpTable<M::State>,
    pub owner: Vec<u32>,
    pub links: Links,
    pub workers: usize,
    /// Per worker: the smallest lookahead of a link from one of its LPs to an LP of another
    /// worker (events sent inside a worker go through its own pending set, in key order).
    pub worker_la: Vec<Time>,
    /// `link_la[v * W + w]`: the smallest lookahead of a link from an LP of worker `v` to an LP
    /// of worker `w != v` (`+inf` when none).
    pub link_la: Vec<Time>,
    /// Lock-step: per LP, whether a zero-lookahead path leads from it to another worker
    /// ([`crossing_lps`](super::lookahead::crossing_lps); empty for the other protocols).
    pub crossing: Vec<bool>,
    pub globals: Mutex<GlobalQueue>,
    /// The first error any worker met, with its (time, LP) for a deterministic choice.
    pub error: Mutex<Option<SimError>>,
    /// The next global event's time after the last safe point (bits; written by the thread
    /// that ran the global events, before the barrier or rendezvous that ends the safe point).
    pub global_next: AtomicU64,
    /// Whether the global events of the last safe point sent LP events (written and read as
    /// `global_next` is).
    pub global_sent: AtomicBool,
    /// Window load balancing: the shared LP sets (`None`: every LP is dedicated).
    pub balance: Option<Balance<M::Event>>,
    /// A run that ends at a checkpoint's cut: the workers' pending events, handed over when
    /// they stop.
    pub leftover: Mutex<Vec<crate::event::Event<M::Event>>>,
    /// Per worker (of the whole run): the LP events the global events of the last safe point
    /// sent to its LPs, which it takes into its pending set before it runs anything
    /// ([`Worker::take_global_sends`](super::Worker::take_global_sends)).
    pub global_sends: Vec<Mutex<Vec<crate::event::Event<M::Event>>>>,
}

impl<M: Model> std::fmt::Debug for Shared<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl<M: Model> Shared<'_, M> {
    /// Records an error; of several, the one at the earliest (time, LP) wins.
    pub(crate) fn record_error(&self, e: SimError) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        let rank = |e: &SimError| match e {
            SimError::Model(m) => (m.time, m.lp),
            SimError::Panic { lp, time, .. } => (*time, *lp),
            _ => (f64::INFINITY, ENGINE_SENDER),
        };
        let better = match &*slot {
            None => true,
            Some(old) => {
                let (a, b) = (rank(&e), rank(old));
                a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
            }
        };
        if better {
            *slot = Some(e);
        }
    }

    /// The first error recorded, taken out (once every worker has stopped).
    pub(crate) fn take_error(&self) -> Option<SimError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The key below which nothing may run: the end time, capped by global event `g`.
    pub(crate) fn cap(&self, next_global: Time) -> EventKey {
        cap_key(next_global, self.cfg.end)
    }

    /// Runs the global events before `before` (every worker must be stopped at the safe
    /// point) and routes the LP events they sent: a shared LP's into its set, the others into
    /// their owner's [`global_sends`](Self::global_sends). Returns the next global event's
    /// time and whether anything was sent (then the workers' last snapshot does not cover
    /// every pending event any more).
    pub(crate) fn run_globals(&self, before: Time) -> Result<(Time, bool), SimError> {
        let mut g = self.globals.lock().unwrap_or_else(|p| p.into_inner());
        let mut view = lp_table::AllStates(&self.lps);
        let mut sent = Vec::new();
        g.run_before(
            self.model,
            self.cfg.lps,
            &mut view,
            before,
            self.cfg.end,
            &mut sent,
        )?;
        let any = !sent.is_empty();
        for e in sent {
            match &self.balance {
                Some(b) if b.is_shared(e.dst) => b.push(e),
                _ => self.global_sends[self.owner[e.dst as usize] as usize]
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(e),
            }
        }
        Ok((g.next_time(self.cfg.end), any))
    }
}

/// The key below which nothing may run: the next global event `g` (above every LP event's key
/// at time `g`, so they all still run before it: those global events sent at `g` too, whose
/// sender is [`ENGINE_SENDER`] with any counter), or the end time.
pub(crate) fn cap_key(g: Time, end: Time) -> EventKey {
    if g < end {
        EventKey {
            time: g,
            seq: u64::MAX,
            src: ENGINE_SENDER,
        }
    } else {
        EventKey {
            time: end,
            seq: 0,
            src: 0,
        }
    }
}
