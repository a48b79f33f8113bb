//! The figures a model adds to its report ([`ModelStats`]), how they merge over LPs and
//! across processes, and [`counters!`](crate::counters), which names a model's counters once.

use std::collections::BTreeMap;

/// Named figures a model adds to the report (see [`Model::finish`](crate::Model::finish)).
///
/// Besides plain figures (`add`, `set`, `min`, `max`), a model hands over the statistics of
/// [`measure`](crate::measure): [`tally`](Self::tally), [`time_average`](Self::time_average),
/// [`histogram`](Self::histogram); the report holds their parts and the derived means and
/// standard deviations.
#[derive(Clone, Debug, Default)]
pub struct ModelStats {
    values: BTreeMap<String, f64>,
    /// The time the figures are taken at (see [`end_time`](Self::end_time)).
    end: Option<f64>,
    /// Multi-process runs: the operations `finish` made, to be replayed in LP order by the
    /// parent (`None`: not recording).
    log: Option<StatLog>,
}

impl PartialEq for ModelStats {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values
    }
}

/// How an operation on a [`ModelStats`] combines a value with the figure's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatKind {
    Set = 0,
    Add = 1,
    Min = 2,
    Max = 3,
}

impl StatKind {
    /// The kind with wire code `c`.
    #[cfg_attr(any(chronon_loom, not(target_os = "linux")), allow(dead_code))]
    pub(crate) fn from_code(c: u64) -> Option<StatKind> {
        [StatKind::Set, StatKind::Add, StatKind::Min, StatKind::Max]
            .get(usize::try_from(c).ok()?)
            .copied()
    }
}

/// One operation on a [`ModelStats`]: its kind, the figure and the value.
pub(crate) type StatOp = (StatKind, String, f64);

/// What a recording [`ModelStats`] saw.
#[derive(Debug, Default)]
struct StatLog {
    ops: Vec<StatOp>,
    /// Whether `get` or `iter` was called: the recorded operations then depend on figures
    /// this process does not have, and cannot be replayed exactly.
    read: std::sync::atomic::AtomicBool,
}

impl Clone for StatLog {
    fn clone(&self) -> Self {
        StatLog {
            ops: self.ops.clone(),
            // Ordering: the flag is written and read by the thread that runs `finish`.
            read: std::sync::atomic::AtomicBool::new(
                self.read.load(std::sync::atomic::Ordering::Relaxed),
            ),
        }
    }
}

impl ModelStats {
    fn apply(&mut self, kind: StatKind, name: &str, value: f64) {
        if let Some(log) = &mut self.log {
            log.ops.push((kind, name.to_string(), value));
        }
        match kind {
            StatKind::Set => {
                self.values.insert(name.to_string(), value);
            }
            StatKind::Add => *self.values.entry(name.to_string()).or_insert(0.0) += value,
            StatKind::Min | StatKind::Max => {
                let v = self.values.entry(name.to_string()).or_insert(value);
                *v = if kind == StatKind::Min {
                    v.min(value)
                } else {
                    v.max(value)
                };
            }
        }
    }

    /// Adds `value` to the figure `name` (created at 0).
    pub fn add(&mut self, name: &str, value: f64) {
        self.apply(StatKind::Add, name, value);
    }

    /// Sets the figure `name`.
    pub fn set(&mut self, name: &str, value: f64) {
        self.apply(StatKind::Set, name, value);
    }

    /// Lowers the figure `name` to `value` if it is below (created at `value`).
    pub fn min(&mut self, name: &str, value: f64) {
        self.apply(StatKind::Min, name, value);
    }

    /// Raises the figure `name` to `value` if it is above (created at `value`).
    pub fn max(&mut self, name: &str, value: f64) {
        self.apply(StatKind::Max, name, value);
    }

    /// Merges an LP's [`Tally`](crate::measure::Tally) into the statistic `name`: the report
    /// gets `name.n`, `name.sum`, `name.sum_sq`, `name.min`, `name.max` over every LP, and the
    /// derived `name.mean` and `name.sd`.
    ///
    /// An [`ExactTally`](crate::measure::ExactTally) has no minimum or maximum: it adds
    /// neither.
    pub fn tally(&mut self, name: &str, t: &impl crate::measure::TallyFigures) {
        self.add(&format!("{name}.n"), t.n() as f64);
        self.add(&format!("{name}.sum"), t.sum());
        self.add(&format!("{name}.sum_sq"), t.sum_sq());
        if let (true, Some((min, max))) = (t.n() > 0, t.min_max()) {
            self.min(&format!("{name}.min"), min);
            self.max(&format!("{name}.max"), max);
        }
    }

