//! The models' command lines, run through the real binary: bad input exits 2 with one line
//! naming the parameter; the example configs run.

mod common;

use std::process::{Command, Output};

fn chronon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("the binary runs")
}

/// Runs `args`, expects exit 2 and a one-line error that mentions every word of `names`.
fn rejects(args: &[&str], names: &[&str]) {
    let out = chronon(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    for n in names {
        assert!(err.contains(n), "{args:?}: '{err}' does not name {n}");
    }
}

/// Runs `args`, expects success, returns stdout.
fn runs(args: &[&str]) -> String {
    let out = chronon(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn phold_phases_cli() {
    rejects(&["run", "phold-phases", "--width", "0"], &["width"]);
    rejects(
        &["run", "phold-phases", "--work-b-us", "-1"],
        &["work-b-us", ">= 0"],
    );
    let out = runs(&[
        "run",
        "phold-phases",
        "--config",
        "examples/phold-phases.toml",
        "--width",
        "6",
        "--height",
        "6",
        "--work-a-us",
        "0",
        "--work-b-us",
        "0",
        "--work-c-us",
        "0",
        "--end",
        "6",
        "--phase-length",
        "2",
    ]);
    assert!(out.contains("36 LPs"), "{out}");
}

#[test]
fn simplesim_cli() {
    rejects(
        &["run", "simplesim", "--delay-max", "0.5"],
        &["delay-max", "delay-min"],
    );
    rejects(&["run", "simplesim", "--lps", "0"], &["lps", "at least 1"]);
    rejects(
        &["run", "simplesim", "--touch", "all"],
        &[
            "--touch",
            "unknown touch 'all'",
            "allowed: none, read, write",
        ],
    );
    let out = runs(&[
        "run",
        "simplesim",
        "--end",
        "30",
        "--queue-bound",
        "20",
        "--touch",
        "write",
    ]);
    assert!(out.contains("committed"), "{out}");
    let out = runs(&[
        "run",
        "simplesim",
        "--config",
        "examples/simplesim.toml",
        "--end",
        "50",
        "--queue-bound",
        "50",
    ]);
    assert!(out.contains("committed"), "{out}");
}

#[test]
fn manufacturing_cli() {
    rejects(
        &["run", "manufacturing", "--rework", "2"],
        &["rework", "[0, 1]"],
    );
    rejects(
        &["run", "manufacturing", "--testing-stations", "0"],
        &["testing-stations", "at least 1"],
    );
    rejects(
        &["run", "manufacturing", "--work-us", "-1"],
        &["work-us", ">= 0"],
    );
    // The zero-transfer cycle named by null messages is one the model declares: with a
    // round-robin mapping, processing station 1 and its control station 2 (rework goes back).
    rejects(
        &[
            "run", "manufacturing", "--transfer", "0", "--sync", "null-message", "--threads",
            "2", "--mapping", "round-robin",
        ],
        &["cycle of zero-lookahead links: LP 1 -> LP 2 (worker 1 -> 0), LP 2 -> LP 1 (worker 0 -> 1)"],
    );
    let out = runs(&[
        "run",
        "manufacturing",
        "--config",
        "examples/manufacturing.toml",
        "--end",
        "500",
    ]);
    assert!(out.contains("committed"), "{out}");
}

#[test]
fn pcs_cli() {
    rejects(
        &["run", "pcs", "--channels", "0"],
        &["channels", "at least 1"],
    );
    rejects(
        &["run", "pcs", "--call-duration", "nan"],
        &["call-duration", "> 0"],
    );
    rejects(
        &["run", "pcs", "--fading-period", "0.001"],
        &["fading-period", "at least handoff-delay"],
    );
    let out = runs(&[
        "run",
        "pcs",
        "--config",
        "examples/pcs.toml",
        "--width",
        "4",
        "--height",
        "4",
        "--end",
        "2",
    ]);
    assert!(out.contains("16 LPs"), "{out}");
}

#[test]
fn datastore_cli() {
    rejects(
        &["run", "datastore", "--net-delay", "0"],
        &["net-delay", "> 0"],
    );
    rejects(
        &["run", "datastore", "--remote", "-0.5"],
        &["remote", "[0, 1]"],
    );
    rejects(
        &["run", "datastore", "--alloc", "later"],
        &["--alloc", "allowed: round-robin, upfront"],
    );
    let out = runs(&[
        "run",
        "datastore",
        "--config",
        "examples/datastore.toml",
        "--end",
        "20",
        "--work-us",
        "0",
    ]);
    assert!(out.contains("64 LPs"), "{out}");
}

#[test]
fn star_clique_cli() {
    rejects(
        &["run", "star-clique", "--stars", "1"],
        &["stars", "at least 2"],
    );
    rejects(
        &["run", "star-clique", "--load", "1.5"],
        &["load", "(0, 1]"],
    );
    let out = runs(&[
        "run",
        "star-clique",
        "--config",
        "examples/star-clique.toml",
        "--stars",
        "3",
        "--end",
        "1",
    ]);
    assert!(out.contains("9 LPs"), "{out}");
}

#[test]
fn campus_cli() {
    rejects(
        &["run", "campus", "--ring-delay", "0"],
        &["ring-delay", "> 0"],
    );
    rejects(
        &["run", "campus", "--campuses", "0"],
        &["campuses", "at least 1"],
    );
    rejects(
        &["run", "campus", "--refcount", "rc"],
        &["unknown refcount 'rc'", "buffered-thread"],
    );
    // Bodies counted by a scheme in this process's memory, under Time Warp on 2 threads.
    let out = runs(&[
        "run",
        "campus",
        "--config",
        "examples/campus.toml",
        "--campuses",
        "2",
        "--lans-per-net",
        "1",
        "--clients-per-lan",
        "4",
        "--end",
        "0.5",
        "--data",
        "true",
        "--refcount",
        "buffered",
        "--sync",
        "timewarp",
        "--threads",
        "2",
    ]);
    assert!(out.contains("committed"), "{out}");
    let out = runs(&[
        "run",
        "campus",
        "--config",
        "examples/campus.toml",
        "--campuses",
        "2",
        "--lans-per-net",
        "1",
        "--clients-per-lan",
        "4",
        "--end",
        "0.5",
    ]);
    assert!(out.contains("committed"), "{out}");
}

/// A scratch path unique to this test process and name, removed when it drops.
fn scratch(name: &str) -> common::Scratch {
    common::scratch("chronon-models-cli", name)
}

#[test]
fn reports_carry_model_stats() {
    let out = scratch("mm1.json");
    runs(&[
        "run",
        "manufacturing",
        "--config",
        "examples/manufacturing-mm1.toml",
        "--lines",
        "20",
        "--end",
        "600",
        "--output",
        out.to_str().unwrap(),
    ]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let stats = &report["model_stats"];
    let l = stats["processing_mean_in_station"].as_f64().unwrap();
    assert!(l > 0.5 && l < 2.0, "mean in station {l}");
    assert_eq!(report["model"], "manufacturing");
    assert_eq!(report["config"]["lines"], 20);
    assert_eq!(report["config"]["assembly-stations"], 0);
}

#[test]
fn unknown_config_keys_are_named() {
    let path = scratch("bad.toml");
    std::fs::write(&path, "lines = 2\nline-count = 3\n").unwrap();
    rejects(
        &["run", "manufacturing", "--config", path.to_str().unwrap()],
        &["line-count", "stations-per-line"],
    );
    std::fs::write(&path, "rework = \"lots\"\n").unwrap();
    rejects(
        &["run", "manufacturing", "--config", path.to_str().unwrap()],
        &["rework"],
    );
}

#[test]
fn boolean_flags_take_a_value() {
    let out = runs(&[
        "run",
        "phold-phases",
        "--wrap",
        "true",
        "--width",
        "3",
        "--height",
        "3",
        "--end",
        "3",
        "--phase-length",
        "1",
        "--work-a-us",
        "0",
        "--work-b-us",
        "0",
        "--work-c-us",
        "0",
    ]);
    assert!(out.contains("9 LPs"), "{out}");
}
