//! `BPtr` payloads across worker processes (`Simulation::processes`, this test binary
//! re-executing itself): the zero-copy and the copy transport give the sequential run's
//! fingerprint and `model_stats` (every payload read intact), and every shared-heap item comes
//! back to its owner (a worker process exits with code 4 and one line if one never does: the
//! leak test provokes that).
#![cfg(all(target_os = "linux", not(chronon_loom)))]

#[path = "bptr_model.rs"]
mod bptr_model;

use bptr_model::Courier;
use chronon::{ConservativeConfig, Executor, Simulation, TimeWarpConfig};

fn sim(leak_at: Option<u32>, executor: Executor) -> Simulation<Courier> {
    Simulation::new(Courier { leak_at })
        .lps(9)
        .end_time(60.0)
        .seed(3)
        .executor(executor)
}

fn check(entry: &str, procs: usize, ex: Executor, copy: bool) {
    let seq =
        (!chronon::is_worker_process()).then(|| sim(None, Executor::Sequential).run().unwrap());
    let r = sim(None, ex.clone())
        .processes(procs)
        .payload_copy(copy)
        .process_args([entry, "--exact", "--nocapture", "--test-threads=1"])
        .run()
        .unwrap();
    let seq = seq.expect("only the parent gets a report");
    assert!(seq.committed > 200);
    assert_eq!(seq.model_stats.get("bad_payloads"), Some(0.0));
    assert_eq!(
        r.fingerprint, seq.fingerprint,
        "{ex:?} × {procs}, copy {copy}"
    );
    assert_eq!(r.committed, seq.committed);
    assert_eq!(
        r.model_stats, seq.model_stats,
        "{ex:?} × {procs}, copy {copy}"
    );
}

#[test]
fn zero_copy_window_3_processes() {
    check(
        "zero_copy_window_3_processes",
        3,
        Executor::Window(ConservativeConfig::new(1)),
        false,
    );
}

#[test]
fn copy_null_message_2_processes_2_threads() {
    check(
        "copy_null_message_2_processes_2_threads",
        2,
        Executor::NullMessage(ConservativeConfig::new(2)),
        true,
    );
}

#[test]
fn zero_copy_lockstep_2_processes_2_threads() {
    check(
        "zero_copy_lockstep_2_processes_2_threads",
        2,
        Executor::Lockstep(ConservativeConfig::new(2)),
        false,
    );
}

#[test]
fn a_leaked_payload_fails_the_run() {
    let r = sim(Some(4), Executor::Window(ConservativeConfig::new(1)))
        .processes(2)
        .process_args([
            "a_leaked_payload_fails_the_run",
            "--exact",
            "--test-threads=1",
        ])
        .run();
    let e = r.expect_err("a leaked BPtr must fail the run");
    assert!(e.to_string().contains("code 4"), "{e}");
}

/// Time Warp across processes: the same history with zero copy (rolled-back handlers drop
/// their payloads and re-send; a worker thread's heap reuses an item only once GVT passed the
/// time it was freed at), and every item back at exit (the leak check of `child_main`).
#[test]
fn zero_copy_time_warp_2_processes_2_threads() {
    check(
        "zero_copy_time_warp_2_processes_2_threads",
        2,
        Executor::TimeWarp(TimeWarpConfig::new(2)),
        false,
    );
}

#[test]
fn a_leaked_payload_fails_a_time_warp_run() {
    let r = sim(Some(4), Executor::TimeWarp(TimeWarpConfig::new(1)))
        .processes(2)
        .process_args([
            "a_leaked_payload_fails_a_time_warp_run",
            "--exact",
            "--test-threads=1",
        ])
        .run();
    let e = r.expect_err("a leaked BPtr must fail the run");
    assert!(e.to_string().contains("code 4"), "{e}");
}

/// The copy transport under Time Warp: payloads copied on send and on receive, the same
/// history; every copy back at exit.
#[test]
fn copy_time_warp_3_processes() {
    check(
        "copy_time_warp_3_processes",
        3,
        Executor::TimeWarp(TimeWarpConfig::new(1)),
        true,
    );
}
