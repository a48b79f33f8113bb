//! Global events (seed 001 §2.2.3): events outside any LP, kept in their own small queue and run
//! at a safe point where every LP event before them has run and no later one has, with every LP
//! stopped. A handler may read and change every LP's state and send LP events.
//!
//! Their keys use [`ENGINE_SENDER`] as sender and a counter of their own; they order global
//! events among themselves. Against LP events only times count: a global event at time `g`
//! runs after every LP event at or before `g` (zero-delay cascades and events other global
//! events sent at `g` included: the executors' caps lie above every key at `g`) and before any
//! LP event after `g`. A global event runs only while an LP event is pending after it and never
//! at or after the end time, so a periodic statistic cannot keep an otherwise finished run alive.
//!
//! **Sends.** An LP event a handler sends gets the key `(g + delay, ENGINE_SENDER, c)`, `c`
//! the queue's counter (the one global events' keys take: one counter, so keys never repeat,
//! and a checkpoint that keeps the queue keeps it). The delay must be > 0 and `g + delay > g`:
//! the safe point at `g` is "every LP event at or before `g` has run", which an event at `g`
//! sent after it would break (and under Time Warp GVT has passed `g` when the global event runs:
//! an event at `g` would be below GVT). Since a sent event at `s` must run before any global
//! event at or after `s`, [`GlobalQueue::run_before`] lowers its bound to the earliest time
//! sent and stops there; the caller puts the sent events into their owners' pending sets
//! before any LP event runs, and comes back to the queue at its next safe point.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{guard, panic_message, ModelError, Setting, SimError};
use crate::event::{Event, EventKey, ENGINE_SENDER};
use crate::model::{GlobalCtx, LpId, LpStates, Model, ModelStats, Time};

/// The pending global events and the statistics their handlers wrote.
#[derive(Debug, Default)]
pub(crate) struct GlobalQueue {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    seq: u64,
    pub stats: ModelStats,
    /// The time series the global handlers recorded (`GlobalCtx::record`).
    pub series: crate::model::ModelSeries,
    /// Global events run.
    pub ran: u64,
}

/// A [`GlobalQueue`] as a checkpoint keeps it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct SavedGlobals {
    pending: Vec<(u64, u64)>,
    seq: u64,
    stats: std::collections::BTreeMap<String, f64>,
    series: crate::model::ModelSeries,
    ran: u64,
}

impl GlobalQueue {
    /// The global events of the run `cfg`: the model's first ones, or those of the checkpoint
    /// it starts from.
    /// A link of a run across parts whose chain runs the global events at cuts
    /// (`checkpoint/globals.rs`) has none of its own.
    pub(crate) fn for_run<M: Model>(model: &M, cfg: &super::RunConfig) -> Result<Self, SimError> {
        if cfg.globals_at_cuts() {
            return Ok(GlobalQueue::default());
        }
        match cfg.restoring() {
            None => Self::new(model),
            Some(from) => Ok(from
                .globals
                .clone()
                .map(Self::from_saved)
                .unwrap_or_default()),
        }
    }

    /// What a checkpoint keeps of this queue.
    pub(crate) fn saved(&self) -> SavedGlobals {
        SavedGlobals {
            pending: self.heap.iter().map(|Reverse(k)| *k).collect(),
            seq: self.seq,
            stats: self.stats.values().clone(),
            series: self.series.clone(),
            ran: self.ran,
        }
    }

    pub(crate) fn from_saved(s: SavedGlobals) -> Self {
        GlobalQueue {
            heap: s.pending.into_iter().map(Reverse).collect(),
            seq: s.seq,
            stats: ModelStats::from_values(s.stats),
            series: s.series,
            ran: s.ran,
        }
    }

    /// The model's first global events; an invalid time is a configuration error.
    pub(crate) fn new<M: Model>(model: &M) -> Result<Self, SimError> {
        let mut q = GlobalQueue::default();
        for t in guard("Model::global_events", None, || model.global_events())? {
            if !(t >= 0.0 && t.is_finite()) {
                return Err(SimError::config(
                    Setting::Model,
                    format!(
                    "the model's global event time {t} is not allowed; it must be finite and >= 0"
                ),
                ));
            }
            q.push(t + 0.0);
        }
        Ok(q)
    }

