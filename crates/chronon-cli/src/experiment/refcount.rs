//! Seed 001 §3.3, Tables 3–8: thread-safe reference counting. Each cell is one child process,
//! `chronon bench refcount-once` (crates/chronon-cli/src/bench/refcount.rs): the cost of one
//! clone + drop when every thread works on clones of one item (Tables 3–4), or the run time
//! of the relay model whose events share payloads (Tables 5–8; 1 thread: sequential executor,
//! more: window executor). A cell shared by two tables (raw, xadd, B-I 10k) is measured once.
//! Tables 5–8 are also measured on the seed's own test case, the campus ring with packet bodies
//! (`refcount_campus.rs`).

use serde_json::Value;

use super::refcount_campus;
use super::{fingerprint48, md_table, num, Metrics, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Bars, Panel, Series};
use crate::Failure;

/// Schemes of the clone + drop cost (Tables 3 and 4).
const PAIR: [&str; 7] = [
    "raw",
    "locked",
    "lock-add",
    "xadd",
    "cas",
    "per-thread",
    "buffered",
];

/// (scheme, buffer) of the relay runs (Tables 5–8); "" where the buffer size does not apply.
const MODEL: [(&str, &str); 12] = [
    ("raw", ""),
    ("xadd", ""),
    ("per-thread", ""),
    ("locked", ""),
    ("lock-add", ""),
    ("cas", ""),
    ("buffered", "1000"),
    ("buffered-thread", "1000"),
    ("buffered", "10000"),
    ("buffered-thread", "10000"),
    ("buffered", "100000"),
    ("buffered-thread", "100000"),
];

/// The sizes: clone + drop pairs per thread, and the relay model's end time (1024 LPs, each
/// keeping 4 packets, as in `chronon bench refcount`). Full size: the bench's 2·10^6 pairs,
/// and end 5000 (about 1.5 million events, a second per run here) so that a relay run lasts
/// long enough for a buffered scheme's flushes to matter; the seed's runs took 20-50 s.
fn sizes(s: &Settings) -> (&'static str, &'static str) {
    if s.quick {
        ("200000", "100")
    } else {
        ("2000000", "5000")
    }
}

pub(super) fn plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let (ops, end) = sizes(s);
    let mut out = Vec::new();
    for t in s.threads_or_default() {
        let t = t.to_string();
        for scheme in PAIR {
            if scheme == "raw" && t != "1" {
                continue;
            }
            out.push(Point::new(
                &[
                    ("measure", "pair"),
                    ("scheme", scheme),
                    ("buffer", ""),
                    ("threads", &t),
                ],
                &[
                    "bench",
                    "refcount-once",
                    "--measure",
                    "pair",
                    "--scheme",
                    scheme,
                    "--threads",
                    &t,
                    "--ops",
                    ops,
                ],
            ));
        }
        for (scheme, buffer) in MODEL {
            if scheme == "raw" && t != "1" {
                continue;
            }
            let mut args = vec![
                "bench",
                "refcount-once",
                "--measure",
                "model",
                "--scheme",
                scheme,
                "--threads",
                &t,
                "--end",
                end,
            ];
            if !buffer.is_empty() {
                args.extend(["--buffer", buffer]);
            }
            out.push(Point::new(
                &[
                    ("measure", "model"),
                    ("scheme", scheme),
                    ("buffer", buffer),
                    ("threads", &t),
                ],
                &args,
            ));
        }
        out.extend(refcount_campus::points(s, &t));
    }
    Ok(out)
}

pub(super) fn extract(v: &Value) -> Metrics {
    let mut m = Vec::new();
    for (key, name) in [
        ("ns", "ns_per_pair"),
        ("ticks", "ticks_per_pair"),
        ("wall_s", "wall_s"),
    ] {
        if let Some(x) = v.get(key).and_then(Value::as_f64) {
            m.push((name, x));
        }
    }
    if let Some(fp) = v
        .get("fingerprint")
        .and_then(Value::as_str)
        .and_then(fingerprint48)
    {
        m.push(("fingerprint48", fp));
    }
    m
}

