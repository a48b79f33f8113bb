//! The MPI parts of the seed-000 experiments (a build with `--features mpi`, MPICH's `mpirun`
//! on PATH): `--quick` runs of 000-fig7, 000-fig8, 000-fig9 and 000-gsu measure the MPI line/column
//! under `mpirun`, with the same fingerprint as the shared-memory lines, and draw it.
#![cfg(feature = "mpi")]

mod common;
mod experiment_common;

use common::chronon;
use experiment_common::{col, quick, Row};

/// Every (key value) has the three lines, with positive run times and one fingerprint.
fn three_lines_one_history(rows: &[Row], key: &str, values: &[&str]) {
    for v in values {
        let cell: Vec<&Row> = rows.iter().filter(|r| col(r, key) == *v).collect();
        let mut transports: Vec<&str> = cell.iter().map(|r| col(r, "transport")).collect();
        transports.sort_unstable();
        assert_eq!(transports, ["copy", "mpi", "zero-copy"], "{key} {v}");
        for r in &cell {
            let wall: f64 = col(r, "wall_s").parse().unwrap();
            assert!(wall > 0.0 && wall.is_finite(), "{r:?}");
        }
        let fp = col(cell[0], "fingerprint48");
        assert!(!fp.is_empty(), "{:?}", cell[0]);
        for r in &cell {
            assert_eq!(col(r, "fingerprint48"), fp, "{key} {v}: {r:?}");
            assert_eq!(col(r, "committed"), col(cell[0], "committed"), "{r:?}");
        }
    }
}

#[test]
fn fig7_has_the_mpi_line_with_the_same_history() {
    let (rows, md, texts) = quick("000-fig7", &[]);
    assert_eq!(rows.len(), 9, "three sizes, three lines: {rows:?}");
    three_lines_one_history(&rows, "bytes", &["500", "5000", "50000"]);
    assert!(md.contains("| MPI s | MPI / zero copy |"), "{md}");
    assert!(!md.contains("needs --features mpi"), "{md}");
    assert!(md.contains("equal fingerprints"), "{md}");
    assert!(texts.iter().any(|t| t == "MPI (2 ranks)"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "copy"), "{texts:?}");
}

#[test]
fn fig8_has_the_mpi_line_over_as_many_ranks_as_processes() {
    let (rows, md, texts) = quick("000-fig8", &[]);
    assert_eq!(rows.len(), 6, "two process counts, three lines: {rows:?}");
    three_lines_one_history(&rows, "procs", &["2", "4"]);
    assert!(md.contains("| MPI s | MPI / zero copy |"), "{md}");
    assert!(texts.iter().any(|t| t == "MPI (R ranks)"), "{texts:?}");
}

#[test]
fn fig9_has_the_mpi_line_over_as_many_ranks_as_stars() {
    let (rows, md, texts) = quick("000-fig9", &[]);
    assert_eq!(rows.len(), 6, "two process counts, three lines: {rows:?}");
    three_lines_one_history(&rows, "procs", &["2", "4"]);
    assert!(md.contains("| MPI s | MPI / zero copy |"), "{md}");
    assert!(texts.iter().any(|t| t == "MPI (R ranks)"), "{texts:?}");
}

#[test]
fn gsu_has_the_mpi_all_gather_column() {
    let (rows, md, texts) = quick("000-gsu", &["--threads", "1,2"]);
    for t in ["1", "2"] {
        let r = rows
            .iter()
            .find(|r| col(r, "method") == "mpi" && col(r, "threads") == t)
            .unwrap_or_else(|| panic!("no mpi x{t}: {rows:?}"));
        let ns: f64 = col(r, "ns_per_lbts").parse().unwrap();
        assert!(ns > 0.0 && ns.is_finite(), "{r:?}");
    }
    assert!(md.contains("MPI all-gather ns"), "{md}");
    assert!(!md.contains("needs --features mpi"), "{md}");
    assert!(
        texts.iter().any(|t| t == "MPI all-gather, µs per LBTS"),
        "{texts:?}"
    );
}

#[test]
fn the_mpi_lbts_bench_refuses_a_rank_count_mismatch_in_one_line() {
    let out = std::env::temp_dir().join(format!("chronon-xpmpi-{}-l.json", std::process::id()));
    let o = out.to_str().unwrap();
    // Run directly (one rank) but asked for 2.
    let (code, _, err) = chronon(&[
        "bench",
        "lbts-once",
        "--method",
        "mpi",
        "--threads",
        "2",
        "--rounds",
        "10",
        "--output",
        o,
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("mpirun started 1 rank(s)"), "{err}");
    assert!(!out.exists());
}
