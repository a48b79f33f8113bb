//! `chronon bench phold`: executors against the bare heap loop, side by side in one process, so
//! that the ratios hold even on a noisy machine.

use chronon::{Executor, QueueKind, Simulation};
use chronon_models::phold::{bare_heap_loop, Phold};

use crate::bench::PholdBench;
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
        "work" => Config {
            name: "work",
            phold: Phold {
                work_us: 10.0,
                ..std
            },
            end: 20.0,
        },
        other => {
            return Err(Failure::bad_input(format!(
                "unknown benchmark configuration '{other}' (allowed: std, big, huge, work)"
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

/// The runs of one configuration: (label, executor, queue).
fn runners(b: &PholdBench) -> Result<Vec<(String, Executor, QueueKind)>, Failure> {
    let mut out = Vec::new();
    for sync in &b.sync {
        if sync == "seq" {
            for q in &b.queues {
                let q: QueueKind = q.parse().map_err(Failure::bad_input)?;
                out.push((format!("seq {}", q.name()), Executor::Sequential, q));
            }
            continue;
        }
        for &t in &b.threads {
            let e = crate::run::executor(Some(sync), Some(t))?;
            out.push((format!("{sync} x{t}"), e, QueueKind::default()));
        }
    }
    Ok(out)
}

pub(crate) fn run(b: PholdBench) -> Result<u8, Failure> {
    let configs = b
        .configs
        .iter()
        .map(|n| config(n))
        .collect::<Result<Vec<_>, _>>()?;
    let runners = runners(&b)?;
    let reps = b.reps.max(1);
    println!(
        "{:<6} {:<18} {:>12} {:>9} {:>12} {:>8} {:>8} {:>11} {:>10}",
        "config",
        "runner",
        "events",
        "wall s",
        "events/s",
        "x bare",
        "x first",
        "peak RSS",
        "B/pending"
    );
    for c in &configs {
        let pending = u64::from(c.phold.lps) * u64::from(c.phold.start_events);
        let mut rows = Vec::new();
        if !b.no_bare {
            rows.push(best(reps, || {
                let before = reset();
                let r = bare_heap_loop(&c.phold, c.end, 1);
                row("bare heap", r.events, r.wall_s, before)
            }));
        }
        for (label, exec, q) in &runners {
            rows.push(best(reps, || {
                let before = reset();
                let rep = Simulation::new(c.phold.clone())
                    .lps(c.phold.lps)
                    .end_time(c.end)
                    .seed(1)
                    .queue(*q)
                    .executor(exec.clone())
                    .run()
                    .map_err(|e| e.to_string());
                match rep {
                    Ok(rep) => row(label, rep.committed, rep.wall_s, before),
                    Err(e) => {
                        eprintln!("{label}: {e}");
                        row(label, 0, f64::NAN, before)
                    }
                }
            }));
        }
        let bare_rate = if b.no_bare {
            f64::NAN
        } else {
            rows[0].events as f64 / rows[0].secs
        };
        let first = if b.no_bare { 0 } else { 1 };
        let first_rate = rows
            .get(first)
            .map_or(f64::NAN, |r| r.events as f64 / r.secs);
        for r in &rows {
            let rate = r.events as f64 / r.secs;
            println!(
                "{:<6} {:<18} {:>12} {:>9.3} {:>12.0} {:>8.2} {:>8.2} {:>7.1} MiB {:>10.1}",
                c.name,
                r.what,
                r.events,
                r.secs,
                rate,
                rate / bare_rate,
                rate / first_rate,
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
