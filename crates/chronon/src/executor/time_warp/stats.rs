//! A worker's figures (the report's `workers`), and what committing an event adds to them.

use super::history::Extra;
use super::preempt::PreemptStats;
use crate::event::EventKey;
use crate::model::{CommitCtx, Model, Time};
use crate::tw_msg::TwEvent;

/// Per-worker counters, reported in `workers`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stats {
    pub(super) processed: u64,
    pub(super) committed: u64,
    /// Of `committed`: events committed as they ran, with no record (safe.rs).
    pub(super) safe: u64,
    /// Of `committed`: older records of safe events' LPs, committed before GVT passed them.
    pub(super) safe_early: u64,
    pub(super) rolled_back: u64,
    pub(super) primary: u64,
    pub(super) secondary: u64,
    pub(super) antis: u64,
    pub(super) coasted: u64,
    pub(super) checkpoints: u64,
    pub(super) reports: u64,
    pub(super) peak_bytes: u64,
    /// Copy state saving: the checkpoint interval in use at the end.
    pub(super) checkpoint_interval: u64,
    /// The latest time of an event this worker committed.
    pub(super) last_committed: Time,
    /// User and system CPU seconds of the worker's thread (from the OS; 0 where unreported).
    pub(super) cpu_user: f64,
    pub(super) cpu_sys: f64,
    /// The longest rollback (events undone by one primary or secondary rollback).
    pub(super) rollback_max: u64,
    /// Wall nanoseconds spent in rollbacks (undoing, anti-messages, restoring, coasting).
    pub(super) rollback_ns: u64,
    /// Preemptive Time Warp's figures (zero when off).
    pub(super) preempt: PreemptStats,
    /// Wall nanoseconds of the worker's loop, and of its parts: waiting with nothing it may
    /// run (spans of loop turns that ran no event), GVT reports (draining, pushing sends,
    /// reporting), fossil collection (committing). The rest is busy: events, rollbacks
    /// (`rollback_ns`), receiving and sending.
    pub(super) loop_ns: u64,
    pub(super) idle_ns: u64,
    pub(super) gvt_ns: u64,
    pub(super) fossil_ns: u64,
}

/// Commits one event (fossil collection, a safe event and its LP's older records: safe.rs): its
/// commit hook, the committed-event trace (`key`: its key), the counter deltas among `extras`
/// into the committed counters, and the commit figures.
#[inline]
pub(super) fn commit_event<'e, M: Model>(
    model: &M,
    (ev, key): (&TwEvent<M::Event>, &EventKey),
    extras: impl Iterator<Item = &'e Extra>,
    counters: &mut [i64],
    stats: &mut Stats,
) {
    let (me, now) = (ev.dst, ev.time);
    model.commit(&ev.payload, &CommitCtx { me, now });
    crate::trace::committed(me, key);
    for e in extras {
        if let &Extra::Count(idx, delta) = e {
            counters[idx as usize] += delta;
        }
    }
    stats.committed += 1;
    stats.last_committed = stats.last_committed.max(now);
}