    fn push(&mut self, t: Time) {
        self.heap.push(Reverse((t.to_bits(), self.seq)));
        self.seq += 1;
    }

    /// Adds what the global handlers wrote to the report's model statistics, and the count.
    pub(crate) fn add_to(&self, report: &mut crate::stats::Report) {
        report.model_stats.merge_from(&self.stats);
        if self.ran > 0 {
            report
                .executor_stats
                .insert("global_events".into(), self.ran as f64);
        }
        report.model_series.clone_from(&self.series);
    }

    /// Whether there are no global events left.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The key of the next global event.
    #[inline]
    pub(crate) fn next_key(&self) -> Option<EventKey> {
        self.heap.peek().map(|Reverse((bits, seq))| EventKey {
            time: f64::from_bits(*bits),
            seq: *seq,
            src: ENGINE_SENDER,
        })
    }

    /// The time of the next global event that may still run in a run ending at `end`
    /// (`+inf` when none).
    #[inline]
    pub(crate) fn next_time(&self, end: Time) -> Time {
        match self.next_key() {
            Some(k) if k.time < end => k.time,
            _ => Time::INFINITY,
        }
    }

    /// Runs, in key order, every global event with time `< before` and `< end` (`before` is the
    /// time of the earliest pending LP event). Every LP must be stopped. The LP events the
    /// handlers send are appended to `sent` (keyed; the caller delivers them to their
    /// destinations' pending sets before any LP event runs); the first one lowers `before` to
    /// its time, so no global event at or after an event sent runs before it.
    pub(crate) fn run_before<M: Model>(
        &mut self,
        model: &M,
        lps: LpId,
        states: &mut dyn LpStates<M::State>,
        before: Time,
        end: Time,
        sent: &mut Vec<Event<M::Event>>,
    ) -> Result<(), SimError> {
        let mut before = before;
        let mut scheduled = Vec::new();
        let mut sends = Vec::new();
        while let Some(k) = self.next_key() {
            if !(k.time < before && k.time < end) {
                break;
            }
            self.heap.pop();
            self.ran += 1;
            let now = k.time;
            // A time average handed to the statistics closes at this event's time.
            self.stats.set_end_time(Some(now));
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let mut ctx = GlobalCtx::<M> {
                    now,
                    lps,
                    states: &mut *states,
                    stats: &mut self.stats,
                    series: &mut self.series,
                    scheduled: &mut scheduled,
                    sends: &mut sends,
                };
                model.on_global(&mut ctx);
            }));
            if let Err(payload) = outcome {
                return Err(SimError::Panic {
                    lp: ENGINE_SENDER,
                    time: now,
                    message: panic_message(payload.as_ref()),
                });
            }
            for (dst, d, payload) in sends.drain(..) {
                let t = now + d + 0.0;
                let problem = if dst >= lps {
                    Some(format!(
                        "a global event sent to LP {dst}, but there are {lps} LPs"
                    ))
                } else if !(d > 0.0 && t.is_finite() && t > now) {
                    Some(format!(
                        "a global event sent an LP event with delay {d}; it must be finite and > 0 (and now + delay > now)"
                    ))
                } else {
                    None
                };
                if let Some(message) = problem {
                    return Err(SimError::Model(ModelError {
                        lp: ENGINE_SENDER,
                        time: now,
                        message,
                    }));
                }
                let key = EventKey {
                    time: t,
                    seq: self.seq,
                    src: ENGINE_SENDER,
                };
                self.seq += 1;
                sent.push(Event::new(key, dst, payload));
                before = before.min(t);
            }
            for d in scheduled.drain(..) {
                let t = now + d + 0.0;
                if !(d > 0.0 && t.is_finite()) {
                    return Err(SimError::Model(ModelError {
                        lp: ENGINE_SENDER,
                        time: now,
                        message: format!(
                            "a global event scheduled another with delay {d}; it must be finite and > 0"
                        ),
                    }));
                }
                self.push(t);
            }
        }
        Ok(())
    }
}
