//! A build without the `mpi` feature asked to run over ranks (`--ranks`, or started by
//! `mpirun`, seen through the launcher's environment: `PMI_RANK`/`PMI_SIZE`) says in one line
//! that MPI support is not compiled in and how to build it, and exits non-zero on every rank
//! (only rank 0 says it). No MPI installation is needed: the launcher's variables are set by
//! hand.
#![cfg(not(feature = "mpi"))]

use std::process::Command;

fn run(env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(args)
        .env_remove("PMI_RANK")
        .env_remove("PMI_SIZE")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const PHOLD: &[&str] = &[
    "run", "phold", "--lps", "8", "--end", "5", "--sync", "window",
];

#[test]
fn ranks_without_the_feature_are_refused_in_one_line() {
    let mut with_ranks = PHOLD.to_vec();
    with_ranks.extend(["--ranks", "2"]);
    for (env, args) in [
        (&[][..], &with_ranks[..]),
        (&[("PMI_RANK", "0"), ("PMI_SIZE", "2")][..], PHOLD),
    ] {
        let (code, stdout, stderr) = run(env, args);
        assert_eq!(code, 2, "{env:?} {args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("MPI support is not compiled in") && stderr.contains("--features mpi"),
            "{stderr}"
        );
    }
    // Another rank exits the same way without a word.
    let (code, stdout, stderr) = run(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")], PHOLD);
    assert_eq!(code, 2);
    assert!(stdout.is_empty() && stderr.is_empty(), "{stdout}{stderr}");
    // One rank (mpirun -n 1) is an ordinary run.
    let (code, _, stderr) = run(&[("PMI_RANK", "0"), ("PMI_SIZE", "1")], PHOLD);
    assert_eq!(code, 0, "{stderr}");
}

/// `chronon check --ranks` in a build without MPI support: the same one line, exit 2.
#[test]
fn check_over_ranks_without_the_feature_is_one_line() {
    let (code, stdout, stderr) = run(&[], &["check", "--ranks", "2", "--runs", "1"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("MPI support is not compiled in"),
        "{stderr}"
    );
}

/// A command line clap rejects, under a launcher: rank 0 says it, another rank exits with the
/// same code without a word (so `mpirun -n 2` prints it once, in any build).
#[test]
fn clap_errors_under_a_launcher_are_said_by_rank_0_only() {
    let args = ["run", "phold", "--bogus"];
    let (code, _, stderr) = run(&[("PMI_RANK", "0"), ("PMI_SIZE", "2")], &args);
    assert_eq!(code, 2);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--bogus"), "{stderr}");
    let (code, stdout, stderr) = run(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")], &args);
    assert_eq!(code, 2);
    assert!(stdout.is_empty() && stderr.is_empty(), "{stdout}{stderr}");
}
