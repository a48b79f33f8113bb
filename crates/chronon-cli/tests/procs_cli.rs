//! The real binary with `--procs`: every model whose events may cross a process boundary ×
//! window, lock-step, null messages, Time Warp (copy and, where the model has one, reverse
//! state saving) × 1–3 processes × 1–2 threads commits the sequential history (fingerprint,
//! committed count, `model_stats`, pending events, last time); a worker process killed with
//! `kill -9` stops the run within 2 s with one line naming it and leaves no process behind;
//! Ctrl-C to the process group stops every process with an incomplete report (window, null
//! messages) and, under Time Warp, still writes it; so does SIGINT to the parent alone; full rings are retried without deadlock;
//! the size check counts the LP table once per process; a handler panic in a worker
//! process is reported with its LP and time; bad input is one line and a non-zero exit;
//! `/dev/shm` is unchanged. Histories here; faults, Ctrl-C and refusals in
//! `procs_cli/faults.rs`.
#![cfg(target_os = "linux")]

mod common;
#[path = "procs_cli/faults.rs"]
mod faults;
mod procs_common;

use std::process::Command;

use procs_common::{dev_shm, differential, history, report};

#[test]
fn phold_across_processes_commits_the_sequential_history() {
    differential(&[
        "run",
        "phold",
        "--lps",
        "24",
        "--start-events",
        "2",
        "--end",
        "15",
    ]);
}

/// Rollback-heavy Time Warp across processes: most events remote, zero lookahead (ties and
/// zero-delay sends, so order stacks cross the rings), 3 processes.
#[test]
fn rollback_heavy_time_warp_across_processes_commits_the_sequential_history() {
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
    let seq = history(&report(&model));
    let mut rolled_back = 0.0;
    for saving in ["copy", "reverse"] {
        for threads in ["1", "2"] {
            let mut args = model.to_vec();
            args.extend([
                "--sync",
                "timewarp",
                "--state-saving",
                saving,
                "--procs",
                "3",
                "--threads",
                threads,
            ]);
            let r = report(&args);
            assert_eq!(history(&r), seq, "{args:?}");
            rolled_back += r["rolled_back"].as_f64().unwrap();
        }
    }
    assert!(
        rolled_back > 0.0,
        "no rollback: the case tests nothing across processes"
    );
}

/// Preemptive Time Warp across processes with events long enough to be preempted (busy work
/// with preemption points, most sends remote): checks read BH_min from the rings and the
/// stash; with and without ticks, 2 processes × 1–2 threads.
#[test]
fn preemptive_time_warp_across_processes_switches_and_commits_the_sequential_history() {
    let model = [
        "run",
        "phold",
        "--lps",
        "32",
        "--end",
        "10",
        "--work-us",
        "20",
        "--remote",
        "0.9",
    ];
    let seq = history(&report(&model));
    let shm_before = dev_shm();
    let mut preemptions = 0.0;
    for ticks in [&[][..], &["--tick-us", "50", "--alpha", "0"][..]] {
        for threads in ["1", "2"] {
            let mut args = model.to_vec();
            args.extend([
                "--sync",
                "timewarp",
                "--procs",
                "2",
                "--threads",
                threads,
                "--preempt",
            ]);
            args.extend_from_slice(ticks);
            let r = report(&args);
            assert_eq!(history(&r), seq, "{args:?}");
            preemptions += r["executor_stats"]["preemptions"].as_f64().unwrap();
        }
    }
    assert!(preemptions > 0.0, "no event was preempted across processes");
    assert_eq!(
        dev_shm(),
        shm_before,
        "a shared-memory file was left behind"
    );
}

#[test]
fn phold_phases_across_processes_commits_the_sequential_history() {
    differential(&[
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
    ]);
}

/// PCS's last LP reads the figures in `finish` (blocking probability): the parent has that
/// LP's process run it on the figures so far.
#[test]
fn pcs_across_processes_commits_the_sequential_history() {
    differential(&[
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
    ]);
}

#[test]
fn manufacturing_across_processes_commits_the_sequential_history() {
    differential(&["run", "manufacturing", "--end", "150"]);
}

#[test]
fn random_across_processes_commits_the_sequential_history() {
    differential(&["run", "random", "--end", "15"]);
}

