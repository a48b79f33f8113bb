//! Load that moves, as a user runs it: `--balance T` keeps the fingerprint of `--sync seq`
//! under every parallel executor, on threads and worker processes, and the report says LPs
//! moved; `--lp-costs FILE` writes a profile that `--mapping profile:FILE` maps a later run
//! from; the report's `top_lps` and the summary's `costliest` line name the hot LPs; bad
//! values get one line and exit code 2.

mod common;

use common::chronon;

/// 128 LPs, 8 hot ones (the first 8 unless `--hot-move` moves them).
const HOT: &[&str] = &[
    "run",
    "phold",
    "--lps",
    "128",
    "--hot-lps",
    "8",
    "--hot-work-us",
    "20",
    "--end",
    "12",
    "--seed",
    "4",
];

fn run_ok(extra: &[&str]) -> (String, serde_json::Value) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = common::scratch("chronon-balance-cli", &format!("r{n}"));
    let report = dir.join("r.json");
    let mut args: Vec<&str> = HOT.to_vec();
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--output", report.to_str().unwrap()]);
    let (code, stdout, stderr) = chronon(&args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    let text = std::fs::read_to_string(&report).unwrap();
    (stdout, serde_json::from_str(&text).unwrap())
}

fn refused(extra: &[&str], what: &str) {
    let mut args: Vec<&str> = HOT.to_vec();
    args.extend_from_slice(extra);
    refused_whole(&args, what);
}

fn refused_whole(args: &[&str], what: &str) {
    let extra = args;
    let (code, _, stderr) = chronon(args);
    assert_eq!(code, 2, "{extra:?}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(what), "{extra:?}: {stderr}");
}

#[test]
fn balancing_keeps_the_sequential_fingerprint_and_moves_lps() {
    let (_, seq) = run_ok(&["--hot-move", "2", "--sync", "seq"]);
    for extra in [
        &["--sync", "window", "--threads", "2"][..],
        &["--sync", "lockstep", "--threads", "2"],
        &["--sync", "null-message", "--threads", "2"],
        &["--sync", "timewarp", "--threads", "2"],
        &["--sync", "window", "--threads", "1", "--procs", "2"],
        &["--sync", "timewarp", "--threads", "1", "--procs", "2"],
    ] {
        let mut args = extra.to_vec();
        args.extend_from_slice(&["--hot-move", "2", "--balance", "1"]);
        let (_, r) = run_ok(&args);
        assert_eq!(r["fingerprint"], seq["fingerprint"], "{args:?}");
        assert_eq!(r["committed"], seq["committed"], "{args:?}");
        assert_eq!(r["model_stats"], seq["model_stats"], "{args:?}");
        let st = &r["executor_stats"];
        assert_eq!(st["balance_cuts"], 11.0, "{args:?}");
        assert!(st["lps_moved"].as_f64().unwrap() > 0.0, "{args:?}: {st}");
        assert_eq!(r["config"]["balance"], "1", "{args:?}");
    }
}

#[test]
fn a_profile_written_by_one_run_maps_the_next() {
    let dir = common::scratch("chronon-balance-cli", "profile");
    let profile = dir.join("costs.csv");
    let p = profile.to_str().unwrap();
    // Hot LPs 0..8 that never move: the profile finds them.
    let fixed = ["--sync", "window", "--threads", "2"];
    let mut args = fixed.to_vec();
    args.extend_from_slice(&["--lp-costs", p]);
    let (summary, first) = run_ok(&args);
    assert!(summary.contains("costliest    LP "), "{summary}");
    let top: Vec<u64> = first["top_lps"]
        .as_array()
        .unwrap()
        .iter()
        .take(8)
        .map(|t| t["lp"].as_u64().unwrap())
        .collect();
    assert!(
        top.iter().filter(|&&lp| lp < 8).count() >= 6,
        "the hot LPs lead top_lps: {top:?}"
    );
    let text = std::fs::read_to_string(&profile).unwrap();
    assert!(text.starts_with("# chronon lp-costs model=phold lps=128\nlp,events,ns\n"));
    assert_eq!(text.lines().count(), 130);
    let mut args = fixed.to_vec();
    let mapping = format!("profile:{p}");
    args.extend_from_slice(&["--mapping", &mapping]);
    let (_, second) = run_ok(&args);
    assert_eq!(second["fingerprint"], first["fingerprint"]);
    assert_eq!(second["config"]["mapping"], mapping.as_str());
    // The hot LPs are split over both workers: the imbalance is lower than under blocks.
    let imb = |r: &serde_json::Value| r["parallelism"]["imbalance"].as_f64().unwrap();
    assert!(
        imb(&second) < imb(&first),
        "{} vs {}",
        imb(&second),
        imb(&first)
    );

    // A profile of another LP count, another model, or not a profile at all.
    refused_whole(
        &[
            "run",
            "phold",
            "--lps",
            "64",
            "--end",
            "2",
            "--sync",
            "window",
            "--mapping",
            &mapping,
        ],
        "a profile of 128 LPs; this run has 64",
    );
    let other = dir.join("other.csv");
    std::fs::write(&other, text.replace("model=phold", "model=pcs")).unwrap();
    let m = format!("profile:{}", other.display());
    refused(
        &["--sync", "window", "--mapping", &m],
        "a profile of the model pcs, not phold",
    );
    std::fs::write(&other, text.replace("\n5,", "\n5,x")).unwrap();
    refused(&["--sync", "window", "--mapping", &m], "line 8 is `5,x");
    std::fs::write(&other, "hello\n").unwrap();
    refused(
        &["--sync", "window", "--mapping", &m],
        "not an LP-cost profile",
    );
    let gone = format!("profile:{}", dir.join("gone.csv").display());
    refused(&["--sync", "window", "--mapping", &gone], "cannot read it");
}

#[test]
fn bad_balance_values_get_one_line() {
    for bad in ["0", "-1", "nan", "inf", "soon"] {
        refused(
            &["--sync", "window", "--balance", bad],
            "it must be off, auto or a period",
        );
    }
    refused(
        &["--sync", "seq", "--balance", "1"],
        "workers that own them",
    );
    refused(
        &[
            "--sync",
            "lockstep",
            "--runtime",
            "work-stealing",
            "--balance",
            "1",
        ],
        "workers that own them",
    );
    // `off` is the default, spelled out.
    let (_, r) = run_ok(&["--sync", "window", "--threads", "2", "--balance", "off"]);
    assert!(r["executor_stats"].get("balance_cuts").is_none());
}
