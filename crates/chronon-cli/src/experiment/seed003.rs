//! Seed 003 (fine-grain time-sharing Time Warp): PHOLD in three phases (Fig. 6, Table I), the
//! data store model (Fig. 7, Table II) and the personal communication system (Fig. 10, Table
//! III): traditional (non-preemptive) Time Warp against time-sharing Time Warp (`--preempt`)
//! at every parallel thread count.

use super::{md_table, num, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Bars, Panel, Series};
use crate::Failure;

/// `seq`, and `timewarp` without and with `--preempt` (followed by `preempt`, e.g. the tick
/// flags) at each parallel thread count, for `base` and `params`.
fn tw_points(
    s: &Settings,
    base: &[&str],
    params: &[(&'static str, &str)],
    preempt: &[&str],
) -> Vec<Point> {
    let mut p = params.to_vec();
    p.extend([("sync", "seq"), ("threads", "1")]);
    let mut out = vec![Point::new(&p, base)];
    for t in s.parallel_threads() {
        let ts = t.to_string();
        let mut args = base.to_vec();
        args.extend(["--sync", "timewarp", "--threads", &ts]);
        let mut p = params.to_vec();
        p.extend([("sync", "timewarp"), ("threads", ts.as_str())]);
        out.push(Point::new(&p, &args));
        args.push("--preempt");
        args.extend(preempt);
        let mut p = params.to_vec();
        p.extend([("sync", "timewarp-preempt"), ("threads", ts.as_str())]);
        out.push(Point::new(&p, &args));
    }
    out
}

/// Time-sharing PHOLD-phases runs tick as the seed's (§4.1): every 50 µs with the baseline
/// α = 0. The phases' busy work makes no engine call, as the seed's PHOLD made no platform
/// calls, so the rule turns ticks on where events are long, and a tick preempts the busy work
/// by interrupt.
const PHASES_TICKS: &[&str] = &["--tick-us", "50", "--alpha", "0"];

/// "−12.3 %": how much less wall time time-sharing took than traditional Time Warp.
fn gain(traditional: f64, sharing: f64) -> String {
    format!("{:+.1} %", (sharing / traditional - 1.0) * 100.0)
}

fn runners(r: &Results) -> Vec<(String, String, String)> {
    let mut out = vec![("seq".to_string(), "1".to_string(), "sequential".to_string())];
    for t in r.values("threads").into_iter().filter(|t| t != "1") {
        out.push(("timewarp".into(), t.clone(), format!("Time Warp ×{t}")));
        out.push((
            "timewarp-preempt".into(),
            t.clone(),
            format!("time-sharing ×{t}"),
        ));
    }
    out
}

/// The largest parallel thread count measured.
fn top_threads(r: &Results) -> String {
    r.values("threads")
        .into_iter()
        .filter(|t| t != "1")
        .max_by_key(|t| t.parse::<u32>().unwrap_or(0))
        .unwrap_or_else(|| "1".into())
}

// ---- Fig. 6 / Table I: PHOLD phases --------------------------------------------------------

const PHASES: [&str; 3] = ["A", "B", "C"];

fn phase_length(s: &Settings) -> f64 {
    if s.quick {
        2.0
    } else {
        4.0
    }
}

pub(super) fn phases_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let (side, len) = (if s.quick { "15" } else { "45" }, phase_length(s));
    let len_s = len.to_string();
    let mut out = Vec::new();
    // Each phase's figures are the difference of two runs: to the end of the phase and to
    // its start (every run is deterministic, so both runs share the history before).
    for k in 1..=3 {
        let end = (len * k as f64).to_string();
        let ks = k.to_string();
        let base = [
            "run",
            "phold-phases",
            "--width",
            side,
            "--height",
            side,
            "--phase-length",
            &len_s,
            "--end",
            &end,
            "--stall-secs",
            "0",
        ];
        out.extend(tw_points(s, &base, &[("phases", &ks)], PHASES_TICKS));
    }
    Ok(out)
}

pub(super) fn phases_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let runners = runners(r);
    // Per phase k: the figures of the run to phase k minus those of the run to phase k-1.
    let phase = |sync: &str, t: &str, k: usize, m: &str| {
        let at = |k: usize| {
            if k == 0 {
                0.0
            } else {
                let ks = k.to_string();
                r.get(&[("phases", &ks), ("sync", sync), ("threads", t)], m)
            }
        };
        at(k) - at(k - 1)
    };
    let top = top_threads(r);
    let mut h6 = vec!["phase".to_string()];
    h6.extend(runners.iter().map(|x| format!("{} wall s", x.2)));
    h6.push(format!("time-sharing vs traditional ×{top}"));
    let mut h1 = vec!["phase".to_string()];
    for (_, _, l) in runners.iter().skip(1) {
        h1.push(format!("{l} efficiency"));
    }
    h1.push(format!("traditional / time-sharing wall ×{top}"));
    let h8 = vec![
        "phase".to_string(),
        format!("time-sharing ×{top} preemptions"),
        format!("by a tick's interrupt ×{top}"),
        format!("ticks acted on ×{top}"),
    ];
    let (mut rows6, mut rows1, mut rows8) = (Vec::new(), Vec::new(), Vec::new());
    for (i, p) in PHASES.iter().enumerate() {
        let mut row6 = vec![p.to_string()];
        let mut row1 = vec![p.to_string()];
        for (sync, t, _) in &runners {
            row6.push(num(phase(sync, t, i + 1, "wall_s")));
            if sync != "seq" {
                let c = phase(sync, t, i + 1, "committed");
                let pr = phase(sync, t, i + 1, "processed");
                row1.push(num(c / pr));
            }
        }
        let tw = phase("timewarp", &top, i + 1, "wall_s");
        let ts = phase("timewarp-preempt", &top, i + 1, "wall_s");
        row6.push(gain(tw, ts));
        row1.push(num(tw / ts));
        rows6.push(row6);
        rows1.push(row1);
        let ts_fig = |m| num(phase("timewarp-preempt", &top, i + 1, m));
        rows8.push(vec![
            p.to_string(),
            ts_fig("preemptions"),
            ts_fig("preempt_interrupts"),
            ts_fig("ticks_acted_on"),
        ]);
    }
    let table = format!(
        "PHOLD in three phases on a 2-D mesh (events of ~30, 150 and 300 µs of busy work), \
         traditional and time-sharing (`--preempt`, 50 µs ticks, α 0 as the seed's) Time Warp. \
         Per-phase figures are differences of cumulative runs (to the \
         end of phase A, B, C), so a phase's wall time carries the noise of two runs.\n\n\
         Fig. 6: wall time per phase\n\n{}\n\
         Table I: efficiency per phase (committed / processed events)\n\n{}\n         Preemptions per phase, time-sharing (the busy work makes no engine call, so only a \
         tick's interrupt can switch it off)\n\n{}",
        md_table(&h6, &rows6),
        md_table(&h1, &rows1),
        md_table(&h8, &rows8)
    );
    let groups: Vec<Bars> = runners
        .iter()
        .map(|(sync, t, l)| Bars {
            name: l.clone(),
            values: (1..=3).map(|k| phase(sync, t, k, "wall_s")).collect(),
        })
        .collect();
    let svg = figure(
        "Seed 003 Fig. 6: PHOLD phases, traditional and time-sharing Time Warp",
        &[Panel::Grouped {
            title: "wall time per phase".into(),
            y: "wall s".into(),
            categories: PHASES.iter().map(|p| format!("phase {p}")).collect(),
            groups,
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}

// ---- Fig. 7 / Table II: data store ---------------------------------------------------------

const STORE: [(&str, &str); 2] = [("light", "10"), ("heavy", "20")];

pub(super) fn datastore_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let end = if s.quick { "4" } else { "30" };
    let mut out = Vec::new();
    for (name, batch) in STORE {
        // 25 µs per transaction: a batch costs ~250 µs (light) and ~500 µs (heavy) of work, the
        // seed's ~300 and ~500 µs.
        let base = [
            "run",
            "datastore",
            "--batching-factor",
            batch,
            "--work-us",
            "25",
            "--end",
            end,
            "--stall-secs",
            "0",
        ];
        out.extend(tw_points(
            s,
            &base,
            &[("config", name)],
            &super::store_alloc::FIG8_TICKS,
        ));
        if name == "heavy" {
            // Fig. 8 and Table II: the heavy configuration's allocation patterns, with ticks.
            out.extend(super::store_alloc::points(s, &base));
        }
    }
    Ok(out)
}

pub(super) fn datastore_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let runners = runners(r);
    let (fig8, fig8_panel) = super::store_alloc::render(r);
    let header: Vec<String> = [
        "configuration",
        "executor",
        "wall s",
        "speedup",
        "efficiency",
        "time-sharing",
        "preemptions / s",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let (mut eff, mut wall) = (Vec::new(), Vec::new());
    for (name, _) in STORE {
        let seq = r.get(&[("config", name), ("sync", "seq")], "wall_s");
        let (mut e_pts, mut w_pts) = (Vec::new(), Vec::new());
        let (mut ts_e, mut ts_w) = (Vec::new(), Vec::new());
        for (sync, t, l) in &runners {
            // Fig. 7's runs have no `alloc` (Fig. 8's time-sharing runs share their `sync`).
            let p = [
                ("config", name),
                ("alloc", ""),
                ("sync", sync.as_str()),
                ("threads", t.as_str()),
            ];
            let (w, e) = (r.get(&p, "wall_s"), r.get(&p, "efficiency"));
            rows.push(vec![
                name.to_string(),
                l.clone(),
                num(w),
                num(seq / w),
                num(e),
                if sync == "timewarp-preempt" {
                    let tp = [
                        ("config", name),
                        ("sync", "timewarp"),
                        ("threads", t.as_str()),
                    ];
                    gain(r.get(&tp, "wall_s"), w)
                } else {
                    String::new()
                },
                if sync == "timewarp-preempt" {
                    num(r.get(&p, "preemptions") / w)
                } else {
                    String::new()
                },
            ]);
            if sync == "timewarp" {
                let x = t.parse().unwrap_or(f64::NAN);
                e_pts.push((x, e));
                w_pts.push((x, w));
            } else if sync == "timewarp-preempt" {
                let x = t.parse().unwrap_or(f64::NAN);
                ts_e.push((x, e));
                ts_w.push((x, w));
            }
        }
        eff.push(Series::new(format!("{name}, traditional"), e_pts));
        wall.push(Series::new(format!("{name}, traditional"), w_pts));
        eff.push(Series::new(format!("{name}, time-sharing"), ts_e));
        wall.push(Series::new(format!("{name}, time-sharing"), ts_w));
        wall.push(Series::new(format!("{name}, sequential"), vec![(1.0, seq)]));
    }
    let table = format!(
        "Data store (64 nodes, batches of 10 (light) or 20 (heavy) transactions, 25 µs of work \
         per transaction and per remote request), traditional and time-sharing (`--preempt`) \
         Time Warp against the sequential executor.\n\nFig. 7: efficiency and wall time by \
         threads (the time-sharing runs tick every 50 µs with α −0.5, as the seed's; the last \
         column is their total preemptions per second)\n\n{}\n{fig8}\n",
        md_table(&header, &rows)
    );
    let svg = figure(
        "Seed 003 Fig. 7-8: data store, traditional and time-sharing Time Warp",
        &[
            Panel::Lines {
                title: "efficiency".into(),
                x: "threads".into(),
                y: "committed / processed".into(),
                series: eff,
            },
            Panel::Lines {
                title: "execution time".into(),
                x: "threads".into(),
                y: "wall s".into(),
                series: wall,
            },
            fig8_panel,
        ],
    )?;
    Ok(Rendered { table, figure: svg })
}

// ---- Fig. 10 / Table III: personal communication system ------------------------------------

/// Time-sharing runs of the PCS tick as the seed's do: every 50 µs with alpha −1 (−0.99 here:
/// chronon refuses −1).
const PCS_TICKS: &[&str] = &["--tick-us", "50", "--alpha", "-0.99"];

/// Channel utilization factor and the call interarrival that gives it: utilization =
/// duration / (interarrival × channels) with 2-minute calls and 1000 channels.
const UTIL: [(&str, &str); 3] = [("25", "0.008"), ("50", "0.004"), ("75", "0.0026667")];

pub(super) fn pcs_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let (side, fading, end) = if s.quick {
        ("8", "5", "0.5")
    } else {
        ("16", "10", "1")
    };
    let mut out = Vec::new();
    // Fig. 10/11 (handoffs on) first, so that queries without `handoffs` find them; then Fig. 9:
    // the same runs with handoffs off (`--residence 0`: every call ends in its cell).
    for (handoffs, residence) in [("on", "5"), ("off", "0")] {
        for (u, ia) in UTIL {
            let base = [
                "run",
                "pcs",
                "--width",
                side,
                "--height",
                side,
                "--fading-work",
                fading,
                "--call-interarrival",
                ia,
                "--residence",
                residence,
                "--end",
                end,
                "--stall-secs",
                "0",
            ];
            let params = [("handoffs", handoffs), ("utilization", u)];
            out.extend(tw_points(s, &base, &params, PCS_TICKS));
        }
    }
    Ok(out)
}

pub(super) fn pcs_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let runners = runners(r);
    let mut h10 = vec!["utilization %".to_string()];
    for (_, _, l) in runners.iter().skip(1) {
        h10.extend([
            format!("{l} wall s"),
            format!("{l} efficiency"),
            "speedup".into(),
        ]);
    }
    h10.push(format!("time-sharing vs traditional ×{}", top_threads(r)));
    let mut rows10 = Vec::new();
    let mut h3 = vec![String::new()];
    h3.extend(UTIL.iter().map(|(u, _)| format!("{u}%")));
    let mut row3 = vec!["execution time (s)".to_string()];
    let mut series: Vec<Series> = Vec::new();
    for (sync, t, l) in &runners {
        let pts = UTIL
            .iter()
            .map(|(u, _)| {
                let w = r.get(
                    &[("utilization", u), ("sync", sync), ("threads", t)],
                    "wall_s",
                );
                (u.parse().unwrap_or(f64::NAN), w)
            })
            .collect();
        let name = l.clone();
        series.push(Series::new(name, pts));
    }
    for (u, _) in UTIL {
        let seq = r.get(&[("utilization", u), ("sync", "seq")], "wall_s");
        row3.push(num(seq));
        let mut row = vec![u.to_string()];
        for (sync, t, _) in runners.iter().skip(1) {
            let p = [
                ("utilization", u),
                ("sync", sync.as_str()),
                ("threads", t.as_str()),
            ];
            let w = r.get(&p, "wall_s");
            row.extend([num(w), num(r.get(&p, "efficiency")), num(seq / w)]);
        }
        let top = top_threads(r);
        let wall = |sync: &str| {
            r.get(
                &[
                    ("utilization", u),
                    ("sync", sync),
                    ("threads", top.as_str()),
                ],
                "wall_s",
            )
        };
        row.push(gain(wall("timewarp"), wall("timewarp-preempt")));
        rows10.push(row);
    }
    let (t9, s9) = pcs_fig9(r);
    let (t11, s11) = pcs_fig11(r);
    let table = format!(
        "Personal communication system (hexagonal grid of cells, 1000 channels each, 2-minute \
         calls, 5-minute residence, periodic fading recomputation over the active calls), \
         channel utilization 25/50/75 %.\n\n\
         Fig. 9: overhead of the time-sharing facilities (contexts, 50 µs ticks) with no handoffs \
         (`--residence 0`: no cross-cell events, no rollbacks)\n\n{t9}\n\
         Fig. 10: execution time, traditional and time-sharing (`--preempt`) Time Warp\n\n{}\n\
         Fig. 11: preemptions per second of execution time, time-sharing Time Warp (handoffs \
         on)\n\n{t11}\n\
         Table III: the sequential simulator\n\n{}\n",
        md_table(&h10, &rows10),
        md_table(&h3, &[row3])
    );
    let svg = figure(
        "Seed 003 Fig. 9-11: PCS, traditional and time-sharing Time Warp",
        &[
            Panel::Lines {
                title: "Fig. 9: no handoffs".into(),
                x: "channel utilization %".into(),
                y: "wall s".into(),
                series: s9,
            },
            Panel::Lines {
                title: "Fig. 10: execution time".into(),
                x: "channel utilization %".into(),
                y: "wall s".into(),
                series,
            },
            Panel::Lines {
                title: "Fig. 11: preemptions".into(),
                x: "channel utilization %".into(),
                y: "preemptions / s".into(),
                series: s11,
            },
        ],
    )?;
    Ok(Rendered { table, figure: svg })
}