fn threads_label(t: &str) -> String {
    format!("{t} thread{}", if t == "1" { "" } else { "s" })
}

/// One column of a table: its header and the (scheme, buffer) it shows.
type Col = (&'static str, &'static str, &'static str);

pub(super) fn render(s: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let threads = r.values("threads");
    let key = |m: &'static str, scheme: &'static str, buffer: &'static str, t: &str| {
        cell(r, m, scheme, buffer, t)
    };
    let table = |m: &'static str, cols: &[Col]| -> String {
        let mut header = vec![String::new()];
        header.extend(cols.iter().map(|c| c.0.to_string()));
        let rows: Vec<Vec<String>> = threads
            .iter()
            .map(|t| {
                let mut row = vec![threads_label(t)];
                for &(_, scheme, buffer) in cols {
                    row.push(if scheme == "raw" && t != "1" {
                        "unsafe".into()
                    } else if m == "pair" {
                        let p = [
                            ("measure", m),
                            ("scheme", scheme),
                            ("buffer", buffer),
                            ("threads", t.as_str()),
                        ];
                        format!(
                            "{} ({})",
                            num(r.get(&p, "ns_per_pair")),
                            num(r.get(&p, "ticks_per_pair"))
                        )
                    } else {
                        num(key(m, scheme, buffer, t))
                    });
                }
                row
            })
            .collect();
        md_table(&header, &rows)
    };
    let t3 = table(
        "pair",
        &[
            ("Raw", "raw", ""),
            ("Locked", "locked", ""),
            ("Lock-add", "lock-add", ""),
            ("Add (xadd)", "xadd", ""),
            ("Compare (cas)", "cas", ""),
        ],
    );
    let t4 = table(
        "pair",
        &[
            ("Raw", "raw", ""),
            ("Add (xadd)", "xadd", ""),
            ("Per-thread", "per-thread", ""),
            ("Buffered", "buffered", ""),
        ],
    );
    let t5 = table(
        "model",
        &[
            ("Raw", "raw", ""),
            ("Atomic (xadd)", "xadd", ""),
            ("Ptr TL (per-thread)", "per-thread", ""),
        ],
    );
    let t6 = table(
        "model",
        &[
            ("Raw", "raw", ""),
            ("Atomic (xadd)", "xadd", ""),
            ("B-I 1k", "buffered", "1000"),
            ("B-T 1k", "buffered-thread", "1000"),
        ],
    );
    let t7 = table(
        "model",
        &[
            ("I 10k", "buffered", "10000"),
            ("T 10k", "buffered-thread", "10000"),
            ("I 100k", "buffered", "100000"),
            ("T 100k", "buffered-thread", "100000"),
        ],
    );
    let t8 = table(
        "model",
        &[
            ("Raw", "raw", ""),
            ("Atomic (xadd)", "xadd", ""),
            ("B-I 10k", "buffered", "10000"),
            ("Locked", "locked", ""),
            ("Lock-add", "lock-add", ""),
            ("Compare (cas)", "cas", ""),
        ],
    );
    let same = relay_history(r);
    let md = format!(
        "Tables 3–4: average cost of one clone + drop on one shared item, every thread working \
         on clones of it, in ns (TSC ticks in parentheses: the constant-rate time-stamp \
         counter, not core cycles; the seed reports core cycles). \"unsafe\": the plain count is \
         not thread-safe, measured on 1 thread only.\n\n\
         Table 3: lock-based and lockless counts\n\n{t3}\n\
         Table 4: thread-local counts (per-thread: the seed's smart-pointer way, Table 5's \
         \"Ptr TL\"; the seed's intrusive TLS column has no counterpart: it cannot scale past \
         `PTHREAD_KEYS_MAX` objects)\n\n{t4}\n\
         Tables 5–8: run time in seconds of the relay model (1024 LPs, each keeping its last 4 \
         packets and forwarding each packet to a random LP, a new packet every 8th hop; two \
         clones and two drops per event), the run and its final flush of the buffered counts; \
         1 thread: sequential executor, more: window executor. {same}\n\n\
         Table 5: thread-local counts through the handles\n\n{t5}\n\
         Table 6: buffered counting, immediate (B-I) and by a dedicated thread (B-T), 1 000 \
         operations per buffer\n\n{t6}\n\
         Table 7: buffer sizes\n\n{t7}\n\
         Table 8: the remaining schemes. The seed's column CC (a common counter per ns-3 \
         aggregation cycle) belongs to ns-3's object model and has no counterpart in chronon; \
         the lock-based and compare-and-exchange counts take its place.\n\n{t8}\n{}",
        refcount_campus::tables(s, r)
    );
    let svg = svg(r)?;
    Ok(Rendered {
        table: md,
        figure: svg,
    })
}

