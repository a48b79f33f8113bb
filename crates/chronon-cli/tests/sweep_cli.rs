//! `chronon sweep`: a study's runs, their statistics and intervals, resuming, and bad input.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{chronon, scratch};

const MM1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/manufacturing-mm1.toml"
);

/// A CSV file as rows of (column -> cell).
fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    common::csv_rows(&text)
}

fn sweep(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    chronon(&all)
}

/// 100 studies of an M/M/1 queue (rho = 0.5, 20 independent lines per run), each of 5
/// replications: the 95 % interval of the mean number in the station covers the theoretical
/// L = rho / (1 - rho) = 1 in about 95 of them. The seeds are fixed, so the count is too; the
/// band is one a correct t interval passes with overwhelming probability, and an interval
/// with a normal quantile (expected coverage 88 %) or without the 1/sqrt(n) (about 100 %)
/// would most likely fail.
#[test]
fn intervals_cover_the_mm1_queue_length() {
    let out = scratch("chronon-sweep", "coverage");
    let dir = out.to_str().unwrap();
    let (code, stdout, stderr) = sweep(&[
        "manufacturing",
        "--config",
        MM1,
        "--lines",
        "20",
        "--end",
        "600",
        "--seed",
        "1..100",
        "--replications",
        "5",
        "--out",
        dir,
        "--plot",
        "processing_mean_in_station",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("500 of 500 runs done"), "{stdout}");
    let runs = csv(&out.join("runs.csv"));
    assert_eq!(runs.len(), 500);
    let summary = csv(&out.join("summary.csv"));
    let mut covered = 0;
    let mut points = 0;
    for s in summary
        .iter()
        .filter(|s| s["statistic"] == "processing_mean_in_station")
    {
        points += 1;
        assert_eq!(s["n"], "5");
        // The interval is the t interval of the runs' values, recomputed here.
        let xs: Vec<f64> = runs
            .iter()
            .filter(|r| r["point"] == s["point"])
            .map(|r| r["processing_mean_in_station"].parse().unwrap())
            .collect();
        let mean = xs.iter().sum::<f64>() / 5.0;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
        let half = 2.776445 * sd / 5f64.sqrt();
        let lo: f64 = s["ci95_low"].parse().unwrap();
        let hi: f64 = s["ci95_high"].parse().unwrap();
        assert!((lo - (mean - half)).abs() < 1e-6 && (hi - (mean + half)).abs() < 1e-6);
        if lo <= 1.0 && 1.0 <= hi {
            covered += 1;
        }
    }
    assert_eq!(points, 100);
    eprintln!("coverage: {covered} of 100 intervals hold L = 1");
    assert!(
        (89..=99).contains(&covered),
        "{covered} of 100 intervals hold L = 1"
    );
    // The seed is swept: one plot against it, with the intervals drawn.
    let svg =
        std::fs::read_to_string(out.join("plots/processing_mean_in_station-vs-seed.svg")).unwrap();
    assert!(svg.contains("<svg"));
}

/// Replication 0 runs with --seed itself: its fingerprint is `chronon run`'s; the others have
/// seeds of their own; `chronon report DIR` writes the same results again.
#[test]
fn a_study_reruns_chronon_run_and_report_remakes_it() {
    let out = scratch("chronon-sweep", "basic");
    let dir = out.to_str().unwrap();
    let (code, stdout, stderr) = sweep(&[
        "phold",
        "--lps",
        "8..32*2",
        "--end",
        "10",
        "--replications",
        "2",
        "--seed",
        "7",
        "--out",
        dir,
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let runs = csv(&out.join("runs.csv"));
    assert_eq!(runs.len(), 6);
    let lps: Vec<&str> = runs.iter().map(|r| r["lps"].as_str()).collect();
    assert_eq!(lps, ["8", "8", "16", "16", "32", "32"]);
    assert_eq!(runs[0]["seed"], "7");
    assert_ne!(runs[1]["seed"], "7");
    let (_, single, _) = chronon(&["run", "phold", "--lps", "16", "--end", "10", "--seed", "7"]);
    assert_eq!(runs[2]["fingerprint"], common::fingerprint(&single));
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    std::fs::remove_file(out.join("summary.csv")).unwrap();
    let (code, stdout, stderr) = chronon(&["report", dir]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        std::fs::read_to_string(out.join("summary.csv")).unwrap(),
        summary
    );
    assert!(out.join("plots/committed-vs-lps.svg").exists());
}

/// A PHOLD study whose runs take a while each (busy work per event).
fn slow_study(dir: &str) -> Vec<String> {
    [
        "sweep",
        "phold",
        "--lps",
        "16",
        "--start-events",
        "1",
        "--end",
        "100",
        "--work-us",
        "40",
        "--remote",
        "0.1,0.5",
        "--replications",
        "4",
        "--jobs",
        "1",
        "--out",
        dir,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn finished_runs(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("runs")).map_or(0, |rd| {
        rd.flatten()
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.ends_with(".json") && !n.ends_with(".part.json")
            })
            .count()
    })
}

/// Starts the slow study, stops it with `signal` once two runs finished, and returns its exit
/// code.
fn stop_midway(dir: &Path, signal: &str) -> i32 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(slow_study(dir.to_str().unwrap()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while finished_runs(dir) < 2 {
        assert!(t.elapsed() < Duration::from_secs(60), "no run finished");
        std::thread::sleep(Duration::from_millis(5));
    }
    let ok = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    child.wait().unwrap().code().unwrap_or(-1)
}

/// A study killed midway (SIGKILL) or stopped with Ctrl-C (SIGINT), then rerun, ends with the
/// results of a study never stopped.
#[test]
fn a_stopped_study_resumes_to_the_same_results() {
    let whole = scratch("chronon-sweep", "whole");
    let args = slow_study(whole.to_str().unwrap());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = chronon(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let want = common::sweep_history(&whole);
    assert_eq!(want.len(), 8);

    for (signal, code) in [("-KILL", -1), ("-INT", 130)] {
        let part = scratch("chronon-sweep", &format!("part{signal}"));
        assert_eq!(stop_midway(&part, signal), code, "{signal}");
        let kept = finished_runs(&part);
        assert!((2..8).contains(&kept), "{signal}: {kept} runs kept");
        let args = slow_study(part.to_str().unwrap());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = chronon(&args);
        assert_eq!(code, 0, "{signal}: {stdout}{stderr}");
        assert!(
            stdout.contains(&format!("8 of 8 runs done ({kept} from before)")),
            "{signal}: {stdout}"
        );
        assert_eq!(common::sweep_history(&part), want, "{signal}");
        // Nothing of the stopped runs is left behind.
        let left: Vec<String> = std::fs::read_dir(part.join("runs"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".part.json") || n.ends_with(".err"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// Bad input: one line, exit 2, nothing written.
#[test]
fn bad_studies_are_refused_with_one_line_and_nothing_written() {
    let out = scratch("chronon-sweep", "bad");
    let dir = out.to_str().unwrap();
    let base = ["phold", "--lps", "8", "--end", "5", "--out", dir];
    for (extra, want) in [
        (vec!["--remote", "0.1,,0.2"], "a list has an empty item"),
        (vec!["--remote", "0.1,"], "a list has an empty item"),
        (vec!["--start-events", "1..10+0"], "the range never ends"),
        (vec!["--start-events", "1..10*1"], "the range never ends"),
        (
            vec!["--start-events", "1..1000000"],
            "more than 10000 values",
        ),
        (
            vec!["--plot", "no_such_stat"],
            "--plot: no statistic 'no_such_stat'",
        ),
        (vec!["--output", "x.json"], "--output is not a sweep option"),
        (vec!["--no-such-flag", "1"], "--no-such-flag"),
        (vec!["--remote", "0.1,zero"], "point 1 (--remote zero)"),
        (vec!["--replications", "0"], "--replications is 0"),
        (vec!["--jobs", "0"], "--jobs is 0"),
    ] {
        let mut args = base.to_vec();
        args.extend(extra.iter());
        let (code, stdout, stderr) = sweep(&args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} wrote {dir}");
    }
    let (code, _, stderr) = sweep(&["nomodel", "--out", dir]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown model 'nomodel'"), "{stderr}");

    // A directory of another study, or of other files, is left as it was.
    let (code, stdout, stderr) = sweep(&base);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let before = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut other = base.to_vec();
    other.extend(["--remote", "0.3"]);
    let (code, _, stderr) = sweep(&other);
    assert_eq!(code, 2);
    assert!(stderr.contains("holds another study"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(out.join("runs.csv")).unwrap(),
        before
    );
    let files = scratch("chronon-sweep", "files");
    std::fs::create_dir_all(&*files).unwrap();
    std::fs::write(files.join("notes.txt"), "mine").unwrap();
    let (code, _, stderr) = sweep(&["phold", "--out", files.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("holds other files"), "{stderr}");
    assert_eq!(std::fs::read_dir(&*files).unwrap().count(), 1);
}

/// A run that fails stops the study with its error and its command line; the runs that
/// finished are kept.
#[test]
fn a_failing_run_stops_the_study_and_names_it() {
    let out = scratch("chronon-sweep", "failing");
    let dir = out.to_str().unwrap();
    // A lookahead above the mean delay is refused by the model when its run starts.
    let (code, stdout, stderr) = sweep(&[
        "phold",
        "--lps",
        "8",
        "--end",
        "5",
        "--lookahead",
        "0.1,5",
        "--jobs",
        "1",
        "--out",
        dir,
    ]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("run p1-r0 failed (exit 2)"), "{stderr}");
    assert!(
        stderr.contains("chronon run phold --lps 8 --end 5 --lookahead 5"),
        "{stderr}"
    );
    assert_eq!(csv(&out.join("runs.csv")).len(), 1);
}

/// A full disk (a write that fails with ENOSPC, by the test hook) while a run's report is kept
/// or the results are written: the sweep stops with one line and exit 1, nothing half-written
/// is left, and the same command later finishes the study from the runs that were kept.
#[test]
fn a_full_disk_loses_no_finished_run() {
    let out = scratch("chronon-sweep", "full");
    let dir = out.to_str().unwrap();
    let args = [
        "sweep", "phold", "--lps", "8", "--end", "5", "--remote", "0.1,0.2", "--jobs", "1",
        "--out", dir,
    ];
    for file in ["p1-r0.json", "summary.csv"] {
        let run = Command::new(env!("CARGO_BIN_EXE_chronon"))
            .args(args)
            .env("CHRONON_TEST_FAIL_WRITE", file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{file}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("No space left on device"), "{stderr}");
        assert!(stderr.contains(file), "{stderr}");
        let names: Vec<String> = std::fs::read_dir(out.join("runs"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| n == "p0-r0.json" || n == "p1-r0.json"),
            "{file}: {names:?}"
        );
        assert_eq!(
            names.len(),
            if file == "summary.csv" { 2 } else { 1 },
            "{names:?}"
        );
    }
    let (code, stdout, stderr) = chronon(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("2 of 2 runs done (2 from before)"),
        "{stdout}"
    );
}

/// Runs that share the machine are not pinned to the same cores: with 2 jobs each run gets
/// `--pin off` (its report says so), unless the study gives `--pin` itself.
#[test]
fn runs_side_by_side_are_not_pinned() {
    for (pin, want) in [(None, "off"), (Some("on"), "on")] {
        let out = scratch("chronon-sweep", &format!("pin-{want}"));
        let dir = out.to_str().unwrap();
        let mut args = vec![
            "phold",
            "--lps",
            "8",
            "--end",
            "5",
            "--sync",
            "window",
            "--threads",
            "1",
            "--remote",
            "0.1,0.2",
            "--jobs",
            "2",
            "--out",
            dir,
        ];
        if let Some(p) = pin {
            args.extend(["--pin", p]);
        }
        let (code, stdout, stderr) = sweep(&args);
        assert_eq!(code, 0, "{stdout}{stderr}");
        for id in ["p0-r0", "p1-r0"] {
            let r: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(out.join(format!("runs/{id}.json"))).unwrap(),
            )
            .unwrap();
            assert_eq!(r["config"]["pin"], want, "{id}: {}", r["config"]);
        }
    }
}
