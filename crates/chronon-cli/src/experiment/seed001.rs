//! Seed 001 (multithreaded ns-3): barrier costs (Tables 1–2), load balancing with dedicated
//! and shared partition sets (Tables 9–10), and the campus ring test case (§1.3).

use serde_json::Value;

use super::{md_table, num, Metrics, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Bars, Panel, Series};
use crate::Failure;

fn threads_label(t: &str) -> String {
    format!("{t} thread{}", if t == "1" { "" } else { "s" })
}

// ---- Tables 1–2: barriers -------------------------------------------------------------------

const KINDS: [&str; 4] = ["std", "semaphore", "spin", "tree"];
const FAN_INS: [usize; 5] = [1, 2, 3, 4, 5];

pub(super) fn barriers_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    // The seed did 10^6 (Table 2) and 10^7 (Table 1) waits per thread; blocking barriers cost
    // tens of microseconds per wait here, so 2 * 10^5 keeps the whole sweep in minutes.
    let waits = if s.quick { "20000" } else { "200000" };
    let mut out = Vec::new();
    for t in s.threads_or_default() {
        let t = t.to_string();
        for m in FAN_INS {
            let m = m.to_string();
            out.push(Point::new(
                &[("barrier", "tree"), ("fan_in", &m), ("threads", &t)],
                &[
                    "bench",
                    "barrier-once",
                    "--kind",
                    "tree",
                    "--fan-in",
                    &m,
                    "--threads",
                    &t,
                    "--waits",
                    waits,
                ],
            ));
        }
        for k in ["std", "semaphore", "spin"] {
            out.push(Point::new(
                &[("barrier", k), ("fan_in", ""), ("threads", &t)],
                &[
                    "bench",
                    "barrier-once",
                    "--kind",
                    k,
                    "--threads",
                    &t,
                    "--waits",
                    waits,
                ],
            ));
        }
    }
    Ok(out)
}

pub(super) fn barriers_extract(v: &Value) -> Metrics {
    let f = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    vec![
        ("ns_per_wait", f("ns")),
        ("ticks_per_wait", f("ticks")),
        ("wall_s", f("wall_s")),
    ]
}