/// One cell's figure: ns per clone + drop for `pair`, else seconds.
fn cell(r: &Results, m: &str, scheme: &str, buffer: &str, t: &str) -> f64 {
    r.get(
        &[
            ("measure", m),
            ("scheme", scheme),
            ("buffer", buffer),
            ("threads", t),
        ],
        match m {
            "pair" => "ns_per_pair",
            _ => "wall_s",
        },
    )
}

/// Every relay run must commit the same history, whatever the scheme and thread count: the
/// sentence that says so, or flags it.
fn relay_history(r: &Results) -> String {
    let fps: Vec<f64> = r
        .points
        .iter()
        .zip(&r.samples)
        .filter(|(p, _)| p.param("measure") == "model")
        .flat_map(|(_, reps)| reps.iter())
        .filter_map(|m| m.iter().find(|(k, _)| *k == "fingerprint48").map(|x| x.1))
        .collect();
    match fps.first() {
        None => "No relay run recorded a fingerprint.".to_string(),
        Some(first) if fps.iter().all(|f| f == first) => format!(
            "Every relay run ({}) committed the same history (fingerprint {:012x}…).",
            fps.len(),
            *first as u64
        ),
        Some(_) => {
            eprintln!("warning: the relay runs' fingerprints differ between schemes");
            "**The relay runs' fingerprints differ between schemes: a determinism bug.**".into()
        }
    }
}

