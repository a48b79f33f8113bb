//! GVT reports, commit and fossil collection (README.md, "Fossil collection and commit").

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use super::lp::{Checkpoint, Sent, TwEvent};
use super::memory::{self};
use super::optimism::Delta;
use super::shared::*;
use super::worker::*;
use crate::error::SimError;
use crate::event::Keyed;
use crate::model::{CommitCtx, Model};
use crate::queue::PendingSet;

impl<'s, 'a, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, 'a, M, Q> {
    /// Reports this worker's local minimum in GVT round `r` (the mailbox was just drained).
    pub(super) fn report_gvt(&mut self, r: u64) {
        let sh = self.sh;
        let pending = self.queue.peek().map_or(f64::INFINITY, |e| e.ev.time);
        let local_min = pending.min(self.send_min);
        self.update_memory();
        self.stats.reports += 1;
        if sh.optimism.adaptive() {
            self.hand_in();
        }
        if let Some(g) = sh.gvt.report(self.w, r, local_min) {
            // The last reporter keeps the round's figures and adjusts the optimism window.
            let wall = sh.start.elapsed().as_secs_f64();
            sh.optimism.adjust(g, wall);
            if let Ok(mut s) = sh.series.lock() {
                if s.last().is_none_or(|&(t, _)| wall - t >= 1e-3) || g >= sh.end {
                    s.push((wall, g.min(sh.end)));
                }
            }
            if sh.mem.bounded() && g < sh.end {
                if let Some(m) = sh.mem.adjust(sh.totals(), wall, sh.record_size) {
                    sh.fail(SimError::Resource(m));
                }
            }
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
        // Records at the capacity of their deques (what is allocated); the logs and
        // checkpoints at twice their length (deque growth); cancelled ids at their table's
        // capacity (an id and a control byte each).
        let history = c.done_cap * sh.record_size
            + 2 * c.sent * std::mem::size_of::<Sent>() as u64
            + 2 * c.counts * std::mem::size_of::<(u32, i64)>() as u64
            + 2 * c.checkpoints * std::mem::size_of::<Checkpoint<M::State>>() as u64;
        let bytes = history
            + memory::QUEUE_SLACK
                * self.queue.len() as u64
                * std::mem::size_of::<TwEvent<M::Event>>() as u64
            + self.cancelled.capacity() as u64 * 9;
        self.stats.peak_bytes = self.stats.peak_bytes.max(bytes);
        // Ordering: self-contained figures (see `Shared::total_bytes`).
        sh.bytes[self.w].store(bytes, Ordering::Relaxed);
        sh.history[self.w].store(history, Ordering::Relaxed);
        sh.records[self.w].store(c.done, Ordering::Relaxed);
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
        let mut i = 0;
        while i < self.dirty.len() {
            // The LP visited next is `dirty[i + 1]` if this one stays dirty, otherwise the last
            // one (moved here by `swap_remove`): prefetch a few ahead on both paths.
            // Records first, then (half as far ahead, their records being loaded by now) the
            // oldest processed event in each one's history.
            let n = self.dirty.len();
            let half = FOSSIL_PREFETCH / 2;
            for ahead in [i + FOSSIL_PREFETCH, n.wrapping_sub(FOSSIL_PREFETCH)] {
                if ahead > i && ahead < n {
                    let lj = self.dirty[ahead] as usize;
                    prefetch(&self.cold[lj]);
                    prefetch(&self.lps[lj]);
                }
            }
            for ahead in [i + half, n.wrapping_sub(half)] {
                if ahead > i && ahead < n {
                    if let Some(d) = self.lps[self.dirty[ahead] as usize].done.front() {
                        prefetch(d);
                    }
                }
            }
            let li = self.dirty[i] as usize;
            let lp = &mut self.lps[li];
            let cold = &mut self.cold[li];
            let me = lp.id;
            // Counter deltas of the first uncommitted record start at this offset.
            let mut coff: usize = lp
                .done
                .iter()
                .take((cold.committed - lp.base) as usize)
                .map(|d| d.counts.saturating_sub(1) as usize)
                .sum();
            while cold.committed < lp.next_index() {
                let d = &lp.done[(cold.committed - lp.base) as usize];
                let now = d.ev.ev.time;
                if now >= g {
                    break;
                }
                if let Some(e) = &d.error {
                    return Err(SimError::Model((**e).clone()));
                }
                self.current = (me, now);
                sh.model.commit(&d.ev.ev.payload, &CommitCtx { me, now });
                cold.digest.commit(&d.ev.ev.key());
                if d.counts > 0 {
                    let (idx, delta) = d.first_count;
                    self.counters[idx as usize] += delta;
                }
                for _ in 1..d.counts {
                    let (idx, delta) = cold.counts[coff];
                    self.counters[idx as usize] += delta;
                    coff += 1;
                }
                cold.committed += 1;
                self.stats.committed += 1;
                self.stats.last_committed = self.stats.last_committed.max(now);
            }
            // Free what lies before the last restart point at or below the commit point.
            let keep_from = match sh.saving {
                Saving::Reverse => cold.committed,
                Saving::Copy => {
                    while cold.checkpoints.len() > 1 && cold.checkpoints[1].at <= cold.committed {
                        cold.checkpoints.pop_front();
                        self.census.checkpoints -= 1;
                    }
                    cold.checkpoints[0].at
                }
            };
            while lp.base < keep_from {
                let d = lp
                    .done
                    .pop_front()
                    .expect("a record below the commit point");
                for _ in 1..d.sent {
                    cold.sent.pop_front();
                }
                for _ in 1..d.counts {
                    cold.counts.pop_front();
                }
                self.census.done -= 1;
                self.census.sent -= u64::from(d.sent.saturating_sub(1));
                self.census.counts -= u64::from(d.counts.saturating_sub(1));
                lp.base += 1;
            }
            if sh.mem.bounded() {
                // Under a memory bound an LP gives back what its history no longer uses
                // (with a million LPs, empty deques of capacity 4 alone are ~0.5 GB).
                let cap = lp.done.capacity();
                if lp.done.is_empty() {
                    lp.done = VecDeque::new();
                } else if cap > 64 && cap > 4 * lp.done.len() {
                    lp.done.shrink_to(2 * lp.done.len());
                }
                self.census.done_cap -= (cap - lp.done.capacity()) as u64;
            }
            if cold.committed == lp.next_index() {
                lp.dirty = false;
                self.dirty.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.tune_checkpoints();
        Ok(())
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
