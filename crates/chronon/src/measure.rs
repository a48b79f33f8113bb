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
//! **Time averages close at the end time by themselves.** `finish` cannot change the state,
//! and needs not: [`ModelStats::time_average`](crate::ModelStats::time_average) counts the
//! current value up to [`ModelStats::end_time`](crate::ModelStats::end_time) (the run's end
//! time; the cut of a run that ends at a checkpoint, whose continuation then ends with the
//! uninterrupted run's figures), so `x.time` is the whole run, not the time up to the LP's
//! last event. In a global event, `ctx.stats()` closes them at that event's time.
//!
//! Floating-point sums depend on their order; the order is fixed (events in time order within
//! an LP, LPs in LP order), so every executor, thread and process count reports the same bits.
//!
//! **Reverse computation.** A reverse handler
//! ([`Model::reverse_handler`](crate::Model::reverse_handler)) cannot undo a floating-point sum
//! exactly, so [`Tally`] and [`TimeAverage`] have no undo; a model with a reverse handler uses
//!
//! - [`ExactTally`]: `record(x)` forward, `unrecord(x)` in the reverse handler;
//! - [`ExactTimeAverage`]: `add(now, d)` / `unadd(now, d)`, or `set(now, v)` /
//!   `unset(now, previous)`;
//! - [`Histogram`]: `record(x)` / `unrecord(x)` (its counts are integers).
//!
//! The exact two keep their sums in fixed point (values rounded to 2^-40, magnitudes below
//! 2^60; others panic, and the engine reports the LP and time), so an undo leaves them bit for
//! bit as before and Time Warp with reverse computation reports the sequential run's figures.
//! They keep no minimum or maximum, which no undo can restore without history: a model that
//! needs those keeps a [`Tally`] and runs under copy state saving (`--state-saving copy`). A
//! [`Tally`] or [`TimeAverage`] in the state of a model with a reverse handler is not undone
//! by the engine: that model's figures would be wrong after a rollback.
//!
//! All of them serialize (a checkpoint saves them with the LP states that hold them). Their
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
///
/// Handed to [`ModelStats::time_average`](crate::ModelStats::time_average) in `finish`, it is
/// closed at the run's end time by itself: nothing to call at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeAverage {
    #[serde(with = "serde_f64")]
    value: f64,
    #[serde(with = "serde_f64")]
    since: Time,
    #[serde(with = "serde_f64")]
    area: f64,
    /// The time observation started at: the time observed is `since - start`, so that an
    /// average closed at the end time has observed exactly `end - start`.
    #[serde(with = "serde_f64")]
    start: Time,
}

