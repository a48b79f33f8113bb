//! LPs that move between workers over MPI ranks (`--balance`, `--features mpi`, MPICH's
//! `mpirun` on the PATH): not yet; the run is refused in one line.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

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
fn balancing_over_ranks_is_refused_in_one_line() {
    for sync in ["window", "timewarp"] {
        let mut args = HOT.to_vec();
        args.extend(["--sync", sync, "--threads", "1", "--balance", "1"]);
        let (code, _, err) = mpi_common::mpirun_ranks(2, &args);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains("do not move over MPI ranks"),
            "{args:?}: {err}"
        );
    }
}
