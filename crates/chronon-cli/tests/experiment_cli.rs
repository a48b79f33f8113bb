//! `chronon experiment` and `chronon report` end to end with the real binary: a representative
//! subset of the experiments at `--quick` size (CSV columns, Markdown table, a well-formed SVG
//! with the expected series), the plots of `chronon report`, the time series of `--output
//! DIR/`, and one-line errors for bad arguments.

mod common;

use std::path::{Path, PathBuf};

use common::chronon;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chronon-xp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The texts of an SVG document, which must parse as XML with an `<svg>` root.
fn svg_texts(p: &Path) -> Vec<String> {
    let text = read(p);
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not well-formed XML: {e}", p.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

/// Runs `experiment NAME --quick` with `extra`; checks the three files and returns (CSV rows
/// as maps of column to value, Markdown, SVG texts).
/// A CSV row: (column, value) pairs.
type Row = Vec<(String, String)>;

fn quick(name: &str, extra: &[&str]) -> (Vec<Row>, String, Vec<String>) {
    let dir = scratch(name);
    let d = dir.to_str().unwrap();
    let mut args = vec!["experiment", name, "--quick", "--out", d];
    args.extend_from_slice(extra);
    let (code, out, err) = chronon(&args);
    assert_eq!(code, 0, "{name}: {err}");
    assert!(out.contains(&format!("{name}.svg")), "{out}");
    let csv = read(&dir.join(format!("{name}.csv")));
    let mut lines = csv.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let rows: Vec<Row> = lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect();
    assert!(!rows.is_empty(), "{name}: empty CSV");
    let md = read(&dir.join(format!("{name}.md")));
    let texts = svg_texts(&dir.join(format!("{name}.svg")));
    // Every measurement left its report.
    let runs = std::fs::read_dir(dir.join("runs")).unwrap().count();
    assert_eq!(runs, rows.len(), "{name}: one report per measurement");
    let _ = std::fs::remove_dir_all(&dir);
    (rows, md, texts)
}

fn col<'a>(row: &'a [(String, String)], k: &str) -> &'a str {
    row.iter()
        .find(|(c, _)| c == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no column {k}"))
}

#[test]
fn barriers_measure_every_kind_and_fan_in() {
    let (rows, md, texts) = quick("001-barriers", &["--threads", "1,2"]);
    // 5 fan-ins of the tree and 3 other barriers, at 2 thread counts.
    assert_eq!(rows.len(), 16);
    for r in &rows {
        let ns: f64 = col(r, "ns_per_wait").parse().unwrap();
        assert!(ns > 0.0 && ns.is_finite(), "{r:?}");
    }
    assert!(md.contains("Table 1") && md.contains("Table 2"), "{md}");
    assert!(md.contains("| 2 threads |"), "{md}");
    for s in ["std", "semaphore", "spin", "tree", "2 threads"] {
        assert!(
            texts.iter().any(|t| t == s),
            "series {s} missing: {texts:?}"
        );
    }
}

#[test]
fn campus_speedup_has_every_executor_and_the_same_committed_count() {
    let (rows, md, texts) = quick("001-campus", &["--threads", "2"]);
    assert_eq!(rows.len(), 5, "seq and four parallel executors");
    let committed: Vec<&str> = rows.iter().map(|r| col(r, "committed")).collect();
    assert!(
        committed.iter().all(|c| *c == committed[0]),
        "every executor commits the same events: {committed:?}"
    );
    for sync in ["window", "lockstep", "null-message", "timewarp"] {
        assert!(md.contains(&format!("| {sync} |")), "{md}");
        assert!(texts.iter().any(|t| t == sync), "{sync} missing: {texts:?}");
    }
}

#[test]
fn phold_phases_marks_the_time_sharing_column_as_waiting() {
    let (rows, md, _) = quick("003-phold-phases", &["--threads", "2"]);
    // seq and Time Warp x2, each run to the end of phases A, B and C.
    assert_eq!(rows.len(), 6);
    let eff: f64 = col(&rows[1], "efficiency").parse().unwrap();
    assert!(eff > 0.0 && eff <= 1.0, "{eff}");
    assert!(md.contains("| A |") && md.contains("| C |"), "{md}");
    assert!(md.contains("waits for issue 12"), "{md}");
}

