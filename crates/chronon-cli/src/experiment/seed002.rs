//! Seed 002 (runtime systems for conservative simulation) on the manufacturing model, with the
//! seed's four runtimes under the lock-step protocol: POSIX threads (`--runtime threads`,
//! persistent workers owning blocks of LPs), Active threads (`--runtime active-threads`,
//! light-weight threads of `threshold` LPs, many per worker), Cilk (`--runtime
//! work-stealing`, every LP spawned by divide and conquer each lock-step down to `threshold`
//! LPs) and BSP (`--runtime bsp`, one single-threaded process per thread, events exchanged at
//! the superstep barrier). Graph 1: speedup vs event-handling time (1–50 µs) at thresholds
//! 50, 300 and 600; Graph 2: speedup vs threads at 25 µs.

use super::{md_table, num, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

/// The model's LPs: 256 lines of a source and 8 processing + 8 control stations, 64 assembly
/// and 64 testing stations. The seed's LPs are "in the range of 1000's"; this many gives
/// thresholds 50, 300 and 600 90, 15 and 8 tasks (or light-weight threads) per lock-step.
const LPS: usize = 256 * 17 + 64 + 64;

fn base_at(s: &Settings, work_us: &'static str) -> Vec<&'static str> {
    let mut v = vec![
        "run",
        "manufacturing",
        "--lines",
        "256",
        "--stations-per-line",
        "8",
        "--assembly-stations",
        "64",
        "--testing-stations",
        "64",
        "--work-us",
        work_us,
        "--stall-secs",
        "0",
    ];
    // About 250 000 events at full size (~6 s sequential at 25 µs), a tenth with --quick.
    v.extend(if s.quick {
        ["--end", "50"]
    } else {
        ["--end", "500"]
    });
    v
}

/// A runtime line: its label, the `runtime` and `threshold` keys of its points, and the flags
/// it adds to a lock-step run.
struct Line {
    label: String,
    runtime: &'static str,
    threshold: &'static str,
}

impl Line {
    fn new(label: &str, runtime: &'static str, threshold: &'static str) -> Line {
        Line {
            label: label.to_string(),
            runtime,
            threshold,
        }
    }

    fn args<'a>(&self, lockstep: &[&'a str]) -> Vec<&'a str> {
        let mut a = lockstep.to_vec();
        if self.runtime != "threads" {
            a.extend(["--runtime", self.runtime]);
        }
        if self.threshold != "-" {
            a.extend(["--threshold", self.threshold]);
        }
        a
    }
}

/// Graph 1's event-handling times (µs) and thresholds (LPs per task or light-weight thread).
const WORKS: [&str; 5] = ["1", "5", "10", "25", "50"];
const THRESHOLDS: [&str; 3] = ["50", "300", "600"];

/// Graph 1's lines: POSIX threads, Active threads and Cilk at every threshold, BSP.
fn graph1_lines() -> Vec<Line> {
    let mut v = vec![Line::new("POSIX threads", "threads", "-")];
    for th in THRESHOLDS {
        v.push(Line::new(
            &format!("Active threads {th}"),
            "active-threads",
            th,
        ));
    }
    for th in THRESHOLDS {
        v.push(Line::new(&format!("Cilk {th}"), "work-stealing", th));
    }
    v.push(Line::new("BSP", "bsp", "-"));
    v
}

/// Graph 2's lines, the seed's: POSIX threads, Active threads 50, Cilk 50 and 600, BSP.
fn graph2_lines() -> Vec<Line> {
    vec![
        Line::new("POSIX threads", "threads", "-"),
        Line::new("Active threads 50", "active-threads", "50"),
        Line::new("Cilk 50", "work-stealing", "50"),
        Line::new("Cilk 600", "work-stealing", "600"),
        Line::new("BSP", "bsp", "-"),
    ]
}

const RUNTIMES: &str = "`POSIX threads`: `--runtime threads`, persistent worker threads \
     owning blocks of LPs; `Active threads N`: `--runtime active-threads --threshold N`, \
     light-weight threads (stackful coroutines) of N LPs bound round-robin to the worker \
     threads, each resumed once per lock-step; `Cilk N`: `--runtime work-stealing --threshold \
     N`, a rayon pool that spawns every LP each lock-step by divide and conquer down to N LPs \
     per task, the scan for safe events and the next SafeTime's reduction in the tasks; `BSP`: \
     `--runtime bsp`, single-threaded worker processes, each owning its LPs, events to another \
     process exchanged only at the superstep barrier.";