pub(super) fn barriers_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let threads = r.values("threads");
    let cell = |p: &[(&str, &str)]| {
        format!(
            "{} ({})",
            num(r.get(p, "ns_per_wait")),
            num(r.get(p, "ticks_per_wait"))
        )
    };
    let mut header = vec!["m value".to_string()];
    header.extend(FAN_INS.iter().map(|m| m.to_string()));
    let rows1: Vec<Vec<String>> = threads
        .iter()
        .map(|t| {
            let mut row = vec![threads_label(t)];
            for m in FAN_INS {
                let m = m.to_string();
                row.push(cell(&[("barrier", "tree"), ("fan_in", &m), ("threads", t)]));
            }
            row
        })
        .collect();
    let key = |k: &'static str| -> Vec<(&'static str, &'static str)> {
        if k == "tree" {
            vec![("barrier", "tree"), ("fan_in", "4")]
        } else {
            vec![("barrier", k)]
        }
    };
    let mut header2 = vec![String::new()];
    header2.extend(["POSIX (std)", "Sem.", "Spin", "Tree Spin (m = 4)"].map(String::from));
    let rows2: Vec<Vec<String>> = threads
        .iter()
        .map(|t| {
            let mut row = vec![threads_label(t)];
            for k in KINDS {
                let mut p = key(k);
                p.push(("threads", t));
                row.push(cell(&p));
            }
            row
        })
        .collect();
    let table = format!(
        "Average barrier `wait()` cost in ns (TSC ticks in parentheses: the constant-rate \
         time-stamp counter, not core cycles; the seed reports core cycles).\n\n\
         Table 1: tree barrier, by fan-in m\n\n{}\n\
         Table 2: the four barriers\n\n{}",
        md_table(&header, &rows1),
        md_table(&header2, &rows2)
    );
    let xs = |p: &[(&str, &str)]| -> Vec<(f64, f64)> {
        threads
            .iter()
            .map(|t| {
                let mut q = p.to_vec();
                q.push(("threads", t));
                (t.parse().unwrap_or(f64::NAN), r.get(&q, "ns_per_wait"))
            })
            .collect()
    };
    let t1: Vec<Series> = threads
        .iter()
        .map(|t| {
            Series::new(
                threads_label(t),
                FAN_INS
                    .iter()
                    .map(|&m| {
                        let ms = m.to_string();
                        (
                            m as f64,
                            r.get(
                                &[("barrier", "tree"), ("fan_in", &ms), ("threads", t)],
                                "ns_per_wait",
                            ),
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    let t2: Vec<Series> = KINDS.iter().map(|&k| Series::new(k, xs(&key(k)))).collect();
    let svg = figure(
        "Seed 001 Tables 1-2: barrier wait() cost",
        &[
            Panel::Lines {
                title: "Table 1: tree barrier by fan-in m".into(),
                x: "m".into(),
                y: "ns per wait".into(),
                series: t1,
            },
            Panel::Lines {
                title: "Table 2: the four barriers".into(),
                x: "threads".into(),
                y: "ns per wait".into(),
                series: t2,
            },
        ],
    )?;
    Ok(Rendered { table, figure: svg })
}

// ---- Tables 9–10: dedicated and shared partition sets ---------------------------------------

const DEDICATED: [&str; 5] = ["0", "25", "50", "75", "100"];

/// The campus test case of the seed, sized for this machine.
fn campus_args(s: &Settings) -> Vec<&'static str> {
    if s.quick {
        vec!["run", "campus", "--end", "0.5", "--stall-secs", "0"]
    } else {
        vec![
            "run",
            "campus",
            "--campuses",
            "8",
            "--end",
            "2",
            "--stall-secs",
            "0",
        ]
    }
}

pub(super) fn balance_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let base = campus_args(s);
    let mut out = vec![Point::new(
        &[
            ("sync", "seq"),
            ("threads", "1"),
            ("dedicated", ""),
            ("shared_sets", ""),
        ],
        &base,
    )];
    for t in s.parallel_threads() {
        let ts = t.to_string();
        for d in DEDICATED {
            let frac = (d.parse::<f64>().unwrap_or(0.0) / 100.0).to_string();
            let sets: Vec<usize> = if d == "100" {
                vec![0]
            } else {
                (1..=t.min(4)).collect()
            };
            for n in sets {
                let ns = if n == 0 { String::new() } else { n.to_string() };
                let mut args = base.clone();
                args.extend(["--sync", "window", "--threads", &ts, "--dedicated", &frac]);
                if n > 0 {
                    args.extend(["--shared-sets", &ns]);
                }
                out.push(Point::new(
                    &[
                        ("sync", "window"),
                        ("threads", &ts),
                        ("dedicated", d),
                        ("shared_sets", &ns),
                    ],
                    &args,
                ));
            }
        }
    }
    Ok(out)
}

pub(super) fn balance_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let threads: Vec<String> = r
        .values("threads")
        .into_iter()
        .filter(|t| t != "1")
        .collect();
    let seq = r.get(&[("sync", "seq")], "wall_s");
    let wall = |t: &str, d: &str, n: &str| {
        r.get(
            &[
                ("sync", "window"),
                ("threads", t),
                ("dedicated", d),
                ("shared_sets", n),
            ],
            "wall_s",
        )
    };
    // Table 9: every dedicated LP shared (0 %), by number of shared sets.
    let mut h9 = vec!["Shared sets".to_string()];
    h9.extend((1..=4).map(|n| n.to_string()));
    let mut best_sets = Vec::new();
    let rows9: Vec<Vec<String>> = threads
        .iter()
        .map(|t| {
            let mut row = vec![threads_label(t)];
            let mut best = (f64::INFINITY, "1".to_string());
            for n in 1..=4 {
                let w = wall(t, "0", &n.to_string());
                if w < best.0 {
                    best = (w, n.to_string());
                }
                row.push(if w.is_finite() { num(w) } else { "N/A".into() });
            }
            best_sets.push(best.1);
            row
        })
        .collect();
    // Table 10: by dedicated fraction, at the best number of sets of Table 9.
    let mut h10 = vec!["Dedicated %".to_string()];
    h10.extend(DEDICATED.iter().map(|d| d.to_string()));
    h10.push("sets".into());
    let mut series = Vec::new();
    let rows10: Vec<Vec<String>> = threads
        .iter()
        .zip(&best_sets)
        .map(|(t, n)| {
            let mut row = vec![threads_label(t)];
            let mut pts = Vec::new();
            for d in DEDICATED {
                let w = if d == "100" {
                    wall(t, d, "")
                } else {
                    wall(t, d, n)
                };
                pts.push((d.parse().unwrap_or(f64::NAN), w));
                row.push(num(w));
            }
            row.push(n.clone());
            series.push(Series::new(threads_label(t), pts));
            row
        })
        .collect();
    let table = format!(
        "Campus ring (the seed's test case) under the window executor; simulator wall time in \
         seconds (initialization excluded). Sequential executor: {} s.\n\n\
         Table 9: wall time by number of shared sets, every LP shared (0 % dedicated)\n\n{}\n\
         Table 10: wall time by dedicated fraction, with the best number of shared sets of \
         Table 9 (last column)\n\n{}",
        num(seq),
        md_table(&h9, &rows9),
        md_table(&h10, &rows10)
    );
    let t9: Vec<Bars> = threads
        .iter()
        .map(|t| Bars {
            name: threads_label(t),
            values: (1..=4).map(|n| wall(t, "0", &n.to_string())).collect(),
        })
        .collect();
    let svg = figure(
        "Seed 001 Tables 9-10: dedicated and shared partition sets (campus)",
        &[
            Panel::Grouped {
                title: "Table 9: by shared sets (0 % dedicated)".into(),
                y: "wall s".into(),
                categories: (1..=4).map(|n| format!("{n} sets")).collect(),
                groups: t9,
            },
            Panel::Lines {
                title: "Table 10: by dedicated %".into(),
                x: "dedicated %".into(),
                y: "wall s".into(),
                series,
            },
        ],
    )?;
    Ok(Rendered { table, figure: svg })
}

// ---- §1.3: campus ring speedup --------------------------------------------------------------

pub(super) const PARALLEL: [&str; 4] = ["window", "lockstep", "null-message", "timewarp"];

/// Points: the sequential executor, then each parallel executor at each parallel thread count.
pub(super) fn executor_points(
    s: &Settings,
    base: &[&str],
    extra: &[(&'static str, &str)],
) -> Vec<Point> {
    let mut params = extra.to_vec();
    params.extend([("sync", "seq"), ("threads", "1")]);
    let mut out = vec![Point::new(&params, base)];
    for t in s.parallel_threads() {
        let ts = t.to_string();
        for sync in PARALLEL {
            let mut args = base.to_vec();
            args.extend(["--sync", sync, "--threads", &ts]);
            let mut params = extra.to_vec();
            params.extend([("sync", sync), ("threads", ts.as_str())]);
            out.push(Point::new(&params, &args));
        }
    }
    out
}

/// The speedup table and its figure: wall time and speedup over the sequential executor per
/// executor and thread count (points filtered by `extra`).
pub(super) fn speedup_table(r: &Results, extra: &[(&str, &str)]) -> (String, Vec<Series>) {
    fn with<'a>(extra: &[(&'a str, &'a str)], p: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut q = extra.to_vec();
        q.extend_from_slice(p);
        q
    }
    let seq = r.get(&with(extra, &[("sync", "seq")]), "wall_s");
    let threads: Vec<String> = r
        .values("threads")
        .into_iter()
        .filter(|t| t != "1")
        .collect();
    let mut header = vec!["executor".to_string()];
    for t in &threads {
        header.push(format!("×{t} wall s"));
        header.push(format!("×{t} speedup"));
        header.push(format!("×{t} efficiency"));
    }
    let mut rows = vec![{
        let mut row = vec![format!("seq: {} s", num(seq))];
        row.extend(std::iter::repeat_n(String::new(), threads.len() * 3));
        row
    }];
    let mut series = Vec::new();
    for sync in PARALLEL {
        let mut row = vec![sync.to_string()];
        let mut pts = vec![(1.0, 1.0)];
        for t in &threads {
            let w = r.get(&with(extra, &[("sync", sync), ("threads", t)]), "wall_s");
            let e = r.get(
                &with(extra, &[("sync", sync), ("threads", t)]),
                "efficiency",
            );
            row.extend([num(w), num(seq / w), num(e)]);
            pts.push((t.parse().unwrap_or(f64::NAN), seq / w));
        }
        rows.push(row);
        series.push(Series::new(sync, pts));
    }
    (md_table(&header, &rows), series)
}

pub(super) fn campus_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    Ok(executor_points(s, &campus_args(s), &[]))
}

pub(super) fn campus_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let (t, series) = speedup_table(r, &[]);
    let table = format!(
        "Campus ring of campus networks (Net0 backbone, Net1 servers, Net2/Net3 client LANs); \
         simulator wall time (initialization excluded) and speedup over the sequential \
         executor.\n\n{t}"
    );
    let svg = figure(
        "Seed 001 section 1.3: campus ring speedup",
        &[Panel::Lines {
            title: "speedup over the sequential executor".into(),
            x: "threads".into(),
            y: "speedup".into(),
            series,
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}