    /// Merges an LP's time average ([`TimeAverage`](crate::measure::TimeAverage) or
    /// [`ExactTimeAverage`](crate::measure::ExactTimeAverage)) into the statistic `name`:
    /// `name.area` and `name.time` summed over every LP, and the derived `name.mean` (their
    /// ratio: the mean over the LPs, weighted by the time each observed).
    ///
    /// The average is closed at [`end_time`](Self::end_time) first: the current value counts
    /// up to the end time, so in [`Model::finish`](crate::Model::finish) `name.time` is the
    /// whole run (end time minus the average's start) on every LP. Without an end time (a
    /// `ModelStats` made by hand) the average counts as it stands.
    pub fn time_average(&mut self, name: &str, t: &impl crate::measure::TimeAverageFigures) {
        let (area, time) = t.area_and_time(self.end);
        self.add(&format!("{name}.area"), area);
        self.add(&format!("{name}.time"), time);
    }

    /// The time these figures are taken at: in [`Model::finish`](crate::Model::finish), the
    /// time the run ended: its end time, which for a run that ends at a checkpoint's cut is the
    /// cut; for a run without an end time (infinite) or stopped early by a stop request, the
    /// time of the latest event it committed. The same under every executor and transport. In
    /// a global event ([`GlobalCtx::stats`](crate::GlobalCtx::stats)), that event's time.
    /// `None` on figures made by hand.
    pub fn end_time(&self) -> Option<f64> {
        self.end
    }

    /// Sets [`end_time`](Self::end_time).
    pub(crate) fn set_end_time(&mut self, end: Option<f64>) {
        self.end = end;
    }

    /// Merges an LP's [`Histogram`](crate::measure::Histogram) into the statistic `name`:
    /// `name.under`, `name.bin0`, ..., `name.over` summed over every LP (LPs give the same
    /// bins).
    pub fn histogram(&mut self, name: &str, h: &crate::measure::Histogram) {
        self.add(&format!("{name}.under"), h.under() as f64);
        for (i, c) in h.bins().iter().enumerate() {
            self.add(&format!("{name}.bin{i}"), *c as f64);
        }
        self.add(&format!("{name}.over"), h.over() as f64);
    }

    /// Adds `other`'s figures: a `.min` figure by its minimum, a `.max` by its maximum, the
    /// others by their sum.
    pub(crate) fn merge_from(&mut self, other: &ModelStats) {
        for (k, v) in &other.values {
            let kind = if k.ends_with(".min") {
                StatKind::Min
            } else if k.ends_with(".max") {
                StatKind::Max
            } else {
                StatKind::Add
            };
            self.apply(kind, k, *v);
        }
    }

    /// The figures derived from merged statistics: `x.mean` and `x.sd` of a tally, `x.mean`
    /// of a time average.
    fn derived(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for (k, v) in &self.values {
            if let Some(x) = k.strip_suffix(".n") {
                if let (Some(sum), Some(sq)) = (
                    self.values.get(&format!("{x}.sum")),
                    self.values.get(&format!("{x}.sum_sq")),
                ) {
                    let n = *v as u64;
                    out.push((format!("{x}.mean"), crate::measure::mean(n, *sum)));
                    out.push((format!("{x}.sd"), crate::measure::sd(n, *sum, *sq)));
                }
            } else if let Some(x) = k.strip_suffix(".area") {
                if let Some(t) = self.values.get(&format!("{x}.time")) {
                    out.push((format!("{x}.mean"), if *t > 0.0 { v / t } else { f64::NAN }));
                }
            }
        }
        out.retain(|(k, _)| !self.values.contains_key(k));
        out
    }

