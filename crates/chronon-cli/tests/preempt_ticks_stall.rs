//! Stress test for the `--preempt` + ticks stall (docs/timewarp.md, Limits, "Fixed
//! (2026-11-24)"): the reproducing PCS command many times, two runs side by side, each given
//! 20 s (it takes well under 1 s); every run must end and print the sequential fingerprint.
//!
//! Ignored by default (a few minutes with a release binary): run it with
//! `CHRONON_BIN=target/release/chronon cargo test -p chronon-cli --test preempt_ticks_stall --
//! --ignored` (`CHRONON_STALL_RUNS` sets the number of runs, default 200). The deterministic
//! tests of the cause are in the library (`preempt::ticks` unit tests, `tests/preempt.rs`).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{chronon_at, fingerprint};

const PCS: &[&str] = &[
    "run",
    "pcs",
    "--width",
    "8",
    "--height",
    "8",
    "--fading-work",
    "5",
    "--call-interarrival",
    "0.008",
    "--residence",
    "0",
    "--end",
    "0.5",
    "--stall-secs",
    "0",
];

const TICKED: &[&str] = &[
    "--sync",
    "timewarp",
    "--threads",
    "2",
    "--preempt",
    "--tick-us",
    "50",
    "--alpha",
    "-0.99",
];

/// Runs `bin` with `args`; `None` if it did not end within `limit` (it is killed then).
fn run_within(bin: &str, args: &[&str], limit: Duration) -> Option<(bool, String)> {
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary runs");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut out = String::new();
            if let Some(mut o) = child.stdout.take() {
                use std::io::Read;
                let _ = o.read_to_string(&mut out);
            }
            return Some((status.success(), out));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
#[ignore = "needs a release binary in CHRONON_BIN; a few minutes"]
fn preempt_ticks_pcs_never_stalls() {
    let bin = std::env::var("CHRONON_BIN").expect("CHRONON_BIN names a release chronon binary");
    let runs: usize = std::env::var("CHRONON_STALL_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let (code, out, err) = chronon_at(&bin, &[PCS, &["--sync", "seq"]].concat());
    assert_eq!(code, 0, "{err}");
    let want = fingerprint(&out);
    let args: Vec<&str> = [PCS, TICKED].concat();
    // Two runs side by side (the stall came more often with other runs beside it).
    let failures: Vec<String> = std::thread::scope(|s| {
        let lanes: Vec<_> = (0..2)
            .map(|lane| {
                let (bin, args, want) = (&bin, &args, &want);
                s.spawn(move || {
                    let mut bad = Vec::new();
                    for i in (lane..runs).step_by(2) {
                        match run_within(bin, args, Duration::from_secs(20)) {
                            None => bad.push(format!("run {i}: no end in 20 s (stalled)")),
                            Some((false, _)) => bad.push(format!("run {i}: failed")),
                            Some((true, out)) if fingerprint(&out) != *want => {
                                bad.push(format!("run {i}: fingerprint {}", fingerprint(&out)))
                            }
                            Some(_) => {}
                        }
                    }
                    bad
                })
            })
            .collect();
        lanes
            .into_iter()
            .flat_map(|l| l.join().expect("lane"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {runs} runs: {failures:?}",
        failures.len()
    );
}
