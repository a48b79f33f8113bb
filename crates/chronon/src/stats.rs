//! The run report.

use std::collections::BTreeMap;

use crate::fingerprint::Fingerprint;
use crate::model::{ModelStats, Time};

/// What a run did. The CLI adds the model name, the configuration and the peak memory, and
/// writes it as JSON.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The executor's name (`seq`, `window`, …).
    pub sync: String,
    /// Worker threads used.
    pub threads: usize,
    /// The pending-event set used (`heap` or `ladder`).
    pub queue: String,
    /// The number of LPs.
    pub lps: u32,
    /// The end time: events at or after it never execute.
    pub end_time: Time,
    /// Events committed (part of the final history).
    pub committed: u64,
    /// Events processed, rolled-back ones included.
    pub processed: u64,
    /// Events processed and then rolled back.
    pub rolled_back: u64,
    /// Seconds spent executing (initialization excluded).
    pub wall_s: f64,
    /// Seconds spent in `init` (building LPs and their first events).
    pub init_s: f64,
    /// Committed events per wall second.
    pub events_per_s: f64,
    /// The digest of the committed history (see [`Fingerprint`]).
    pub fingerprint: Fingerprint,
    /// False when the run was stopped early (by a stop request); the figures cover what was done.
    pub complete: bool,
    /// The latest timestamp of a committed event (0 when none), the same under every executor.
    pub last_time: Time,
    /// Events scheduled (sent by committed events or by `init`) and not committed when the run
    /// ended: on a complete run, exactly the events at or after the end time, wherever they
    /// were (a pending set or a mailbox), the same under every executor.
    pub pending_at_end: u64,
    /// The model's figures: its counters and what `Model::finish` added.
    pub model_stats: ModelStats,
    /// Executor-specific figures (rounds, rollbacks, GVT rounds, …).
    pub executor_stats: BTreeMap<String, f64>,
    /// Per-worker figures, one map per worker.
    pub workers: Vec<BTreeMap<String, f64>>,
    /// Where the workers ran: pinned to cores or not (and why), first touch, the machine.
    pub placement: crate::placement::Placement,
    /// GVT over wall time as (wall seconds, GVT) pairs (optimistic executors; empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gvt_series: Vec<(f64, Time)>,
    /// Time Warp's adaptive optimism window over wall time: (wall seconds, window) after every
    /// change the controller made (empty when it made none, and for other executors).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub window_series: Vec<(f64, Time)>,
    /// Time series the model's global events recorded (`GlobalCtx::record`): name -> (time,
    /// value); the same under every executor.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub model_series: crate::model::ModelSeries,
    /// The checkpoints this run saved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Saved>,
    /// The checkpoint this run continued from: its history before the cut is in `committed`
    /// and the fingerprint; `processed`, `wall_s` and `events_per_s` count this run only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored: Option<RestoredFrom>,
    /// A checkpoint that could not be written: the run stopped at its cut (`complete` is
    /// false; the figures cover the events before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_error: Option<String>,
    /// What each LP cost in this run, in LP order ([`crate::lp_cost`]; empty where the
    /// executor has not measured it). JSON carries the costliest as `top_lps`.
    #[serde(
        rename = "top_lps",
        serialize_with = "top_lps",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub lp_costs: Vec<crate::lp_cost::LpCost>,
    /// What groups of LPs cost over the stretches of a run in stretches (`--balance`,
    /// checkpoints): a heat strip of LPs over time; `None` for a run in one stretch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lp_heat: Option<crate::lp_cost::LpHeat>,
}

/// How many LPs the report's `top_lps` lists.
pub(crate) const TOP_LPS: usize = 10;

