//! `mpirun -n R chronon sweep ...` (a build with `--features mpi`, MPICH's `mpirun` on the
//! PATH): the ranks share the runs, rank 0 writes the study, and the results equal the
//! single-process sweep's; bad input is one line and every rank stops.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::{chronon, scratch, sweep_history};
use mpi_common::mpirun;

const MM1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/manufacturing-mm1.toml"
);

fn study(dir: &str) -> Vec<&str> {
    vec![
        "sweep",
        "manufacturing",
        "--config",
        MM1,
        "--lines",
        "4",
        "--end",
        "300",
        "--interarrival",
        "2,3,4",
        "--replications",
        "4",
        "--jobs",
        "1",
        "--out",
        dir,
    ]
}

#[test]
fn three_ranks_share_a_study_and_equal_one_process() {
    let one = scratch("chronon-sweep-mpi", "one");
    let (code, stdout, stderr) = chronon(&study(one.to_str().unwrap()));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let three = scratch("chronon-sweep-mpi", "three");
    let (code, stdout, stderr) = mpirun(3, &study(three.to_str().unwrap()));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("12 of 12 runs done"), "{stdout}");
    // Each other rank ran some of the runs (12 runs, one slot per rank, asked for at once).
    let line = stdout
        .lines()
        .find(|l| l.contains("ranks 1..2 ran"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let counts: Vec<usize> = line
        .split("ran ")
        .nth(1)
        .unwrap()
        .split(" runs")
        .next()
        .unwrap()
        .split(", ")
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 2, "{line}");
    assert!(
        counts.iter().all(|&n| n > 0) && counts.iter().sum::<usize>() < 12,
        "{line}"
    );
    assert_eq!(sweep_history(&three), sweep_history(&one));
    assert_eq!(sweep_history(&one).len(), 12);
}

#[test]
fn bad_input_under_mpirun_is_one_line_and_every_rank_stops() {
    let out = scratch("chronon-sweep-mpi", "bad");
    let dir = out.to_str().unwrap();
    let (code, stdout, stderr) = mpirun(3, &["sweep", "phold", "--lps", "1..10+0", "--out", dir]);
    assert_ne!(code, 0, "{stdout}{stderr}");
    assert_ne!(code, 124, "a rank hung: {stdout}{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("the range never ends"), "{stderr}");
    assert!(!out.exists());
}
