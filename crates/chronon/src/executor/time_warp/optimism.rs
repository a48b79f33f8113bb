//! The optimism controller: an adaptive window `W` on how far past GVT a worker may run
//! (no event later than GVT + W runs). Workers hand in what they did since their last GVT report
//! (`record`); the worker that completes a GVT round adjusts `W` from those figures (`adjust`).
//! The rule and its bounds are in docs/timewarp.md ("Optimism control"); here:
//!
//! - `W` starts unbounded. Every evaluation covers at least `SAMPLE` processed events (GVT
//!   rounds are accumulated until then). *Waste* is the fraction of them that were rolled back
//!   in the interval; a rollback's *length* is how many events it undid.
//! - **Shrink** (`W ← W / 2`; from unbounded: `W ← lead / 2`, the lead being how far past GVT
//!   the workers got) when waste ≥ 1/2, or waste ≥ 1/4 with rollbacks of 8 events or more on
//!   average, or waste ≥ 1/4 while GVT did not move over the whole interval.
//! - **Grow** (`W ← 1.25 W`) when waste ≤ 1/10 and some worker had to wait at the window.
//! - **Bounds**: `W` ≥ the floor `max(lookahead, threads × GVT / committed)` (the lookahead:
//!   events closer to GVT than it cannot be rolled back by a message; the second term lets
//!   about one event per worker run per GVT round) and `W` ≤ the end time.
//!
//! An event at time GVT always satisfies `t <= GVT + W`, so the window never stops the event
//! that holds GVT back: with `W` at its floor a run degrades to about one GVT round per event
//! per worker, never to a stall. A user's window (`--window T`) is where `W` starts and a cap
//! it never exceeds; with `TimeWarpConfig::fixed_window` nothing is adjusted.
//!
//! The figures are statistics: every atomic here is read and written with `Relaxed` ordering,
//! and a stale or late figure only shifts a decision by a round; no result depends on them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::model::Time;

/// Processed events an evaluation needs at least (rounds accumulate until then).
const SAMPLE: u64 = 256;
/// Waste (rolled back / processed) at or above which the window halves.
const SHRINK_WASTE: f64 = 0.5;
/// Waste at or above which long rollbacks or a stuck GVT also halve it.
const SHRINK_WASTE_LONG: f64 = 0.25;
/// Mean rollback length (events) counted as long.
const LONG_ROLLBACK: f64 = 8.0;
/// Waste at or below which a window that made a worker wait grows.
const GROW_WASTE: f64 = 0.1;
/// Multiplicative decrease and increase.
const SHRINK: f64 = 0.5;
const GROW: f64 = 1.25;

/// What one worker did since its previous GVT report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Delta {
    pub processed: u64,
    pub rolled_back: u64,
    pub rollbacks: u64,
    pub committed: u64,
    /// The latest timestamp it processed in the interval (0 if none).
    pub horizon: Time,
    /// Whether it found its next event beyond the window.
    pub blocked: bool,
}

/// A worker's side of the controller: the totals it had at its last hand-in, the latest
/// timestamp it processed since, and whether the window stopped it since.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tracker {
    then: Delta,
    horizon: Time,
    blocked: bool,
}

impl Tracker {
    /// The worker processes an event at `t`.
    #[inline(always)]
    pub(crate) fn saw(&mut self, t: Time) {
        self.horizon = self.horizon.max(t);
    }

    /// The window stopped the worker if `blocked`.
    #[inline(always)]
    pub(crate) fn block(&mut self, blocked: bool) {
        self.blocked |= blocked;
    }

    /// The latest timestamp processed since the last hand-in (0 if none).
    #[inline]
    pub(crate) fn horizon(&self) -> Time {
        self.horizon
    }

    /// What the worker did since its last hand-in, from its totals `now` (counts only); the
    /// next interval starts.
    pub(crate) fn hand_in(&mut self, now: Delta) -> Delta {
        let then = std::mem::replace(&mut self.then, now);
        let d = Delta {
            processed: now.processed - then.processed,
            rolled_back: now.rolled_back - then.rolled_back,
            rollbacks: now.rollbacks - then.rollbacks,
            committed: now.committed - then.committed,
            horizon: self.horizon,
            blocked: self.blocked,
        };
        self.horizon = 0.0;
        self.blocked = false;
        d
    }
}

