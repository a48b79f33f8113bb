//! Seed 002 (runtime systems for conservative simulation) on the manufacturing model:
//! Graph 1, speedup of the lock-step protocol vs event-handling time (1–50 µs) for the
//! persistent-thread runtime and the work-stealing runtime at thresholds 50, 300 and 600 LPs
//! per task, and BSP supersteps over one single-threaded process per thread; Graph 2, speedup
//! vs threads at 25 µs (threads and BSP runtimes).

use super::{md_table, num, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

fn base(s: &Settings) -> Vec<&'static str> {
    base_at(s, "25")
}

fn base_at(s: &Settings, work_us: &'static str) -> Vec<&'static str> {
    let mut v = vec![
        "run",
        "manufacturing",
        "--lines",
        "64",
        "--stations-per-line",
        "8",
        "--assembly-stations",
        "16",
        "--testing-stations",
        "16",
        "--work-us",
        work_us,
        "--stall-secs",
        "0",
    ];
    // About 250 000 events of 25 µs at full size (~6 s sequential), a tenth with --quick.
    v.extend(if s.quick {
        ["--end", "200"]
    } else {
        ["--end", "2000"]
    });
    v
}

pub(super) fn graph2_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let b = base(s);
    let mut out = vec![Point::new(&[("sync", "seq"), ("threads", "1")], &b)];
    for t in s.threads_or_default() {
        let ts = t.to_string();
        let mut args = b.clone();
        args.extend(["--sync", "lockstep", "--threads", &ts]);
        out.push(Point::new(&[("sync", "lockstep"), ("threads", &ts)], &args));
        args.extend(["--runtime", "bsp"]);
        out.push(Point::new(&[("sync", "bsp"), ("threads", &ts)], &args));
    }
    Ok(out)
}

pub(super) fn graph2_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let seq = r.get(&[("sync", "seq")], "wall_s");
    let threads = r.values("threads");
    let mut rows = vec![vec![
        "sequential".to_string(),
        "1".into(),
        num(seq),
        "1.00".into(),
    ]];
    let mut series = Vec::new();
    for (sync, label) in [("lockstep", "threads"), ("bsp", "BSP")] {
        let mut pts = Vec::new();
        for t in &threads {
            let w = r.get(&[("sync", sync), ("threads", t)], "wall_s");
            if !w.is_finite() {
                continue;
            }
            rows.push(vec![
                format!("lock-step, {label}"),
                t.clone(),
                num(w),
                num(seq / w),
            ]);
            pts.push((t.parse().unwrap_or(f64::NAN), seq / w));
        }
        series.push(Series::new(format!("{label} runtime"), pts));
    }
    let table = format!(
        "Manufacturing model (64 production lines of 8 processing + 8 control stations, 16 \
         assembly and 16 testing stations), 25 µs of busy work per event as in the seed's \
         Graph 2, under the lock-step protocol on persistent worker threads (`threads`) and on \
         one single-threaded worker process per thread exchanging events only at the \
         superstep barrier (`BSP`, `--runtime bsp`); wall time (initialization excluded) and \
         speedup over the sequential executor.\n\n{}",
        md_table(
            &[
                "runtime".into(),
                "threads".into(),
                "wall s".into(),
                "speedup".into()
            ],
            &rows
        )
    );
    let svg = figure(
        "Seed 002 Graph 2: speedup vs threads (manufacturing, lock-step)",
        &[Panel::Lines {
            title: "speedup over the sequential simulator".into(),
            x: "threads".into(),
            y: "speedup".into(),
            series,
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}

/// Graph 1's event-handling times (µs) and work-stealing thresholds (LPs per task).
const WORKS: [&str; 5] = ["1", "5", "10", "25", "50"];
const THRESHOLDS: [&str; 3] = ["50", "300", "600"];

/// Graph 1 runs every runtime at one thread count: the largest of `--threads` (default: the
/// cores, at least 2).
fn graph1_threads(s: &Settings) -> usize {
    s.parallel_threads().into_iter().max().unwrap_or(2)
}

pub(super) fn graph1_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let ts = graph1_threads(s).to_string();
    let mut out = Vec::new();
    for work in WORKS {
        let b = base_at(s, work);
        out.push(Point::new(
            &[("work_us", work), ("runtime", "seq"), ("threshold", "-")],
            &b,
        ));
        let mut args = b.clone();
        args.extend(["--sync", "lockstep", "--threads", &ts]);
        out.push(Point::new(
            &[
                ("work_us", work),
                ("runtime", "threads"),
                ("threshold", "-"),
            ],
            &args,
        ));
        let mut bsp = args.clone();
        bsp.extend(["--runtime", "bsp"]);
        out.push(Point::new(
            &[("work_us", work), ("runtime", "bsp"), ("threshold", "-")],
            &bsp,
        ));
        for th in THRESHOLDS {
            let mut a = args.clone();
            a.extend(["--runtime", "work-stealing", "--threshold", th]);
            out.push(Point::new(
                &[
                    ("work_us", work),
                    ("runtime", "work-stealing"),
                    ("threshold", th),
                ],
                &a,
            ));
        }
    }
    Ok(out)
}

pub(super) fn graph1_render(s: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let threads = graph1_threads(s);
    let columns: Vec<(String, &str, &str)> =
        std::iter::once(("threads".to_string(), "threads", "-"))
            .chain(
                THRESHOLDS
                    .iter()
                    .map(|th| (format!("work-stealing, {th}"), "work-stealing", *th)),
            )
            .chain(std::iter::once(("BSP".to_string(), "bsp", "-")))
            .collect();
    let mut header = vec!["work µs".to_string(), "seq s".to_string()];
    header.extend(columns.iter().map(|c| c.0.clone()));
    let mut rows = Vec::new();
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); columns.len()];
    for work in WORKS {
        let seq = r.get(&[("work_us", work), ("runtime", "seq")], "wall_s");
        let mut row = vec![work.to_string(), num(seq)];
        for (i, (_, runtime, th)) in columns.iter().enumerate() {
            let w = r.get(
                &[("work_us", work), ("runtime", runtime), ("threshold", th)],
                "wall_s",
            );
            let speedup = seq / w;
            row.push(if speedup.is_finite() {
                format!("{} ({} s)", num(speedup), num(w))
            } else {
                "-".into()
            });
            if speedup.is_finite() {
                series[i].push((work.parse().unwrap_or(f64::NAN), speedup));
            }
        }
        rows.push(row);
    }
    let table = format!(
        "Manufacturing model as in Graph 2 (1 120 LPs), lock-step protocol at {threads} threads; \
         speedup over the sequential executor (wall time, initialization excluded) for each \
         event-handling time. `threads`: persistent workers, block mapping; `work-stealing, N`: \
         a rayon pool of {threads} threads, one task per group of N LPs with events below \
         SafeTime each lock-step; `BSP`: {threads} single-threaded worker processes, each \
         owning its LPs, events to another process exchanged only at the superstep barrier \
         (`--runtime bsp`).\n\n{}",
        md_table(&header, &rows)
    );
    let svg = figure(
        "Seed 002 Graph 1: speedup vs event-handling time (manufacturing, lock-step)",
        &[Panel::Lines {
            title: format!("speedup over the sequential simulator, {threads} threads"),
            x: "event-handling time (µs)".into(),
            y: "speedup".into(),
            series: columns
                .iter()
                .zip(series)
                .map(|(c, pts)| Series::new(format!("{} runtime", c.0), pts))
                .collect(),
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}
