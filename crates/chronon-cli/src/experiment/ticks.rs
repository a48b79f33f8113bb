//! Seed 003 §3.1, Fig. 5: the overhead of fine-grain ticks against their period ΔET and the
//! number of threads. Each measurement is a hidden `chronon bench ticks-once` child: N threads
//! start together and each runs `chronon::tick_overhead` (the measuring function of `chronon
//! calibrate ticks`: a busy loop without, with and again without a per-thread tick timer), so
//! every thread is ticked while the others are.
//!
//! Scaling to this machine: the seed's baseline ran ~30 s, at ΔET from 500 to 50 µs (1 ms
//! divided by 2 to 20) and 1 to 32 threads on 32 cores. Here each loop runs 2 s (300 ms with
//! `--quick`) at ΔET = 500, 250, 200, 100, 50 µs (the seed's range) and 20, 10 µs (below it,
//! the smallest period `--tick-us` takes), over 1, 2, ... threads up to the cores.

use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use serde_json::Value;

use super::{md_table, num, Metrics, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

/// ΔET in µs, longest first (the seed's x axis: 1 ms / ΔET from 2 to 20).
const PERIODS: [&str; 7] = ["500", "250", "200", "100", "50", "20", "10"];

/// Milliseconds of each of the three busy loops of one measurement.
fn loop_ms(s: &Settings) -> &'static str {
    if s.quick {
        "300"
    } else {
        "2000"
    }
}

pub(super) fn plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let ms = loop_ms(s);
    let mut out = Vec::new();
    for t in s.threads_or_default() {
        let ts = t.to_string();
        for p in PERIODS {
            out.push(Point::new(
                &[("threads", &ts), ("period_us", p)],
                &[
                    "bench",
                    "ticks-once",
                    "--period-us",
                    p,
                    "--threads",
                    &ts,
                    "--ms",
                    ms,
                ],
            ));
        }
    }
    Ok(out)
}

/// The metrics of a `bench ticks-once` report. No `wall_s`: every measurement lasts the same
/// time, so the tables take the median repetition (the seed averages 5 runs).
pub(super) fn extract(v: &Value) -> Metrics {
    let f = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    vec![
        ("overhead", f("overhead")),
        ("overhead_max", f("overhead_max")),
        ("ticks", f("ticks")),
        ("expected_ticks", f("expected_ticks")),
        ("elapsed_s", f("elapsed_s")),
    ]
}

pub(super) fn render(s: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let threads = r.values("threads");
    let periods = r.values("period_us");
    let mut header = vec!["ΔET µs".to_string(), "1 ms / ΔET".to_string()];
    for t in &threads {
        header.push(format!("{t} thr. overhead"));
        header.push(format!("{t} thr. T_base / T_ticks"));
        header.push(format!("{t} thr. ticks delivered"));
    }
    let mut rows = Vec::new();
    for p in &periods {
        let pf: f64 = p.parse().unwrap_or(f64::NAN);
        let mut row = vec![p.clone(), num(1000.0 / pf)];
        for t in &threads {
            let at = |m: &str| r.get(&[("threads", t), ("period_us", p)], m);
            let o = at("overhead");
            row.push(format!("{:.2} %", o * 100.0));
            row.push(format!("{:.4}", 1.0 - o));
            row.push(format!(
                "{:.0} %",
                at("ticks") / at("expected_ticks") * 100.0
            ));
        }
        rows.push(row);
    }
    // Fig. 5's layout: T_base / T_ticks against the scaling factor, one line per thread count;
    // a second panel goes below the seed's range (ΔET 20 and 10 µs) in overhead %.
    let mut inverse = Vec::new();
    let mut overhead = Vec::new();
    for t in &threads {
        let pts = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            periods
                .iter()
                .map(|p| {
                    let pf: f64 = p.parse().unwrap_or(f64::NAN);
                    let o = r.get(&[("threads", t), ("period_us", p)], "overhead");
                    (1000.0 / pf, f(o))
                })
                .collect()
        };
        let name = format!("{t} thread{}", if t == "1" { "" } else { "s" });
        inverse.push(Series::new(
            name.clone(),
            pts(&|o| 1.0 - o)
                .into_iter()
                .filter(|(x, _)| *x <= 20.0)
                .collect(),
        ));
        overhead.push(Series::new(name, pts(&|o| o * 100.0)));
    }
    let ms = loop_ms(s);
    let over4: Vec<String> = threads
        .iter()
        .flat_map(|t| {
            periods.iter().filter_map(move |p| {
                let o = r.get(&[("threads", t), ("period_us", p)], "overhead");
                (o > 0.04).then(|| format!("{p} µs × {t}"))
            })
        })
        .collect();
    let verdict = if over4.is_empty() {
        "Every overhead measured is under 4 % (the seed: under 4 % down to 50 µs).".to_string()
    } else {
        format!(
            "Overhead above 4 % at: {} (the seed: under 4 % down to 50 µs).",
            over4.join(", ")
        )
    };
    let table = format!(
        "Each thread runs a busy loop for {ms} ms without ticks, {ms} ms with a per-thread \
         POSIX timer ticking every ΔET (its handler only raises a flag and counts, as the \
         seed's extra-tick handler only counts), and {ms} ms without again; the threads start \
         together. Overhead = 1 − (work done with ticks) / (mean work done without), the mean \
         over the threads; T_base / T_ticks = 1 − overhead is the seed's y axis (its \
         \"inverse ratio\" of execution times). Ticks delivered: ticks counted over ticks \
         expected ({ms} ms / ΔET per thread). Negative overheads are noise. The same \
         measurement as `chronon calibrate ticks` (one thread). {verdict}\n\n{}",
        md_table(&header, &rows)
    );
    let svg = figure(
        "Seed 003 Fig. 5: tick overhead vs ΔET and threads",
        &[
            Panel::Lines {
                title: "ΔET 500 to 50 µs (the seed's range)".into(),
                x: "1 ms / ΔET".into(),
                y: "T_base / T_ticks".into(),
                series: inverse,
            },
            Panel::Lines {
                title: "overhead, ΔET 500 to 10 µs".into(),
                x: "1 ms / ΔET".into(),
                y: "overhead %".into(),
                series: overhead,
            },
        ],
    )?;
    Ok(Rendered { table, figure: svg })
}