impl TimeAverage {
    /// A quantity holding `value` from time `start` on.
    pub fn new(start: Time, value: f64) -> Self {
        TimeAverage {
            value,
            since: start,
            area: 0.0,
            start,
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

    /// Counts the time up to `now` at the current value.
    /// [`ModelStats::time_average`](crate::ModelStats::time_average) does it at the end time:
    /// a model needs it only to read the figures of a running average itself.
    pub fn advance(&mut self, now: Time) {
        if now > self.since {
            self.area += self.value * (now - self.since);
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
        self.since - self.start
    }

    /// The time-weighted mean so far (NaN before any time passed).
    pub fn mean(&self) -> f64 {
        if self.time() > 0.0 {
            self.area / self.time()
        } else {
            f64::NAN
        }
    }
}

/// What [`ModelStats::tally`](crate::ModelStats::tally) reads of a tally: [`Tally`] and
/// [`ExactTally`].
pub trait TallyFigures {
    /// The number of observations.
    fn n(&self) -> u64;
    /// Their sum.
    fn sum(&self) -> f64;
    /// The sum of their squares.
    fn sum_sq(&self) -> f64;
    /// The smallest and the largest observation, where the tally keeps them.
    fn min_max(&self) -> Option<(f64, f64)>;
}

impl TallyFigures for Tally {
    fn n(&self) -> u64 {
        self.n
    }
    fn sum(&self) -> f64 {
        self.sum
    }
    fn sum_sq(&self) -> f64 {
        self.sum_sq
    }
    fn min_max(&self) -> Option<(f64, f64)> {
        Some((self.min, self.max))
    }
}

/// What [`ModelStats::time_average`](crate::ModelStats::time_average) reads of a time
/// average: [`TimeAverage`] and [`ExactTimeAverage`].
pub trait TimeAverageFigures {
    /// The area and the time observed, closed at `end` (the current value counted up to it)
    /// where given.
    fn area_and_time(&self, end: Option<Time>) -> (f64, Time);
}

impl TimeAverageFigures for TimeAverage {
    fn area_and_time(&self, end: Option<Time>) -> (f64, Time) {
        let mut closed = *self;
        if let Some(end) = end {
            closed.advance(end);
        }
        (closed.area, closed.time())
    }
}

/// The fixed-point scale of the exact statistics: a value `x` is held as the integer nearest
/// to `x * 2^FRACTION_BITS`.
pub const FRACTION_BITS: u32 = 40;

/// The largest magnitude an exact statistic takes (values, observations and times):
/// `2^LIMIT_BITS`, about 1.15e18.
pub const LIMIT_BITS: u32 = 60;

/// `x` in fixed point: the integer nearest to `x * 2^FRACTION_BITS`; panics, naming `what`,
/// when `x` is not finite or not below `2^LIMIT_BITS` in magnitude.
fn fixed(x: f64, what: &str) -> i128 {
    let limit = (LIMIT_BITS as f64).exp2();
    if !(x.abs() < limit) {
        panic!(
            "{what}: {x} is out of range: exact statistics hold finite numbers of magnitude \
             below 2^{LIMIT_BITS} (about 1.15e18), to the nearest 2^-{FRACTION_BITS}"
        );
    }
    // Scaling by a power of two is exact; the rounded value is below 2^100, an integer the
    // cast keeps exactly.
    (x * (FRACTION_BITS as f64).exp2()).round() as i128
}

/// A 256-bit two's complement integer (four 64-bit limbs, lowest first): the exact sums of
/// the exact statistics (products of two fixed-point numbers are below 2^202).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Wide([u64; 4]);

impl Wide {
    fn from_i128(x: i128) -> Wide {
        let fill = if x < 0 { u64::MAX } else { 0 };
        Wide([x as u64, (x >> 64) as u64, fill, fill])
    }

    fn negative(&self) -> bool {
        (self.0[3] >> 63) == 1
    }

    fn neg(self) -> Wide {
        let mut out = [0u64; 4];
        let mut carry = true;
        for (o, l) in out.iter_mut().zip(self.0) {
            let (v, c) = (!l).overflowing_add(u64::from(carry));
            *o = v;
            carry = c;
        }
        Wide(out)
    }

    /// `self + other`; panics on overflow (which needs more than 2^50 observations near the
    /// largest magnitude).
    fn add(self, other: Wide) -> Wide {
        let mut out = [0u64; 4];
        let mut carry = 0u64;
        for (o, (a, b)) in out.iter_mut().zip(self.0.iter().zip(other.0)) {
            let (s1, c1) = a.overflowing_add(b);
            let (s2, c2) = s1.overflowing_add(carry);
            *o = s2;
            carry = u64::from(c1 || c2);
        }
        let sum = Wide(out);
        assert!(
            self.negative() != other.negative() || sum.negative() == self.negative(),
            "an exact statistic's sum overflowed 256 bits"
        );
        sum
    }

    fn sub(self, other: Wide) -> Wide {
        self.add(other.neg())
    }

    /// The exact product of two `i128`s.
    fn mul(a: i128, b: i128) -> Wide {
        let (x, y) = (a.unsigned_abs(), b.unsigned_abs());
        let (x0, x1) = (x as u64 as u128, x >> 64);
        let (y0, y1) = (y as u64 as u128, y >> 64);
        // x * y = x1 y1 2^128 + (x1 y0 + x0 y1) 2^64 + x0 y0, each partial product below 2^128.
        let mut out = [0u64; 4];
        let mut put = |at: usize, v: u128| {
            let mut carry = v;
            for limb in out.iter_mut().skip(at) {
                let s = u128::from(*limb) + (carry as u64 as u128);
                *limb = s as u64;
                carry = (carry >> 64) + (s >> 64);
                if carry == 0 {
                    break;
                }
            }
        };
        put(0, x0 * y0);
        put(1, x1 * y0);
        put(1, x0 * y1);
        put(2, x1 * y1);
        let p = Wide(out);
        if (a < 0) != (b < 0) {
            p.neg()
        } else {
            p
        }
    }

    /// The nearest `f64` (to within an ulp or so: the same bits every time).
    fn to_f64(self) -> f64 {
        let (m, sign) = if self.negative() {
            (self.neg(), -1.0)
        } else {
            (self, 1.0)
        };
        let x =
            m.0.iter()
                .rev()
                .fold(0.0, |acc, l| acc * 18446744073709551616.0 + *l as f64);
        sign * x
    }
}

/// A [`Tally`] whose updates can be undone exactly, for models with a reverse handler
/// ([`Model::reverse_handler`](crate::Model::reverse_handler)): [`unrecord`](Self::unrecord)
/// takes back an observation, leaving the tally bit for bit as it was before
/// [`record`](Self::record).
///
/// It keeps its sums in fixed point (see [`FRACTION_BITS`]): an observation counts as the
/// nearest multiple of 2^-40 (about 9.1e-13), so tiny observations lose their precision
/// (record nanoseconds rather than seconds). Observations must be finite and below 2^60
/// (about 1.15e18) in magnitude; others panic with a message that says so, which the engine
/// reports with the LP and time. Sums are exact, in any order, so every executor reports the
/// same bits. It keeps no minimum or maximum (they cannot be undone without history): a model
/// that needs them and a reverse handler uses [`Tally`] under copy state saving.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactTally {
    n: u64,
    sum: Wide,
    sum_sq: Wide,
}

impl ExactTally {
    /// An empty tally.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one observation (panics when `x` is out of range: see the type's docs).
    pub fn record(&mut self, x: f64) {
        let k = fixed(x, "ExactTally::record");
        self.n += 1;
        self.sum = self.sum.add(Wide::from_i128(k));
        self.sum_sq = self.sum_sq.add(Wide::mul(k, k));
    }

    /// Takes back an observation [`record`](Self::record)ed earlier (in a reverse handler);
    /// panics on an empty tally.
    pub fn unrecord(&mut self, x: f64) {
        let k = fixed(x, "ExactTally::unrecord");
        assert!(self.n > 0, "ExactTally::unrecord({x}) on an empty tally");
        self.n -= 1;
        self.sum = self.sum.sub(Wide::from_i128(k));
        self.sum_sq = self.sum_sq.sub(Wide::mul(k, k));
    }

    /// The number of observations.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The sum of the observations (each rounded to 2^-40).
    pub fn sum(&self) -> f64 {
        self.sum.to_f64() * (-(FRACTION_BITS as f64)).exp2()
    }

    /// The sum of their squares.
    pub fn sum_sq(&self) -> f64 {
        self.sum_sq.to_f64() * (-2.0 * FRACTION_BITS as f64).exp2()
    }

    /// The mean (NaN when empty).
    pub fn mean(&self) -> f64 {
        mean(self.n, self.sum())
    }

    /// The sample standard deviation (n - 1; NaN below 2 observations).
    pub fn sd(&self) -> f64 {
        sd(self.n, self.sum(), self.sum_sq())
    }
}

impl TallyFigures for ExactTally {
    fn n(&self) -> u64 {
        self.n
    }
    fn sum(&self) -> f64 {
        ExactTally::sum(self)
    }
    fn sum_sq(&self) -> f64 {
        ExactTally::sum_sq(self)
    }
    fn min_max(&self) -> Option<(f64, f64)> {
        None
    }
}

/// A [`TimeAverage`] whose changes can be undone exactly, for models with a reverse handler:
/// [`unadd`](Self::unadd) undoes [`add`](Self::add), [`unset`](Self::unset) undoes
/// [`set`](Self::set), leaving it bit for bit as it was.
///
/// It holds the value `v` and `S`, the sum of each change times its time, both exact in fixed
/// point (see [`ExactTally`] for the range and resolution, which apply to values and times
/// alike): the area up to `T` is `v T - S` (Abel summation), so it needs no time of the last
/// change, changes may come in any order, and undoing one is subtracting it. The area up to
/// the end time is taken when it is handed to
/// [`ModelStats::time_average`](crate::ModelStats::time_average) in `finish`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExactTimeAverage {
    #[serde(with = "serde_f64")]
    start: Time,
    value: i128,
    /// The sum of (time x change), the initial value counting as a change at `start`.
    weighted: Wide,
}

impl ExactTimeAverage {
    /// A quantity holding `value` from time `start` on.
    pub fn new(start: Time, value: f64) -> Self {
        let v = fixed(value, "ExactTimeAverage::new");
        ExactTimeAverage {
            start,
            value: v,
            weighted: Wide::mul(fixed(start, "ExactTimeAverage::new (start)"), v),
        }
    }

