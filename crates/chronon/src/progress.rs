//! Live progress and stop requests, shared between a running simulation and its observers.
//!
//! Protocol: the executor's workers publish monotone figures (events done, events rolled back,
//! simulated time reached) every few thousand events; an observer (the CLI's progress bar) reads them; anyone
//! (a Ctrl-C handler) may raise the stop flag, which workers poll at the same cadence and then
//! finish cleanly, marking the report incomplete. No data is handed over through these atomics —
//! each is a self-contained value — so relaxed ordering is enough: a reader may see a slightly
//! old figure, never a torn one, and a stop request is seen within one polling period.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Progress figures and the stop flag of one run.
#[derive(Debug, Default)]
pub struct Progress {
    events: AtomicU64,
    rolled_back: AtomicU64,
    now_bits: AtomicU64,
    stop: AtomicBool,
}

impl Progress {
    /// Fresh figures, no stop requested.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop as soon as it can; its report is then marked incomplete.
    pub fn request_stop(&self) {
        // Ordering: the flag carries no data; workers only need to see it eventually.
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was requested.
    #[inline]
    pub fn stop_requested(&self) -> bool {
        // Ordering: see `request_stop`.
        self.stop.load(Ordering::Relaxed)
    }

    /// Events processed so far (committed, for executors that do not roll back).
    pub fn events(&self) -> u64 {
        // Ordering: an independent counter; a stale value is fine for display.
        self.events.load(Ordering::Relaxed)
    }

    /// Events rolled back so far, as an optimistic executor publishes them (0 for executors
    /// that never roll back, and for one that does not publish them: compare the run's final
    /// `Report::rolled_back` to tell the two apart).
    pub fn rolled_back(&self) -> u64 {
        // Ordering: an independent counter; a stale value is fine for display.
        self.rolled_back.load(Ordering::Relaxed)
    }

    /// Simulated time reached so far (a lower bound on every worker's clock).
    pub fn now(&self) -> f64 {
        // Ordering: an independent value; a stale value is fine for display.
        f64::from_bits(self.now_bits.load(Ordering::Relaxed))
    }

    /// Adds `events` to the count.
    #[inline]
    pub fn add_events(&self, events: u64) {
        // Ordering: an independent counter (see the module documentation).
        self.events.fetch_add(events, Ordering::Relaxed);
    }

    /// Adds `events` to the count of events rolled back (an optimistic executor, alongside
    /// [`add_events`](Progress::add_events), which then counts every event processed).
    #[inline]
    pub fn add_rolled_back(&self, events: u64) {
        // Ordering: an independent counter (see the module documentation).
        self.rolled_back.fetch_add(events, Ordering::Relaxed);
    }

    /// Publishes the simulated time reached.
    #[inline]
    pub fn set_now(&self, now: f64) {
        // Ordering: an independent value (see the module documentation).
        self.now_bits.store(now.to_bits(), Ordering::Relaxed);
    }
}

/// Watches a run's simulated time against wall time and says, once, when it has stalled: when
/// simulated time has advanced by less than [`StallDetector::MIN_ADVANCE`] of the simulated
/// span (`end`) over `after` of wall time — at that pace the run would take more than a million
/// times `after` to finish. The observer (the CLI's progress thread) feeds it what
/// [`Progress::now`] reads; the times are given, so it can be tested without waiting.
#[derive(Clone, Debug)]
pub struct StallDetector {
    after: std::time::Duration,
    end: f64,
    since: Option<(std::time::Instant, f64)>,
    warned: bool,
}

impl StallDetector {
    /// The wall time without progress before the warning, by default.
    pub const DEFAULT_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
    /// The smallest advance, as a fraction of the span, that counts as progress.
    pub const MIN_ADVANCE: f64 = 1e-6;

    /// A detector for a run ending at `end` that warns after `after` without progress.
    pub fn new(after: std::time::Duration, end: f64) -> Self {
        StallDetector {
            after,
            end,
            since: None,
            warned: false,
        }
    }

    /// Feeds the simulated time `now` read at wall time `at`; returns the warning (one line),
    /// the first time only, once the run has stalled.
    pub fn observe(&mut self, at: std::time::Instant, now: f64) -> Option<String> {
        let step = if self.end.is_finite() {
            self.end * Self::MIN_ADVANCE
        } else {
            f64::MIN_POSITIVE
        };
        let Some((t0, now0)) = self.since else {
            self.since = Some((at, now));
            return None;
        };
        if now - now0 >= step {
            self.since = Some((at, now));
            return None;
        }
        let waited = at.saturating_duration_since(t0);
        if self.warned || waited < self.after {
            return None;
        }
        self.warned = true;
        Some(format!(
            "warning: simulated time has advanced only {:.3e} (from t = {now0:e}) in {:.0} s of wall time, end {}; likely cause: a lookahead too small for the executor (null messages advance a clock by one lookahead each) or a cascade of zero- or near-zero-delay events (e.g. a mean delay near 0); try larger delays or lookahead (or --sync window rather than null messages)",
            now - now0,
            waited.as_secs_f64(),
            self.end
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn counts_add_up_independently() {
        let p = Progress::new();
        p.add_events(5);
        p.add_rolled_back(2);
        p.add_events(5);
        p.add_rolled_back(1);
        assert_eq!((p.events(), p.rolled_back()), (10, 3));
    }

    #[test]
    fn warns_once_when_time_stands_still() {
        let t = Instant::now();
        let s = |x: u64| t + Duration::from_secs(x);
        let mut d = StallDetector::new(Duration::from_secs(10), 10.0);
        assert_eq!(d.observe(s(0), 0.0), None);
        assert_eq!(d.observe(s(5), 1e-9), None);
        let w = d.observe(s(11), 2e-9).expect("stalled");
        assert!(w.contains("lookahead") && w.contains("zero"), "{w}");
        assert_eq!(d.observe(s(30), 2e-9), None, "once only");
    }

    #[test]
    fn steady_progress_never_warns() {
        let t = Instant::now();
        let mut d = StallDetector::new(Duration::from_secs(10), 1000.0);
        for i in 0..100u64 {
            let at = t + Duration::from_secs(i);
            assert_eq!(d.observe(at, i as f64 * 0.01), None);
        }
    }
}
