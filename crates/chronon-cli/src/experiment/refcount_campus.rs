//! Seed 001 Tables 5–8 on the seed's own test case: the campus ring (§1.3) whose packets carry
//! a body that the events of every hop share (`chronon run campus --data true --refcount S`),
//! as ns-3's `Ptr<Packet>` is shared by the events that carry it. Each cell is one child
//! process, `chronon bench refcount-once --measure campus` (bench/refcount_campus.rs); 1
//! thread: sequential executor, more: window executor, as the relay cells.

use super::{md_table, num, Point, Results, Settings};
use crate::report::plot::Series;

/// (scheme, buffer) of the campus runs; "" where the buffer size does not apply. `none`:
/// packets without bodies (no counting: the floor, where the relay tables have `raw`).
pub(super) const CAMPUS: [(&str, &str); 13] = [
    ("none", ""),
    ("heap", ""),
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

/// Campuses and end time: the 001-campus experiment's full size (8 campuses, 2 s: about 5
/// million events), and a single campus to 0.1 s with `--quick`.
fn size(s: &Settings) -> (&'static str, &'static str) {
    if s.quick {
        ("1", "0.1")
    } else {
        ("8", "2")
    }
}

/// The campus cells at `threads` threads.
pub(super) fn points(s: &Settings, threads: &str) -> Vec<Point> {
    let (campuses, end) = size(s);
    CAMPUS
        .iter()
        .map(|&(scheme, buffer)| {
            let mut args = vec![
                "bench",
                "refcount-once",
                "--measure",
                "campus",
                "--scheme",
                scheme,
                "--threads",
                threads,
                "--campuses",
                campuses,
                "--end",
                end,
            ];
            if !buffer.is_empty() {
                args.extend(["--buffer", buffer]);
            }
            Point::new(
                &[
                    ("measure", "campus"),
                    ("scheme", scheme),
                    ("buffer", buffer),
                    ("threads", threads),
                ],
                &args,
            )
        })
        .collect()
}

fn wall(r: &Results, scheme: &str, buffer: &str, t: &str) -> f64 {
    r.get(
        &[
            ("measure", "campus"),
            ("scheme", scheme),
            ("buffer", buffer),
            ("threads", t),
        ],
        "wall_s",
    )
}

/// One table: a row per thread count, a column per (header, scheme, buffer).
fn table(r: &Results, cols: &[(&str, &str, &str)]) -> String {
    let mut header = vec![String::new()];
    header.extend(cols.iter().map(|c| c.0.to_string()));
    let rows: Vec<Vec<String>> = r
        .values("threads")
        .iter()
        .map(|t| {
            let mut row = vec![format!("{t} thread{}", if t == "1" { "" } else { "s" })];
            row.extend(cols.iter().map(|&(_, s, b)| num(wall(r, s, b, t))));
            row
        })
        .collect();
    md_table(&header, &rows)
}

/// Whether every campus run committed the same history, in words.
fn same_history(r: &Results) -> String {
    let fps: Vec<f64> = r
        .points
        .iter()
        .zip(&r.samples)
        .filter(|(p, _)| p.param("measure") == "campus")
        .flat_map(|(_, reps)| reps.iter())
        .filter_map(|m| m.iter().find(|(k, _)| *k == "fingerprint48").map(|x| x.1))
        .collect();
    match fps.first() {
        None => "No campus run recorded a fingerprint.".to_string(),
        Some(first) if fps.iter().all(|f| f == first) => format!(
            "Every campus run ({}) committed the same history (fingerprint {:012x}…), with or \
             without bodies.",
            fps.len(),
            *first as u64
        ),
        Some(_) => {
            eprintln!("warning: the campus runs' fingerprints differ between schemes");
            "**The campus runs' fingerprints differ between schemes: a determinism bug.**".into()
        }
    }
}

/// Tables 5–8 on the campus ring, as markdown.
pub(super) fn tables(s: &Settings, r: &Results) -> String {
    let (campuses, end) = size(s);
    let t5 = table(
        r,
        &[
            ("No body", "none", ""),
            ("Heap (BPtr)", "heap", ""),
            ("Atomic (xadd)", "xadd", ""),
            ("Ptr TL (per-thread)", "per-thread", ""),
        ],
    );
    let t6 = table(
        r,
        &[
            ("No body", "none", ""),
            ("Atomic (xadd)", "xadd", ""),
            ("B-I 1k", "buffered", "1000"),
            ("B-T 1k", "buffered-thread", "1000"),
        ],
    );
    let t7 = table(
        r,
        &[
            ("I 10k", "buffered", "10000"),
            ("T 10k", "buffered-thread", "10000"),
            ("I 100k", "buffered", "100000"),
            ("T 100k", "buffered-thread", "100000"),
        ],
    );
    let t8 = table(
        r,
        &[
            ("No body", "none", ""),
            ("Atomic (xadd)", "xadd", ""),
            ("B-I 10k", "buffered", "10000"),
            ("Locked", "locked", ""),
            ("Lock-add", "lock-add", ""),
            ("Compare (cas)", "cas", ""),
        ],
    );
    format!(
        "Tables 5–8 on the campus ring (the seed's test case, §1.3): run time in seconds of \
         {campuses} campus{} to {end} s, each packet carrying a 512-byte body that the events \
         of its hops share (`chronon run campus --data true --refcount S`: a clone into the \
         next hop's event, a drop of the event that ran), the run and its final flush of the \
         buffered counts; \"No body\": the same packets without bodies, no counting; \"Heap\": \
         the engine's shared-heap `BPtr`s. 1 thread: sequential executor, more: window \
         executor. {}\n\n\
         Campus Table 5: thread-local counts through the handles\n\n{t5}\n\
         Campus Table 6: buffered counting, 1 000 operations per buffer\n\n{t6}\n\
         Campus Table 7: buffer sizes\n\n{t7}\n\
         Campus Table 8: the remaining schemes\n\n{t8}",
        if campuses == "1" { "" } else { "es" },
        same_history(r)
    )
}

/// The campus lines of the figure: run time against threads, per scheme (1k buffers).
pub(super) fn lines(r: &Results) -> Vec<Series> {
    let threads = r.values("threads");
    CAMPUS
        .iter()
        .filter(|(_, b)| b.is_empty() || *b == "1000")
        .map(|&(scheme, buffer)| {
            let name = match (scheme, buffer) {
                ("buffered", _) => "B-I 1k".to_string(),
                ("buffered-thread", _) => "B-T 1k".to_string(),
                (s, _) => s.to_string(),
            };
            Series::new(
                &name,
                threads
                    .iter()
                    .map(|t| (t.parse().unwrap_or(f64::NAN), wall(r, scheme, buffer, t)))
                    .collect(),
            )
        })
        .collect()
}