    fn change(&mut self, now: Time, delta: i128, what: &str) {
        self.value = self
            .value
            .checked_add(delta)
            .filter(|v| v.unsigned_abs() < 1u128 << (LIMIT_BITS + FRACTION_BITS))
            .unwrap_or_else(|| panic!("{what}: the value leaves the exact range (2^{LIMIT_BITS})"));
        self.weighted = self.weighted.add(Wide::mul(fixed(now, what), delta));
    }

    /// Adds `delta` to the quantity at time `now`.
    pub fn add(&mut self, now: Time, delta: f64) {
        self.change(
            now,
            fixed(delta, "ExactTimeAverage::add"),
            "ExactTimeAverage::add",
        );
    }

    /// Undoes [`add`](Self::add)`(now, delta)` (in a reverse handler).
    pub fn unadd(&mut self, now: Time, delta: f64) {
        let d = fixed(delta, "ExactTimeAverage::unadd");
        self.change(now, -d, "ExactTimeAverage::unadd");
    }

    /// The quantity becomes `value` at time `now`.
    pub fn set(&mut self, now: Time, value: f64) {
        let d = fixed(value, "ExactTimeAverage::set") - self.value;
        self.change(now, d, "ExactTimeAverage::set");
    }

    /// Undoes [`set`](Self::set)`(now, _)`: `previous` is the value before it, exactly (a
    /// reverse handler must know it: the value given to the `set` before, kept in the state,
    /// or a count the state keeps). A value reached by `add`s of fractions may not be an
    /// `f64` exactly: a model that mixes `add` and `set` undoes a `set` with the value the
    /// type held, as [`value`](Self::value) gave it, only where that is exact (integers are).
    pub fn unset(&mut self, now: Time, previous: f64) {
        let d = fixed(previous, "ExactTimeAverage::unset") - self.value;
        self.change(now, d, "ExactTimeAverage::unset");
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        self.value as f64 * (-(FRACTION_BITS as f64)).exp2()
    }

