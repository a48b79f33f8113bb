//! Time Warp over MPI ranks, with the real binary under `mpirun -n R` (the `mpi` feature;
//! needs MPICH's `mpirun` on the PATH): every shipped model × ranks 1–3 ×
//! threads 1–2 commits the sequential history (fingerprint, committed count, `model_stats`,
//! pending events, last time); copy and reverse state saving; a zero-lookahead, mostly-remote
//! PHOLD whose rollbacks and anti-messages cross ranks; a handler panic on one rank ends the
//! run on every rank with one line (the in-process line); what does not run over ranks is
//! refused in one line. Every `mpirun` is bounded by `timeout`, so a hang fails, not blocks.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::chronon;
use mpi_common::{history, mpirun_ranks as mpirun, report, sum};

/// The report of `args` on `ranks` ranks (rank 0 writes it).
fn ranks_report(ranks: usize, args: &[&str]) -> serde_json::Value {
    report(Some(ranks), args)
}

/// `model` under Time Warp on 1–3 ranks × 1–2 threads with `extra` options equals the
/// sequential run; returns the events rolled back in all those runs.
fn differential(model: &[&str], extra: &[&str]) -> f64 {
    differential_on(model, extra, &[1, 2, 3])
}

/// [`differential`] on the given rank counts.
fn differential_on(model: &[&str], extra: &[&str], rank_counts: &[usize]) -> f64 {
    let seq = history(&report(None, model));
    assert!(
        seq["committed"].as_u64().unwrap() > 0,
        "{model:?}: an empty run tests nothing"
    );
    let mut rolled_back = 0.0;
    for &ranks in rank_counts {
        for threads in ["1", "2"] {
            let mut args = model.to_vec();
            args.extend(["--sync", "timewarp", "--threads", threads]);
            args.extend(extra);
            let r = ranks_report(ranks, &args);
            assert_eq!(history(&r), seq, "{ranks} ranks {args:?}");
            let st = &r["executor_stats"];
            assert_eq!(st["ranks"].as_f64(), Some(ranks as f64), "{args:?}");
            let t: usize = threads.parse().unwrap();
            assert_eq!(r["workers"].as_array().unwrap().len(), ranks * t);
            assert!(st["gvt_rounds"].as_f64().unwrap() >= 1.0, "{args:?}");
            assert_driver(&r, ranks, t, &args);
            if ranks > 1 {
                // Events did cross ranks, and every message sent arrived.
                let sent = sum(&r, "tw_msgs_sent");
                assert!(sent > 0.0, "{ranks} ranks {args:?}: nothing crossed ranks");
                assert_eq!(sent, sum(&r, "tw_msgs_received"), "{args:?}");
            }
            rolled_back += r["rolled_back"].as_f64().unwrap();
        }
    }
    rolled_back
}

/// Which thread of each rank talked MPI, as the report says: the worker itself with one
/// worker per rank (no driver thread), a driver thread with more.
fn assert_driver(r: &serde_json::Value, ranks: usize, threads: usize, args: &[&str]) {
    let flags: Vec<f64> = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["tw_driver_thread"].as_f64())
        .collect();
    let want = if threads == 1 { 0.0 } else { 1.0 };
    assert_eq!(flags, vec![want; ranks], "{ranks} ranks {args:?}");
}

/// Both ways a rank talks MPI, on a PHOLD long enough for thousands of GVT computations and
/// reductions: without a driver thread (1 worker per rank: the worker steps the driver at its
/// looks) and with one (2 workers per rank), at 2 and 3 ranks, each committing the sequential
/// history with every message sent received.
#[test]
fn worker_stepped_and_thread_driven_ranks_commit_the_sequential_history() {
    let model = ["run", "phold", "--lps", "256", "--end", "200"];
    let seq = history(&report(None, &model));
    for ranks in [2, 3] {
        for threads in [1, 2] {
            let t = threads.to_string();
            let mut args = model.to_vec();
            args.extend(["--sync", "timewarp", "--threads", &t]);
            let r = ranks_report(ranks, &args);
            assert_eq!(history(&r), seq, "{ranks} ranks {args:?}");
            assert_driver(&r, ranks, threads, &args);
            let sent = sum(&r, "tw_msgs_sent");
            assert!(
                sent > 1000.0,
                "{ranks} ranks {args:?}: {sent} crossed ranks"
            );
            assert_eq!(sent, sum(&r, "tw_msgs_received"), "{args:?}");
            assert!(
                sum(&r, "gvt_rank_rounds") >= 10.0 * ranks as f64,
                "{ranks} ranks {args:?}: few GVT computations"
            );
        }
    }
}

