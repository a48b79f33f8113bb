//! The statistics every simulation library gives its models: a [`Tally`] of observations
//! (count, mean, standard deviation, min, max), a [`TimeAverage`] of a quantity over simulated
//! time (a queue length), and a [`Histogram`]. A model keeps them in its LP states and hands
//! them to the report in [`Model::finish`](crate::Model::finish) (`stats.tally("wait",
//! &state.wait)`), where they merge over every LP, in LP order, under every executor, into the
//! same figures.
//!
//! What the report holds, for a statistic `x`: a tally `x.n`, `x.sum`, `x.sum_sq`, `x.min`,
//! `x.max` and the derived `x.mean` and `x.sd`; a time average `x.area`, `x.time` and the
//! derived `x.mean`; a histogram `x.under`, `x.bin0` ... `x.binN`, `x.over`.
//!
//! Floating-point sums depend on their order; the order is fixed (events in time order within
//! an LP, LPs in LP order), so every executor, thread and process count reports the same bits.
//! A reverse handler cannot undo a floating-point sum exactly: a model with
//! a reverse handler ([`Model::reverse_handler`](crate::Model::reverse_handler)) keeps these in state only under copy state saving,
//! or records its observations in integer units.
//!
//! All three serialize (a checkpoint saves them with the LP states that hold them). Their
//! floats may be infinite (an empty tally's min and max) or NaN, which JSON has no numbers for:
//! they go through [`serde_f64`], which writes those as strings in text formats.

use serde::{Deserialize, Serialize};

use crate::types::Time;

/// Observations of one quantity: count, sum, sum of squares, min and max.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    n: u64,
    #[serde(with = "serde_f64")]
    sum: f64,
    #[serde(with = "serde_f64")]
    sum_sq: f64,
    #[serde(with = "serde_f64")]
    min: f64,
    #[serde(with = "serde_f64")]
    max: f64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            n: 0,
            sum: 0.0,
            sum_sq: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Tally {
    /// An empty tally.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one observation.
    pub fn record(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.sum_sq += x * x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// The number of observations.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The sum of the observations.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// The sum of their squares.
    pub fn sum_sq(&self) -> f64 {
        self.sum_sq
    }

    /// The mean (NaN when empty).
    pub fn mean(&self) -> f64 {
        mean(self.n, self.sum)
    }

    /// The sample standard deviation (n - 1; NaN below 2 observations).
    pub fn sd(&self) -> f64 {
        sd(self.n, self.sum, self.sum_sq)
    }

    /// The smallest observation (+inf when empty).
    pub fn min(&self) -> f64 {
        self.min
    }

    /// The largest observation (-inf when empty).
    pub fn max(&self) -> f64 {
        self.max
    }
}

pub(crate) fn mean(n: u64, sum: f64) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

pub(crate) fn sd(n: u64, sum: f64, sum_sq: f64) -> f64 {
    if n < 2 {
        return f64::NAN;
    }
    let n = n as f64;
    ((sum_sq - sum * sum / n) / (n - 1.0)).max(0.0).sqrt()
}

/// A quantity that holds a value between changes (a queue length, a number of busy
/// servers): its integral over simulated time, for the time-weighted mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeAverage {
    #[serde(with = "serde_f64")]
    value: f64,
    #[serde(with = "serde_f64")]
    since: Time,
    #[serde(with = "serde_f64")]
    area: f64,
    #[serde(with = "serde_f64")]
    time: Time,
}

impl TimeAverage {
    /// A quantity holding `value` from time `start` on.
    pub fn new(start: Time, value: f64) -> Self {
        TimeAverage {
            value,
            since: start,
            area: 0.0,
            time: 0.0,
        }
    }

    /// The quantity becomes `value` at time `now` (not before the last change).
    pub fn set(&mut self, now: Time, value: f64) {
        self.advance(now);
        self.value = value;
    }

    /// Adds `delta` to the quantity at time `now`.
    pub fn add(&mut self, now: Time, delta: f64) {
        self.advance(now);
        self.value += delta;
    }

