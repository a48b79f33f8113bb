//! `chronon report` and the time series of `run --output DIR/` end to end with the real binary:
//! `progress.csv` and `series.csv` against the report, and the plots `chronon report` draws from
//! run directories and report files (well-formed SVGs with the expected series).

mod common;
mod experiment_common;

use common::chronon;
use experiment_common::{read, scratch, svg_texts};

use std::path::Path;

/// `chronon run MODEL --sync SYNC --threads THREADS --output OUT` (`model`: the model and its
/// flags, split at spaces), which must succeed.
fn run_into(out: &Path, model: &str, sync: &str, threads: &str) {
    let mut args = vec!["run"];
    args.extend(model.split(' '));
    let out = out.to_str().unwrap();
    args.extend(["--sync", sync, "--threads", threads, "--output", out]);
    let (code, _, err) = chronon(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
}

#[test]
fn a_run_directory_holds_the_time_series_and_report_plots_them() {
    let dir = scratch("report");
    let (w, s) = (dir.join("w/"), dir.join("s/"));
    for (out, sync) in [(&w, "window"), (&s, "seq")] {
        let threads = if sync == "seq" { "1" } else { "2" };
        run_into(out, "phold --lps 64 --end 50", sync, threads);
    }
    let csv = read(&w.join("progress.csv"));
    let mut lines = csv.lines();
    // The window executor never rolls back: its rollback column (0) is true, so it is kept.
    assert_eq!(
        lines.next(),
        Some("wall_s,sim_time,events,events_per_s,rolled_back,efficiency")
    );
    let last: Vec<f64> = lines
        .last()
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    let report: serde_json::Value = serde_json::from_str(&read(&w.join("report.json"))).unwrap();
    assert_eq!(
        last[2],
        report["committed"].as_f64().unwrap(),
        "events at the end"
    );
    assert!(report["progress_series"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));

    let plots = dir.join("plots");
    let (code, out, err) = chronon(&[
        "report",
        w.to_str().unwrap(),
        s.join("report.json").to_str().unwrap(),
        "--out",
        plots.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 4, "{out}");
    let texts = svg_texts(&plots.join("throughput.svg"));
    for s in ["phold window", "phold seq", "threads", "speedup"] {
        assert!(texts.iter().any(|t| t == s), "{s} missing: {texts:?}");
    }
    let texts = svg_texts(&plots.join("progress.svg"));
    assert!(
        texts.iter().any(|t| t == "phold window ×2 LBTS"),
        "{texts:?}"
    );
    let texts = svg_texts(&plots.join("workers.svg"));
    for s in ["busy", "waiting", "synchronizing", "w1"] {
        assert!(texts.iter().any(|t| t == s), "{s} missing: {texts:?}");
    }
    // The costliest LPs of each report, by name.
    let texts = svg_texts(&plots.join("lps.svg"));
    let top = report["top_lps"][0]["lp"].as_u64().unwrap();
    assert!(texts.iter().any(|t| *t == format!("LP {top}")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t == "phold window ×2: costliest LPs"),
        "{texts:?}"
    );

    let (code, _, err) = chronon(&["report", dir.join("nothing").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn model_series_go_to_series_csv_and_model_svg_and_rollbacks_match_the_report() {
    let dir = scratch("series");
    let mut reports = Vec::new();
    for (sync, threads) in [("seq", "1"), ("timewarp", "2")] {
        let out = dir.join(format!("{sync}/"));
        let model = "pcs --width 4 --height 4 --channels 50 --end 4 --sample-period 1";
        run_into(&out, model, sync, threads);
        let csv = read(&out.join("series.csv"));
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows[0], "series,time,value");
        // Samples at 1, 2 and 3 (4 is the end: events there never run).
        let times: Vec<&str> = rows[1..]
            .iter()
            .map(|r| {
                let c: Vec<&str> = r.split(',').collect();
                assert_eq!(c[0], "channel_occupancy", "{r}");
                let v: f64 = c[2].parse().unwrap();
                assert!((0.0..=1.0).contains(&v), "{r}");
                c[1]
            })
            .collect();
        assert_eq!(times, ["1", "2", "3"], "{csv}");
        // Every executor publishes its rollbacks: the column ends at the report's total.
        let report: serde_json::Value =
            serde_json::from_str(&read(&out.join("report.json"))).unwrap();
        let progress = read(&out.join("progress.csv"));
        assert!(
            progress.lines().next().unwrap().contains("rolled_back"),
            "{sync}: {progress}"
        );
        let last = progress.lines().last().unwrap().split(',').nth(4).unwrap();
        assert_eq!(
            last.parse::<f64>().unwrap(),
            report["rolled_back"].as_f64().unwrap(),
            "{sync}"
        );
        reports.push(out);
    }
    let plots = dir.join("plots");
    let (code, out, err) = chronon(&[
        "report",
        reports[0].to_str().unwrap(),
        reports[1].to_str().unwrap(),
        "--out",
        plots.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("model.svg"), "{out}");
    let texts = svg_texts(&plots.join("model.svg"));
    assert!(texts.iter().any(|t| t == "channel_occupancy"), "{texts:?}");
    // Both executors recorded the same series: one line, named after the first report.
    assert!(
        texts.iter().any(|t| t == "pcs seq ×1 (+1 identical)"),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t == "pcs timewarp ×2"), "{texts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_in_stretches_gets_a_heat_strip_of_its_lps_over_time() {
    let dir = scratch("report-heat");
    let run = dir.join("b/");
    let (code, _, err) = chronon(&[
        "run",
        "phold",
        "--lps",
        "128",
        "--hot-lps",
        "8",
        "--hot-work-us",
        "5",
        "--hot-move",
        "10",
        "--end",
        "40",
        "--sync",
        "window",
        "--threads",
        "2",
        "--balance",
        "10",
        "--output",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&read(&run.join("report.json"))).unwrap();
    let heat = &report["lp_heat"];
    assert_eq!(heat["lps_per_group"], 2, "128 LPs in 64 groups");
    let stretches = heat["stretches"].as_array().expect("four stretches");
    assert_eq!(stretches.len(), 4);
    assert_eq!(stretches[3]["from"], 30.0);
    assert_eq!(stretches[3]["cost_s"].as_array().unwrap().len(), 64);
    let plots = dir.join("plots");
    let (code, out, err) = chronon(&[
        "report",
        run.to_str().unwrap(),
        "--out",
        plots.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("heat.svg"), "{out}");
    let texts = svg_texts(&plots.join("heat.svg"));
    assert!(
        texts.iter().any(|t| t.ends_with(": LP cost over time")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "simulated time"), "{texts:?}");
}