/// The controller's figures for the run report.
#[derive(Clone, Debug, Default)]
pub(crate) struct Summary {
    /// Whether the window was adaptive (not `TimeWarpConfig::fixed_window`).
    pub adaptive: bool,
    /// The user's window (`--window`): where the window started and its cap (infinite: none).
    pub cap: Time,
    pub adjustments: u64,
    pub shrinks: u64,
    pub grows: u64,
    /// The window in force at the end (infinite: never bounded).
    pub final_window: Time,
    /// The smallest window used (infinite: never bounded).
    pub min_window: Time,
    /// (wall seconds, window) after every adjustment.
    pub series: Vec<(f64, Time)>,
}

impl Summary {
    /// Adds `window_adaptive` (1 or 0), `window_adjustments`, `window_shrinks`,
    /// `window_grows`, `window_cap` when the user gave a finite window, and, once the window
    /// was ever bounded, `window_final` and `window_min`.
    pub(crate) fn insert_into(&self, es: &mut BTreeMap<String, f64>) {
        es.insert("window_adaptive".into(), f64::from(u8::from(self.adaptive)));
        es.insert("window_adjustments".into(), self.adjustments as f64);
        es.insert("window_shrinks".into(), self.shrinks as f64);
        es.insert("window_grows".into(), self.grows as f64);
        if self.cap.is_finite() {
            es.insert("window_cap".into(), self.cap);
        }
        if self.final_window.is_finite() {
            es.insert("window_final".into(), self.final_window);
        }
        if self.min_window.is_finite() {
            es.insert("window_min".into(), self.min_window);
        }
    }
}

/// The window and the figures behind it, shared by all workers.
#[derive(Debug)]
pub(crate) struct Optimism {
    adaptive: bool,
    /// Bits of the window (a non-negative `f64`, possibly infinite).
    window: AtomicU64,
    // Figures handed in since the last evaluation took them.
    processed: AtomicU64,
    rolled_back: AtomicU64,
    rollbacks: AtomicU64,
    committed: AtomicU64,
    /// Bits of the latest timestamp processed (non-negative, so bit order is numeric order).
    horizon: AtomicU64,
    blocked: AtomicU64,
    ctl: Mutex<Controller>,
}

#[derive(Debug)]
struct Controller {
    lookahead: Time,
    threads: f64,
    end: Time,
    /// The user's window: the window never exceeds it.
    cap: Time,
    // The interval being accumulated.
    processed: u64,
    rolled_back: u64,
    rollbacks: u64,
    blocked: u64,
    horizon: Time,
    /// GVT when the interval began.
    gvt_from: Time,
    /// Committed events over the run so far (for the floor).
    committed: u64,
    summary: Summary,
}

impl Optimism {
    /// A controller for `threads` workers; `cap` is the user's window (where the window starts
    /// and what it never exceeds), `adaptive` false keeps it fixed there.
    pub(crate) fn new(
        cap: Option<Time>,
        adaptive: bool,
        lookahead: Time,
        threads: usize,
        end: Time,
    ) -> Self {
        let w = cap.unwrap_or(Time::INFINITY);
        Optimism {
            adaptive,
            window: AtomicU64::new(w.to_bits()),
            processed: AtomicU64::new(0),
            rolled_back: AtomicU64::new(0),
            rollbacks: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            horizon: AtomicU64::new(0f64.to_bits()),
            blocked: AtomicU64::new(0),
            ctl: Mutex::new(Controller {
                lookahead: if lookahead.is_finite() && lookahead > 0.0 {
                    lookahead
                } else {
                    0.0
                },
                threads: threads as f64,
                end,
                cap: w,
                processed: 0,
                rolled_back: 0,
                rollbacks: 0,
                blocked: 0,
                horizon: 0.0,
                gvt_from: 0.0,
                committed: 0,
                summary: Summary {
                    adaptive,
                    cap: w,
                    final_window: w,
                    min_window: w,
                    ..Summary::default()
                },
            }),
        }
    }

