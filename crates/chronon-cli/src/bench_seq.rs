//! `chronon bench seq`: the sequential executor against the bare heap loop, side by side in one
//! process, so that the ratios hold even on a noisy machine.

use chronon::{QueueKind, Simulation};
use chronon_models::phold::{bare_heap_loop, Phold};

use crate::{sys, Failure};

struct Config {
    name: &'static str,
    phold: Phold,
    end: f64,
}

fn config(name: &str) -> Result<Config, Failure> {
    let std = Phold::default();
    Ok(match name {
        "std" => Config {
            name: "std",
            phold: std,
            end: 1000.0,
        },
        "big" => Config {
            name: "big",
            phold: Phold { lps: 16384, ..std },
            end: 100.0,
        },
        "huge" => Config {
            name: "huge",
            phold: Phold {
                lps: 65536,
                start_events: 100,
                ..std
            },
            end: 10.0,
        },
        other => {
            return Err(Failure::bad_input(format!(
                "unknown benchmark configuration '{other}' (allowed: std, big, huge)"
            )))
        }
    })
}

struct Row {
    what: String,
    events: u64,
    secs: f64,
    peak_rss: u64,
    rss_growth: u64,
}

pub(crate) fn run(names: Vec<String>, reps: u32) -> Result<u8, Failure> {
    let configs = names
        .iter()
        .map(|n| config(n))
        .collect::<Result<Vec<_>, _>>()?;
    let reps = reps.max(1);
    println!(
        "{:<6} {:<14} {:>12} {:>9} {:>12} {:>8} {:>11} {:>12}",
        "config", "runner", "events", "wall s", "events/s", "x bare", "peak RSS", "B/pending"
    );
    for c in &configs {
        let pending = u64::from(c.phold.lps) * u64::from(c.phold.start_events);
        let mut rows = Vec::new();
        rows.push(best(reps, || {
            let before = reset();
            let r = bare_heap_loop(&c.phold, c.end, 1);
            row("bare heap", r.events, r.wall_s, before)
        }));
        for q in [QueueKind::Heap, QueueKind::Ladder] {
            rows.push(best(reps, || {
                let before = reset();
                let rep = Simulation::new(c.phold.clone())
                    .lps(c.phold.lps)
                    .end_time(c.end)
                    .seed(1)
                    .queue(q)
                    .run()
                    .expect("PHOLD runs");
                row(
                    &format!("chronon {}", q.name()),
                    rep.committed,
                    rep.wall_s,
                    before,
                )
            }));
        }
        let bare_rate = rows[0].events as f64 / rows[0].secs;
        for r in &rows {
            let rate = r.events as f64 / r.secs;
            println!(
                "{:<6} {:<14} {:>12} {:>9.3} {:>12.0} {:>8.2} {:>8.1} MiB {:>12.1}",
                c.name,
                r.what,
                r.events,
                r.secs,
                rate,
                rate / bare_rate,
                r.peak_rss as f64 / (1 << 20) as f64,
                r.rss_growth as f64 / pending as f64
            );
        }
    }
    Ok(0)
}

fn reset() -> u64 {
    sys::reset_peak_rss();
    sys::rss_bytes()
}

fn row(what: &str, events: u64, secs: f64, rss_before: u64) -> Row {
    let peak = sys::peak_rss_bytes();
    Row {
        what: what.to_string(),
        events,
        secs,
        peak_rss: peak,
        rss_growth: peak.saturating_sub(rss_before),
    }
}

fn best(reps: u32, mut f: impl FnMut() -> Row) -> Row {
    let mut best = f();
    for _ in 1..reps {
        let r = f();
        if r.secs < best.secs {
            best = r;
        }
    }
    best
}
