//! Copy state saving's automatic checkpoint interval: the worker samples what a checkpoint
//! and an event cost, and after each GVT round picks `k ≈ sqrt(2 · save / (rate · event))`
//! (rate: rollbacks per event), the interval that minimises saving plus coasting per event,
//! bounded by `AUTO_K_MAX`. A fixed `--save-every` or reverse state saving keeps `k`.

use super::options::Saving;

/// Copy state saving's largest automatic checkpoint interval.
pub(super) const AUTO_K_MAX: u32 = 32;

/// A worker's checkpoint interval and the measurements behind it (nanoseconds, sampled).
#[derive(Debug)]
pub(super) struct Interval {
    /// Events between two checkpoints of an LP.
    k: u32,
    /// Whether `k` is tuned (copy state saving without a fixed interval); then events'
    /// handler times are sampled.
    auto: bool,
    save_ns: f64,
    event_ns: f64,
    rollbacks_at_tune: u64,
    processed_at_tune: u64,
}

impl Interval {
    pub(super) fn new(fixed: Option<u32>, saving: Saving) -> Self {
        Interval {
            k: fixed.unwrap_or(8),
            auto: fixed.is_none() && saving == Saving::Copy,
            save_ns: 0.0,
            event_ns: 0.0,
            rollbacks_at_tune: 0,
            processed_at_tune: 0,
        }
    }

    /// Events between two checkpoints of an LP now.
    #[inline(always)]
    pub(super) fn k(&self) -> u32 {
        self.k
    }

    /// Whether events' handler times are sampled.
    #[inline(always)]
    pub(super) fn samples_events(&self) -> bool {
        self.auto
    }

    /// A sampled checkpoint took `ns`.
    #[inline]
    pub(super) fn saved(&mut self, ns: f64) {
        self.save_ns = ns;
    }

    /// A sampled event's handler took `ns`.
    #[inline]
    pub(super) fn ran(&mut self, ns: f64) {
        self.event_ns = ns;
    }

    /// After fossil collection: with at least 1024 events processed since the last tuning
    /// (`processed`, `rollbacks`: the worker's totals), picks the interval anew. It minimizes
    /// `save / k + rollbacks * (k - 1) / 2 * event` per processed event, i.e.
    /// `k = sqrt(2 save / (rollback rate * event))`.
    pub(super) fn tune(&mut self, processed: u64, rollbacks: u64) {
        if !self.auto {
            return;
        }
        let since = processed - self.processed_at_tune;
        if since < 1024 {
            return;
        }
        let rolled = rollbacks - self.rollbacks_at_tune;
        self.processed_at_tune = processed;
        self.rollbacks_at_tune = rollbacks;
        let rate = rolled as f64 / since as f64;
        let k = if rate <= 0.0 || self.event_ns <= 0.0 {
            f64::from(AUTO_K_MAX)
        } else {
            (2.0 * self.save_ns.max(1.0) / (rate * self.event_ns)).sqrt()
        };
        self.k = (k.round() as u32).clamp(1, AUTO_K_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_follows_the_costs_and_a_fixed_one_stays() {
        let mut i = Interval::new(None, Saving::Copy);
        assert!(i.samples_events());
        assert_eq!(i.k(), 8);
        i.tune(1000, 10);
        assert_eq!(i.k(), 8, "fewer than 1024 events: unchanged");
        i.tune(2048, 0);
        assert_eq!(i.k(), AUTO_K_MAX, "no rollback: the largest");
        i.saved(800.0);
        i.ran(100.0);
        // 1024 events, 64 rollbacks: sqrt(2 * 800 / (1/16 * 100)) = 16.
        i.tune(3072, 64);
        assert_eq!(i.k(), 16);
        let mut fixed = Interval::new(Some(3), Saving::Copy);
        fixed.tune(4096, 4000);
        assert_eq!(fixed.k(), 3);
        assert!(!fixed.samples_events());
        assert!(!Interval::new(None, Saving::Reverse).samples_events());
    }
}