#[test]
fn every_model_over_ranks_commits_the_sequential_history() {
    let models: [&[&str]; 5] = [
        &[
            "run",
            "phold",
            "--lps",
            "24",
            "--start-events",
            "2",
            "--end",
            "15",
        ],
        &[
            "run",
            "phold-phases",
            "--width",
            "5",
            "--height",
            "5",
            "--phase-length",
            "3",
            "--end",
            "9",
            "--work-a-us",
            "0",
            "--work-b-us",
            "0",
            "--work-c-us",
            "0",
        ],
        // PCS's last LP reads the figures in `finish`: rank 0 asks that LP's rank.
        &[
            "run",
            "pcs",
            "--width",
            "5",
            "--height",
            "5",
            "--channels",
            "20",
            "--end",
            "3",
        ],
        &["run", "manufacturing", "--end", "150"],
        &["run", "random", "--end", "15"],
    ];
    let mut rolled_back = 0.0;
    for m in models {
        rolled_back += differential(m, &[]);
    }
    assert!(rolled_back > 0.0, "no rollback in any run over ranks");
}

/// Shared-heap (`BPtr`) payloads serialize what they point to across ranks (nested ones too:
/// star-clique's packet bodies). Star-clique at 3 ranks × 2 threads too: with packet bodies
/// deserialized as one byte block it takes seconds (a byte at a time it took 46–93 s).
#[test]
fn shared_heap_payload_models_over_ranks() {
    differential(
        &[
            "run",
            "simplesim",
            "--lps",
            "6",
            "--queue-bound",
            "20",
            "--payload-bytes",
            "600",
            "--touch",
            "write",
            "--end",
            "60",
        ],
        &[],
    );
    differential(&["run", "datastore", "--nodes", "6", "--end", "1"], &[]);
    differential(&["run", "campus", "--end", "0.1"], &[]);
    differential_on(
        &["run", "star-clique", "--stars", "3", "--end", "1"],
        &[],
        &[1, 2, 3],
    );
}

#[test]
fn copy_and_reverse_state_saving_over_ranks() {
    let phold = [
        "run",
        "phold",
        "--lps",
        "32",
        "--start-events",
        "2",
        "--end",
        "20",
    ];
    for saving in ["copy", "reverse"] {
        differential(&phold, &["--state-saving", saving]);
    }
    differential(
        &["run", "random", "--end", "15"],
        &["--state-saving", "copy"],
    );
}

/// Zero lookahead (ties, zero-delay sends: order stacks cross ranks), 90 % remote: many
/// rollbacks, with anti-messages crossing ranks.
#[test]
fn rollback_heavy_time_warp_over_ranks_commits_the_sequential_history() {
    let model = [
        "run",
        "phold",
        "--lps",
        "48",
        "--start-events",
        "4",
        "--end",
        "40",
        "--remote",
        "0.9",
        "--lookahead",
        "0",
    ];
    let seq = history(&report(None, &model));
    for saving in ["copy", "reverse"] {
        for ranks in [2, 3] {
            for threads in ["1", "2"] {
                let mut args = model.to_vec();
                args.extend([
                    "--sync",
                    "timewarp",
                    "--state-saving",
                    saving,
                    "--threads",
                    threads,
                ]);
                let r = ranks_report(ranks, &args);
                assert_eq!(history(&r), seq, "{ranks} ranks {args:?}");
                let st = &r["executor_stats"];
                assert!(
                    st["secondary_rollbacks"].as_f64().unwrap() > 0.0,
                    "{ranks} ranks {args:?}: no anti-message rolled anything back"
                );
                assert!(r["rolled_back"].as_f64().unwrap() > 100.0, "{args:?}");
                assert!(sum(&r, "tw_msgs_sent") > 0.0, "{args:?}");
            }
        }
    }
}

/// `model` with `extra` on `ranks` ranks, three times: each run commits the sequential run's
/// history (`model` alone) and sends over 500 messages across ranks (a heap case that crossed
/// little would test nothing).
fn three_runs_cross_and_match_seq(ranks: usize, model: &[&str], extra: &[&str]) {
    let seq = history(&report(None, model));
    let mut args = model.to_vec();
    args.extend(extra);
    for _ in 0..3 {
        let r = ranks_report(ranks, &args);
        assert_eq!(history(&r), seq, "{args:?}");
        assert!(
            sum(&r, "tw_msgs_sent") > 500.0,
            "{args:?}: too few sends crossed ranks"
        );
    }
}

/// A payload sent to another rank crosses as its bytes; the sender's item is freed once the
/// record holds them, at the message's time, and is reused once GVT passes it. 5 LPs with
/// 7000-byte payloads on 2 ranks × 2 threads, in a heap of 224 items per class
/// (`--heap-segments 3`): about half the sends cross ranks, over a thousand in all, so a
/// sender that kept those items until the end of the run would fill its heap by time 18.
#[test]
fn payloads_sent_to_another_rank_are_reused_once_gvt_passes_them() {
    let model = [
        "run",
        "simplesim",
        "--lps",
        "5",
        "--queue-bound",
        "22",
        "--lookahead",
        "1",
        "--delay-min",
        "0.25",
        "--delay-max",
        "0.75",
        "--payload-bytes",
        "7000",
        "--start-window",
        "0.5",
        "--warmup",
        "5",
        "--touch",
        "none",
        "--end",
        "30",
        "--heap-segments",
        "3",
        "--seed",
        "2045880398",
        "--queue",
        "heap",
    ];
    let extra = [
        "--sync",
        "timewarp",
        "--threads",
        "2",
        "--state-saving",
        "copy",
        "--save-every",
        "5",
    ];
    three_runs_cross_and_match_seq(2, &model, &extra);
}

