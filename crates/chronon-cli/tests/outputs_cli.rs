//! Output files: checked before the run starts, never two outputs on one file, written
//! atomically (no truncated report, no temporary file left behind), and kept when the write
//! fails after a run.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::SMALL;

fn chronon(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chronon-outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A PHOLD run that would take minutes: a refused output must stop it before it starts.
const LONG: &[&str] = &["run", "phold", "--lps", "64", "--end", "1e9"];

fn args<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

/// Exit 2, one line naming `words`, and no summary: nothing ran.
fn refused(out: &Output, words: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(words),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "the run started: {:?}", out.stdout);
}

#[test]
fn an_output_that_cannot_be_written_is_refused_before_the_run() {
    let d = scratch("unwritable");
    let file = d.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("report.json");
    let out = chronon(
        &args(LONG, &["--output", under_file.to_str().unwrap()]),
        &[],
    );
    refused(&out, "is a file, not a directory");
    // /proc accepts no new directories, even for root.
    let out = chronon(
        &args(LONG, &["--output", "/proc/chronon-test/report.json"]),
        &[],
    );
    refused(&out, "cannot create directory /proc/chronon-test");
    let out = chronon(
        &args(LONG, &["--sync", "timewarp", "--gvt-csv", "/proc/gvt.csv"]),
        &[],
    );
    refused(&out, "--gvt-csv /proc/gvt.csv");
    // A device is not replaced by a renamed file.
    let out = chronon(&args(LONG, &["--output", "/dev/full"]), &[]);
    refused(&out, "not a regular file");
    let out = chronon(
        &args(
            LONG,
            &["--sync", "timewarp", "--gvt-csv", d.to_str().unwrap()],
        ),
        &[],
    );
    refused(&out, "is a directory");
    assert_eq!(entries(&d), ["a-file"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn two_outputs_on_one_file_are_refused() {
    let d = scratch("collide");
    let dir = format!("{}/", d.display());
    let report = d.join("report.json");
    // --output DIR/ writes DIR/report.json: --gvt-csv may not write it too.
    let out = chronon(
        &args(
            LONG,
            &[
                "--sync",
                "timewarp",
                "--output",
                &dir,
                "--gvt-csv",
                report.to_str().unwrap(),
            ],
        ),
        &[],
    );
    refused(&out, "both write");
    // The same file spelled two ways.
    let other = d.join("sub/../report.json");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let out = chronon(
        &args(
            LONG,
            &[
                "--sync",
                "timewarp",
                "--output",
                report.to_str().unwrap(),
                "--gvt-csv",
                other.to_str().unwrap(),
            ],
        ),
        &[],
    );
    refused(&out, "both write");
    // The report may not overwrite the config file the run reads.
    let cfg = d.join("run.toml");
    std::fs::write(&cfg, "end = 1e9\n").unwrap();
    let out = chronon(
        &[
            "run",
            "phold",
            "--config",
            cfg.to_str().unwrap(),
            "--output",
            cfg.to_str().unwrap(),
        ],
        &[],
    );
    refused(&out, "is the --config file");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), "end = 1e9\n");
    assert_eq!(entries(&d), ["run.toml", "sub"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn output_dir_gets_the_report_gvt_progress_lp_costs_and_series_csv_and_nothing_else() {
    let d = scratch("dir");
    let dir = d.join("new/deeper/");
    let dir_arg = format!("{}/", dir.display());
    let out = chronon(
        &args(
            SMALL,
            &["--sync", "timewarp", "--threads", "2", "--output", &dir_arg],
        ),
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        entries(&dir),
        [
            "gvt.csv",
            "lp-costs.csv",
            "progress.csv",
            "report.json",
            "series.csv"
        ]
    );
    // phold records no global-event series: the header alone.
    assert_eq!(
        std::fs::read_to_string(dir.join("series.csv")).unwrap(),
        "series,time,value\n"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_failed_write_leaves_no_truncated_file_and_keeps_the_results() {
    let d = scratch("fail");
    let report = d.join("report.json");
    // An earlier report stays whole when the next write fails half-way.
    std::fs::write(&report, "{\"earlier\": true}\n").unwrap();
    let out = chronon(
        &args(SMALL, &["--output", report.to_str().unwrap()]),
        &[("CHRONON_TEST_FAIL_WRITE", "report.json")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    // The summary was printed before the write.
    assert!(String::from_utf8_lossy(&out.stdout).contains("fingerprint"));
    assert_eq!(
        std::fs::read_to_string(&report).unwrap(),
        "{\"earlier\": true}\n"
    );
    assert_eq!(
        entries(&d),
        ["report.json"],
        "a temporary file was left behind"
    );
    // The results are saved elsewhere, whole, and the message says where.
    let saved = stderr
        .split("saved in ")
        .nth(1)
        .and_then(|s| s.split(" instead").next())
        .unwrap_or_else(|| panic!("no rescue file named in {stderr}"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert_eq!(v["model"], "phold");
    std::fs::remove_file(saved).unwrap();

    // Without an earlier file, a failed write leaves none at all.
    std::fs::remove_file(&report).unwrap();
    let out = chronon(
        &args(SMALL, &["--output", report.to_str().unwrap()]),
        &[("CHRONON_TEST_FAIL_WRITE", "report.json")],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(saved) = stderr
        .split("saved in ")
        .nth(1)
        .and_then(|s| s.split(" instead").next())
    {
        let _ = std::fs::remove_file(saved);
    }
    assert!(entries(&d).is_empty(), "{:?}", entries(&d));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_output_path_without_extension_that_does_not_exist_is_a_directory() {
    let d = scratch("noext");
    let target = d.join("out").join("seq");
    let out = chronon(&args(SMALL, &["--output", target.to_str().unwrap()]), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        entries(&target),
        ["lp-costs.csv", "progress.csv", "report.json", "series.csv"]
    );
    // An existing file without an extension is still the report file it names.
    let file = d.join("report");
    std::fs::write(&file, "old").unwrap();
    let out = chronon(&args(SMALL, &["--output", file.to_str().unwrap()]), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with('{') && text.contains("\"fingerprint\""),
        "{text}"
    );
}
