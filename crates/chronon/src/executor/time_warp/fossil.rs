//! GVT reports, commit and fossil collection (README.md, "Fossil collection and commit").

use std::sync::atomic::Ordering;

use super::lp::{Checkpoint, TwCold};
use super::memory;
use super::memory::Census;
use super::optimism::Delta;
use super::options::Saving;
use super::stats::commit_event;
use super::worker::Worker;
use crate::error::SimError;
use crate::model::{Model, Time};
use crate::queue::PendingSet;
use crate::tw_msg::TwEvent;

impl<'s, 'a, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, 'a, M, Q> {
    /// Reports this worker's local minimum in GVT round `r` (the mailbox was just drained).
    pub(super) fn report_gvt(&mut self, r: u64) {
        let sh = self.sh;
        // Suspended events are unprocessed: they hold GVT back like pending ones. Until this
        // worker has left the phase of the next global event `g`, its report is at most the
        // smallest time after `g`: the phase may send events after `g` to any worker, one
        // that already reported in this round included (global.rs, "GVT").
        let pending = self
            .queue
            .peek()
            .map_or(f64::INFINITY, |e| e.time)
            .min(self.preempt.suspended_min())
            .min(self.round.global_next.next_up());
        let local_min = self.round.report(r, pending);
        self.update_memory();
        self.stats.reports += 1;
        if sh.optimism.adaptive() {
            // What this worker did since its last report, for the optimism controller.
            let st = &self.stats;
            let d = self.optimism.hand_in(Delta {
                processed: st.processed,
                rolled_back: st.rolled_back,
                rollbacks: st.primary + st.secondary,
                committed: st.committed,
                ..Delta::default()
            });
            sh.optimism.record(&d);
        }
        if let Some(g) = sh.gvt.report(self.w, r, local_min) {
            sh.after_round(g);
        }
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
        self.round.gvt = g;
        // This thread's shared heap reuses a freed item only once GVT has passed the time it
        // was freed at (seed 000 §3.3): a rolled-back handler may still have read it.
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        crate::shm::set_thread_gvt(g);
        // What this commits and frees (committed events, checkpoints and logs before the
        // commit point) no rollback and no reverse handler can reach: an item whose count
        // drops to zero here is freed at GVT, not at this thread's latest speculative time,
        // which would keep it from reuse until GVT caught up with the speculation.
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        let _at_gvt = crate::shm::FreedAt::new(g);
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
                let key = orders.key(&rec.ev);
                commit_event(sh.model, (&rec.ev, &key), extras, counters, stats);
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
        let st = &self.stats;
        self.interval.tune(st.processed, st.primary + st.secondary);
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

impl<M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'_, '_, M, Q> {
    /// Whether LP `li`'s event at `now` is safe: before the safe bound, and every uncommitted
    /// record of the LP (all older, so safe too) committed now, oldest first. `false` (nothing
    /// committed) when one of those records holds a model error.
    #[inline(always)]
    pub(super) fn safe_now(&mut self, li: usize, now: Time) -> bool {
        if now >= self.round.safe_until {
            return false;
        }
        // Commonly nothing of the LP's is uncommitted.
        if self.history.get(self.lps[li].last).is_none() {
            return true;
        }
        self.safe_after_early(li)
    }

    /// [`safe_now`](Self::safe_now) for an LP with uncommitted records: commits them unless
    /// one failed.
    #[inline(never)]
    fn safe_after_early(&mut self, li: usize) -> bool {
        self.scratch.early.clear();
        let mut seq = self.lps[li].last;
        while let Some(r) = self.history.get(seq) {
            if r.info.error() {
                return false;
            }
            self.scratch.early.push(seq);
            seq = r.prev;
        }
        self.commit_early();
        true
    }

    /// Commits the records listed in `early` (newest first) oldest first.
    fn commit_early(&mut self) {
        let sh = self.sh;
        let current = self.current;
        let (counters, stats, orders) = (&mut self.counters, &mut self.stats, &mut self.orders);
        for &seq in self.scratch.early.iter().rev() {
            self.history.commit_early(seq, |rec, counts| {
                self.current = (rec.ev.dst, rec.ev.time);
                let key = orders.key(&rec.ev);
                commit_event(sh.model, (&rec.ev, &key), counts, counters, stats);
                stats.safe_early += 1;
                orders.remove(&rec.ev);
            });
        }
        self.current = current;
    }
}
