//! The report of a chain of runs (`chain.rs`): each link's merged into the one before, and
//! what the chain adds once every link ran (its checkpoints, where it was restored from,
//! rates over the chain's own events).

use super::{RestoredFrom, Saved};
use crate::executor::RunConfig;
use crate::stats::Report;

/// What a chain adds to the report of its links once they ran.
pub(super) struct Done {
    pub(super) saves: Vec<Saved>,
    pub(super) restored: Option<RestoredFrom>,
    pub(super) failed: Option<String>,
    /// The latest commit before the chain's first link.
    pub(super) before: f64,
    /// Seconds spent reading checkpoints (initialization).
    pub(super) read_s: f64,
    /// Events committed before the chain's first link (not this run's).
    pub(super) base_committed: u64,
}

impl Done {
    pub(super) fn into_report(self, mut report: Report, base: &RunConfig) -> Report {
        report.end_time = base.end;
        report.last_time = report.last_time.max(self.before);
        report.init_s += self.read_s;
        report.checkpoints = self.saves;
        report.restored = self.restored;
        if let Some(e) = self.failed {
            report.complete = false;
            report.checkpoint_error = Some(e);
        }
        let wall = report.wall_s;
        report.set_wall(wall);
        let ran = report.committed.saturating_sub(self.base_committed);
        if wall > 0.0 {
            report.events_per_s = ran as f64 / wall;
        }
        // Time Warp's efficiency over this chain's events (the history before it ran elsewhere).
        if let Some(e) = report.executor_stats.get_mut("efficiency") {
            *e = ran as f64 / report.processed.max(1) as f64;
        }
        report
    }
}

/// The report of a chain so far: the latest run's, with the counts and times of every run,
/// each worker's figures over every run, and each LP's cost over every run.
pub(super) fn merge(prev: Option<Report>, mut r: Report) -> Report {
    if let Some(p) = prev {
        r.processed += p.processed;
        r.rolled_back += p.rolled_back;
        r.init_s += p.init_s;
        r.wall_s += p.wall_s;
        r.last_time = r.last_time.max(p.last_time);
        if r.workers.len() == p.workers.len() {
            for (w, pw) in r.workers.iter_mut().zip(&p.workers) {
                merge_worker(w, pw);
            }
        }
        // The synchronizations of every run.
        for k in [
            "rounds",
            "gvt_rounds",
            "null_messages",
            "rollbacks",
            "anti_messages",
        ] {
            if let (Some(x), Some(v)) = (r.executor_stats.get_mut(k), p.executor_stats.get(k)) {
                *x += v;
            }
        }
        if r.lp_costs.len() == p.lp_costs.len() {
            for (c, pc) in r.lp_costs.iter_mut().zip(&p.lp_costs) {
                c.add(*pc);
            }
        }
    }
    r
}

/// A worker's figures over two runs of a chain: counts and seconds add up, maxima take the
/// larger, and ratios and flags keep the latest run's.
fn merge_worker(
    w: &mut std::collections::BTreeMap<String, f64>,
    prev: &std::collections::BTreeMap<String, f64>,
) {
    const LATEST: [&str; 5] = [
        "pinned",
        "efficiency",
        "events_per_cpu_s",
        "rollback_length_mean",
        "rollback_wall_mean_us",
    ];
    for (k, v) in prev {
        let Some(x) = w.get_mut(k) else { continue };
        if k.ends_with("_max") || k.starts_with("peak_") || k.starts_with("window") {
            *x = x.max(*v);
        } else if !LATEST.contains(&k.as_str()) {
            *x += v;
        }
    }
}
