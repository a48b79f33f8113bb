//! `ours-scaling`: PHOLD on every executor over thread counts (and optional `--procs P
//! --threads W` splits), speedup over the sequential executor and parallel efficiency, with
//! the machine (cores, NUMA nodes, CPU model) and the placement of each run recorded.

use super::seed001::PARALLEL;
use super::{md_table, num, run_metrics, Metrics, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

/// The configurations: name, description, PHOLD flags, end time at full size and at `--quick`
/// size. Every one has remote 0.1, lookahead 0.1 and mean delay 1 (PHOLD's defaults).
type Config = (
    &'static str,
    &'static str,
    [&'static str; 6],
    &'static str,
    &'static str,
);
const CONFIGS: [Config; 4] = [
    (
        "std",
        "1024 LPs, 10 start events each, no work per event",
        ["--lps", "1024", "--start-events", "10", "--work-us", "0"],
        "2000",
        "200",
    ),
    (
        "work",
        "1024 LPs, 10 start events each, 10 µs of busy work per event",
        ["--lps", "1024", "--start-events", "10", "--work-us", "10"],
        "30",
        "3",
    ),
    (
        "big",
        "16 384 LPs, 10 start events each, no work per event",
        ["--lps", "16384", "--start-events", "10", "--work-us", "0"],
        "100",
        "5",
    ),
    (
        "large",
        "262 144 LPs, 10 start events each, no work per event",
        ["--lps", "262144", "--start-events", "10", "--work-us", "0"],
        "20",
        "0.2",
    ),
];

/// The executors a `--splits` point runs under.
const SPLIT_SYNCS: [&str; 2] = ["window", "timewarp"];

/// The configuration names `--configs` accepts.
pub(crate) fn config_names() -> Vec<&'static str> {
    CONFIGS.iter().map(|c| c.0).collect()
}

/// Checks `--configs` names.
pub(crate) fn check_configs(names: &[String]) -> Result<(), Failure> {
    for n in names {
        if !config_names().contains(&n.as_str()) {
            return Err(Failure::bad_input(format!(
                "unknown --configs '{n}' (allowed: {})",
                config_names().join(", ")
            )));
        }
    }
    Ok(())
}

/// A `--splits` entry, `PxW` (P processes of W threads each, both at least 1).
pub(crate) fn parse_split(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("--splits '{s}' is not PxW (processes x threads, like 4x4)");
    let (p, w) = s.split_once('x').ok_or_else(bad)?;
    let (p, w): (usize, usize) = (p.parse().map_err(|_| bad())?, w.parse().map_err(|_| bad())?);
    if p == 0 || w == 0 {
        return Err(bad());
    }
    Ok((p, w))
}

pub(super) fn plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let mut out = Vec::new();
    let wanted = |name: &str| match &s.configs {
        Some(c) => c.iter().any(|x| x == name),
        None => true,
    };
    for (name, _, flags, full_end, quick_end) in CONFIGS.iter().filter(|c| wanted(c.0)) {
        let mut seq = vec!["run", "phold", "--stall-secs", "0"];
        seq.extend(flags);
        let end = if s.quick { quick_end } else { full_end };
        seq.extend(["--end", end]);
        let point = |sync: &str, procs: usize, threads: usize, args: &[&str]| {
            let (p, t, w) = (
                procs.to_string(),
                threads.to_string(),
                (procs * threads).to_string(),
            );
            Point::new(
                &[
                    ("config", name),
                    ("end", end),
                    ("sync", sync),
                    ("procs", &p),
                    ("threads", &t),
                    ("workers", &w),
                ],
                args,
            )
        };
        out.push(point("seq", 1, 1, &seq));
        for t in s.threads_or_default() {
            let ts = t.to_string();
            for sync in PARALLEL {
                let mut args = seq.clone();
                args.extend(["--sync", sync, "--threads", &ts]);
                out.push(point(sync, 1, t, &args));
            }
        }
        for &(p, t) in &s.splits {
            let (ps, ts) = (p.to_string(), t.to_string());
            for sync in SPLIT_SYNCS {
                let mut args = seq.clone();
                args.extend(["--sync", sync, "--procs", &ps, "--threads", &ts]);
                out.push(point(sync, p, t, &args));
            }
        }
    }
    Ok(out)
}