/// Flags of `chronon bench ticks-once`.
#[derive(Debug, clap::Args)]
pub(crate) struct OnceArgs {
    /// Tick period ΔET in µs.
    #[arg(long)]
    period_us: f64,
    /// Threads ticked at once.
    #[arg(long)]
    threads: usize,
    /// Milliseconds of each of the three busy loops.
    #[arg(long)]
    ms: u64,
    /// Where to write the JSON result.
    #[arg(long)]
    output: PathBuf,
}

/// `chronon bench ticks-once`: `threads` threads each measure `chronon::tick_overhead` at
/// once; writes JSON (mean and largest overhead over the threads, ticks delivered and
/// expected over the armed time, elapsed seconds).
pub(crate) fn once(a: OnceArgs) -> Result<u8, Failure> {
    if !(a.period_us >= chronon::MIN_TICK_US && a.period_us.is_finite()) {
        return Err(Failure::bad_input(format!(
            "--period-us must be a number of at least {} µs",
            chronon::MIN_TICK_US
        )));
    }
    if a.threads == 0 || a.threads > 1024 {
        return Err(Failure::bad_input("--threads must be between 1 and 1024"));
    }
    if a.ms == 0 || a.ms > 60_000 {
        return Err(Failure::bad_input("--ms must be between 1 and 60000"));
    }
    let outputs = crate::output::Outputs::plan(&[("--output", a.output.clone())], &[])?;
    let t0 = Instant::now();
    let start = Arc::new(Barrier::new(a.threads));
    let handles: Vec<_> = (0..a.threads)
        .map(|_| {
            let start = start.clone();
            let (p, ms) = (a.period_us, a.ms);
            std::thread::spawn(move || {
                start.wait();
                chronon::tick_overhead(p, ms)
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| Failure::runtime("a tick measurement thread panicked"))?;
        all.push(r.map_err(|e| Failure::bad_input(format!("cannot create a tick timer: {e}")))?);
    }
    let n = all.len() as f64;
    let v = serde_json::json!({
        "overhead": all.iter().map(|x| x.overhead).sum::<f64>() / n,
        "overhead_max": all.iter().map(|x| x.overhead).fold(f64::NEG_INFINITY, f64::max),
        "ticks": all.iter().map(|x| x.delivered).sum::<u64>(),
        // Over the time each timer was armed: on a loaded machine, or at 10 µs, that is longer
        // than `--ms` (`TickOverhead::armed_secs`).
        "expected_ticks": all.iter().map(|x| x.expected(a.period_us)).sum::<f64>(),
        "elapsed_s": t0.elapsed().as_secs_f64(),
    });
    if let Some(p) = outputs.path("--output") {
        crate::output::write_or_rescue("--output", p, v.to_string().as_bytes())?;
    }
    Ok(0)
}