/// `top_lps`: the [`TOP_LPS`] costliest LPs, each with its events, its estimated handler
/// seconds and its share of every LP's.
fn top_lps<S: serde::Serializer>(
    costs: &[crate::lp_cost::LpCost],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let total: u64 = costs.iter().map(|c| c.ns).sum();
    let top = crate::lp_cost::top(costs, TOP_LPS);
    let mut seq = s.serialize_seq(Some(top.len()))?;
    for (lp, c) in top {
        seq.serialize_element(&serde_json::json!({
            "lp": lp,
            "events": c.events,
            "cost_s": c.ns as f64 * 1e-9,
            "share": if total > 0 { c.ns as f64 / total as f64 } else { 0.0 },
        }))?;
    }
    seq.end()
}

impl Report {
    /// An empty report for the given executor, to be filled in.
    pub(crate) fn new(sync: &str, threads: usize, queue: &str, lps: u32, end_time: Time) -> Self {
        Report {
            sync: sync.to_string(),
            threads,
            queue: queue.to_string(),
            lps,
            end_time,
            committed: 0,
            processed: 0,
            rolled_back: 0,
            wall_s: 0.0,
            init_s: 0.0,
            events_per_s: 0.0,
            fingerprint: Fingerprint::default(),
            complete: true,
            last_time: 0.0,
            pending_at_end: 0,
            model_stats: ModelStats::default(),
            executor_stats: BTreeMap::new(),
            workers: Vec::new(),
            placement: Default::default(),
            gvt_series: Vec::new(),
            window_series: Vec::new(),
            model_series: Default::default(),
            checkpoints: Vec::new(),
            restored: None,
            checkpoint_error: None,
            lp_costs: Vec::new(),
            lp_heat: None,
        }
    }

    /// The busiest worker's busy time over the mean worker's (1: even), as the workers measured
    /// it (`busy_s`); `None` with fewer than two workers or no busy time.
    pub fn imbalance(&self) -> Option<f64> {
        busy_imbalance(self.workers.iter().filter_map(|w| w.get("busy_s").copied()))
    }

    /// Sets `wall_s` and the derived `events_per_s`.
    pub(crate) fn set_wall(&mut self, wall_s: f64) {
        self.wall_s = wall_s;
        self.events_per_s = if wall_s > 0.0 {
            self.committed as f64 / wall_s
        } else {
            0.0
        };
    }
}

/// The largest of `busy` over their mean; `None` for fewer than two workers or no busy time.
fn busy_imbalance(busy: impl Iterator<Item = f64>) -> Option<f64> {
    let b: Vec<f64> = busy.collect();
    let mean = b.iter().sum::<f64>() / b.len().max(1) as f64;
    (b.len() >= 2 && mean > 0.0).then(|| b.iter().copied().fold(0.0, f64::max) / mean)
}

#[cfg(test)]
mod imbalance_tests {
    use super::busy_imbalance as imbalance;

    #[test]
    fn the_imbalance_is_the_busiest_over_the_mean() {
        assert_eq!(imbalance([1.0, 1.0].into_iter()), Some(1.0));
        assert_eq!(imbalance([3.0, 1.0].into_iter()), Some(1.5));
        assert_eq!(imbalance([4.0, 0.0, 0.0, 0.0].into_iter()), Some(4.0));
        assert_eq!(imbalance([2.0].into_iter()), None);
        assert_eq!(imbalance([0.0, 0.0].into_iter()), None);
        assert_eq!(imbalance(std::iter::empty()), None);
    }
}

/// A checkpoint saved during a run, as the report lists it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Saved {
    /// Its cut.
    pub cut: Time,
    /// Its directory.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// Wall seconds from the first part this process started writing until the checkpoint was
    /// in place (worker processes and MPI ranks write their parts before their run ends: for
    /// them, from the end of the run).
    pub seconds: f64,
}

/// Where a restored run started, as the report says it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RestoredFrom {
    /// The checkpoint's directory.
    pub path: String,
    /// Its cut.
    pub cut: Time,
    /// The executor that saved it.
    pub saved_by: String,
    /// The seed of the run that saved it.
    pub seed: u64,
    /// Events committed before the cut (included in the report's `committed`).
    pub committed: u64,
    /// The seed every LP's random stream was derived from anew at the cut, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reseed: Option<u64>,
}