    /// The integral of the value from the start up to `end` (not before the last change).
    pub fn area_until(&self, end: Time) -> f64 {
        let a =
            Wide::mul(self.value, fixed(end, "ExactTimeAverage::area_until")).sub(self.weighted);
        a.to_f64() * (-2.0 * FRACTION_BITS as f64).exp2()
    }

    /// The time-weighted mean up to `end` (NaN when `end` is not after the start).
    pub fn mean_until(&self, end: Time) -> f64 {
        let t = end - self.start;
        if t > 0.0 {
            self.area_until(end) / t
        } else {
            f64::NAN
        }
    }
}

impl TimeAverageFigures for ExactTimeAverage {
    /// Panics without `end`: the average keeps no time of its last change to stop at.
    fn area_and_time(&self, end: Option<Time>) -> (f64, Time) {
        let end = end.expect(
            "an ExactTimeAverage is taken at the end time: these ModelStats have none \
             (ModelStats::end_time is set in Model::finish and in global events)",
        );
        (self.area_until(end), (end - self.start).max(0.0))
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
        *self.count_of(x) += 1;
    }

    /// The count `x` goes to.
    fn count_of(&mut self, x: f64) -> &mut u64 {
        if x < self.lo {
            return &mut self.under;
        }
        let k = ((x - self.lo) / self.width).floor();
        if k >= 0.0 && (k as usize) < self.bins.len() {
            &mut self.bins[k as usize]
        } else {
            &mut self.over
        }
    }

