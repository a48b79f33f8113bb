//! The committed-event trace: per LP, the keys of the events it committed, in commit order.
//!
//! Every executor calls [`committed`] at the point where it commits an event — where it folds
//! the event into the LP's fingerprint digest (sequential, conservative, work-stealing), or at
//! fossil collection and safe commit (Time Warp), never when an event only runs speculatively.
//! What the trace holds is therefore the history the fingerprint digests, event by event, and
//! it is the same under every executor for a deterministic model: two traces of one
//! configuration can be compared line by line to find the first LP and event where they part.
//!
//! The trace is process-wide and off by default: while off, a commit pays one relaxed atomic
//! load. [`start`] turns it on (for all LPs or a chosen few), [`take`] turns it off and returns
//! what was recorded. Worker processes (`--procs`) record their own LPs and send them to the
//! parent with their report, which [`absorb`]s them; one traced run at a time per process.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::event::EventKey;
use crate::fingerprint::LpDigest;
use crate::types::LpId;

static ON: AtomicBool = AtomicBool::new(false);
static SINK: Mutex<Option<Sink>> = Mutex::new(None);

struct Sink {
    /// The LPs traced (`None`: every LP).
    only: Option<BTreeSet<LpId>>,
    /// Per LP, its committed keys in commit order.
    lps: BTreeMap<LpId, Vec<EventKey>>,
}

/// One committed event of an LP's trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceEvent {
    /// Its place in the LP's committed history (0 for the first event the trace saw).
    pub pos: u64,
    /// Its key: receive time, sender, the sender's send counter.
    pub key: EventKey,
    /// The LP's running digest after this event, over the events of the trace (from `pos` 0):
    /// the first event whose digest differs between two traces is where their histories part.
    pub digest: u64,
}

/// Starts recording commits: every LP's, or only those in `only`. Drops what an earlier trace
/// recorded and did not [`take`].
pub fn start(only: Option<&[LpId]>) {
    let sink = Sink {
        only: only.map(|l| l.iter().copied().collect()),
        lps: BTreeMap::new(),
    };
    *lock() = Some(sink);
    // Ordering: the sink is published under its lock; the flag only saves the lock when off.
    ON.store(true, Ordering::Release);
}

/// Whether a trace is being recorded.
pub fn active() -> bool {
    ON.load(Ordering::Acquire)
}

/// Stops recording and returns every traced LP's committed events in commit order, by LP.
pub fn take() -> BTreeMap<LpId, Vec<TraceEvent>> {
    ON.store(false, Ordering::Release);
    let Some(sink) = lock().take() else {
        return BTreeMap::new();
    };
    sink.lps
        .into_iter()
        .map(|(lp, keys)| {
            let mut d = LpDigest::default();
            let evs = keys
                .into_iter()
                .enumerate()
                .map(|(i, key)| {
                    d.commit(&key);
                    TraceEvent {
                        pos: i as u64,
                        key,
                        digest: d.raw().0,
                    }
                })
                .collect();
            (lp, evs)
        })
        .collect()
}

/// Records that `lp` committed the event `key` (called by the executors at commit).
#[inline(always)]
pub(crate) fn committed(lp: LpId, key: &EventKey) {
    if ON.load(Ordering::Relaxed) {
        record(lp, key);
    }
}

#[cold]
#[inline(never)]
fn record(lp: LpId, key: &EventKey) {
    if let Some(sink) = lock().as_mut() {
        if sink.only.as_ref().is_none_or(|o| o.contains(&lp)) {
            sink.lps.entry(lp).or_default().push(*key);
        }
    }
}

/// This process's recorded keys, taken out (the trace stays on): a worker process sends them
/// to its parent with its report.
pub(crate) fn take_keys() -> Vec<(LpId, Vec<EventKey>)> {
    match lock().as_mut() {
        Some(sink) => std::mem::take(&mut sink.lps).into_iter().collect(),
        None => Vec::new(),
    }
}

/// Adds keys a worker process recorded (its LPs are its own: no LP is in two parts).
pub(crate) fn absorb(parts: Vec<(LpId, Vec<EventKey>)>) {
    if parts.is_empty() {
        return;
    }
    if let Some(sink) = lock().as_mut() {
        for (lp, keys) in parts {
            sink.lps.entry(lp).or_default().extend(keys);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<Sink>> {
    // A panic while holding the lock (none can: pushes only) leaves plain data.
    SINK.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(time: f64, src: LpId, seq: u64) -> EventKey {
        EventKey { time, src, seq }
    }

    #[test]
    fn records_only_while_on_and_only_the_chosen_lps() {
        // LPs no other test's simulation has (tests run at once in this process, and the
        // trace is process-wide).
        let (a, b, other) = (u32::MAX - 7, u32::MAX - 5, u32::MAX - 6);
        committed(a, &key(1.0, 0, 0));
        start(Some(&[a, b]));
        committed(other, &key(1.0, 0, 1));
        committed(a, &key(1.5, 0, 2));
        committed(b, &key(2.0, 1, 0));
        committed(a, &key(2.5, 3, 4));
        absorb(vec![(b, vec![key(3.0, 2, 9)])]);
        let t = take();
        committed(a, &key(9.0, 0, 0));
        assert_eq!(t.keys().copied().collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(t[&a].len(), 2);
        assert_eq!((t[&a][1].pos, t[&a][1].key), (1, key(2.5, 3, 4)));
        assert_eq!(t[&b][1].key, key(3.0, 2, 9));
        // The digest is the LP's fingerprint digest over the trace.
        let mut d = LpDigest::default();
        d.commit(&key(1.5, 0, 2));
        assert_eq!(t[&a][0].digest, d.raw().0);
        assert!(take().is_empty() && !active());
    }
}
