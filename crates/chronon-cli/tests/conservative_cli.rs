//! The real binary: the conservative executors' flags, good and bad.

use std::process::Command;

fn chronon(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fingerprint(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("fingerprint"))
        .unwrap_or_else(|| panic!("no fingerprint in {stdout}"))
        .to_string()
}

fn bad(args: &[&str], needle: &str) {
    let (code, stdout, stderr) = chronon(args);
    assert_eq!(code, 2, "{args:?}: {stderr}");
    assert!(stdout.is_empty(), "{args:?}: {stdout}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
}

const BASE: &[&str] = &[
    "run",
    "phold",
    "--lps",
    "32",
    "--end",
    "10",
    "--start-events",
    "2",
];

fn with(extra: &[&str]) -> Vec<String> {
    BASE.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run_ok(extra: &[&str]) -> String {
    let args = with(extra);
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let (code, stdout, stderr) = chronon(&refs);
    assert_eq!(code, 0, "{extra:?}: {stderr}");
    fingerprint(&stdout)
}

#[test]
fn every_sync_and_barrier_prints_the_sequential_fingerprint() {
    let seq = run_ok(&[]);
    for sync in ["window", "lockstep", "null-message"] {
        for (barrier, threads) in [
            ("tree", "3"),
            ("spin", "2"),
            ("semaphore", "4"),
            ("std", "2"),
        ] {
            let fp = run_ok(&[
                "--sync",
                sync,
                "--threads",
                threads,
                "--barrier",
                barrier,
                "--fan-in",
                "2",
            ]);
            assert_eq!(fp, seq, "{sync} {barrier} x{threads}");
        }
    }
    let mesh = run_ok(&["--topology", "mesh2d"]);
    assert_eq!(
        run_ok(&[
            "--topology",
            "mesh2d",
            "--sync",
            "null-message",
            "--threads",
            "4",
            "--mapping",
            "round-robin"
        ]),
        mesh
    );
}

#[test]
fn bad_conservative_flags_exit_2_with_one_line() {
    let args = |extra: &[&str]| with(extra);
    let check = |extra: &[&str], needle: &str| {
        let a = args(extra);
        let refs: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        bad(&refs, needle);
    };
    check(&["--sync", "window", "--threads", "0"], "--threads is 0");
    check(&["--sync", "lockstep", "--threads", "0"], "--threads is 0");
    check(
        &["--sync", "optimistic"],
        "allowed: seq, window, null-message, lockstep",
    );
    check(
        &["--sync", "window", "--threads", "2", "--barrier", "posix"],
        "allowed: std, semaphore, spin, tree",
    );
    check(
        &["--sync", "window", "--threads", "2", "--fan-in", "0"],
        "--fan-in is 0",
    );
    check(
        &["--sync", "window", "--threads", "2", "--mapping", "random"],
        "allowed: block, round-robin",
    );
    check(&["--topology", "ring"], "allowed: mesh, mesh2d");
    check(
        &[
            "--sync",
            "null-message",
            "--threads",
            "2",
            "--lookahead",
            "0",
        ],
        "cycle of zero-lookahead links",
    );
}

#[test]
fn bench_barriers_prints_both_tables() {
    let (code, stdout, stderr) = chronon(&[
        "bench",
        "barriers",
        "--threads",
        "1,2",
        "--m",
        "1,4",
        "--waits",
        "2000",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Table 1"), "{stdout}");
    assert!(stdout.contains("Table 2"), "{stdout}");
    assert!(stdout.contains("2 threads"), "{stdout}");
    bad(&["bench", "barriers", "--threads", "0"], "at least 1");
}
