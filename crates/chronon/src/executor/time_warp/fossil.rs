//! GVT reports, commit and fossil collection (README.md, "Fossil collection and commit").

use std::sync::atomic::Ordering;

use super::history::Extra;
use super::lp::{Checkpoint, TwCold, TwEvent};
use super::memory;
use super::optimism::Delta;
use super::report::Stats;
use super::shared::{Saving, AUTO_K_MAX};
use super::worker::{Census, Worker};
use crate::error::SimError;
use crate::model::{CommitCtx, Model};
use crate::queue::PendingSet;

impl<'s, 'a, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, 'a, M, Q> {
    /// Reports this worker's local minimum in GVT round `r` (the mailbox was just drained).
    pub(super) fn report_gvt(&mut self, r: u64) {
        let sh = self.sh;
        // Suspended events are unprocessed: they hold GVT back like pending ones.
        let pending = self
            .queue
            .peek()
            .map_or(f64::INFINITY, |e| e.time)
            .min(self.suspended_min());
        let local_min = pending.min(self.send_min);
        self.update_memory();
        self.stats.reports += 1;
        if sh.optimism.adaptive() {
            self.hand_in();
        }
        if let Some(g) = sh.gvt.report(self.w, r, local_min) {
            sh.after_round(g);
        }
        self.reported = r;
        self.send_min = f64::INFINITY;
    }

    /// Hands the optimism controller what this worker did since its last GVT report.
    pub(super) fn hand_in(&mut self) {
        let (now, then) = (&self.stats, &self.handed_in);
        self.sh.optimism.record(&Delta {
            processed: now.processed - then.processed,
            rolled_back: now.rolled_back - then.rolled_back,
            rollbacks: now.primary + now.secondary - then.primary - then.secondary,
            committed: now.committed - then.committed,
            horizon: self.horizon,
            blocked: self.window_blocked,
        });
        self.handed_in = self.stats;
        self.horizon = 0.0;
        self.window_blocked = false;
    }

    /// Publishes this worker's memory estimate (the figures the memory bound's cap is computed
    /// from at each GVT round, and the peak for the report).
    pub(super) fn update_memory(&mut self) {
        let sh = self.sh;
        let c = self.census;
        // The arena and its extras log at their capacity; coast logs and checkpoints at twice
        // their length (deque growth); cancelled ids at their table's capacity.
        let logs = 2 * c.coast * std::mem::size_of::<TwEvent<M::Event>>() as u64
            + 2 * c.checkpoints * std::mem::size_of::<Checkpoint<M::State>>() as u64;
        // The cap divides `history` by the records held, so it counts the arena's slots in use
        // only: its spare capacity (up to 4x the slots in use, more below 1024 slots) is held
        // memory but no cost per record, and counting it there made a small arena look like
        // kilobytes per record and the bound give up (`memory::MemoryBound::adjust`).
        let history = self.history.used_bytes() + logs;
        let bytes = self.history.bytes()
            + logs
            + memory::pending_bytes(&self.queue) as u64
            + self.cancelled.bytes()
            + self.orders.bytes();
        self.stats.peak_bytes = self.stats.peak_bytes.max(bytes);
        // Ordering: self-contained figures (see `Shared::total_bytes`).
        sh.bytes[self.w].store(bytes, Ordering::Relaxed);
        sh.history[self.w].store(history, Ordering::Relaxed);
        sh.records[self.w].store(self.history.live(), Ordering::Relaxed);
        let total = sh.total_bytes();
        // Ordering: a monotone statistic. Read first: writing the shared line only when the
        // peak grows keeps it from bouncing between cores.
        if total > sh.peak.load(Ordering::Relaxed) {
            sh.peak.fetch_max(total, Ordering::Relaxed);
        }
    }

    /// Commits every processed event older than the new GVT `g` (commit hooks, digests,
    /// counters, deferred model errors) and frees what no rollback can need any more.
    pub(super) fn fossil(&mut self, g: f64) -> Result<(), SimError> {
        let sh = self.sh;
        self.gvt = g;
        // This thread's shared heap reuses a freed item only once GVT has passed the time it
        // was freed at (seed 000 §3.3): a rolled-back handler may still have read it.
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        crate::shm::set_thread_gvt(g);
        // What this commits and frees (committed events, checkpoints and logs before the
        // commit point) no rollback and no reverse handler can reach: an item whose count
        // drops to zero here is freed at GVT, not at this thread's latest speculative time,
        // which would keep it from reuse until GVT caught up with the speculation.
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        let _at_gvt = FreedAt::new(g);
        let reverse = sh.saving == Saving::Reverse;
        let (counters, stats, current) = (&mut self.counters, &mut self.stats, &mut self.current);
        let (cold, census, orders) = (&mut self.cold, &mut self.census, &mut self.orders);
        // Stream the arena: every record older than GVT commits, in arena order (which is each
        // LP's order: history.rs).
        self.history.commit_older(
            g,
            |rec, extras| {
                let (me, now) = (rec.ev.dst, rec.ev.time);
                *current = (me, now);
                commit_event(sh.model, &rec.ev, extras, counters, stats);
                if !reverse {
                    // Copy state saving: the newest checkpoint at or below the commit point
                    // is the oldest one a rollback can need.
                    let c = &mut cold[sh.local_of(me)];
                    c.committed += 1;
                    while c.checkpoints.len() > 1 && c.checkpoints[1].at <= c.committed {
                        c.checkpoints.pop_front();
                        census.checkpoints -= 1;
                    }
                    trim_coast(c, census);
                }
                // Under reverse computation nothing needs a committed record: drop it now (and
                // its order stack; under copy state saving that goes when the record leaves
                // the arena, below).
                if reverse {
                    orders.remove(&rec.ev);
                }
                Ok(reverse)
            },
            |_, e| SimError::Model(*e),
        )?;
        // Free the arena's front. Copy state saving keeps a committed event in its LP's coast
        // log while a checkpoint before it may be restored.
        self.history.free_front(|rec| {
            if reverse {
                return;
            }
            // A coasted event needs its time and payload only.
            orders.remove(&rec.ev);
            let c = &mut cold[sh.local_of(rec.ev.dst)];
            c.arena_base += 1;
            c.coast.push_back(rec.ev);
            census.coast += 1;
            trim_coast(c, census);
        });
        if sh.mem.bounded() {
            self.history.shrink();
        }
        self.tune_checkpoints();
        Ok(())
    }

    /// Leaves each LP with the digest of its committed events only: its uncommitted records'
    /// keys unfolded, newest first (an LP's digest folds events when they run). Called once
    /// the worker has stopped; on a complete run every record is committed and nothing
    /// changes.
    pub(super) fn committed_digests(&mut self) {
        for rec in self.history.uncommitted_newest_first() {
            let li = self.sh.local_of(rec.ev.dst);
            self.lps[li].digest.uncommit(&self.orders.key(&rec.ev));
        }
    }

    /// Automatic checkpoint interval: minimizes `save / k + rollbacks * (k - 1) / 2 * event`
    /// per processed event, i.e. `k = sqrt(2 save / (rollback rate * event))`.
    pub(super) fn tune_checkpoints(&mut self) {
        if self.sh.fixed_k.is_some() || self.sh.saving != Saving::Copy {
            return;
        }
        let processed = self.stats.processed - self.processed_at_tune;
        if processed < 1024 {
            return;
        }
        let rollbacks = self.stats.primary + self.stats.secondary - self.rollbacks_at_tune;
        self.processed_at_tune = self.stats.processed;
        self.rollbacks_at_tune = self.stats.primary + self.stats.secondary;
        let rate = rollbacks as f64 / processed as f64;
        let k = if rate <= 0.0 || self.event_ns <= 0.0 {
            f64::from(AUTO_K_MAX)
        } else {
            (2.0 * self.save_ns.max(1.0) / (rate * self.event_ns)).sqrt()
        };
        self.k = (k.round() as u32).clamp(1, AUTO_K_MAX);
    }
}

