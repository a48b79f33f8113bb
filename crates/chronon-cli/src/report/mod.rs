//! `chronon report DIR|report.json...`: SVG plots from run reports.
//!
//! * `throughput.svg`: events/s and speedup over threads, a line per (model, executor);
//!   speedup is over the sequential report of the same model, or else over the fewest threads
//!   of that executor;
//! * `progress.svg`: simulated time (GVT under Time Warp, else the executor's lower bound)
//!   and events/s over wall time (`series::rates`), a line per report;
//! * `rollbacks.svg`: efficiency so far and events rolled back per second over wall time, a line
//!   per report whose `progress_series` holds rollback counts (a fourth column, present only
//!   where the executor published them) and some rollback;
//! * `workers.svg`: per worker, the busy / waiting / synchronizing shares of the conservative
//!   executors, and Time Warp's efficiency and rolled-back events;
//! * `lps.svg`: per report, its costliest LPs (`top_lps`) and their shares of the handlers' time;
//! * `heat.svg`: per report of a run in stretches (`--balance`, checkpoints), what groups of LPs
//!   cost in each stretch (`lp_heat`): a heat strip of LPs over simulated time;
//! * `model.svg`: the model's global-event series (`model_series`) over simulated time, a panel
//!   per series, a line per report holding it (reports with the same points drawn once: the
//!   series are the same under every executor).
//!
//! A plot is written only when some report holds its data; the files written are printed.
//!
//! A study's directory (`chronon sweep --out DIR`) also gets its `runs.csv`, summary and
//! per-statistic plots made again from its finished runs (`sweep/results.rs`).

#[cfg(feature = "plots")]
mod draw;
mod heat;
pub(crate) mod plot;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use crate::output::{is_dir_arg, Outputs};
use crate::Failure;
use plot::{figure, Bars, Panel, Series};

/// Flags of `chronon report`.
#[derive(Debug, Args)]
pub(crate) struct ReportCmd {
    /// Reports: JSON files, or directories holding them (`report.json`, `runs/*.json`, `*.json`).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Directory for the plots [default: the first input's directory].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One report read from disk.
#[derive(Debug)]
struct Loaded {
    label: String,
    v: Value,
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in [dir.to_path_buf(), dir.join("runs")] {
        if let Ok(rd) = std::fs::read_dir(&d) {
            let mut v: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
                .collect();
            v.sort();
            out.extend(v);
        }
    }
    out
}

fn load(inputs: &[PathBuf]) -> Result<Vec<Loaded>, Failure> {
    let mut files = Vec::new();
    for i in inputs {
        if i.is_dir() {
            let found = json_files(i);
            if found.is_empty() {
                return Err(Failure::bad_input(format!(
                    "{} holds no JSON report (looked in it and in its runs/)",
                    i.display()
                )));
            }
            files.extend(found);
        } else if i.is_file() {
            files.push(i.clone());
        } else {
            return Err(Failure::bad_input(format!(
                "{} does not exist; give report files or directories",
                i.display()
            )));
        }
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f)
            .map_err(|e| Failure::bad_input(format!("cannot read {}: {e}", f.display())))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            Failure::bad_input(format!("{} is not a JSON report: {e}", f.display()))
        })?;
        // Only run reports (an experiment's `runs/` may also hold barrier measurements).
        if v.get("sync").is_none() || v.get("wall_s").is_none() {
            continue;
        }
        out.push(Loaded {
            label: label(&v),
            v,
        });
    }
    if out.is_empty() {
        return Err(Failure::bad_input(
            "no run report among the inputs (a report is what `chronon run --output` writes)",
        ));
    }
    Ok(out)
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("?")
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn label(v: &Value) -> String {
    format!("{} {} ×{}", s(v, "model"), s(v, "sync"), f(v, "threads"))
}

