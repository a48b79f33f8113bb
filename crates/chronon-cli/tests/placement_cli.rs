//! Placement with the real binary: pinned and unpinned workers (threads and `--procs`, every
//! parallel executor, 1–4 threads) commit the sequential history, and the report's
//! `placement` says what was done; pinning more workers than cores runs and says so.

mod common;

use common::{chronon, history, report_by, SMALL};

fn report(args: &[&str]) -> serde_json::Value {
    report_by("placement", args, chronon)
}

/// The small PHOLD run with `extra` flags.
fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a: Vec<&'a str> = SMALL.to_vec();
    a.extend_from_slice(extra);
    a
}

/// The cores this test process may use, as the binary counts them.
fn cores() -> usize {
    report(&with(&[]))["placement"]["machine"]["cores"]
        .as_u64()
        .unwrap() as usize
}

#[test]
fn pinned_and_unpinned_threads_commit_the_sequential_history() {
    let seq = report(&with(&[]));
    assert_eq!(seq["placement"]["pinned"], false, "{}", seq["placement"]);
    let seq = history(&seq);
    for sync in ["window", "null-message", "lockstep", "timewarp"] {
        for threads in ["1", "2", "3", "4"] {
            for pin in ["on", "off"] {
                let args = with(&["--sync", sync, "--threads", threads, "--pin", pin]);
                let r = report(&args);
                assert_eq!(history(&r), seq, "{args:?}");
                let p = &r["placement"];
                assert_eq!(p["pinned"], pin == "on", "{args:?}: {p}");
                assert_eq!(p["first_touch"], pin == "on", "{args:?}: {p}");
                let n: usize = threads.parse().unwrap();
                let want = if pin == "on" { n } else { 0 };
                assert_eq!(p["cores"].as_array().unwrap().len(), want, "{p}");
                assert_eq!(r["config"]["pin"], pin);
            }
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn pinned_worker_processes_commit_the_sequential_history() {
    let seq = history(&report(&with(&[])));
    for sync in ["window", "null-message", "lockstep", "timewarp"] {
        for (procs, threads) in [("2", "1"), ("2", "2")] {
            for pin in ["on", "off"] {
                let args = with(&[
                    "--sync",
                    sync,
                    "--procs",
                    procs,
                    "--threads",
                    threads,
                    "--pin",
                    pin,
                ]);
                let r = report(&args);
                assert_eq!(history(&r), seq, "{args:?}");
                let p = &r["placement"];
                assert_eq!(p["pinned"], pin == "on", "{args:?}: {p}");
                // Every worker process said whether it pinned its workers.
                for w in r["workers"].as_array().unwrap() {
                    assert_eq!(w["pinned"], if pin == "on" { 1.0 } else { 0.0 }, "{w}");
                }
            }
        }
    }
}

#[test]
fn more_workers_than_cores_run_pinned_on_shared_cores_or_unpinned_under_auto() {
    let n = cores();
    let over = (n + 2).to_string();
    for sync in ["window", "timewarp"] {
        let on = report(&with(&["--sync", sync, "--threads", &over, "--pin", "on"]));
        let p = &on["placement"];
        assert_eq!(p["pinned"], true, "{p}");
        assert!(p["why"].as_str().unwrap().contains("cores shared"), "{p}");
        let cores: Vec<u64> = p["cores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(cores.len(), n + 2);
        assert_eq!(cores[n], cores[0], "worker n shares worker 0's core: {p}");
        let auto = report(&with(&["--sync", sync, "--threads", &over]));
        let p = &auto["placement"];
        assert_eq!(p["pinned"], false, "{p}");
        assert_eq!(p["pin"], "auto");
        let why = p["why"].as_str().unwrap();
        assert!(
            why.contains(&format!("{} workers on {n} cores", n + 2)),
            "{why}"
        );
        assert_eq!(history(&on), history(&auto));
    }
}

#[test]
fn a_bad_pin_is_one_line_and_exit_2() {
    let (code, _, err) = chronon(&with(&["--pin", "always"]));
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("unknown --pin 'always' (allowed: auto, on, off)"),
        "{err}"
    );
}
