//! `--procs` runs of the models whose payloads travel as shared-heap `BPtr`s (simplesim,
//! datastore, star-clique, campus), zero copy and `--payload copy`, conservative and Time Warp,
//! against the sequential run; shared-heap limits as one-line errors.
#![cfg(target_os = "linux")]

mod common;
mod procs_common;

use common::chronon;
use procs_common::{differential, history, report};

/// `differential`, then the copy transport (`--payload copy`) over every protocol with 2 and
/// 3 processes: the same history (the model's code is unchanged; only the bytes move).
fn differential_with_copy(model: &[&str]) {
    differential(model);
    let seq = history(&report(model));
    for sync in ["window", "lockstep", "null-message", "timewarp"] {
        for (procs, threads) in [("2", "1"), ("3", "2")] {
            let mut args = model.to_vec();
            args.extend([
                "--sync",
                sync,
                "--procs",
                procs,
                "--threads",
                threads,
                "--payload",
                "copy",
            ]);
            assert_eq!(history(&report(&args)), seq, "{args:?}");
        }
    }
}

/// SimpleSim's payloads are `BPtr<Bytes>` (written and checked here: `--touch write`).
#[test]
fn simplesim_across_processes_commits_the_sequential_history() {
    differential_with_copy(&[
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
    ]);
}

/// The data store's request and result lists are `BPtr<Slice<_>>`s.
#[test]
fn datastore_across_processes_commits_the_sequential_history() {
    differential_with_copy(&["run", "datastore", "--nodes", "6", "--end", "1"]);
}

/// Star-clique packets carry their data in nested `BPtr`s (a header item and a byte item).
#[test]
fn star_clique_across_processes_commits_the_sequential_history() {
    differential_with_copy(&["run", "star-clique", "--stars", "3", "--end", "2"]);
}

#[test]
fn campus_across_processes_commits_the_sequential_history() {
    differential(&["run", "campus", "--end", "0.5"]);
}

/// Packet bodies kept in a process's own memory (`--refcount` other than `heap`) are copied
/// into the shared heap by the node that forwards a packet to another process: such a scheme
/// crosses processes, zero copy and copy, with the sequential history and every body intact.
#[test]
fn process_local_packet_bodies_cross_processes() {
    differential_with_copy(&[
        "run",
        "star-clique",
        "--stars",
        "3",
        "--end",
        "1",
        "--refcount",
        "per-thread",
    ]);
    let campus = [
        "run",
        "campus",
        "--end",
        "0.3",
        "--data",
        "true",
        "--refcount",
        "buffered-thread",
    ];
    differential(&campus);
    let r = report(&campus);
    let stat = |name: &str| r["model_stats"][name].as_f64().unwrap_or(f64::NAN);
    assert!(stat("packets_received") > 0.0);
    assert_eq!(stat("data_received"), stat("packets_received"));
    assert_eq!(stat("data_corrupt"), 0.0);
}

/// A payload larger than the largest size class, or a class that is full with growth
/// disabled, ends the run with one line naming the LP, the time and what to change.
#[test]
fn shared_heap_limits_are_one_line_errors() {
    // Under Time Warp across processes too: the failing process's error is the run's (its
    // abandoned in-flight payloads are not reported as a leak).
    for extra in [
        &[][..],
        &["--sync", "window", "--procs", "2"][..],
        &["--sync", "timewarp", "--threads", "2", "--procs", "2"][..],
    ] {
        let mut args = vec![
            "run",
            "simplesim",
            "--payload-bytes",
            "100000",
            "--end",
            "50",
        ];
        args.extend(extra);
        let (code, stdout, stderr) = chronon(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("a 100000-byte value"), "{stderr}");
        assert!(stderr.contains("the largest holds 65536 bytes"), "{stderr}");
        assert!(stderr.contains("LP "), "{stderr}");
    }
    let (code, _, stderr) = chronon(&[
        "run",
        "simplesim",
        "--queue-bound",
        "200",
        "--payload-bytes",
        "5000",
        "--heap-classes",
        "8K:4",
        "--heap-segments",
        "1",
        "--end",
        "50",
    ]);
    assert_ne!(code, 0);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("full in all 1 segments"), "{stderr}");
}

