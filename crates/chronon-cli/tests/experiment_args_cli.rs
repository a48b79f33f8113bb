//! One-line errors for bad arguments of `chronon experiment` and of the hidden measurements
//! its experiments run as children (`chronon bench lbts-once`, `ticks-once`, `refcount-once`),
//! with the real binary: exit 2, one line on stderr, nothing written.

mod common;
mod experiment_common;

use common::chronon;
use experiment_common::scratch;

/// `chronon` with `words` (split at spaces) then `more`; checks it is refused in one line (exit
/// 2, one stderr line containing `want`) and returns its stdout.
fn one_line(words: &str, more: &[&str], want: &str) -> String {
    let mut args: Vec<&str> = words.split(' ').collect();
    args.extend(more);
    let (code, out, err) = chronon(&args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(want), "{args:?}: {err}");
    out
}

/// Each `(args, want)`: `chronon bench ARGS --output FILE` is refused in one line containing
/// `want`, and FILE is not written.
fn bench_refuses(scratch_name: &str, cases: &[(&str, &str)]) {
    let dir = scratch(scratch_name);
    let out = dir.join("r.json");
    for (args, want) in cases {
        one_line(
            &format!("bench {args}"),
            &["--output", out.to_str().unwrap()],
            want,
        );
    }
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_hidden_measurements_refuse_bad_arguments_in_one_line() {
    bench_refuses(
        "once",
        &[
            (
                "lbts-once --method allreduce --threads 2 --rounds 5",
                "unknown --method 'allreduce'",
            ),
            (
                // Without the feature: not compiled in; with it, not under mpirun -n 2.
                "lbts-once --method mpi --threads 2 --rounds 5",
                if cfg!(feature = "mpi") {
                    "mpirun started 1 rank(s)"
                } else {
                    "MPI support is not compiled in"
                },
            ),
            (
                "lbts-once --method gsu --threads 0 --rounds 5",
                "--threads must be between 1 and",
            ),
            (
                "ticks-once --period-us 5 --threads 1 --ms 10",
                "--period-us must be a number of at least 10",
            ),
            (
                "ticks-once --period-us 50 --threads 1 --ms 0",
                "--ms must be between",
            ),
        ],
    );
}

#[test]
fn a_refcount_measurement_refuses_bad_arguments_in_one_line() {
    bench_refuses(
        "refcount-once",
        &[
            (
                "refcount-once --measure pair --scheme raw --threads 2",
                "not thread-safe",
            ),
            (
                "refcount-once --measure pair --scheme rc --threads 1",
                "unknown --scheme 'rc'",
            ),
            (
                "refcount-once --measure both --scheme xadd --threads 1",
                "unknown --measure 'both'",
            ),
            (
                "refcount-once --measure pair --scheme xadd --threads 0",
                "at least 1",
            ),
            (
                "refcount-once --measure campus --scheme raw --threads 1",
                "unknown --scheme 'raw' for --measure campus",
            ),
            (
                "refcount-once --measure campus --scheme xadd --threads 1 --campuses 0",
                "at least 1",
            ),
            (
                "refcount-once --measure campus --scheme xadd --threads 1 --end 0",
                "--end must be a positive number",
            ),
        ],
    );
}

#[test]
fn bad_experiment_arguments_get_one_line() {
    let out = one_line("experiment no-such", &[], "unknown experiment 'no-such'");
    assert!(out.is_empty());
    // An output directory under a regular file.
    let file = scratch("file");
    std::fs::write(&file, b"x").unwrap();
    let under = file.join("sub");
    one_line(
        "experiment 001-barriers --quick --out",
        &[under.to_str().unwrap()],
        "is a file, not a directory",
    );
    one_line("experiment 001-barriers --reps 0", &[], "--reps is 0");
    let nothing = scratch("from-nothing");
    one_line(
        "experiment 001-campus --from",
        &[nothing.to_str().unwrap()],
        "--from: cannot read",
    );
    assert!(!nothing.exists(), "a failed --from creates nothing");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn scaling_refuses_bad_configs_and_splits_in_one_line() {
    let dir = scratch("scaling-args");
    let d = dir.to_str().unwrap();
    for (more, want) in [
        (
            &["--configs", "huge"][..],
            "unknown --configs 'huge' (allowed: std, work, big, large)",
        ),
        (&["--splits", "4by4"][..], "--splits '4by4' is not PxW"),
        (&["--splits", "0x4"][..], "--splits '0x4' is not PxW"),
    ] {
        let mut args = vec!["--quick", "--out", d];
        args.extend(more);
        one_line("experiment ours-scaling", &args, want);
    }
    one_line(
        "experiment ours-phold",
        &["--configs", "std", "--out", d],
        "--configs and --splits apply to ours-scaling only",
    );
    assert!(!dir.join("ours-scaling.csv").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