/// Pairs of numbers from a JSON array of arrays, columns `a` and `b`.
fn pairs(v: Option<&Value>, a: usize, b: usize) -> Vec<(f64, f64)> {
    v.and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .filter_map(|r| Some((r.get(a)?.as_f64()?, r.get(b)?.as_f64()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn throughput(reports: &[Loaded]) -> Option<Vec<Panel>> {
    // (model, sync) -> threads -> best events/s (several repetitions: the fastest).
    let mut groups: BTreeMap<(String, String), BTreeMap<u64, (f64, f64)>> = BTreeMap::new();
    for r in reports {
        let key = (s(&r.v, "model").to_string(), s(&r.v, "sync").to_string());
        let t = f(&r.v, "threads") as u64;
        let (rate, wall) = (f(&r.v, "events_per_s"), f(&r.v, "wall_s"));
        let e = groups
            .entry(key)
            .or_default()
            .entry(t)
            .or_insert((rate, wall));
        if rate > e.0 {
            *e = (rate, wall);
        }
    }
    let mut rate_series = Vec::new();
    let mut speedup = Vec::new();
    for ((model, sync), by_t) in &groups {
        let name = format!("{model} {sync}");
        rate_series.push(Series::new(
            &name,
            by_t.iter().map(|(&t, &(r, _))| (t as f64, r)).collect(),
        ));
        let base = groups
            .get(&(model.clone(), "seq".to_string()))
            .and_then(|m| m.values().next())
            .or_else(|| by_t.values().next())
            .map_or(f64::NAN, |x| x.1);
        speedup.push(Series::new(
            &name,
            by_t.iter()
                .map(|(&t, &(_, w))| (t as f64, base / w))
                .collect(),
        ));
    }
    Some(vec![
        Panel::Lines {
            title: "events/s".into(),
            x: "threads".into(),
            y: "committed events / s".into(),
            series: rate_series,
        },
        Panel::Lines {
            title: "speedup (over seq, or the fewest threads)".into(),
            x: "threads".into(),
            y: "speedup".into(),
            series: speedup,
        },
    ])
}

fn progress(reports: &[Loaded]) -> Option<Vec<Panel>> {
    let mut sim = Vec::new();
    let mut rate = Vec::new();
    for r in reports {
        let gvt = pairs(r.v.get("gvt_series"), 0, 1);
        let prog = pairs(r.v.get("progress_series"), 0, 1);
        if !gvt.is_empty() {
            sim.push(Series::new(format!("{} GVT", r.label), gvt));
        } else if !prog.is_empty() {
            sim.push(Series::new(format!("{} LBTS", r.label), prog));
        }
        let ev = pairs(r.v.get("progress_series"), 0, 2);
        if ev.len() >= 2 {
            let pts = ev
                .iter()
                .zip(crate::series::rates(&ev))
                .skip(1)
                .map(|(p, r)| (p.0, r))
                .collect();
            rate.push(Series::new(r.label.clone(), pts));
        }
    }
    if sim.is_empty() && rate.is_empty() {
        return None;
    }
    let mut panels = vec![Panel::Lines {
        title: "simulated time (GVT / LBTS) over wall time".into(),
        x: "wall s".into(),
        y: "simulated time".into(),
        series: sim,
    }];
    if !rate.is_empty() {
        panels.push(Panel::Lines {
            title: "events/s (processed)".into(),
            x: "wall s".into(),
            y: "events / s".into(),
            series: rate,
        });
    }
    Some(panels)
}

/// Rows of a `progress_series` that hold a rollback count: (wall s, events, rolled back).
fn rollback_rows(v: &Value) -> Vec<(f64, f64, f64)> {
    v.get("progress_series")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .filter_map(|r| {
                    Some((
                        r.get(0)?.as_f64()?,
                        r.get(2)?.as_f64()?,
                        r.get(3)?.as_f64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn rollbacks(reports: &[Loaded]) -> Option<Vec<Panel>> {
    let mut eff = Vec::new();
    let mut rate = Vec::new();
    for r in reports {
        let rows = rollback_rows(&r.v);
        if !rows.iter().any(|x| x.2 > 0.0) {
            continue;
        }
        eff.push(Series::new(
            r.label.clone(),
            rows.iter()
                .filter(|x| x.1 > 0.0)
                .map(|&(w, e, rb)| (w, 1.0 - rb / e))
                .collect(),
        ));
        rate.push(Series::new(
            r.label.clone(),
            rows.windows(2)
                .filter(|w| w[1].0 > w[0].0)
                .map(|w| (w[1].0, (w[1].2 - w[0].2) / (w[1].0 - w[0].0)))
                .collect(),
        ));
    }
    (!eff.is_empty()).then(|| {
        vec![
            Panel::Lines {
                title: "efficiency so far (1 - rolled back / processed)".into(),
                x: "wall s".into(),
                y: "efficiency".into(),
                series: eff,
            },
            Panel::Lines {
                title: "events rolled back per second, per interval".into(),
                x: "wall s".into(),
                y: "rolled back / s".into(),
                series: rate,
            },
        ]
    })
}

/// At most this many panels in `model.svg` (a panel per series name, side by side).
const MODEL_PANELS: usize = 4;

/// One line of `model.svg`: the first report's label, the points, how many reports hold them.
type Line = (String, Vec<(f64, f64)>, usize);

fn model_series(reports: &[Loaded]) -> Option<Vec<Panel>> {
    // name -> distinct point lists, each with the label of the first report holding it and
    // the number of reports holding it.
    let mut by_name: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for r in reports {
        let Some(series) = r.v.get("model_series").and_then(Value::as_object) else {
            continue;
        };
        for (name, points) in series {
            let pts = pairs(Some(points), 0, 1);
            let lines = by_name.entry(name.clone()).or_default();
            if pts.is_empty() {
                continue;
            }
            match lines.iter_mut().find(|l| l.1 == pts) {
                Some(l) => l.2 += 1,
                None => lines.push((r.label.clone(), pts, 1)),
            }
        }
    }
    let panels: Vec<Panel> = by_name
        .into_iter()
        .filter(|(_, lines)| !lines.is_empty())
        .take(MODEL_PANELS)
        .map(|(name, lines)| Panel::Lines {
            title: name.clone(),
            x: "simulated time".into(),
            y: name,
            series: lines
                .into_iter()
                .map(|(label, pts, n)| {
                    let name = if n > 1 {
                        format!("{label} (+{} identical)", n - 1)
                    } else {
                        label
                    };
                    Series::new(name, pts)
                })
                .collect(),
        })
        .collect();
    (!panels.is_empty()).then_some(panels)
}

fn workers(reports: &[Loaded]) -> Option<Vec<Panel>> {
    let mut panels = Vec::new();
    for r in reports {
        let Some(ws) = r.v.get("workers").and_then(Value::as_array) else {
            continue;
        };
        let cats: Vec<String> = (0..ws.len()).map(|i| format!("w{i}")).collect();
        let col = |k: &str| ws.iter().map(|w| f(w, k)).collect::<Vec<f64>>();
        // Time shares: the conservative executors' (busy, waiting, synchronizing), Time Warp's
        // (busy, idle, GVT reports, fossil collection).
        let parts: &[(&str, &str)] = if ws.iter().any(|w| w.get("sync_s").is_some()) {
            &[
                ("busy_s", "busy"),
                ("wait_s", "waiting"),
                ("sync_s", "synchronizing"),
            ]
        } else if ws.iter().any(|w| w.get("loop_s").is_some()) {
            &[
                ("busy_s", "busy"),
                ("idle_s", "idle"),
                ("gvt_s", "GVT"),
                ("fossil_s", "fossil collection"),
            ]
        } else {
            &[]
        };
        if !parts.is_empty() {
            let cols: Vec<Vec<f64>> = parts.iter().map(|(k, _)| col(k)).collect();
            let total = |i: usize| cols.iter().map(|c| c[i]).sum::<f64>();
            panels.push(Panel::Stacked {
                title: format!("{}: time shares per worker", r.label),
                y: "share of wall time".into(),
                categories: cats.clone(),
                layers: parts
                    .iter()
                    .zip(&cols)
                    .map(|((_, name), c)| Bars {
                        name: name.to_string(),
                        values: c.iter().enumerate().map(|(i, v)| v / total(i)).collect(),
                    })
                    .collect(),
            });
        }
        if ws.iter().any(|w| w.get("rolled_back").is_some()) {
            let (processed, rolled) = (col("processed"), col("rolled_back"));
            panels.push(Panel::Stacked {
                title: format!(
                    "{}: events per worker (efficiency {:.3})",
                    r.label,
                    r.v.pointer("/executor_stats/efficiency")
                        .and_then(Value::as_f64)
                        .unwrap_or(f64::NAN)
                ),
                y: "events".into(),
                categories: cats,
                layers: vec![
                    Bars {
                        name: "committed".into(),
                        values: processed.iter().zip(&rolled).map(|(p, r)| p - r).collect(),
                    },
                    Bars {
                        name: "rolled back".into(),
                        values: rolled,
                    },
                ],
            });
        }
        if panels.len() == 4 {
            break;
        }
    }
    (!panels.is_empty()).then_some(panels)
}

/// `lps.svg`: per report (at most 4), its costliest LPs (`top_lps`) and their shares of the
/// handlers' time: which LPs to spread over workers.
fn costliest(reports: &[Loaded]) -> Option<Vec<Panel>> {
    let mut panels = Vec::new();
    for r in reports {
        let Some(top) = r.v.get("top_lps").and_then(Value::as_array) else {
            continue;
        };
        if top.is_empty() {
            continue;
        }
        panels.push(Panel::Stacked {
            title: format!("{}: costliest LPs", r.label),
            y: "share of the handlers' time".into(),
            categories: top
                .iter()
                .map(|t| format!("LP {}", t["lp"].as_u64().unwrap_or(0)))
                .collect(),
            layers: vec![Bars {
                name: "share".into(),
                values: top.iter().map(|t| f(t, "share")).collect(),
            }],
        });
        if panels.len() == 4 {
            break;
        }
    }
    (!panels.is_empty()).then_some(panels)
}

pub(crate) fn run(cmd: ReportCmd) -> Result<u8, Failure> {
    // A study's directory (`chronon sweep --out DIR`): its tables and plots first.
    for i in cmd.inputs.iter().filter(|i| i.is_dir()) {
        for path in crate::sweep::rewrite(i, cmd.out.as_deref())?.unwrap_or_default() {
            println!("{}", path.display());
        }
    }
    let reports = load(&cmd.inputs)?;
    let first = &cmd.inputs[0];
    let dir = cmd.out.clone().unwrap_or_else(|| {
        if is_dir_arg(first) {
            first.clone()
        } else {
            first
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        }
    });
    let plots: Vec<(&str, &str, Option<Vec<Panel>>)> = vec![
        (
            "throughput.svg",
            "Throughput and speedup",
            throughput(&reports),
        ),
        (
            "progress.svg",
            "Progress over wall time",
            progress(&reports),
        ),
        (
            "rollbacks.svg",
            "Rollbacks over wall time",
            rollbacks(&reports),
        ),
        ("workers.svg", "Per-worker figures", workers(&reports)),
        ("lps.svg", "The costliest LPs", costliest(&reports)),
        ("heat.svg", "LP cost over time", heat::heat(&reports)),
        (
            "model.svg",
            "Model series (global events)",
            model_series(&reports),
        ),
    ];
    let wanted: Vec<(&'static str, PathBuf)> = plots
        .iter()
        .filter(|p| p.2.is_some())
        .map(|p| ("--out", dir.join(p.0)))
        .collect();
    Outputs::plan(&wanted, &[])?;
    for (name, title, panels) in plots {
        let Some(panels) = panels else { continue };
        let svg = figure(&format!("{title} ({} reports)", reports.len()), &panels)?;
        let path = dir.join(name);
        crate::output::write_or_rescue("--out", &path, svg.as_bytes())?;
        println!("{}", path.display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(v: Value) -> Loaded {
        Loaded {
            label: label(&v),
            v,
        }
    }

    #[test]
    fn rollbacks_are_plotted_only_from_a_fourth_column_with_some_rollback() {
        let tw = loaded(serde_json::json!({
            "model": "phold", "sync": "timewarp", "threads": 2,
            "progress_series": [[0.0, 0.0, 0, 0], [1.0, 5.0, 100, 10], [2.0, 9.0, 300, 60]],
        }));
        let panels = rollbacks(&[tw]).expect("a report with rollbacks");
        let Panel::Lines { series, .. } = &panels[0] else {
            panic!("lines")
        };
        // Efficiency so far, from the first sample with events.
        assert_eq!(series[0].points, [(1.0, 0.9), (2.0, 0.8)]);
        let Panel::Lines { series, .. } = &panels[1] else {
            panic!("lines")
        };
        assert_eq!(series[0].points, [(1.0, 10.0), (2.0, 50.0)]);
        // Three columns (rollbacks not published), or none rolled back: no plot.
        let three = loaded(serde_json::json!({
            "model": "phold", "sync": "timewarp", "threads": 2,
            "progress_series": [[0.0, 0.0, 0], [1.0, 5.0, 100]],
        }));
        let none = loaded(serde_json::json!({
            "model": "phold", "sync": "window", "threads": 2,
            "progress_series": [[0.0, 0.0, 0, 0], [1.0, 5.0, 100, 0]],
        }));
        assert!(rollbacks(&[three, none]).is_none());
    }

    #[test]
    fn model_series_get_a_panel_each_and_equal_series_are_drawn_once() {
        let occ = serde_json::json!([[60.0, 0.5], [120.0, 0.75]]);
        let a = loaded(serde_json::json!({
            "model": "pcs", "sync": "seq", "threads": 1,
            "model_series": {"channel_occupancy": occ},
        }));
        let b = loaded(serde_json::json!({
            "model": "pcs", "sync": "timewarp", "threads": 2,
            "model_series": {"channel_occupancy": occ, "other": [[1.0, 2.0]]},
        }));
        let c = loaded(serde_json::json!({"model": "phold", "sync": "seq", "threads": 1}));
        let panels = model_series(&[a, b, c]).unwrap();
        assert_eq!(panels.len(), 2);
        let Panel::Lines { title, series, .. } = &panels[0] else {
            panic!("lines")
        };
        assert_eq!(title, "channel_occupancy");
        assert_eq!(series.len(), 1, "the same points under two executors");
        assert_eq!(series[0].name, "pcs seq ×1 (+1 identical)");
        assert_eq!(series[0].points, [(60.0, 0.5), (120.0, 0.75)]);
        let none = loaded(serde_json::json!({"model": "phold", "sync": "seq", "threads": 1}));
        assert!(model_series(&[none]).is_none());
    }
}
