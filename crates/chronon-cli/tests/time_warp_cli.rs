//! The real `chronon` binary with Time Warp flags: bad values exit 2 with one line; a good run
//! prints the sequential fingerprint and writes the GVT series.

mod common;

use common::{chronon, fingerprint};

const SMALL: &[&str] = &["run", "phold", "--lps", "32", "--end", "20"];

fn with(extra: &[&str]) -> Vec<String> {
    SMALL.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run(extra: &[&str]) -> (i32, String, String) {
    let args = with(extra);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    chronon(&refs)
}

#[test]
fn bad_time_warp_flags_exit_2_with_one_line() {
    for (extra, needle) in [
        (
            &["--sync", "timewarp", "--checkpoint", "0"][..],
            "--checkpoint",
        ),
        (
            &["--sync", "timewarp", "--max-memory", "0"][..],
            "--max-memory",
        ),
        (
            &["--sync", "timewarp", "--max-memory", "lots"][..],
            "--max-memory",
        ),
        (&["--sync", "timewarp", "--window", "-1"][..], "--window"),
        (
            &["--sync", "timewarp", "--state-saving", "magic"][..],
            "state saving",
        ),
        (&["--sync", "timewarp", "--threads", "0"][..], "--threads"),
        (&["--sync", "seq", "--checkpoint", "4"][..], "timewarp"),
        (&["--sync", "seq", "--check-reverse"][..], "timewarp"),
        // An option the chosen state saving would ignore is an error (PHOLD has a reverse
        // handler, so auto picks reverse).
        (
            &[
                "--sync",
                "timewarp",
                "--state-saving",
                "reverse",
                "--checkpoint",
                "4",
            ][..],
            "copy state saving only",
        ),
        (
            &["--sync", "timewarp", "--checkpoint", "4"][..],
            "ask for copy",
        ),
        (
            &["--sync", "seq", "--mapping", "block"][..],
            "lockstep or timewarp only",
        ),
    ] {
        let (code, _, err) = run(extra);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
}

#[test]
fn time_warp_prints_the_sequential_fingerprint_and_writes_gvt_csv() {
    let (code, seq, err) = run(&[]);
    assert_eq!(code, 0, "{err}");
    let dir = std::env::temp_dir().join(format!("chronon-tw-cli-{}", std::process::id()));
    let out = format!("{}/", dir.display());
    let (code, tw, err) = run(&[
        "--sync",
        "timewarp",
        "--threads",
        "2",
        "--state-saving",
        "copy",
        "--checkpoint",
        "2",
        "--max-memory",
        "4M",
        "--output",
        &out,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fingerprint(&tw), fingerprint(&seq));
    let csv = std::fs::read_to_string(dir.join("gvt.csv")).expect("gvt.csv");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("wall_s,gvt,window"));
    let last: Vec<f64> = lines
        .last()
        .expect("at least one GVT")
        .split(',')
        .map(|v| v.parse().expect("a number"))
        .collect();
    assert_eq!(last[1], 20.0, "the series ends at the end time");
    assert!(last[2] > 0.0, "the window in force (inf while unbounded)");
    let report = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    assert!(report.contains("\"efficiency\""));
    let _ = std::fs::remove_dir_all(&dir);
    // --check-reverse passes on PHOLD.
    let (code, chk, err) = run(&["--sync", "timewarp", "--threads", "2", "--check-reverse"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fingerprint(&chk), fingerprint(&seq));
}