/// `--heap-classes` holds over ranks for the payloads a rank receives too: the thread that
/// decodes them (a rank's driver thread with two threads per rank, its worker with one) does so
/// into its receive heap, which has the run's classes. A 100 000-byte payload fits only the
/// 128 KiB class given here, not the default classes.
#[test]
fn payloads_from_another_rank_decode_into_the_runs_heap_classes() {
    let model = [
        "run",
        "simplesim",
        "--lps",
        "4",
        "--queue-bound",
        "2",
        "--payload-bytes",
        "100000",
        "--heap-classes",
        "64:1024,128K:16",
        "--end",
        "20",
        "--seed",
        "7",
    ];
    let seq = history(&report(None, &model));
    for (sync, threads) in [("timewarp", "2"), ("timewarp", "1"), ("window", "2")] {
        let mut args = model.to_vec();
        args.extend(["--sync", sync, "--threads", threads]);
        let r = ranks_report(2, &args);
        assert_eq!(history(&r), seq, "{args:?}");
        if sync == "timewarp" {
            assert!(sum(&r, "tw_msgs_sent") > 0.0, "{args:?}: nothing crossed");
        }
    }
}

/// A rank's handlers' heap holds what its handlers allocate, not the copies of payloads that
/// other ranks send it (those go to the receive heap of the thread that decodes them). 12 LPs
/// over 3 ranks with one thread each, 7000-byte payloads: with `--heap-segments 3` every
/// rank's handlers fit (the sequential run, all 12 LPs in one heap, needs 4), while the copies
/// the other two ranks' speculation sends would fill it.
#[test]
fn payloads_from_another_rank_do_not_fill_the_handlers_heap() {
    let model = [
        "run",
        "simplesim",
        "--lps",
        "12",
        "--queue-bound",
        "20",
        "--lookahead",
        "0.5",
        "--delay-min",
        "0.75",
        "--delay-max",
        "1.25",
        "--payload-bytes",
        "7000",
        "--start-window",
        "0.5",
        "--warmup",
        "0",
        "--touch",
        "read",
        "--end",
        "59",
        "--seed",
        "3028253916",
    ];
    let extra = [
        "--heap-segments",
        "3",
        "--sync",
        "timewarp",
        "--threads",
        "1",
        "--queue",
        "heap",
        "--state-saving",
        "copy",
    ];
    three_runs_cross_and_match_seq(3, &model, &extra);
}

/// A handler panics on one rank (LP 1: rank 0 under block mapping, rank 1 under round-robin
/// with one thread per rank): every rank stops, exit code 1, one line on stderr (rank 0's): the
/// line a run in one process prints, naming the rank.
/// With one thread per rank the ranks have no driver thread (the panicking worker stepped
/// its rank's driver; the rank's main thread finishes the driver's loop and tells every rank),
/// with two they have one: both paths are here, the panic on rank 0 and on rank 1.
#[test]
fn a_handler_panic_on_one_rank_ends_the_run_on_every_rank_with_one_line() {
    let args = ["run", "faulty", "--fault", "panic", "--sync", "timewarp"];
    let mut one = args.to_vec();
    one.extend(["--threads", "4"]);
    let (_, _, in_process) = chronon(&one);
    assert!(in_process.contains("model panicked: LP 1 at time 3"));
    for (ranks, threads, mapping, on) in [
        (2, "1", "block", 0),
        (2, "2", "block", 0),
        (3, "2", "block", 0),
        (2, "1", "round-robin", 1),
        (3, "1", "round-robin", 1),
    ] {
        let mut a = args.to_vec();
        a.extend(["--threads", threads, "--mapping", mapping]);
        let t0 = std::time::Instant::now();
        let (code, stdout, stderr) = mpirun(ranks, &a);
        assert_eq!(code, 1, "{ranks} ranks {a:?}: {stdout}{stderr}");
        assert_eq!(
            stderr,
            format!("{} (on rank {on})\n", in_process.trim_end()),
            "{ranks} ranks {a:?}"
        );
        assert!(
            !stdout.contains("error"),
            "{ranks} ranks {a:?}: a second error line: {stdout}"
        );
        assert!(t0.elapsed().as_secs() < 30, "{ranks} ranks: slow to stop");
    }
}

/// What does not run over ranks is refused before anything starts: one line, exit code 2.
#[test]
fn what_does_not_run_over_ranks_is_one_line() {
    for (extra, needle) in [
        (&["--preempt"][..], "--preempt does not run over MPI ranks"),
        (
            &["--check-reverse"][..],
            "--check-reverse does not run over MPI ranks",
        ),
    ] {
        let mut a = vec![
            "run", "phold", "--lps", "8", "--end", "5", "--sync", "timewarp",
        ];
        a.extend(extra);
        let (code, stdout, stderr) = mpirun(2, &a);
        assert_eq!(code, 2, "{a:?}: {stdout}{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{a:?}: {stderr}");
        assert!(stderr.contains(needle), "{a:?}: {stderr}");
    }
}
