//! LPs that move between workers over MPI ranks (`--balance`, `--features mpi`, MPICH's
//! `mpirun` on the PATH): rank 0 decides each new mapping from the LP costs it gathered and
//! every rank reads it from the cut directory; the history is the sequential one under every
//! protocol over 2 and 3 ranks, with a fixed period and with `auto`, and LPs moved.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use mpi_common::{history, report};

const HOT: &[&str] = &[
    "run",
    "phold",
    "--lps",
    "96",
    "--hot-lps",
    "8",
    "--hot-work-us",
    "20",
    "--hot-move",
    "2",
    "--end",
    "10",
    "--seed",
    "3",
];

#[test]
fn lps_move_over_ranks_and_the_history_is_sequential() {
    let seq = history(&report(None, HOT));
    for (sync, ranks, balance) in [
        ("window", 2, "1"),
        ("lockstep", 3, "1"),
        ("null-message", 2, "auto"),
        ("timewarp", 2, "1"),
    ] {
        let mut args = HOT.to_vec();
        args.extend(["--sync", sync, "--threads", "1", "--balance", balance]);
        let r = report(Some(ranks), &args);
        assert_eq!(history(&r), seq, "{args:?} over {ranks} ranks");
        let st = &r["executor_stats"];
        assert!(
            st["balance_cuts"].as_f64().unwrap() >= 1.0,
            "{args:?}: {st}"
        );
        if balance == "1" {
            assert!(st["lps_moved"].as_f64().unwrap() > 0.0, "{args:?}: {st}");
        }
    }
}