/// Fig. 9: wall time with handoffs off, without and with `--preempt`, at the largest thread
/// count; the table and the two series.
fn pcs_fig9(r: &Results) -> (String, Vec<Series>) {
    let top = top_threads(r);
    let header: Vec<String> = [
        "utilization %".to_string(),
        format!("traditional ×{top} wall s"),
        format!("time-sharing ×{top} wall s"),
        "overhead".into(),
    ]
    .to_vec();
    let (mut rows, mut tw, mut ts) = (Vec::new(), Vec::new(), Vec::new());
    for (u, _) in UTIL {
        let wall = |sync: &str| {
            let p = [
                ("handoffs", "off"),
                ("utilization", u),
                ("sync", sync),
                ("threads", top.as_str()),
            ];
            r.get(&p, "wall_s")
        };
        let (a, b) = (wall("timewarp"), wall("timewarp-preempt"));
        rows.push(vec![u.to_string(), num(a), num(b), gain(a, b)]);
        let x = u.parse().unwrap_or(f64::NAN);
        tw.push((x, a));
        ts.push((x, b));
    }
    let series = vec![
        Series::new(format!("no time-sharing ×{top}"), tw),
        Series::new(format!("time-sharing ×{top}"), ts),
    ];
    (md_table(&header, &rows), series)
}

