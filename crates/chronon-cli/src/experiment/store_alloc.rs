//! Seed 003 Fig. 8 and Table II (the data store's allocation patterns under time-sharing Time
//! Warp), the part of `003-datastore` that `seed003.rs` adds to Fig. 7's runs: the heavy
//! configuration with ticks, its request meta-data allocated round-robin (the seed's original
//! model) or all at the start of the batch event (`--alloc upfront`, the seed's "varied",
//! clustered allocation), at every parallel thread count.
//!
//! Fig. 8 splits each run's preemptions by what made them happen, as the seed does:
//! `preempt_interrupts` (a tick interrupted the handler's own code and its check switched the
//! event off: the seed's timer-interrupt preemptions) and the rest (the check at a
//! platform-mode return switched it: the seed's preemptions at switches back from platform
//! mode). Table II divides the original configuration's wall time by the varied one's.

use serde_json::Value;

use super::{md_table, num, run_metrics, Metrics, Point, Results, Settings};
use crate::report::plot::{Bars, Panel};

/// The tick flags of every time-sharing data-store run (Fig. 7, Fig. 8, Table II): the seed's
/// ΔET of 50 µs and its "more conservative" α = −0.5 (seed 003 §4.2: the model's allocation
/// calls already switch to platform mode; the alpha rule decides per worker whether ticks run —
/// on this machine it kept them off: docs/experiments.md). Without ticks every preemption would come at a return
/// checked with ticks off, and Fig. 8's split would be empty by construction.
pub(super) const FIG8_TICKS: [&str; 4] = ["--tick-us", "50", "--alpha", "-0.5"];

/// The `sync` value of these runs: time-sharing Time Warp, the label of every time-sharing run
/// of seed 003 (which ticks as that experiment's seed configuration: here `FIG8_TICKS`, as Fig.
/// 7's time-sharing runs). Fig. 8's rows are told from Fig. 7's by their `alloc` value (Fig.
/// 7's have none).
pub(super) const SYNC: &str = "timewarp-preempt";

/// The two allocation patterns: (CSV value, the seed's name).
const ALLOCS: [(&str, &str); 2] = [("round-robin", "original"), ("upfront", "varied")];

/// The Fig. 8 / Table II points: `heavy` (the heavy configuration's `chronon run datastore
/// ...` arguments) with each allocation pattern, time-sharing with ticks, at each parallel
/// thread count.
pub(super) fn points(s: &Settings, heavy: &[&str]) -> Vec<Point> {
    let mut out = Vec::new();
    for t in s.parallel_threads() {
        let ts = t.to_string();
        for (alloc, _) in ALLOCS {
            let mut args = heavy.to_vec();
            args.extend(["--alloc", alloc, "--sync", "timewarp", "--threads", &ts]);
            args.push("--preempt");
            args.extend(FIG8_TICKS);
            let params = [
                ("config", "heavy"),
                ("alloc", alloc),
                ("sync", SYNC),
                ("threads", ts.as_str()),
            ];
            out.push(Point::new(&params, &args));
        }
    }
    out
}

/// The run metrics (the preemptions by a tick's interrupt among them), and the ticks
/// delivered (NaN without `--preempt`).
pub(super) fn extract(v: &Value) -> Metrics {
    let mut m = run_metrics(v);
    let f = |p: &str| v.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
    m.push(("ticks_delivered", f("/executor_stats/ticks_delivered")));
    m
}

/// Fig. 8's and Table II's tables, and Fig. 8's panel.
pub(super) fn render(r: &Results) -> (String, Panel) {
    let threads: Vec<String> = r
        .values("threads")
        .into_iter()
        .filter(|t| t != "1")
        .collect();
    let at = |alloc: &str, t: &str, m: &str| {
        r.get(&[("alloc", alloc), ("sync", SYNC), ("threads", t)], m)
    };
    let h8: Vec<String> = [
        "allocation",
        "threads",
        "wall s",
        "preemptions",
        "by a tick's interrupt / s",
        "at platform returns / s",
        "total / s",
        "ticks delivered / s",
        "ticks acted on / s",
    ]
    .map(String::from)
    .to_vec();
    let (mut rows8, mut rows2) = (Vec::new(), Vec::new());
    let mut categories = Vec::new();
    let (mut tick, mut ret, mut total) = (Vec::new(), Vec::new(), Vec::new());
    for (alloc, name) in ALLOCS {
        for t in &threads {
            let w = at(alloc, t, "wall_s");
            let n = at(alloc, t, "preemptions");
            let on_tick = at(alloc, t, "preempt_interrupts");
            rows8.push(vec![
                format!("{name} ({alloc})"),
                t.clone(),
                num(w),
                num(n),
                num(on_tick / w),
                num((n - on_tick) / w),
                num(n / w),
                num(at(alloc, t, "ticks_delivered") / w),
                num(at(alloc, t, "ticks_acted_on") / w),
            ]);
            categories.push(format!("{name} ×{t}"));
            tick.push(on_tick / w);
            ret.push((n - on_tick) / w);
            total.push(n / w);
        }
    }
    for t in &threads {
        let (o, v) = (at("round-robin", t, "wall_s"), at("upfront", t, "wall_s"));
        rows2.push(vec![t.clone(), num(o), num(v), num(o / v)]);
    }
    let h2: Vec<String> = [
        "threads",
        "original wall s",
        "varied wall s",
        "original / varied",
    ]
    .map(String::from)
    .to_vec();
    let table = format!(
        "Fig. 8: preemptions per second of execution time, heavy configuration, time-sharing \
         Time Warp with ticks (`--preempt --tick-us 50 --alpha -0.5`); original allocation \
         pattern (round-robin, each request record allocated between slices of work) and \
         varied (`--alloc upfront`: all records at the start of the batch event). Each record's \
         allocation is followed by a platform-mode return (the seed's intercepted malloc). \"By a \
         tick's interrupt\": a tick interrupted the handler's own code and its check switched \
         the event off (the seed's timer-interrupt preemptions); \"at platform returns\": the \
         check at a return from the engine switched it (the seed's switches back from platform \
         mode).\n\n{}\n\
         Table II: execution time of the original over the varied configuration (heavy, \
         time-sharing with ticks)\n\n{}",
        md_table(&h8, &rows8),
        md_table(&h2, &rows2)
    );
    let panel = Panel::Grouped {
        title: "Fig. 8: preemptions / s (heavy)".into(),
        y: "preemptions / s".into(),
        categories,
        groups: vec![
            Bars {
                name: "by a tick's interrupt".into(),
                values: tick,
            },
            Bars {
                name: "at platform returns".into(),
                values: ret,
            },
            Bars {
                name: "total".into(),
                values: total,
            },
        ],
    };
    (table, panel)
}

#[cfg(test)]
mod tests {
    use super::{points, Settings};

    #[test]
    fn both_allocation_patterns_run_time_sharing_with_ticks() {
        let s = Settings {
            quick: true,
            threads: None,
            reps: 1,
            cores: 2,
            configs: None,
            splits: Vec::new(),
        };
        let p = points(&s, &["run", "datastore", "--batching-factor", "20"]);
        assert_eq!(
            p.len(),
            2,
            "one parallel thread count (2 cores), two patterns"
        );
        assert_eq!(
            p[1].args.join(" "),
            "run datastore --batching-factor 20 --alloc upfront --sync timewarp --threads 2 \
             --preempt --tick-us 50 --alpha -0.5"
        );
        assert_eq!(p[0].param("alloc"), "round-robin");
        assert_eq!(p[1].param("sync"), "timewarp-preempt");
    }
}