    /// Counts the time up to `now` at the current value (call it at the end of observation,
    /// e.g. at the end time in `finish`).
    pub fn advance(&mut self, now: Time) {
        let dt = now - self.since;
        if dt > 0.0 {
            self.area += self.value * dt;
            self.time += dt;
            self.since = now;
        }
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The integral of the value over the time observed.
    pub fn area(&self) -> f64 {
        self.area
    }

    /// The time observed.
    pub fn time(&self) -> Time {
        self.time
    }

    /// The time-weighted mean so far (NaN before any time passed).
    pub fn mean(&self) -> f64 {
        if self.time > 0.0 {
            self.area / self.time
        } else {
            f64::NAN
        }
    }
}

/// Counts of observations in equal bins over `[lo, hi)`, with counts below and above.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    #[serde(with = "serde_f64")]
    lo: f64,
    #[serde(with = "serde_f64")]
    width: f64,
    bins: Vec<u64>,
    under: u64,
    over: u64,
}

impl Histogram {
    /// `bins` equal bins over `[lo, hi)`; panics unless `lo < hi`, both finite, `bins >= 1`.
    pub fn new(lo: f64, hi: f64, bins: usize) -> Self {
        assert!(
            lo.is_finite() && hi.is_finite() && lo < hi && bins >= 1,
            "Histogram::new({lo}, {hi}, {bins}): need finite lo < hi and at least 1 bin"
        );
        Histogram {
            lo,
            width: (hi - lo) / bins as f64,
            bins: vec![0; bins],
            under: 0,
            over: 0,
        }
    }

    /// Counts one observation (NaN counts as above the range).
    pub fn record(&mut self, x: f64) {
        if x < self.lo {
            self.under += 1;
            return;
        }
        let k = ((x - self.lo) / self.width).floor();
        if k >= 0.0 && (k as usize) < self.bins.len() {
            self.bins[k as usize] += 1;
        } else {
            self.over += 1;
        }
    }

    /// The counts of the bins, lowest first.
    pub fn bins(&self) -> &[u64] {
        &self.bins
    }

    /// Observations below the range.
    pub fn under(&self) -> u64 {
        self.under
    }

    /// Observations at or above the range's top (and NaN).
    pub fn over(&self) -> u64 {
        self.over
    }
}