/// Fig. 11: preemptions (and ticks acted on) per second of execution time of the time-sharing
/// runs with handoffs, per parallel thread count; the table and one series per thread count.
fn pcs_fig11(r: &Results) -> (String, Vec<Series>) {
    let threads: Vec<String> = r
        .values("threads")
        .into_iter()
        .filter(|t| t != "1")
        .collect();
    let mut header = vec!["utilization %".to_string()];
    for t in &threads {
        header.extend([
            format!("×{t} preemptions"),
            format!("×{t} preemptions / s"),
            format!("×{t} ticks acted on / s"),
        ]);
    }
    let mut rows = Vec::new();
    let mut pts: Vec<Vec<(f64, f64)>> = vec![Vec::new(); threads.len()];
    for (u, _) in UTIL {
        let mut row = vec![u.to_string()];
        for (i, t) in threads.iter().enumerate() {
            let p = [
                ("handoffs", "on"),
                ("utilization", u),
                ("sync", "timewarp-preempt"),
                ("threads", t.as_str()),
            ];
            let (n, w) = (r.get(&p, "preemptions"), r.get(&p, "wall_s"));
            row.extend([num(n), num(n / w), num(r.get(&p, "ticks_acted_on") / w)]);
            pts[i].push((u.parse().unwrap_or(f64::NAN), n / w));
        }
        rows.push(row);
    }
    let series = threads
        .iter()
        .zip(pts)
        .map(|(t, p)| Series::new(format!("preemptions / s ×{t}"), p))
        .collect();
    (md_table(&header, &rows), series)
}