/// A run's metrics and its placement: pinned (1 or 0), first-touch seconds, and the machine's
/// cores and NUMA nodes.
pub(super) fn extract(v: &serde_json::Value) -> Metrics {
    let mut m = run_metrics(v);
    let f = |p: &str| v.pointer(p).and_then(serde_json::Value::as_f64);
    let pinned = v
        .pointer("/placement/pinned")
        .and_then(serde_json::Value::as_bool);
    m.push((
        "pinned",
        pinned.map_or(f64::NAN, |b| f64::from(u8::from(b))),
    ));
    m.push((
        "first_touch_s",
        f("/placement/first_touch_s").unwrap_or(f64::NAN),
    ));
    m.push(("cores", f("/placement/machine/cores").unwrap_or(f64::NAN)));
    m.push((
        "numa_nodes",
        f("/placement/machine/numa_nodes").unwrap_or(f64::NAN),
    ));
    m
}

/// The label of a split's line (`window 4p×4t`).
fn split_label(sync: &str, procs: &str, threads: &str) -> String {
    format!("{sync} {procs}p×{threads}t")
}

pub(super) fn render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let machine = chronon::placement::Machine::detect();
    let mut table = format!(
        "PHOLD (remote 0.1, lookahead 0.1, mean delay 1): speedup = sequential wall time / \
         wall time (initialization excluded); parallel efficiency = speedup / workers; commit \
         efficiency = committed / processed (Time Warp's rollbacks). Workers are pinned when \
         they fit the cores (`--pin auto`; the CSV's `pinned`).\n\nMachine: {} core(s) \
         available, {} NUMA node(s) (from the runs' reports); CPU of the machine that drew \
         this table: {}.\n\n",
        r.get(&[("sync", "seq")], "cores"),
        r.get(&[("sync", "seq")], "numa_nodes"),
        if machine.cpu_model.is_empty() {
            "unknown"
        } else {
            &machine.cpu_model
        },
    );
    let mut panels = Vec::new();
    for c in r.values("config") {
        let seq = r.get(&[("config", &c), ("sync", "seq")], "wall_s");
        // Lines: one per executor over threads (one process), one per split executor.
        let mut lines: Vec<(String, Vec<&super::Point>)> = Vec::new();
        let here: Vec<&super::Point> = r.points.iter().filter(|p| p.param("config") == c).collect();
        for sync in PARALLEL {
            let pts = here
                .iter()
                .filter(|p| p.param("sync") == sync && p.param("procs") == "1")
                .copied()
                .collect();
            lines.push((sync.to_string(), pts));
        }
        // (The sequential point is one process too.)
        for p in here.iter().filter(|p| p.param("procs") != "1") {
            let label = split_label(p.param("sync"), p.param("procs"), p.param("threads"));
            lines.push((label, vec![p]));
        }
        let header: Vec<String> = [
            "executor",
            "workers",
            "wall s",
            "speedup",
            "parallel efficiency",
            "commit efficiency",
            "pinned",
        ]
        .map(String::from)
        .to_vec();
        let mut rows = Vec::new();
        let mut series = Vec::new();
        for (label, pts) in lines {
            let mut xy = Vec::new();
            for p in pts {
                let q: Vec<(&str, &str)> = p.params.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let wall = r.get(&q, "wall_s");
                let workers: f64 = p.param("workers").parse().unwrap_or(f64::NAN);
                let sp = seq / wall;
                rows.push(vec![
                    label.clone(),
                    workers.to_string(),
                    num(wall),
                    num(sp),
                    num(sp / workers),
                    num(r.get(&q, "efficiency")),
                    match r.get(&q, "pinned") {
                        1.0 => "yes".into(),
                        0.0 => "no".into(),
                        _ => "—".into(),
                    },
                ]);
                xy.push((workers, sp));
            }
            series.push(Series::new(label, xy));
        }
        let what = CONFIGS.iter().find(|x| x.0 == c).map_or("", |x| x.1);
        let end = here.first().map_or("", |p| p.param("end"));
        table.push_str(&format!(
            "{c}: {what}, end {end} (sequential: {} s)\n\n{}\n",
            num(seq),
            md_table(&header, &rows)
        ));
        panels.push(Panel::Lines {
            title: format!("PHOLD {c}"),
            x: "workers (processes x threads)".into(),
            y: "speedup over seq".into(),
            series,
        });
    }
    let svg = figure(
        "PHOLD scaling: speedup over the sequential executor",
        &panels,
    )?;
    Ok(Rendered { table, figure: svg })
}
