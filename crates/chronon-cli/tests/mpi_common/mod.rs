//! Helpers of the MPI tests (mpi_cli.rs, mpi_timewarp.rs, mpi_check.rs; `--features mpi`,
//! MPICH's `mpirun` on the PATH): the launcher under a time limit, reports of runs in one
//! process and over ranks, per-worker sums and the ranks' pids.
// Each test binary uses a subset of these helpers.
#![allow(dead_code)]

use std::process::Command;

#[allow(unused_imports)] // not every MPI test binary compares histories
pub use super::common::history;
use super::common::{chronon, report_by};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_chronon");

/// `mpirun -n ranks chronon args...` under a 60 s `timeout` (a hang fails, exit 124, rather
/// than blocks): (exit code, stdout, stderr).
pub fn mpirun(ranks: usize, args: &[&str]) -> (i32, String, String) {
    let out = Command::new("timeout")
        .args(["60", "mpirun", "-n", &ranks.to_string(), BIN])
        .args(args)
        .output()
        .expect("timeout and mpirun run (install mpich)");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`mpirun`] with `--ranks R` added (which makes a 1-rank `mpirun` a run over MPI too).
pub fn mpirun_ranks(ranks: usize, args: &[&str]) -> (i32, String, String) {
    let r = ranks.to_string();
    let mut all = args.to_vec();
    all.extend(["--ranks", &r]);
    mpirun(ranks, &all)
}

/// The report of `args` in one process (`None`) or over `Some(R)` ranks (`mpirun -n R ...
/// --ranks R`; rank 0 writes it); the run must exit 0.
pub fn report(ranks: Option<usize>, args: &[&str]) -> serde_json::Value {
    match ranks {
        None => report_by("mpi", args, chronon),
        Some(r) => report_by("mpi", args, |a| mpirun_ranks(r, a)),
    }
}

/// A per-worker figure summed over the report's workers.
pub fn sum(r: &serde_json::Value, key: &str) -> f64 {
    r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w[key].as_f64())
        .sum()
}

/// The pids of the processes of [`BIN`] whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.starts_with(BIN) && cmd.contains(marker) {
            v.push(pid);
        }
    }
    v
}

/// A run that does not end by itself (PHOLD to t = 1e9, `--seed seed` marks its processes),
/// started with `launcher` (e.g. `["timeout", "60", "mpirun"]`, or `["mpirun"]` for a test
/// that signals mpirun itself) on `ranks` ranks, stdout and stderr piped; returned once its
/// ranks are all past `MPI_Init` (at most 20 s; asserted), with their pids (ascending).
///
/// Past `MPI_Init`, not merely started: a rank killed while it still talks PMI to hydra (the
/// init's key exchange and barrier) can make hydra's proxy fail on its own ("HYDU_sock_write
/// ... Bad file descriptor", then "assert (!closed) failed") instead of reporting the death,
/// which is hydra's race, not the run's. The pids returned are the running ranks' (not their
/// waiting parents').
pub fn start_endless(
    launcher: &[&str],
    ranks: usize,
    sync: &str,
    seed: u32,
) -> (std::process::Child, Vec<u32>) {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let seed = seed.to_string();
    let child = Command::new(launcher[0])
        .args(&launcher[1..])
        .args(["-n", &ranks.to_string(), BIN])
        .args([
            "run",
            "phold",
            "--lps",
            "300",
            "--end",
            "1e9",
            "--seed",
            &seed,
            "--sync",
            sync,
            "--threads",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let marker = format!("--seed {seed}");
    let t0 = Instant::now();
    // Each rank is two processes of the binary (`src/rank_fault/`): the waiting parent
    // `chronon-parent` and the running child, which names itself `chronon-rank-R` once past
    // `MPI_Init`.
    let running = || -> Vec<u32> {
        let mut p: Vec<u32> = pids_with(&marker)
            .into_iter()
            .filter(|&p| past_mpi_init(p))
            .collect();
        p.sort_unstable();
        p
    };
    let mut pids = running();
    while pids.len() < ranks && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        pids = running();
    }
    assert_eq!(
        pids.len(),
        ranks,
        "{sync}: every rank should be running, past MPI_Init"
    );
    // The caller waits for `child`.
    (child, pids)
}

/// Whether process `pid` is a running rank past `MPI_Init` (it names itself `chronon-rank-R`
/// once `MPI_Init` has returned; its waiting parent is `chronon-parent`).
pub fn past_mpi_init(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|c| c.starts_with("chronon-rank-"))
}
