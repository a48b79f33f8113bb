//! The real binary with `--procs`: every model whose events may cross a process boundary ×
//! window, lock-step, null messages × 1–3 processes × 1–2 threads commits the sequential
//! history (fingerprint, committed count, `model_stats`, pending events, last time); a worker
//! process killed with `kill -9` stops the run within 2 s with one line naming it and leaves
//! no process behind; a handler panic in a worker process is reported with its LP and time;
//! bad input is one line and a non-zero exit; `/dev/shm` is unchanged.
#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};

use std::time::{Duration, Instant};

use common::chronon;

mod procs_common;

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

/// Rings of 4 events under heavy traffic both ways: senders find their rings full, drain
/// their own inboxes and retry with the batch they kept (seed 000 §3.2) — never a deadlock,
/// and the history is still the sequential one.
#[test]
fn full_rings_are_retried_without_deadlock() {
    let model = [
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
    let seq = history(&report(&model));
    for sync in ["window", "lockstep", "null-message"] {
        let path = std::env::temp_dir().join(format!(
            "chronon-procs-full-{}-{sync}.json",
            std::process::id()
        ));
        let mut args = model.to_vec();
        let out = path.to_str().unwrap().to_string();
        args.extend([
            "--sync",
            sync,
            "--procs",
            "2",
            "--threads",
            "2",
            "--output",
            &out,
        ]);
        let done = Command::new(env!("CARGO_BIN_EXE_chronon"))
            .args(&args)
            .env("CHRONON_RING_CAP", "4")
            .output()
            .unwrap();
        assert!(
            done.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&done.stderr)
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(history(&r), seq, "{sync}");
        let retries: f64 = r["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["ring_full_retries"].as_f64().unwrap())
            .sum();
        assert!(
            retries > 0.0,
            "{sync}: the full-ring path was not exercised"
        );
    }
}

/// Every worker process holds the whole LP table: the size check counts it P times.
#[test]
fn the_size_check_counts_the_lp_table_once_per_process() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "phold",
            "--lps",
            "100000",
            "--state-bytes",
            "600",
            "--end",
            "0.001",
            "--sync",
            "window",
        ];
        args.extend(extra);
        Command::new(env!("CARGO_BIN_EXE_chronon"))
            .args(&args)
            .env("CHRONON_MEMORY_LIMIT", "200M")
            .output()
            .unwrap()
    };
    assert!(run(&["--threads", "4"]).status.success());
    let out = run(&["--procs", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("4 processes × 100000 LPs"), "{stderr}");
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn kill_9_of_a_worker_process_stops_every_process_within_2_s() {
    let shm_before = dev_shm();
    let mut parent = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args([
            "run", "phold", "--lps", "256", "--end", "1e9", "--sync", "window", "--procs", "3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let kids = loop {
        let k = children(parent.id());
        if k.len() == 3 {
            break k;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "workers did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Let them get into the run (past initialization and the start barrier).
    std::thread::sleep(Duration::from_millis(300));
    let victim = kids[1];
    assert!(Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status()
        .unwrap()
        .success());
    let killed = Instant::now();
    let status = loop {
        if let Some(s) = parent.try_wait().unwrap() {
            break s;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(2),
            "the run did not stop within 2 s of kill -9"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = parent.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("(pid {victim}) was killed by signal 9")),
        "{stderr}"
    );
    for k in kids {
        assert!(!alive(k), "worker process {k} is still running");
    }
    assert_eq!(dev_shm(), shm_before);
}

/// Ctrl-C on a terminal interrupts the whole process group: every worker process stops at
/// the same round (window: the stop flag rides with the GSU flags) or through the abort word
/// (null messages), and the parent still prints the incomplete summary, exit code 130.
#[test]
fn ctrl_c_to_the_process_group_stops_every_process_with_an_incomplete_report() {
    use std::os::unix::process::CommandExt;
    for sync in ["window", "null-message"] {
        let mut parent = Command::new(env!("CARGO_BIN_EXE_chronon"))
            .args([
                "run", "phold", "--lps", "256", "--end", "1e9", "--sync", sync, "--procs", "2",
            ])
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        let kids = loop {
            let k = children(parent.id());
            if k.len() == 2 {
                break k;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "workers did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(500));
        let group = format!("-{}", parent.id());
        assert!(Command::new("kill")
            .args(["-INT", "--", &group])
            .status()
            .unwrap()
            .success());
        let sent = Instant::now();
        let status = loop {
            if let Some(s) = parent.try_wait().unwrap() {
                break s;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(5),
                "{sync}: no stop within 5 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = parent.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(status.code(), Some(130), "{sync}: {stdout}");
        assert!(stdout.contains("INCOMPLETE"), "{sync}: {stdout}");
        for k in kids {
            assert!(!alive(k), "worker process {k} is still running");
        }
    }
}

#[test]
fn a_handler_panic_in_a_worker_process_names_its_lp_and_time() {
    for sync in ["window", "lockstep", "null-message"] {
        let (code, stdout, stderr) = chronon(&[
            "run",
            "faulty",
            "--fault",
            "panic",
            "--sync",
            sync,
            "--procs",
            "2",
            "--threads",
            "2",
        ]);
        let (_, _, in_process) = chronon(&[
            "run",
            "faulty",
            "--fault",
            "panic",
            "--sync",
            sync,
            "--threads",
            "4",
        ]);
        assert_eq!(code, 1, "{sync}: {stdout}{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("model panicked: LP 1 at time 3"),
            "{sync}: {stderr}"
        );
        assert_eq!(stderr, in_process, "{sync}");
    }
}

/// Model errors and panics outside event handlers (`finish`, `topology`) across processes:
/// the same line and exit code as in one process.
#[test]
fn model_errors_in_worker_processes_read_as_in_process() {
    for fault in [
        "finish-panic",
        "topology-panic",
        "bad-destination",
        "below-lookahead",
    ] {
        let procs = chronon(&[
            "run", "faulty", "--fault", fault, "--sync", "window", "--procs", "2",
        ]);
        let threads = chronon(&[
            "run",
            "faulty",
            "--fault",
            fault,
            "--sync",
            "window",
            "--threads",
            "2",
        ]);
        assert_ne!(procs.0, 0, "{fault}");
        assert_eq!(procs.0, threads.0, "{fault}");
        assert_eq!(procs.2, threads.2, "{fault}");
        assert_eq!(
            procs.2.trim_end().lines().count(),
            1,
            "{fault}: {}",
            procs.2
        );
    }
}

fn bad(args: &[&str], needle: &str) {
    let (code, stdout, stderr) = chronon(args);
    assert_eq!(code, 2, "{args:?}: {stderr}");
    assert!(stdout.is_empty(), "{args:?}: {stdout}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
}

#[test]
fn what_cannot_run_across_processes_is_one_line_and_exit_2() {
    let p = ["run", "phold", "--lps", "8", "--end", "5"];
    let with = |extra: &[&'static str]| -> Vec<&str> { p.iter().chain(extra).copied().collect() };
    bad(&with(&["--procs", "0", "--sync", "window"]), "--procs is 0");
    bad(
        &with(&["--procs", "2", "--sync", "timewarp"]),
        "Time Warp across processes is not built yet",
    );
    bad(&with(&["--procs", "2"]), "got --sync seq");
    bad(
        &with(&[
            "--procs",
            "2",
            "--sync",
            "window",
            "--dedicated",
            "0.5",
            "--shared-sets",
            "1",
        ]),
        "load balancing",
    );
    bad(
        &with(&["--procs", "200", "--threads", "2", "--sync", "window"]),
        "at most 256",
    );
    bad(&with(&["--payload", "mpi"]), "unknown --payload 'mpi'");
    bad(
        &with(&["--payload", "copy", "--sync", "window"]),
        "--payload copy compares transports between processes: it needs --procs",
    );
    bad(&with(&["--heap-classes", "64"]), "is not SIZE:COUNT");
    bad(
        &with(&["--heap-classes", "4K:1,64:1"]),
        "must grow strictly",
    );
    bad(&with(&["--heap-segments", "17"]), "1..=16");
    bad(
        &[
            "run",
            "pcs",
            "--sample-period",
            "1",
            "--procs",
            "2",
            "--sync",
            "window",
        ],
        "global events",
    );
}