    /// Takes back an observation [`record`](Self::record)ed earlier (in a reverse handler): the
    /// counts are integers, so the histogram is exactly as before. Panics when its bin is
    /// empty.
    pub fn unrecord(&mut self, x: f64) {
        let count = self.count_of(x);
        assert!(*count > 0, "Histogram::unrecord({x}): its bin is empty");
        *count -= 1;
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
mod exact_tests {
    use super::*;
    use proptest::prelude::*;

    /// One update of each exact statistic, with what undoes it.
    #[derive(Clone, Debug)]
    enum Op {
        Record(f64),
        Add(f64, f64),
        Set(f64, f64),
    }

    /// `qa` changes by `add`, `qs` by `set` (whose undo needs the value before, exactly: the
    /// one given to the `set` before).
    #[derive(Clone, Debug, PartialEq)]
    struct All {
        t: ExactTally,
        qa: ExactTimeAverage,
        qs: ExactTimeAverage,
        h: Histogram,
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            -1e6..1e6f64,
            -1e-9..1e-9f64,
            -1e17..1e17f64,
            (-5i32..5).prop_map(f64::from),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            value().prop_map(Op::Record),
            (0.0..1e9f64, value()).prop_map(|(t, d)| Op::Add(t, d)),
            (0.0..1e9f64, value()).prop_map(|(t, v)| Op::Set(t, v)),
        ]
    }

    proptest! {
        /// Applying updates and undoing them in reverse order gives back every earlier state
        /// bit for bit, down to the empty one.
        #[test]
        fn undo_restores_every_state_exactly(ops in proptest::collection::vec(op(), 0..60)) {
            let mut s = All {
                t: ExactTally::new(),
                qa: ExactTimeAverage::new(0.5, 3.0),
                qs: ExactTimeAverage::new(0.5, 3.0),
                h: Histogram::new(-10.0, 10.0, 7),
            };
            let start = s.clone();
            let mut seen = vec![s.clone()];
            let mut set_to = vec![3.0];
            for op in &ops {
                match *op {
                    Op::Record(x) => {
                        s.t.record(x);
                        s.h.record(x);
                    }
                    Op::Add(t, d) => s.qa.add(t, d),
                    Op::Set(t, v) => {
                        set_to.push(v);
                        s.qs.set(t, v);
                    }
                }
                seen.push(s.clone());
            }
            for op in ops.iter().rev() {
                prop_assert_eq!(&s, seen.last().unwrap());
                seen.pop();
                match *op {
                    Op::Record(x) => {
                        s.t.unrecord(x);
                        s.h.unrecord(x);
                    }
                    Op::Add(t, d) => s.qa.unadd(t, d),
                    Op::Set(t, _) => {
                        set_to.pop();
                        s.qs.unset(t, *set_to.last().unwrap());
                    }
                }
            }
            prop_assert_eq!(&s, &start);
            prop_assert_eq!(s.t, ExactTally::new());
        }

        /// The exact figures agree with a float reference where it is exact (small dyadic
        /// values), whatever the order of the updates.
        #[test]
        fn exact_figures_match_float_ones_on_dyadic_values(
            xs in proptest::collection::vec((-1000i32..1000, 0u32..4), 1..40)
        ) {
            let xs: Vec<f64> = xs.iter().map(|(m, e)| f64::from(*m) / f64::from(1u32 << e)).collect();
            let (mut e, mut f) = (ExactTally::new(), Tally::new());
            for &x in &xs {
                e.record(x);
                f.record(x);
            }
            prop_assert_eq!((e.n(), e.sum(), e.sum_sq()), (f.n(), f.sum(), f.sum_sq()));
            // A level changing at 0, 1, 2, ...: the same area both ways, in either order.
            let (mut q, mut r) = (ExactTimeAverage::new(0.0, 0.0), TimeAverage::new(0.0, 0.0));
            let mut back = ExactTimeAverage::new(0.0, 0.0);
            for (i, &x) in xs.iter().enumerate() {
                q.add(i as f64, x);
                r.add(i as f64, x);
            }
            for (i, &x) in xs.iter().enumerate().rev() {
                back.add(i as f64, x);
            }
            let end = xs.len() as f64 + 0.5;
            r.advance(end);
            prop_assert_eq!(q.area_until(end), r.area());
            prop_assert_eq!(back, q);
        }
    }

    #[test]
    fn wide_products_and_sums_are_exact() {
        let big = 1i128 << 100;
        assert_eq!(Wide::mul(big, big).to_f64(), 2f64.powi(200));
        assert_eq!(Wide::mul(-big, big).to_f64(), -(2f64.powi(200)));
        assert_eq!(Wide::mul(-7, -6), Wide::from_i128(42));
        // Products that fit in an i128 agree with it, signs included.
        let xs = [
            0i128,
            1,
            -1,
            0x1234_5678_9abc_def0,
            -0x0fed_cba9_8765_4321,
            i128::from(i64::MAX),
        ];
        for a in xs {
            for b in xs {
                assert_eq!(Wide::mul(a, b), Wide::from_i128(a * b), "{a} * {b}");
            }
        }
        // Larger ones: a * 2^k is a shifted left, across the limbs.
        let a = 0x0001_2345_6789_abcd_ef01_2345_6789_i128;
        assert_eq!(Wide::mul(a, 1 << 20), Wide::from_i128(a << 20));
        let p = Wide::mul(-a, 1 << 100);
        assert_eq!(p.add(Wide::mul(a, 1 << 100)), Wide::default());
        assert_eq!(p.to_f64(), -(a as f64) * 2f64.powi(100));
        assert_eq!(Wide::from_i128(-5).add(Wide::from_i128(5)), Wide::default());
    }

    #[test]
    #[should_panic(expected = "ExactTally::record: inf is out of range")]
    fn an_infinite_observation_is_refused() {
        ExactTally::new().record(f64::INFINITY);
    }

    #[test]
    #[should_panic(expected = "ExactTimeAverage::add: 2000000000000000000 is out of range")]
    fn a_change_beyond_the_range_is_refused() {
        ExactTimeAverage::new(0.0, 0.0).add(1.0, 2e18);
    }

    #[test]
    #[should_panic(expected = "ExactTally::unrecord(1) on an empty tally")]
    fn undoing_more_than_was_recorded_is_refused() {
        ExactTally::new().unrecord(1.0);
    }

    #[test]
    #[should_panic(expected = "Histogram::unrecord(0.2): its bin is empty")]
    fn a_histogram_refuses_to_undo_what_it_never_counted() {
        let mut h = Histogram::new(0.0, 1.0, 2);
        h.record(0.7);
        h.unrecord(0.2);
    }

    #[test]
    fn exact_statistics_survive_a_json_round_trip() {
        let mut t = ExactTally::new();
        [-3.25, 1e15, 7e-3].iter().for_each(|x| t.record(*x));
        let mut q = ExactTimeAverage::new(1.0, -2.0);
        q.add(3.0, 1e12);
        let t2: ExactTally = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        let q2: ExactTimeAverage =
            serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!((t2, q2), (t, q));
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
    fn time_averages_close_at_the_end_time() {
        // 2 on [1, 4), 1 from 4 on; observed from 1 to the end time 10: area 6 + 6.
        let mut q = TimeAverage::new(1.0, 2.0);
        q.set(4.0, 1.0);
        let mut e = ExactTimeAverage::new(1.0, 2.0);
        e.set(4.0, 1.0);
        let mut s = ModelStats::default();
        s.set_end_time(Some(10.0));
        s.time_average("q", &q);
        s.time_average("e", &e);
        for x in ["q", "e"] {
            assert_eq!(s.get(&format!("{x}.area")), Some(12.0), "{x}");
            assert_eq!(s.get(&format!("{x}.time")), Some(9.0), "{x}");
        }
        // The state's average is left as it was; without an end time it counts as it stands.
        assert_eq!((q.area(), q.time()), (6.0, 3.0));
        let mut s = ModelStats::default();
        s.time_average("q", &q);
        assert_eq!(s.get("q.time"), Some(3.0));
    }

    #[test]
    fn an_exact_tally_reports_no_min_or_max() {
        let mut t = ExactTally::new();
        [1.5, 2.5].iter().for_each(|x| t.record(*x));
        let mut s = ModelStats::default();
        s.tally("x", &t);
        assert_eq!((s.get("x.n"), s.get("x.mean")), (Some(2.0), Some(2.0)));
        assert_eq!((s.get("x.min"), s.get("x.max")), (None, None));
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