/// Serde for an `f64` that may be infinite or NaN, for `#[serde(with = "chronon::measure::serde_f64")]`
/// on a field. Binary formats (bincode) write the float as it is. Text formats (JSON) write a
/// finite float as a number and the others as the strings `"inf"`, `"-inf"` and `"NaN"`: JSON
/// has no numbers for them (serde_json writes them as `null`, which it then cannot read back
/// as a float). Reading accepts a number or one of those strings; a NaN comes back as the
/// canonical NaN.
pub mod serde_f64 {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    /// Writes `x`.
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() || !s.is_human_readable() {
            s.serialize_f64(*x)
        } else if x.is_nan() {
            s.serialize_str("NaN")
        } else if *x > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    /// Reads what [`serialize`] wrote.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        if d.is_human_readable() {
            d.deserialize_any(F64)
        } else {
            d.deserialize_f64(F64)
        }
    }

    struct F64;

    impl Visitor<'_> for F64 {
        type Value = f64;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a number, \"inf\", \"-inf\" or \"NaN\"")
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            match v {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "NaN" => Ok(f64::NAN),
                _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_has_the_sample_figures() {
        let mut t = Tally::new();
        assert!(t.mean().is_nan() && t.sd().is_nan());
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            t.record(x);
        }
        assert_eq!((t.n(), t.mean(), t.min(), t.max()), (8, 5.0, 2.0, 9.0));
        assert!((t.sd() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn a_time_average_weighs_by_time() {
        // 0 on [0, 2), 3 on [2, 3), 1 on [3, 6): area 3 + 3 = 6 over 6.
        let mut q = TimeAverage::new(0.0, 0.0);
        q.set(2.0, 3.0);
        q.add(3.0, -2.0);
        q.advance(6.0);
        assert_eq!(
            (q.area(), q.time(), q.mean(), q.value()),
            (6.0, 6.0, 1.0, 1.0)
        );
        assert!(TimeAverage::new(1.0, 5.0).mean().is_nan());
    }

    #[test]
    fn a_histogram_counts_into_bins() {
        let mut h = Histogram::new(0.0, 1.0, 4);
        for x in [-0.1, 0.0, 0.24, 0.25, 0.99, 1.0, f64::NAN] {
            h.record(x);
        }
        assert_eq!(h.bins(), &[2, 1, 0, 1]);
        assert_eq!((h.under(), h.over()), (1, 2));
    }

    #[test]
    fn statistics_survive_a_json_round_trip_infinite_and_nan_included() {
        fn again<T: Serialize + serde::de::DeserializeOwned>(v: &T) -> (String, T) {
            let json = serde_json::to_string(v).unwrap();
            let back: T = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
            (json, back)
        }
        // An empty tally's min and max are infinite.
        let (json, back) = again(&Tally::new());
        assert!(json.contains(r#""min":"inf""#) && json.contains(r#""max":"-inf""#));
        assert_eq!(back, Tally::new());
        let mut t = Tally::new();
        // Dyadic values: without serde_json's `float_roundtrip` its parser may miss a float
        // of 17 digits by one unit in the last place.
        for x in [0.5, -0.0, 1024.0, f64::INFINITY] {
            t.record(x);
        }
        t.record(f64::NEG_INFINITY);
        let (_, back) = again(&t);
        assert!(back.sum().is_nan() && back.min() == f64::NEG_INFINITY);
        assert_eq!((back.n(), back.max()), (5, f64::INFINITY));
        let mut q = TimeAverage::new(0.0, 0.0);
        q.set(0.25, 3.0);
        q.advance(2.5);
        assert_eq!(again(&q).1, q);
        let mut h = Histogram::new(-1.0, 1.0, 3);
        [-2.0, 0.1, 0.9, 5.0].iter().for_each(|x| h.record(*x));
        assert_eq!(again(&h).1, h);
    }
}

#[cfg(test)]
mod stats_tests {
    use super::*;
    use crate::model::ModelStats;

    fn lps() -> (Tally, Tally, TimeAverage, Histogram) {
        let mut a = Tally::new();
        [1.0, 2.0, 3.0].iter().for_each(|x| a.record(*x));
        let mut b = Tally::new();
        [10.0, -4.0].iter().for_each(|x| b.record(*x));
        let mut q = TimeAverage::new(0.0, 2.0);
        q.advance(4.0);
        let mut h = Histogram::new(0.0, 10.0, 2);
        [1.0, 7.0, 8.0].iter().for_each(|x| h.record(*x));
        (a, b, q, h)
    }

    fn fill(s: &mut ModelStats) {
        let (a, b, q, h) = lps();
        s.tally("wait", &a);
        s.tally("wait", &b);
        s.tally("wait", &Tally::new());
        s.time_average("queue", &q);
        s.time_average("queue", &TimeAverage::new(0.0, 0.0));
        s.histogram("size", &h);
    }

    #[test]
    fn statistics_merge_over_lps_with_derived_figures() {
        let mut s = ModelStats::default();
        fill(&mut s);
        assert_eq!(s.get("wait.n"), Some(5.0));
        assert_eq!(s.get("wait.mean"), Some(12.0 / 5.0));
        assert_eq!(
            (s.get("wait.min"), s.get("wait.max")),
            (Some(-4.0), Some(10.0))
        );
        let all = [1.0f64, 2.0, 3.0, 10.0, -4.0];
        let var = all.iter().map(|x| (x - 2.4).powi(2)).sum::<f64>() / 4.0;
        assert!((s.get("wait.sd").unwrap() - var.sqrt()).abs() < 1e-12);
        // 2 over 4 time units on one LP, 0 over none on the other.
        assert_eq!(s.get("queue.mean"), Some(2.0));
        assert_eq!(s.get("size.bin1"), Some(2.0));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["wait.mean"], 2.4);
        assert_eq!(json["queue.mean"], 2.0);
    }

    #[test]
    fn recorded_operations_replay_to_the_same_figures() {
        let mut direct = ModelStats::default();
        fill(&mut direct);
        let mut rec = ModelStats::recording();
        fill(&mut rec);
        let ops = rec.take_log().unwrap();
        let mut replayed = ModelStats::default();
        replayed.replay(&ops);
        assert_eq!(replayed, direct);
        // Merging figures keeps minima and maxima as such.
        let mut merged = ModelStats::default();
        merged.merge_from(&direct);
        merged.merge_from(&direct);
        assert_eq!(merged.get("wait.min"), Some(-4.0));
        assert_eq!(merged.get("wait.n"), Some(10.0));
    }
}
