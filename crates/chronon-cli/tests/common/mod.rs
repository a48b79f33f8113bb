//! Helpers shared by the test binaries that run the real `chronon` binary.
// Each test binary uses a subset of these helpers.
#![allow(dead_code)]

use std::process::Command;

/// A small PHOLD run (32 LPs, 2 start events each, end 20): well under a second.
pub const SMALL: &[&str] = &[
    "run",
    "phold",
    "--lps",
    "32",
    "--start-events",
    "2",
    "--end",
    "20",
];

/// Runs `chronon` with `args`: (exit code, stdout, stderr).
pub fn chronon(args: &[&str]) -> (i32, String, String) {
    chronon_at(env!("CARGO_BIN_EXE_chronon"), args)
}

/// Runs the `chronon` binary at `bin` (another build of it, e.g. the release one) with `args`.
pub fn chronon_at(bin: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The fingerprint a summary printed (its hex digits).
pub fn fingerprint(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint"))
        .unwrap_or_else(|| panic!("no fingerprint in {stdout}"))
        .trim()
        .to_string()
}
