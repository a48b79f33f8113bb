//! One-line errors for bad arguments of `chronon experiment` and of the hidden measurements
//! its experiments run as children (`chronon bench lbts-once`, `ticks-once`, `refcount-once`),
//! with the real binary: exit 2, one line on stderr, nothing written.

mod common;
mod experiment_common;

use common::chronon;
use experiment_common::scratch;

#[test]
fn the_hidden_measurements_refuse_bad_arguments_in_one_line() {
    let dir = scratch("once");
    let out = dir.join("r.json");
    let o = out.to_str().unwrap();
    for (args, want) in [
        (
            vec![
                "lbts-once",
                "--method",
                "allreduce",
                "--threads",
                "2",
                "--rounds",
                "5",
            ],
            "unknown --method 'allreduce'",
        ),
        (
            // Without the feature: not compiled in; with it, not under mpirun -n 2.
            vec![
                "lbts-once",
                "--method",
                "mpi",
                "--threads",
                "2",
                "--rounds",
                "5",
            ],
            if cfg!(feature = "mpi") {
                "mpirun started 1 rank(s)"
            } else {
                "MPI support is not compiled in"
            },
        ),
        (
            vec![
                "lbts-once",
                "--method",
                "gsu",
                "--threads",
                "0",
                "--rounds",
                "5",
            ],
            "--threads must be between 1 and",
        ),
        (
            vec![
                "ticks-once",
                "--period-us",
                "5",
                "--threads",
                "1",
                "--ms",
                "10",
            ],
            "--period-us must be a number of at least 10",
        ),
        (
            vec![
                "ticks-once",
                "--period-us",
                "50",
                "--threads",
                "1",
                "--ms",
                "0",
            ],
            "--ms must be between",
        ),
    ] {
        let mut a = vec!["bench"];
        a.extend(args);
        a.extend(["--output", o]);
        let (code, _, err) = chronon(&a);
        assert_eq!(code, 2, "{a:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{a:?}: {err}");
    }
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refcount_measurement_refuses_bad_arguments_in_one_line() {
    let dir = scratch("refcount-once");
    let out = dir.join("r.json");
    let o = out.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--measure", "pair", "--scheme", "raw", "--threads", "2"],
            "not thread-safe",
        ),
        (
            vec!["--measure", "pair", "--scheme", "rc", "--threads", "1"],
            "unknown --scheme 'rc'",
        ),
        (
            vec!["--measure", "both", "--scheme", "xadd", "--threads", "1"],
            "unknown --measure 'both'",
        ),
        (
            vec!["--measure", "pair", "--scheme", "xadd", "--threads", "0"],
            "at least 1",
        ),
    ] {
        let mut a = vec!["bench", "refcount-once", "--output", o];
        a.extend(args);
        let (code, _, err) = chronon(&a);
        assert_eq!(code, 2, "{a:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{a:?}: {err}");
    }
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_experiment_arguments_get_one_line() {
    let one_line = |args: &[&str], want: &str| {
        let (code, out, err) = chronon(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
        out
    };
    let out = one_line(&["experiment", "no-such"], "unknown experiment 'no-such'");
    assert!(out.is_empty());
    // An output directory under a regular file.
    let file = scratch("file");
    std::fs::write(&file, b"x").unwrap();
    let under = file.join("sub");
    one_line(
        &[
            "experiment",
            "001-barriers",
            "--quick",
            "--out",
            under.to_str().unwrap(),
        ],
        "is a file, not a directory",
    );
    one_line(
        &["experiment", "001-barriers", "--reps", "0"],
        "--reps is 0",
    );
    let nothing = scratch("from-nothing");
    one_line(
        &[
            "experiment",
            "001-campus",
            "--from",
            nothing.to_str().unwrap(),
        ],
        "--from: cannot read",
    );
    assert!(!nothing.exists(), "a failed --from creates nothing");
    let _ = std::fs::remove_file(&file);
}