/// Commits one event (fossil collection, a safe event and its LP's older records: safe.rs): its
/// commit hook, the counter deltas among `extras` into the committed counters, and the commit
/// figures.
#[inline]
pub(super) fn commit_event<'e, M: Model>(
    model: &M,
    ev: &TwEvent<M::Event>,
    extras: impl Iterator<Item = &'e Extra>,
    counters: &mut [i64],
    stats: &mut Stats,
) {
    let (me, now) = (ev.dst, ev.time);
    model.commit(&ev.payload, &CommitCtx { me, now });
    for e in extras {
        if let &Extra::Count(idx, delta) = e {
            counters[idx as usize] += delta;
        }
    }
    stats.committed += 1;
    stats.last_committed = stats.last_committed.max(now);
}

/// Drops the coast-log events before the LP's oldest checkpoint (no rollback restores a state
/// older than it, so none coasts over them).
fn trim_coast<S, P>(c: &mut TwCold<S, P>, census: &mut Census) {
    let keep_from = c.checkpoints.front().map_or(c.arena_base, |k| k.at);
    while c.coast_base < keep_from && c.coast.pop_front().is_some() {
        c.coast_base += 1;
        census.coast -= 1;
    }
    if c.coast.is_empty() {
        c.coast_base = c.arena_base;
    }
}

/// The thread's time-to-zero for freed shared-heap items set to a time for as long as it
/// lives, then put back (on every path out, errors included).
#[cfg(all(target_os = "linux", not(chronon_loom)))]
struct FreedAt(f64);

#[cfg(all(target_os = "linux", not(chronon_loom)))]
impl FreedAt {
    fn new(at: f64) -> FreedAt {
        let was = crate::shm::time();
        crate::shm::set_time(at);
        FreedAt(was)
    }
}

#[cfg(all(target_os = "linux", not(chronon_loom)))]
impl Drop for FreedAt {
    fn drop(&mut self) {
        crate::shm::set_time(self.0);
    }
}