#[cfg(test)]
mod tests {
    use super::{datastore_render, Results, Settings};

    /// Fig. 7's time-sharing cells are its own runs', not those of Fig. 8's runs of the same
    /// `sync` (told apart by `alloc`), whichever rows come first in the CSV.
    #[test]
    fn fig7_reads_its_own_time_sharing_runs() {
        let mut csv = String::from("config,sync,threads,alloc,rep,wall_s,efficiency,preemptions\n");
        for alloc in ["round-robin", "upfront"] {
            csv += &format!("heavy,timewarp-preempt,2,{alloc},0,9.5,0.5,5\n");
        }
        for config in ["light", "heavy"] {
            csv += &format!("{config},seq,1,,0,2,1,NaN\n");
            csv += &format!("{config},timewarp,2,,0,1.5,0.9,NaN\n");
            csv += &format!("{config},timewarp-preempt,2,,0,1.25,0.98,10\n");
        }
        let r = Results::from_csv(&csv, &[]).unwrap();
        let s = Settings {
            quick: true,
            threads: None,
            reps: 1,
            cores: 2,
            configs: None,
            splits: Vec::new(),
        };
        let t = datastore_render(&s, &r).unwrap().table;
        for config in ["light", "heavy"] {
            let row =
                format!("| {config} | time-sharing ×2 | 1.25 | 1.60 | 0.980 | -16.7 % | 8.00 |");
            assert!(t.contains(&row), "{row}: {t}");
        }
        assert!(t.contains("| varied (upfront) | 2 | 9.50 |"), "{t}");
    }
}