/// The figure: clone + drop cost, relay and campus run times against threads, buffer sizes.
fn svg(r: &Results) -> Result<String, Failure> {
    let threads = r.values("threads");
    let key = |m: &'static str, scheme: &'static str, buffer: &'static str, t: &str| {
        cell(r, m, scheme, buffer, t)
    };
    let line = |m: &'static str, scheme: &'static str, buffer: &'static str, name: &str| {
        Series::new(
            name,
            threads
                .iter()
                .map(|t| (t.parse().unwrap_or(f64::NAN), key(m, scheme, buffer, t)))
                .collect(),
        )
    };
    let pair_lines: Vec<Series> = PAIR.iter().map(|&s| line("pair", s, "", s)).collect();
    let model_lines: Vec<Series> = [
        ("raw", "", "raw"),
        ("xadd", "", "xadd"),
        ("per-thread", "", "per-thread"),
        ("locked", "", "locked"),
        ("lock-add", "", "lock-add"),
        ("cas", "", "cas"),
        ("buffered", "1000", "B-I 1k"),
        ("buffered-thread", "1000", "B-T 1k"),
    ]
    .iter()
    .map(|&(s, b, n)| line("model", s, b, n))
    .collect();
    let buffers = ["1000", "10000", "100000"];
    let mut by_buffer = Vec::new();
    for t in &threads {
        for (scheme, short) in [("buffered", "B-I"), ("buffered-thread", "B-T")] {
            by_buffer.push(Bars {
                name: format!("{short} ×{t}"),
                values: buffers.iter().map(|b| key("model", scheme, b, t)).collect(),
            });
        }
    }
    figure(
        "Seed 001 Tables 3-8: thread-safe reference counting",
        &[
            Panel::Lines {
                title: "Tables 3-4: one clone + drop, one shared item".into(),
                x: "threads".into(),
                y: "ns per clone + drop".into(),
                series: pair_lines,
            },
            Panel::Lines {
                title: "Tables 5, 6, 8: relay model".into(),
                x: "threads".into(),
                y: "run time s".into(),
                series: model_lines,
            },
            Panel::Lines {
                title: "Tables 5, 6, 8: campus ring, packets with bodies".into(),
                x: "threads".into(),
                y: "run time s".into(),
                series: refcount_campus::lines(r),
            },
            Panel::Grouped {
                title: "Tables 6-7: buffer size".into(),
                y: "run time s".into(),
                categories: vec!["1k".into(), "10k".into(), "100k".into()],
                groups: by_buffer,
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            quick: true,
            threads: Some(vec![1, 2]),
            reps: 1,
            cores: 2,
            configs: None,
            splits: Vec::new(),
        }
    }

    #[test]
    fn the_plan_measures_raw_on_one_thread_only_and_every_cell_once() {
        let points = plan(&settings()).unwrap();
        // 7 + 12 (+ 13 campus) on 1 thread, 6 + 11 (+ 13 campus) on 2.
        assert_eq!(points.len(), 36 + 26);
        let campus = points
            .iter()
            .filter(|p| p.param("measure") == "campus")
            .count();
        assert_eq!(campus, 26);
        assert!(points
            .iter()
            .filter(|p| p.param("scheme") == "raw")
            .all(|p| p.param("threads") == "1"));
        for (i, p) in points.iter().enumerate() {
            assert!(
                points[..i].iter().all(|o| o.params != p.params),
                "{:?} twice",
                p.params
            );
        }
        let b = points
            .iter()
            .find(|p| p.param("buffer") == "100000")
            .unwrap();
        assert!(b.args.windows(2).any(|w| w == ["--buffer", "100000"]));
    }

    #[test]
    fn extract_keeps_what_the_child_wrote() {
        let pair = serde_json::json!({"ns": 4.5, "ticks": 11.0, "wall_s": 0.1});
        assert_eq!(
            extract(&pair),
            vec![
                ("ns_per_pair", 4.5),
                ("ticks_per_pair", 11.0),
                ("wall_s", 0.1)
            ]
        );
        let model = serde_json::json!({"wall_s": 2.0, "fingerprint": "0123456789abcdef"});
        assert_eq!(
            extract(&model),
            vec![
                ("wall_s", 2.0),
                ("fingerprint48", 0x0123_4567_89ab_u64 as f64)
            ]
        );
    }

    #[test]
    fn render_lays_out_the_seed_tables_and_flags_differing_fingerprints() {
        let points = plan(&settings()).unwrap();
        let samples: Vec<Vec<Metrics>> = points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let fp = if p.param("scheme") == "cas" && p.param("threads") == "2" {
                    2.0
                } else {
                    1.0
                };
                let fp = if p.param("measure") == "campus" && p.param("scheme") == "cas" {
                    3.0
                } else {
                    fp
                };
                vec![if p.param("measure") == "pair" {
                    vec![
                        ("ns_per_pair", i as f64),
                        ("ticks_per_pair", 2.0 * i as f64),
                        ("wall_s", 0.1),
                    ]
                } else {
                    vec![("wall_s", 1.0 + i as f64), ("fingerprint48", fp)]
                }]
            })
            .collect();
        let r = Results { points, samples };
        let out = render(&settings(), &r).unwrap();
        for t in 3..=8 {
            assert!(out.table.contains(&format!("Table {t}")), "Table {t}");
        }
        assert!(out.table.contains("| 2 threads | unsafe |"));
        assert!(out.table.contains("relay runs' fingerprints differ"));
        assert!(out.table.contains("campus runs' fingerprints differ"));
        for t in 5..=8 {
            assert!(
                out.table.contains(&format!("Campus Table {t}")),
                "Campus {t}"
            );
        }
        assert!(out.figure.starts_with("<svg") && out.figure.contains("B-T ×2"));
    }
}
