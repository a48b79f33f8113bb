//! Sizes are checked before anything is allocated: each of these ends at once with one line on
//! stderr and exit code 2 (never an abort, an overflow panic, an OOM kill or a hang).
//!
//! `CHRONON_MEMORY_LIMIT` fixes the memory the check compares with, so the outcome does not
//! depend on the machine (on a large one the borderline cases would otherwise start to run).

use std::process::Command;

/// Runs `chronon run ARGS` with an 8 GiB memory limit: (exit code, stdout, stderr).
fn run_limited(args: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .arg("run")
        .args(args.split_whitespace())
        .env("CHRONON_MEMORY_LIMIT", "8G")
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts a refusal: exit 2, one line on stderr containing every one of `words`.
fn refused(args: &str, words: &[&str]) {
    let (code, out, err) = run_limited(args);
    assert_eq!(code, 2, "{args}: stdout {out} stderr {err}");
    assert_eq!(err.lines().count(), 1, "{args}: {err}");
    for w in words {
        assert!(err.contains(w), "{args}: '{w}' not in {err}");
    }
}

#[test]
fn too_many_lps_and_start_events() {
    refused(
        "phold --lps 4000000000 --start-events 1000 --end 1",
        &[
            "4000000000 LPs × 1000 pending events",
            "8.0 GiB is available",
        ],
    );
    refused(
        "phold --lps 1 --start-events 1000000000",
        &["1000000000 pending events", "CHRONON_MEMORY_LIMIT"],
    );
}

#[test]
fn threads_beyond_the_lps() {
    refused(
        "phold --sync window --threads 100000 --lps 10",
        &["--threads is 100000 for 10 LPs", "at most 64"],
    );
    refused(
        "phold --sync timewarp --threads 5000 --lps 100000",
        &["at most 4096"],
    );
}

#[test]
fn shared_sets_beyond_the_lps() {
    refused(
        "phold --sync window --threads 2 --dedicated 0 --shared-sets 18446744073709551615",
        &["--shared-sets is 18446744073709551615", "at most 1024"],
    );
}

#[test]
fn model_dimensions() {
    refused(
        "datastore --ops-per-tx 4294967295",
        &["ops-per-tx", "available"],
    );
    refused(
        "simplesim --payload-bytes 1073741824 --end 100",
        &["5000 pending events × 1.0 GiB per event"],
    );
    refused("phold --state-bytes 18446744073709551615", &["16 EiB"]);
    refused(
        "phold-phases --jobs-per-object 4294967295 --width 1000 --height 1000",
        &["pending events"],
    );
    refused("pcs --call-interarrival 1e-300", &["pending events"]);
    refused("manufacturing --transfer 1e300", &["pending events"]);
}

#[test]
fn sizes_that_fit_still_run() {
    let (code, out, err) = run_limited("phold --lps 64 --start-events 2 --end 5");
    assert_eq!(code, 0, "{out} {err}");
    let (code, out, err) =
        run_limited("phold --lps 4 --start-events 2 --end 5 --sync window --threads 8");
    assert_eq!(code, 0, "more workers than LPs, within 64: {out} {err}");
}

#[test]
fn null_messages_refuse_a_tiny_lookahead() {
    refused(
        "phold --lookahead 1e-12 --sync null-message --threads 2 --end 10",
        &[
            "lookahead 1e-12",
            "1.000e13 null messages",
            "cap is 10000000000",
            "--sync window",
        ],
    );
    // The differential suite's lookaheads (0.1 to 1, ends up to about 100) are far below it.
    let (code, out, err) =
        run_limited("phold --lps 16 --lookahead 0.1 --sync null-message --threads 2 --end 100");
    assert_eq!(code, 0, "{out} {err}");
    // The cap is the user's: lowered, it refuses that run too (1000 null messages needed).
    refused(
        "phold --lps 16 --lookahead 0.1 --sync null-message --threads 2 --end 100 --max-null-messages 999",
        &["1.000e3 null messages", "cap is 999"],
    );
    let (code, out, err) = run_limited(
        "phold --lps 16 --lookahead 0.1 --sync null-message --threads 2 --end 100 --max-null-messages 1000",
    );
    assert_eq!(code, 0, "{out} {err}");
    refused(
        "phold --sync window --threads 2 --max-null-messages 1000",
        &["--max-null-messages applies to --sync null-message only"],
    );
    refused(
        "phold --sync null-message --threads 2 --max-null-messages 0.5",
        &["--max-null-messages is 0.5"],
    );
    refused("phold --stall-secs -1", &["--stall-secs is -1"]);
}

#[test]
fn a_stalled_run_warns_once() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // Delays near 0: simulated time never advances; the run would go on forever.
    let mut child = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args([
            "run",
            "phold",
            "--lps",
            "4",
            "--lookahead",
            "0",
            "--mean",
            "1e-300",
            "--stall-secs",
            "0.5",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("a line");
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(
        line.starts_with("warning: simulated time has advanced only"),
        "{line}"
    );
    assert!(line.contains("zero- or near-zero-delay events"), "{line}");
}
