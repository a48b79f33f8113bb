//! Faults and refusals across processes: the size check, `kill -9` of a worker process, Ctrl-C
//! to the process group, errors and panics in worker processes, and what cannot run with
//! `--procs` (one line, exit 2). A module of the `procs_cli` test binary.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::common::chronon;
use super::dev_shm;

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

/// The worker processes of `parent`, once `n` have started (20 s at most).
fn wait_for_workers(parent: &Child, n: usize) -> Vec<u32> {
    let t = Instant::now();
    loop {
        let k = children(parent.id());
        if k.len() >= n {
            return k;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "workers did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `kill -SIG TARGET` (a pid, or `-PGID` for a process group).
fn signal(sig: &str, target: &str) {
    assert!(Command::new("kill")
        .args([sig, "--", target])
        .status()
        .unwrap()
        .success());
}

/// Waits for `parent` to exit, at most `within` from now (`what` names the deadline missed).
fn exits_within(parent: &mut Child, within: Duration, what: &str) -> ExitStatus {
    let sent = Instant::now();
    loop {
        if let Some(s) = parent.try_wait().unwrap() {
            return s;
        }
        assert!(sent.elapsed() < within, "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asserts that none of the worker processes `kids` is still running.
fn assert_gone(kids: Vec<u32>) {
    for k in kids {
        assert!(!alive(k), "worker process {k} is still running");
    }
}

#[test]
fn kill_9_of_a_worker_process_stops_every_process_within_2_s() {
    kill_9(&["--sync", "window"]);
}

#[test]
fn kill_9_of_a_worker_process_under_time_warp_stops_every_process_within_2_s() {
    kill_9(&["--sync", "timewarp", "--threads", "2"]);
}

fn kill_9(sync: &[&str]) {
    let shm_before = dev_shm();
    let mut parent = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args([
            "run", "phold", "--lps", "256", "--end", "1e9", "--procs", "3",
        ])
        .args(sync)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kids = wait_for_workers(&parent, 3);
    // Let them get into the run (past initialization and the start barrier).
    std::thread::sleep(Duration::from_millis(300));
    let victim = kids[1];
    signal("-9", &victim.to_string());
    let status = exits_within(
        &mut parent,
        Duration::from_secs(2),
        "the run did not stop within 2 s of kill -9",
    );
    let out = parent.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success());
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("(pid {victim}) was killed by signal 9")),
        "{stderr}"
    );
    assert_gone(kids);
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
        let kids = wait_for_workers(&parent, 2);
        std::thread::sleep(Duration::from_millis(500));
        signal("-INT", &format!("-{}", parent.id()));
        let status = exits_within(
            &mut parent,
            Duration::from_secs(5),
            &format!("{sync}: no stop within 5 s"),
        );
        let out = parent.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(status.code(), Some(130), "{sync}: {stdout}");
        assert!(stdout.contains("INCOMPLETE"), "{sync}: {stdout}");
        assert_gone(kids);
    }
}

/// With global events the worker processes are started anew after every global event (the
/// run ends at a cut before each): Ctrl-C to the process group, whenever it comes (a worker
/// just starting included), stops the run with the incomplete summary, exit code 130, no
/// process and no cut left behind.
#[test]
fn ctrl_c_during_a_run_with_global_events_across_processes_stops_it_cleanly() {
    use std::os::unix::process::CommandExt;
    for wait_ms in [300u64, 700, 1100] {
        let mut parent = Command::new(env!("CARGO_BIN_EXE_chronon"))
            .args([
                "run",
                "random",
                "--lps",
                "2000",
                "--end",
                "1e6",
                "--global-period",
                "0.5",
                "--global-writes",
                "true",
                "--sync",
                "window",
                "--procs",
                "2",
            ])
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let cuts = std::env::temp_dir().join(format!("chronon-cuts-{}-0", parent.id()));
        std::thread::sleep(Duration::from_millis(wait_ms));
        signal("-INT", &format!("-{}", parent.id()));
        let status = exits_within(
            &mut parent,
            Duration::from_secs(10),
            &format!("after {wait_ms} ms: no stop within 10 s"),
        );
        let out = parent.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            status.code(),
            Some(130),
            "after {wait_ms} ms: {stdout}{stderr}"
        );
        assert!(
            stdout.contains("INCOMPLETE"),
            "after {wait_ms} ms: {stdout}"
        );
        assert!(!cuts.exists(), "{} was left behind", cuts.display());
    }
}

/// Ctrl-C (SIGINT to the foreground process group: the parent and its worker processes)
/// during a Time Warp run stops every process and still writes the incomplete report.
#[test]
fn ctrl_c_under_time_warp_across_processes_writes_the_incomplete_report() {
    use std::os::unix::process::CommandExt;
    let path =
        std::env::temp_dir().join(format!("chronon-procs-ctrlc-{}.json", std::process::id()));
    let mut parent = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args([
            "run",
            "phold",
            "--lps",
            "256",
            "--end",
            "1e9",
            "--sync",
            "timewarp",
            "--procs",
            "2",
            "--threads",
            "2",
            "--output",
        ])
        .arg(&path)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_workers(&parent, 2);
    std::thread::sleep(Duration::from_millis(500));
    let kids = children(parent.id());
    signal("-INT", &format!("-{}", parent.id()));
    let status = exits_within(
        &mut parent,
        Duration::from_secs(5),
        "the run did not stop within 5 s of Ctrl-C",
    );
    assert_eq!(status.code(), Some(130));
    assert_gone(kids);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(r["complete"], false);
    assert!(r["committed"].as_u64().unwrap() > 0);
}

/// A child killed (with its workers, by their death signal) when the test ends, also when it
/// fails midway.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGINT to the parent alone (`kill -INT PID`, or a program that runs chronon and stops it)
/// is passed on to every worker process: the run stops as from a terminal's Ctrl-C, with the
/// incomplete report, under every protocol family.
#[test]
fn sigint_to_the_parent_alone_stops_every_process() {
    for sync in ["window", "null-message", "timewarp"] {
        let path = std::env::temp_dir().join(format!(
            "chronon-procs-parent-int-{sync}-{}.json",
            std::process::id()
        ));
        let mut parent = Reaped(
            Command::new(env!("CARGO_BIN_EXE_chronon"))
                .args([
                    "run", "phold", "--lps", "256", "--end", "1e9", "--sync", sync, "--procs", "2",
                    "--output",
                ])
                .arg(&path)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let kids = wait_for_workers(&parent.0, 2);
        std::thread::sleep(Duration::from_millis(500));
        signal("-INT", &parent.0.id().to_string());
        let status = exits_within(
            &mut parent.0,
            Duration::from_secs(5),
            &format!("{sync}: no stop within 5 s of SIGINT to the parent"),
        );
        assert_eq!(status.code(), Some(130), "{sync}");
        assert_gone(kids);
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(r["complete"], false, "{sync}");
    }
}

#[test]
fn a_handler_panic_in_a_worker_process_names_its_lp_and_time() {
    for sync in ["window", "lockstep", "null-message", "timewarp"] {
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
        &with(&["--procs", "2", "--sync", "timewarp", "--check-reverse"]),
        "--check-reverse",
    );
    bad(&with(&["--procs", "2"]), "--procs needs a parallel --sync");
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
}
