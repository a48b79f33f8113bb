//! `--runtime bsp` (seed 002's BSP version of the lock-step protocol): `--threads N` starts N
//! single-threaded worker processes that exchange events only at the superstep barrier. The
//! history (fingerprint, committed count, `model_stats`) equals the sequential run's; bad
//! combinations are one line and exit 2.

mod common;

use common::chronon;

/// Runs `args` with `--output` to a fresh directory and returns the report.
fn report(args: &[&str], tag: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("chronon-bsp-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = format!("{}/", dir.display());
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--output", &out]);
    let (code, stdout, stderr) = chronon(&all);
    assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_str(&text).unwrap()
}

fn history(r: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "fingerprint": r["fingerprint"],
        "committed": r["committed"],
        "model_stats": r["model_stats"],
        "last_time": r["last_time"],
    })
}

fn same_as_sequential(model: &[&str], tag: &str) {
    let mut seq: Vec<&str> = model.to_vec();
    seq.extend(["--sync", "seq"]);
    let want = history(&report(&seq, &format!("{tag}-seq")));
    assert!(
        want["committed"].as_u64().unwrap() > 0,
        "{tag}: an empty run"
    );
    for n in ["1", "2", "3"] {
        let mut bsp: Vec<&str> = model.to_vec();
        bsp.extend(["--sync", "lockstep", "--runtime", "bsp", "--threads", n]);
        let r = report(&bsp, &format!("{tag}-{n}"));
        assert_eq!(history(&r), want, "{tag} with {n} BSP processes");
        // One single-threaded process per --threads, and the config reruns the run as asked.
        assert_eq!(r["executor_stats"]["procs"].as_f64(), n.parse::<f64>().ok());
        assert_eq!(r["config"]["runtime"], "bsp");
        assert_eq!(r["config"]["threads"].as_u64(), n.parse::<u64>().ok());
        // The processes meet at their own barrier: the config names none (a rerun from it
        // would be refused), and says how payloads crossed them.
        assert!(r["config"].get("barrier").is_none(), "{}", r["config"]);
        assert!(r["config"].get("fan-in").is_none(), "{}", r["config"]);
        assert_eq!(r["config"]["payload"], "zero-copy");
    }
}

#[test]
fn manufacturing_under_bsp_commits_the_sequential_history() {
    same_as_sequential(
        &["run", "manufacturing", "--end", "300", "--work-us", "0"],
        "mfg",
    );
    // Zero-lookahead transfers: the lock-step rule for crossing LPs, across processes.
    same_as_sequential(
        &["run", "manufacturing", "--end", "150", "--transfer", "0"],
        "mfg0",
    );
}

#[test]
fn phold_under_bsp_commits_the_sequential_history() {
    same_as_sequential(
        &[
            "run",
            "phold",
            "--lps",
            "48",
            "--start-events",
            "2",
            "--end",
            "20",
        ],
        "phold",
    );
}

#[test]
fn bad_bsp_combinations_are_one_line_and_exit_2() {
    let bad = |args: &[&str], needle: &str| {
        let (code, stdout, stderr) = chronon(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    };
    let m = ["run", "manufacturing", "--end", "20"];
    let with = |extra: &[&'static str]| -> Vec<&str> { m.iter().chain(extra).copied().collect() };
    bad(
        &with(&["--sync", "window", "--runtime", "bsp", "--threads", "2"]),
        "--runtime bsp applies to --sync lockstep only",
    );
    bad(
        &with(&[
            "--sync",
            "lockstep",
            "--runtime",
            "bsp",
            "--threads",
            "2",
            "--procs",
            "2",
        ]),
        "leave out --procs",
    );
    bad(
        &with(&["--sync", "lockstep", "--runtime", "bsp", "--threshold", "5"]),
        "--threshold applies to --runtime work-stealing and active-threads only",
    );
    // Refused before MPI is set up: the same line in a build with or without the feature.
    bad(
        &with(&[
            "--sync",
            "lockstep",
            "--runtime",
            "bsp",
            "--threads",
            "2",
            "--ranks",
            "2",
        ]),
        "--runtime bsp starts worker processes on this machine and does not run over MPI ranks",
    );
}