    /// The figure `name`, if any (a derived one included: `x.mean`, `x.sd`).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.mark_read();
        self.values.get(name).copied().or_else(|| {
            self.derived()
                .into_iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v)
        })
    }

    /// All figures, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.mark_read();
        self.values.iter().map(|(k, v)| (k.as_str(), *v))
    }

    fn mark_read(&self) {
        if let Some(log) = &self.log {
            // Ordering: read by the same thread after `finish` returns.
            log.read.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// An empty set of figures that records every `add` and `set` (multi-process runs).
    #[cfg_attr(any(chronon_loom, not(target_os = "linux")), allow(dead_code))]
    pub(crate) fn recording() -> Self {
        ModelStats {
            values: BTreeMap::new(),
            end: None,
            log: Some(StatLog::default()),
        }
    }

    /// The operations recorded, or `Err` if figures were read while recording.
    #[cfg_attr(any(chronon_loom, not(target_os = "linux")), allow(dead_code))]
    pub(crate) fn take_log(&mut self) -> Result<Vec<StatOp>, ()> {
        let log = self.log.take().unwrap_or_default();
        // Ordering: set by the same thread, in `finish`, before this call.
        if log.read.load(std::sync::atomic::Ordering::Relaxed) {
            Err(())
        } else {
            Ok(log.ops)
        }
    }

    /// The figures by name (saved in checkpoints).
    pub(crate) fn values(&self) -> &BTreeMap<String, f64> {
        &self.values
    }

    /// Statistics holding `values` (see [`values`](Self::values)).
    pub(crate) fn from_values(values: BTreeMap<String, f64>) -> Self {
        ModelStats {
            values,
            end: None,
            log: None,
        }
    }

    /// Applies recorded operations in order.
    #[cfg_attr(any(chronon_loom, not(target_os = "linux")), allow(dead_code))]
    pub(crate) fn replay(&mut self, ops: &[StatOp]) {
        for (kind, name, value) in ops {
            self.apply(*kind, name, *value);
        }
    }
}

impl serde::Serialize for ModelStats {
    /// The figures and the derived ones, by name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut all: BTreeMap<&str, f64> =
            self.values.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let derived = self.derived();
        for (k, v) in &derived {
            all.insert(k.as_str(), *v);
        }
        all.serialize(s)
    }
}

/// Names a model's counters ([`Ctx::count`](crate::Ctx::count)) once, so that an index and its
/// name cannot drift apart: `counters!(pub Counters { events, sends })` makes a type with the
/// index constants `Counters::events` (0) and `Counters::sends` (1), and `Counters::NAMES`
/// (`["events", "sends"]`) for [`Model::counter_names`](crate::Model::counter_names).
///
/// ```
/// use chronon::{Ctx, Model};
///
/// chronon::counters!(Counters { arrivals, departures });
///
/// struct Shop;
/// impl Model for Shop {
///     type State = ();
///     type Event = ();
///     fn init(&self, ctx: &mut Ctx<'_, Self>) {
///         ctx.send(ctx.me(), 1.0, ());
///     }
///     fn on_event(&self, _: &mut (), _: &(), ctx: &mut Ctx<'_, Self>) {
///         ctx.count(Counters::arrivals, 1);
///     }
///     fn counter_names(&self) -> &'static [&'static str] {
///         Counters::NAMES
///     }
/// }
/// let r = chronon::Simulation::new(Shop).lps(3).end_time(5.0).run()?;
/// assert_eq!(r.model_stats.get("arrivals"), Some(3.0));
/// assert_eq!(r.model_stats.get("departures"), Some(0.0));
/// # Ok::<(), chronon::SimError>(())
/// ```
#[macro_export]
macro_rules! counters {
    ($vis:vis $name:ident { $($c:ident),* $(,)? }) => {
        /// The model's counters: an index constant per counter, and their names.
        #[derive(Clone, Copy, Debug)]
        $vis struct $name;
        #[allow(non_upper_case_globals, dead_code)]
        impl $name {
            $crate::counters!(@index 0usize; $($c),*);
            /// Every counter's name, in index order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($c)),*];
        }
    };
    (@index $i:expr; $first:ident $(, $rest:ident)*) => {
        /// A counter's index.
        pub const $first: usize = $i;
        $crate::counters!(@index $i + 1; $($rest),*);
    };
    (@index $i:expr;) => {};
}