#[test]
fn list_names_every_experiment_and_what_waits() {
    let (code, out, _) = chronon(&["experiment", "--list"]);
    assert_eq!(code, 0);
    for name in [
        "001-barriers",
        "001-campus",
        "003-pcs",
        "ours-phold",
        "000-fig7",
    ] {
        assert!(out.contains(name), "{name} missing: {out}");
    }
    let fig7 = out.lines().find(|l| l.starts_with("000-fig7")).unwrap();
    assert!(fig7.contains("available; MPI"), "{fig7}");
    let gsu = out.lines().find(|l| l.starts_with("000-gsu")).unwrap();
    assert!(gsu.contains("waits for issue 11"), "{gsu}");
}

#[test]
fn bad_experiment_arguments_get_one_line() {
    let one_line = |args: &[&str], want: &str| {
        let (code, out, err) = chronon(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
        out
    };
    one_line(&["experiment", "no-such"], "unknown experiment 'no-such'");
    // Waiting for another issue: no output at all.
    let dir = scratch("waits");
    let out = one_line(
        &["experiment", "000-gsu", "--out", dir.to_str().unwrap()],
        "waits for issue 11",
    );
    assert!(out.is_empty());
    assert!(!dir.exists(), "a waiting experiment writes nothing");
    // An output directory under a regular file.
    let file = scratch("file");
    std::fs::write(&file, b"x").unwrap();
    let under = file.join("sub");
    one_line(
        &[
            "experiment",
            "001-barriers",
            "--quick",
            "--out",
            under.to_str().unwrap(),
        ],
        "is a file, not a directory",
    );
    one_line(
        &["experiment", "001-barriers", "--reps", "0"],
        "--reps is 0",
    );
    let nothing = scratch("from-nothing");
    one_line(
        &[
            "experiment",
            "001-campus",
            "--from",
            nothing.to_str().unwrap(),
        ],
        "--from: cannot read",
    );
    assert!(!nothing.exists(), "a failed --from creates nothing");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_run_directory_holds_the_time_series_and_report_plots_them() {
    let dir = scratch("report");
    let (w, s) = (dir.join("w/"), dir.join("s/"));
    for (out, sync) in [(&w, "window"), (&s, "seq")] {
        let threads = if sync == "seq" { "1" } else { "2" };
        let (code, _, err) = chronon(&[
            "run",
            "phold",
            "--lps",
            "64",
            "--end",
            "50",
            "--sync",
            sync,
            "--threads",
            threads,
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let csv = read(&w.join("progress.csv"));
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("wall_s,sim_time,events,events_per_s"));
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
    assert_eq!(out.lines().count(), 3, "{out}");
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

    let (code, _, err) = chronon(&["report", dir.join("nothing").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every available experiment at `--quick` size with the binary named by `CHRONON_BIN` (the
/// release build: `.ci/run` runs this), checking the three files of each.
#[test]
#[ignore = "about a minute and a half with the release binary; .ci/run runs it"]
fn every_available_experiment_runs_quick() {
    let bin = std::env::var("CHRONON_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_chronon").into());
    let (code, list, _) = common::chronon_at(&bin, &["experiment", "--list"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = list
        .lines()
        .skip(1)
        .filter(|l| l.contains(" available"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 9, "{list}");
    for name in names {
        let dir = scratch(&format!("all-{name}"));
        let t0 = std::time::Instant::now();
        let (code, _, err) = common::chronon_at(
            &bin,
            &[
                "experiment",
                name,
                "--quick",
                "--out",
                dir.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{name}: {err}");
        eprintln!("{name}: {:.1} s", t0.elapsed().as_secs_f64());
        let csv = read(&dir.join(format!("{name}.csv")));
        assert!(csv.lines().count() >= 2, "{name}: {csv}");
        assert!(
            read(&dir.join(format!("{name}.md"))).contains("| "),
            "{name}"
        );
        assert!(
            svg_texts(&dir.join(format!("{name}.svg"))).len() > 5,
            "{name}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
