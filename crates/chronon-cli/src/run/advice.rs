//! How much parallelism a run had, and one line of advice where it had too little: the
//! summary's `parallelism` and `advice` lines and the report's `parallelism` object.
//!
//! The figure is the workers' busy time (in event handlers) summed over every worker and
//! divided by the wall time: how many cores' worth of event work the run did per second. A
//! sequential run does one; a parallel run below one did less event work per second than a
//! sequential run of the same events would (its handlers being no faster), so it was most
//! likely slower than `--sync seq`. Time Warp counts only the work it kept (busy × efficiency).
//!
//! The imbalance is the busiest worker's busy time over the mean: 1 when every worker did the
//! same event work; near the worker count when one did all of it. Every other worker waits for
//! the busiest at each synchronization, so it bounds the speedup at workers ÷ imbalance.

use chronon::Report;
use serde_json::{json, Value};

/// What the report says about the run's parallelism.
#[derive(Debug)]
pub(crate) struct Parallelism {
    /// Workers of the run (threads × processes or ranks).
    pub workers: usize,
    /// Whether every worker runs on this machine.
    pub local: bool,
    /// Cores this process may use.
    pub cores: usize,
    /// Σ busy / wall (Time Warp: × efficiency), when the workers report busy time.
    pub busy_workers: Option<f64>,
    /// The busiest worker's busy time over the mean (two or more workers with busy time).
    pub imbalance: Option<f64>,
    /// Events committed per synchronization and worker, with the synchronization's name.
    pub per_sync: Option<(f64, &'static str)>,
    /// One line of advice, when the run had a reason for one.
    pub advice: Option<String>,
}

impl Parallelism {
    /// The figures of a finished run; `local`: all its workers run on this machine (not MPI
    /// ranks, which may be spread over several).
    pub(crate) fn of(r: &Report, local: bool) -> Parallelism {
        let workers = r.workers.len().max(1);
        let cores = crate::sys::cores();
        let es = &r.executor_stats;
        let busy: f64 = r.workers.iter().filter_map(|w| w.get("busy_s")).sum();
        let kept = es.get("efficiency").copied().unwrap_or(1.0);
        let busy_workers =
            (r.sync != "seq" && r.wall_s > 0.0 && busy > 0.0).then(|| busy * kept / r.wall_s);
        let imbalance = r.imbalance();
        let per = |n: Option<&f64>, what| {
            n.filter(|n| **n > 0.0)
                .map(|n| (r.committed as f64 / n / workers.max(1) as f64, what))
        };
        let per_sync = match r.sync.as_str() {
            "window" | "lockstep" => per(es.get("rounds"), "round"),
            "timewarp" => per(es.get("gvt_rounds"), "GVT round"),
            "null-message" => per(es.get("null_messages"), "null message"),
            _ => None,
        };
        let mut p = Parallelism {
            workers,
            local,
            cores,
            busy_workers,
            imbalance,
            per_sync,
            advice: None,
        };
        p.advice = p.advise(r);
        p
    }

    /// The one line of advice, worst reason first.
    fn advise(&self, r: &Report) -> Option<String> {
        if self.local && self.workers > self.cores {
            return Some(format!(
                "{} workers on {} cores: workers take turns on a core, and every \
                 synchronization waits for the ones not running; use at most {} workers",
                self.workers, self.cores, self.cores
            ));
        }
        let busy = self.busy_workers?;
        let uneven = self.imbalance.filter(|i| *i >= UNEVEN).map(|i| {
            format!(
                "the busiest worker did {i:.2}× the mean event work, and the others wait for it \
                 at every synchronization: the load is uneven; --mapping round-robin spreads \
                 neighbouring LPs, window's --dedicated F balances at run time"
            )
        });
        if busy >= 1.0 {
            return uneven;
        }
        let per = self.per_sync.map_or(String::new(), |(n, what)| {
            format!(" ({n:.0} events per {what} and worker)")
        });
        let why = if r.sync == "timewarp" {
            let eff = r.executor_stats.get("efficiency").copied().unwrap_or(1.0);
            format!(
                "the workers kept {:.0} % of what they processed and spent the rest of their \
                 time waiting for GVT or idle{per}",
                eff * 100.0
            )
        } else {
            format!("the workers spent the rest of their time waiting and synchronizing{per}")
        };
        let then = uneven.map_or(String::new(), |u| format!("; {u}"));
        Some(format!(
            "the workers did {busy:.2} cores' worth of event work, less than one: this run was \
             most likely slower than --sync seq; {why}; more work per event, more lookahead or \
             more LPs per worker pay for the synchronization{then}"
        ))
    }

    /// The summary's lines: `parallelism` for a parallel run, `advice` when there is some.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(b) = self.busy_workers {
            let per = self.per_sync.map_or(String::new(), |(n, what)| {
                format!("; {n:.1} events per {what} and worker")
            });
            let uneven = self.imbalance.map_or(String::new(), |i| {
                format!("; imbalance {i:.2} (busiest worker ÷ mean)")
            });
            out.push(format!(
                "parallelism  {b:.2} of {} workers busy on average{per}{uneven}",
                self.workers
            ));
        }
        if let Some(a) = &self.advice {
            out.push(format!("advice       {a}"));
        }
        out
    }

    /// The report's `parallelism` object.
    pub(crate) fn json(&self) -> Value {
        json!({
            "workers": self.workers,
            "cores": self.cores,
            "busy_workers": self.busy_workers,
            "imbalance": self.imbalance,
            "events_per_sync_per_worker": self.per_sync.map(|p| p.0),
            "sync": self.per_sync.map(|p| p.1),
            "advice": self.advice,
        })
    }
}

/// An imbalance from which the advice names it (the busiest worker did 30 % more than the mean).
const UNEVEN: f64 = 1.3;