/// The random model with zero-lookahead links and zero-delay self-sends (equal-time cascades
/// across processes: the GST rule of window and lock-step, lock-step's crossing LPs) and
/// quantized delays (many ties), several seeds, both mappings.
#[test]
fn random_models_with_zero_lookahead_and_ties_across_processes() {
    for seed in ["1", "2", "3"] {
        for (syncs, zero) in [
            (&["window", "lockstep"][..], "0.3"),
            (&["null-message"][..], "0"),
        ] {
            let model = [
                "run",
                "random",
                "--lps",
                "20",
                "--end",
                "12",
                "--zero-links",
                zero,
                "--zero-self",
                "0.3",
                "--quantum",
                "0.5",
                "--hot-work",
                "2",
                "--seed",
                seed,
                "--topology-seed",
                seed,
            ];
            let seq = history(&report(&model));
            for sync in syncs {
                for (procs, threads) in [("2", "1"), ("3", "2")] {
                    for mapping in ["block", "round-robin"] {
                        let mut args = model.to_vec();
                        args.extend([
                            "--sync",
                            sync,
                            "--procs",
                            procs,
                            "--threads",
                            threads,
                            "--mapping",
                            mapping,
                        ]);
                        assert_eq!(history(&report(&args)), seq, "{args:?}");
                    }
                }
            }
        }
    }
}

/// The random model with zero-delay links and self-sends (events with order stacks), `seed`.
fn zero_delay_random(seed: &str) -> [&str; 12] {
    [
        "run",
        "random",
        "--end",
        "30",
        "--lps",
        "24",
        "--zero-links",
        "0.5",
        "--zero-self",
        "0.4",
        "--seed",
        seed,
    ]
}

/// Zero-delay sends that order before their parents give events an order stack, which
/// crosses the rings as key records before its event (transport/shm/tw.rs).
#[test]
fn zero_delay_order_stacks_cross_processes_under_time_warp() {
    for seed in ["1", "2", "3", "4"] {
        let model = zero_delay_random(seed);
        let seq = history(&report(&model));
        for (procs, threads) in [("2", "2"), ("3", "1")] {
            let mut args = model.to_vec();
            args.extend(["--sync", "timewarp", "--procs", procs, "--threads", threads]);
            assert_eq!(history(&report(&args)), seq, "{args:?}");
        }
    }
}

/// Runs `args` with `CHRONON_RING_CAP` set to `cap`; returns the report and the sum of the
/// workers' `ring_full_retries`.
fn with_ring_cap(args: &[&str], cap: &str) -> (serde_json::Value, f64) {
    let out = common::out_path("procs-ring");
    let mut all = args.to_vec();
    all.extend(["--output", &out]);
    let done = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(&all)
        .env("CHRONON_RING_CAP", cap)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    let retries: f64 = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["ring_full_retries"].as_f64().unwrap())
        .sum();
    (r, retries)
}

/// Rings of 4 events under heavy traffic both ways: senders find their rings full, drain
/// their own inboxes and retry with the batch they kept (seed 000 §3.2) — never a deadlock,
/// and the history is still the sequential one.
#[test]
fn full_rings_are_retried_without_deadlock() {
    let seq = history(&report(&FLOOD));
    for sync in ["window", "lockstep", "null-message"] {
        let mut args = FLOOD.to_vec();
        args.extend(["--sync", sync, "--procs", "2", "--threads", "2"]);
        let (r, retries) = with_ring_cap(&args, "4");
        assert_eq!(history(&r), seq, "{sync}");
        assert!(
            retries > 0.0,
            "{sync}: the full-ring path was not exercised"
        );
    }
}

/// Time Warp reads the same ring capacity as the conservative protocols: rings of 2 records
/// under traffic both ways fill, senders absorb their own inboxes into their stashes and retry,
/// and the history is still the sequential one — for PHOLD (copy and reverse state saving)
/// and for a random model with zero-delay sends, whose order stacks cross as key records
/// that a full ring splits from their event.
#[test]
fn time_warp_honours_a_small_ring_capacity() {
    let stacks = zero_delay_random("2");
    let cases: [(&[&str], &str, &str, &str); 3] = [
        (&FLOOD, "copy", "2", "2"),
        (&FLOOD, "reverse", "3", "1"),
        (&stacks, "copy", "2", "2"),
    ];
    for (model, saving, procs, threads) in cases {
        let seq = history(&report(model));
        let mut args = model.to_vec();
        args.extend([
            "--sync",
            "timewarp",
            "--state-saving",
            saving,
            "--procs",
            procs,
            "--threads",
            threads,
        ]);
        let (r, retries) = with_ring_cap(&args, "2");
        assert_eq!(history(&r), seq, "{args:?}");
        assert!(
            retries > 0.0,
            "{args:?}: the full-ring path was not exercised"
        );
    }
}

/// PHOLD with most events remote and many in flight: rings fill both ways.
const FLOOD: [&str; 14] = [
    "run",
    "phold",
    "--lps",
    "16",
    "--start-events",
    "200",
    "--remote",
    "1.0",
    "--lookahead",
    "10",
    "--mean",
    "11",
    "--end",
    "40",
];