/// A shared heap that the sequential run fills almost to the top: Time Warp keeps freed items
/// until GVT passes them and speculates ahead, so it needs more items than the sequential run.
/// A class near full holds its speculation back (only events at or before GVT, GVT rounds
/// started) and it completes with the sequential history, on threads and across processes.
#[test]
fn time_warp_throttles_on_a_near_full_shared_heap() {
    let model = [
        "run",
        "simplesim",
        "--lps",
        "8",
        "--queue-bound",
        "20",
        "--lookahead",
        "5.0",
        "--delay-min",
        "1.0",
        "--delay-max",
        "5.0",
        "--payload-bytes",
        "7000",
        "--start-window",
        "0.1",
        "--warmup",
        "0",
        "--end",
        "400",
        "--seed",
        "999431723",
        "--heap-segments",
        "4",
    ];
    let seq = history(&report(&model));
    for exec in [
        &["--sync", "timewarp", "--threads", "2"][..],
        &["--sync", "timewarp", "--threads", "2", "--procs", "1"][..],
        &["--sync", "timewarp", "--threads", "1", "--procs", "2"][..],
    ] {
        let mut args = model.to_vec();
        args.extend(exec);
        assert_eq!(history(&report(&args)), seq, "{args:?}");
    }
}

/// The copy transport under Time Warp with the smallest heap the sequential run needs: the
/// receiver's copies of other processes' payloads go to its receive heap, so they never fill
/// the heap its handlers allocate in (11 of 12 such runs ended "copy transport: shared heap
/// class of 512-byte items is full" when they did), three times over.
#[test]
fn time_warp_copy_transport_keeps_copies_out_of_the_handlers_heap() {
    let model = [
        "run",
        "star-clique",
        "--stars",
        "2",
        "--leaf-bandwidth",
        "10000000.0",
        "--leaf-delay",
        "0.0001",
        "--hub-bandwidth",
        "100000000.0",
        "--hub-delay",
        "0.01",
        "--queue-packets",
        "100",
        "--packet-bytes",
        "256",
        "--load",
        "0.9",
        "--on-mean",
        "0.5",
        "--off-mean",
        "0.5",
        "--start-window",
        "0.05",
        "--end",
        "1.133",
        "--seed",
        "600245581",
        "--queue",
        "heap",
        "--heap-segments",
        "2",
    ];
    let seq = history(&report(&model));
    for _ in 0..3 {
        let mut args = model.to_vec();
        args.extend([
            "--sync",
            "timewarp",
            "--threads",
            "4",
            "--procs",
            "2",
            "--payload",
            "copy",
        ]);
        assert_eq!(history(&report(&args)), seq, "{args:?}");
    }
}

/// Near the heap's limit across processes no payload leaks (every item comes back), zero copy
/// and `--payload copy`.
#[test]
fn time_warp_near_a_full_heap_leaks_nothing_across_processes() {
    let model = [
        "run",
        "simplesim",
        "--lps",
        "4",
        "--queue-bound",
        "2",
        "--lookahead",
        "0.0",
        "--delay-min",
        "0.5",
        "--delay-max",
        "0.5",
        "--payload-bytes",
        "7000",
        "--start-window",
        "1.0",
        "--warmup",
        "10",
        "--end",
        "100",
        "--seed",
        "774873080",
        "--heap-segments",
        "4",
    ];
    let seq = history(&report(&model));
    for copy in ["zero-copy", "copy"] {
        for _ in 0..3 {
            let mut args = model.to_vec();
            args.extend([
                "--sync",
                "timewarp",
                "--threads",
                "2",
                "--procs",
                "2",
                "--payload",
                copy,
            ]);
            assert_eq!(history(&report(&args)), seq, "{args:?}");
        }
    }
}

/// Rollbacks across processes coast forward (copy state saving) over events whose handler
/// allocates a payload: what a coasted handler allocates and its sends drop is reusable at
/// once, so a heap about ten times the sequential run's peak (224 items of the 8 KiB class,
/// about 20 in use sequentially) completes with the sequential history every time.
#[test]
fn time_warp_coasting_holds_no_heap_items_across_processes() {
    let model = [
        "run",
        "simplesim",
        "--lps",
        "2",
        "--queue-bound",
        "8",
        "--lookahead",
        "2",
        "--delay-min",
        "0.75",
        "--delay-max",
        "1.25",
        "--payload-bytes",
        "7000",
        "--start-window",
        "0.5",
        "--warmup",
        "5",
        "--touch",
        "read",
        "--end",
        "46",
        "--heap-segments",
        "3",
        "--seed",
        "3766332254",
    ];
    let seq = history(&report(&model));
    let mut args = model.to_vec();
    args.extend([
        "--sync",
        "timewarp",
        "--threads",
        "2",
        "--queue",
        "ladder",
        "--mapping",
        "block",
        "--state-saving",
        "copy",
        "--procs",
        "3",
        "--pin",
        "off",
    ]);
    for _ in 0..5 {
        assert_eq!(history(&report(&args)), seq, "{args:?}");
    }
}