    /// The window in force.
    #[inline]
    pub(crate) fn window(&self) -> Time {
        // Ordering: the window is advice on how far to speculate; any value it ever held is
        // safe (see the module comment), so a stale one is too.
        f64::from_bits(self.window.load(Ordering::Relaxed))
    }

    /// Whether the window adapts (the worker then hands in its figures).
    #[inline]
    pub(crate) fn adaptive(&self) -> bool {
        self.adaptive
    }

    /// A worker hands in what it did since its last report (before it reports in a GVT round).
    pub(crate) fn record(&self, d: &Delta) {
        // Ordering: statistics (module comment). They are taken with `swap`, so a figure that
        // misses this round's evaluation is counted in the next one, never lost.
        self.processed.fetch_add(d.processed, Ordering::Relaxed);
        self.rolled_back.fetch_add(d.rolled_back, Ordering::Relaxed);
        self.rollbacks.fetch_add(d.rollbacks, Ordering::Relaxed);
        self.committed.fetch_add(d.committed, Ordering::Relaxed);
        if d.horizon > 0.0 {
            self.horizon
                .fetch_max(d.horizon.to_bits(), Ordering::Relaxed);
        }
        if d.blocked {
            self.blocked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The worker that published GVT `g` at `wall` seconds adjusts the window.
    pub(crate) fn adjust(&self, g: Time, wall: f64) {
        if !self.adaptive {
            return;
        }
        let Ok(mut c) = self.ctl.lock() else {
            return;
        };
        // Ordering: see `record`.
        c.processed += self.processed.swap(0, Ordering::Relaxed);
        c.rolled_back += self.rolled_back.swap(0, Ordering::Relaxed);
        c.rollbacks += self.rollbacks.swap(0, Ordering::Relaxed);
        c.committed += self.committed.swap(0, Ordering::Relaxed);
        c.blocked += self.blocked.swap(0, Ordering::Relaxed);
        let h = f64::from_bits(self.horizon.swap(0f64.to_bits(), Ordering::Relaxed));
        c.horizon = c.horizon.max(h);
        if c.processed < SAMPLE || g >= c.end {
            return;
        }
        let w = self.window();
        let next = c.decide(w, g);
        c.processed = 0;
        c.rolled_back = 0;
        c.rollbacks = 0;
        c.blocked = 0;
        c.horizon = 0.0;
        c.gvt_from = g;
        if next != w {
            // Ordering: see `window`.
            self.window.store(next.to_bits(), Ordering::Relaxed);
            let s = &mut c.summary;
            s.adjustments += 1;
            if next < w {
                s.shrinks += 1;
            } else {
                s.grows += 1;
            }
            s.final_window = next;
            s.min_window = s.min_window.min(next);
            s.series.push((wall, next));
        }
    }

    /// The figures for the report.
    pub(crate) fn summary(&self) -> Summary {
        match self.ctl.lock() {
            Ok(c) => c.summary.clone(),
            Err(p) => p.into_inner().summary.clone(),
        }
    }
}

impl Controller {
    /// The window after an interval that ends at GVT `g` with window `w` in force.
    fn decide(&self, w: Time, g: Time) -> Time {
        let processed = self.processed as f64;
        let waste = self.rolled_back as f64 / processed;
        let length = self.rolled_back as f64 / self.rollbacks.max(1) as f64;
        let stuck = g <= self.gvt_from;
        let shrink = waste >= SHRINK_WASTE
            || (waste >= SHRINK_WASTE_LONG && (length >= LONG_ROLLBACK || stuck));
        let spacing = if self.committed > 0 {
            g / self.committed as f64
        } else {
            0.0
        };
        // The user's cap wins over the floor.
        let floor = self.lookahead.max(self.threads * spacing).min(self.cap);
        let ceiling = self.end.max(floor).min(self.cap);
        if shrink {
            let from = if w.is_finite() {
                w
            } else {
                // First bound: half of how far the workers ran past GVT.
                (self.horizon - g).max(0.0)
            };
            (from * SHRINK).clamp(floor, ceiling)
        } else if w.is_finite() && waste <= GROW_WASTE && self.blocked > 0 {
            (w * GROW).clamp(floor, ceiling)
        } else {
            w
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(o: &Optimism, processed: u64, rolled_back: u64, rollbacks: u64, blocked: bool) {
        o.record(&Delta {
            processed,
            rolled_back,
            rollbacks,
            committed: processed - rolled_back,
            horizon: 40.0,
            blocked,
        });
    }

    #[test]
    fn thrashing_halves_the_window_down_to_the_lookahead_and_a_quiet_blocked_run_grows_it() {
        let o = Optimism::new(None, true, 0.5, 2, 1000.0);
        assert_eq!(o.window(), f64::INFINITY);
        // Too small a sample: nothing changes yet.
        interval(&o, 100, 90, 10, false);
        o.adjust(1.0, 0.1);
        assert_eq!(o.window(), f64::INFINITY);
        // Now 1000 processed, 900 rolled back: the first bound is half the lead (40 - 10).
        interval(&o, 900, 810, 90, false);
        o.adjust(10.0, 0.2);
        assert_eq!(o.window(), 15.0);
        for _ in 0..10 {
            interval(&o, 1000, 900, 100, false);
            o.adjust(10.0, 0.3);
        }
        assert_eq!(o.window(), 0.5, "the floor is the lookahead");
        // No waste but nobody waits at the window: hold.
        interval(&o, 1000, 0, 0, false);
        o.adjust(11.0, 0.4);
        assert_eq!(o.window(), 0.5);
        // No waste and a worker waited: grow.
        interval(&o, 1000, 0, 0, true);
        o.adjust(12.0, 0.5);
        assert_eq!(o.window(), 0.625);
        let s = o.summary();
        assert!(s.adaptive);
        assert_eq!(s.min_window, 0.5);
        assert_eq!(s.final_window, 0.625);
        assert_eq!(s.grows, 1);
        assert_eq!(s.adjustments, s.shrinks + s.grows);
        assert_eq!(s.series.len() as u64, s.adjustments);
    }

    #[test]
    fn long_rollbacks_or_a_stuck_gvt_shrink_at_moderate_waste_and_a_fixed_window_stays() {
        let long = Optimism::new(None, true, 0.0, 2, 100.0);
        interval(&long, 1000, 300, 10, false); // 30 % waste, rollbacks of 30 events
        long.adjust(5.0, 0.1);
        assert_eq!(long.window(), 17.5);
        let short = Optimism::new(None, true, 0.0, 2, 100.0);
        interval(&short, 1000, 300, 300, false); // 30 % waste, rollbacks of 1 event
        short.adjust(5.0, 0.1);
        assert_eq!(short.window(), f64::INFINITY);
        short.adjust(5.0, 0.2);
        interval(&short, 1000, 300, 300, false);
        short.adjust(5.0, 0.3); // GVT stuck at 5 over the interval
        assert_eq!(short.window(), 17.5);
        let fixed = Optimism::new(Some(2.0), false, 0.0, 2, 100.0);
        interval(&fixed, 1000, 900, 10, false);
        fixed.adjust(5.0, 0.1);
        assert_eq!(fixed.window(), 2.0);
        let s = fixed.summary();
        assert!(!s.adaptive);
        assert_eq!(s.adjustments, 0);
    }

    #[test]
    fn a_users_window_is_where_the_window_starts_and_a_cap_it_never_exceeds() {
        let o = Optimism::new(Some(2.0), true, 0.0, 2, 100.0);
        assert_eq!(o.window(), 2.0);
        interval(&o, 1000, 900, 10, false); // thrashing: halves from the cap
        o.adjust(5.0, 0.1);
        assert_eq!(o.window(), 1.0);
        for k in 0..10 {
            interval(&o, 1000, 0, 0, true); // quiet and blocked: grows, up to the cap only
            o.adjust(6.0 + f64::from(k), 0.2);
        }
        assert_eq!(o.window(), 2.0);
        let s = o.summary();
        assert!(s.adaptive);
        assert_eq!(s.min_window, 1.0);
        // A cap below the floor (lookahead 0.5) wins.
        let tight = Optimism::new(Some(0.1), true, 0.5, 2, 100.0);
        interval(&tight, 1000, 900, 10, false);
        tight.adjust(5.0, 0.1);
        assert!(tight.window() <= 0.1);
    }
}
