//! Random-model differential tests across MPI ranks (`--features mpi`, MPICH's `mpirun` on the
//! PATH): `chronon check --ranks 2,3` draws random small configurations of the models, runs
//! each sequentially in one process and under random executor options over `mpirun -n 2` and
//! `-n 3`, and compares fingerprint, committed count, `model_stats`, the model's series, last
//! time and pending events. A fixed campaign seed, so the configurations are the same on every
//! run and cover every protocol on both rank counts.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::chronon;
use mpi_common::mpirun;

/// Every model but star-clique: its Time Warp over ranks can take more than 60× its run with
/// threads on this 2-core machine (docs/benchmarks.md, docs/testing.md), past the suite's time budget.
const MODELS: &str = "random,phold,phold-phases,simplesim,manufacturing,pcs,datastore,campus";

#[test]
fn random_configurations_over_ranks_commit_the_sequential_history() {
    let (code, stdout, stderr) = chronon(&[
        "check", "--ranks", "2,3", "--runs", "10", "--seed", "3", "--models", MODELS,
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains(" 0 failed"), "{stdout}{stderr}");
    assert!(!stderr.contains("FAILED"), "{stderr}");
    // Every protocol ran over 2 and over 3 ranks (the summary's per-pair lines).
    for sync in ["window", "lockstep", "null-message", "timewarp"] {
        for ranks in ["2 ranks", "3 ranks"] {
            assert!(
                stderr.contains(&format!("{sync} ({ranks})")),
                "no {sync} run over {ranks}: {stderr}"
            );
        }
    }
    let passed: u64 = stdout
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout}"));
    assert!(passed >= 20, "only {passed} runs compared: {stderr}");
}

/// `--ranks` bad input: a rank count of 0, and `chronon check` itself under mpirun.
#[test]
fn check_ranks_bad_input_is_one_line() {
    let (code, _, stderr) = chronon(&["check", "--ranks", "2,0", "--runs", "1"]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("at least 1"), "{stderr}");
    let (code, stdout, stderr) = mpirun(2, &["check", "--ranks", "2", "--runs", "1"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("without mpirun"), "{stderr}");
}