pub(super) fn graph2_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let b = base_at(s, "25");
    let mut out = vec![Point::new(
        &[("runtime", "seq"), ("threshold", "-"), ("threads", "1")],
        &b,
    )];
    for t in s.threads_or_default() {
        let ts = t.to_string();
        let mut lockstep = b.clone();
        lockstep.extend(["--sync", "lockstep", "--threads", &ts]);
        for l in graph2_lines() {
            out.push(Point::new(
                &[
                    ("runtime", l.runtime),
                    ("threshold", l.threshold),
                    ("threads", &ts),
                ],
                &l.args(&lockstep),
            ));
        }
    }
    Ok(out)
}

pub(super) fn graph2_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let seq = r.get(&[("runtime", "seq")], "wall_s");
    let threads = r.values("threads");
    let mut rows = vec![vec![
        "sequential".to_string(),
        "1".into(),
        num(seq),
        "1.00".into(),
    ]];
    let mut series = Vec::new();
    for l in graph2_lines() {
        let mut pts = Vec::new();
        for t in &threads {
            let keys = [
                ("runtime", l.runtime),
                ("threshold", l.threshold),
                ("threads", t.as_str()),
            ];
            let w = r.get(&keys, "wall_s");
            if !w.is_finite() {
                continue;
            }
            rows.push(vec![l.label.clone(), t.clone(), num(w), num(seq / w)]);
            pts.push((t.parse().unwrap_or(f64::NAN), seq / w));
        }
        series.push(Series::new(l.label.clone(), pts));
    }
    let table = format!(
        "Manufacturing model ({LPS} LPs: 256 production lines of a source and 8 processing + \
         8 control stations, 64 assembly and 64 testing stations), 25 µs of busy work per event as in \
         the seed's Graph 2, under the lock-step protocol on the seed's four runtimes; wall \
         time (initialization excluded) and speedup over the sequential executor. \
         {RUNTIMES}\n\n{}",
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
        let mut lockstep = b.clone();
        lockstep.extend(["--sync", "lockstep", "--threads", &ts]);
        for l in graph1_lines() {
            out.push(Point::new(
                &[
                    ("work_us", work),
                    ("runtime", l.runtime),
                    ("threshold", l.threshold),
                ],
                &l.args(&lockstep),
            ));
        }
    }
    Ok(out)
}

pub(super) fn graph1_render(s: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let threads = graph1_threads(s);
    let lines = graph1_lines();
    let mut header = vec!["work µs".to_string(), "seq s".to_string()];
    header.extend(lines.iter().map(|l| l.label.clone()));
    let mut rows = Vec::new();
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); lines.len()];
    for work in WORKS {
        let seq = r.get(&[("work_us", work), ("runtime", "seq")], "wall_s");
        let mut row = vec![work.to_string(), num(seq)];
        for (i, l) in lines.iter().enumerate() {
            let keys = [
                ("work_us", work),
                ("runtime", l.runtime),
                ("threshold", l.threshold),
            ];
            let w = r.get(&keys, "wall_s");
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
        "Manufacturing model as in Graph 2 ({LPS} LPs), lock-step protocol at {threads} \
         threads; speedup over the sequential executor (wall time, initialization excluded) \
         for each event-handling time. Thresholds 50, 300 and 600 give 90, 15 and 8 tasks or \
         light-weight threads per lock-step. {RUNTIMES}\n\n{}",
        md_table(&header, &rows)
    );
    let svg = figure(
        "Seed 002 Graph 1: speedup vs event-handling time (manufacturing, lock-step)",
        &[Panel::Lines {
            title: format!("speedup over the sequential simulator, {threads} threads"),
            x: "event-handling time (µs)".into(),
            y: "speedup".into(),
            series: lines
                .iter()
                .zip(series)
                .map(|(l, pts)| Series::new(l.label.clone(), pts))
                .collect(),
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}
