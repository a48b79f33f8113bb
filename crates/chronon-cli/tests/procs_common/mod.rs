//! Helpers of the `--procs` tests (procs_cli.rs, procs_payload_cli.rs): reports, histories and
//! the differential against the sequential run (conservative, then Time Warp).
// Each test binary uses a subset of these helpers.
#![allow(dead_code)]

use super::common::chronon;

/// The files in `/dev/shm`, but MPICH's own (`mpich_*`: an `mpirun` that another test or
/// program runs at the same time creates and removes them; they are not a `--procs` run's).
/// Chronon's segments are memfds, so a `--procs` run must leave this list unchanged.
pub fn dev_shm() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with("mpich_"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub use super::common::history;

/// Runs `args` in one process with `--output` to a fresh file and returns the report.
pub fn report(args: &[&str]) -> serde_json::Value {
    super::common::report_by("procs", args, chronon)
}

pub fn differential(model: &[&str]) {
    let shm_before = dev_shm();
    let seq = history(&report(model));
    assert!(
        seq["committed"].as_u64().unwrap() > 0,
        "{model:?}: an empty run tests nothing"
    );
    for sync in ["window", "lockstep", "null-message"] {
        for procs in ["1", "2", "3"] {
            for threads in ["1", "2"] {
                let mut args = model.to_vec();
                args.extend(["--sync", sync, "--procs", procs, "--threads", threads]);
                let r = report(&args);
                assert_eq!(history(&r), seq, "{args:?}");
                let st = &r["executor_stats"];
                let p: f64 = procs.parse().unwrap();
                let t: f64 = threads.parse().unwrap();
                assert_eq!(st["procs"].as_f64(), Some(p), "{args:?}");
                assert_eq!(r["workers"].as_array().unwrap().len() as f64, p * t);
                // Work was spread: with more than one worker, several committed events.
                if p * t > 1.0 {
                    let busy = r["workers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|w| w["events"].as_f64().unwrap() > 0.0)
                        .count();
                    assert!(busy > 1, "{args:?}: one worker did everything");
                }
            }
        }
    }
    assert_eq!(
        dev_shm(),
        shm_before,
        "a shared-memory file was left behind"
    );
    differential_tw(model, &seq);
}

/// Time Warp across processes: copy state saving, and reverse where the model has a reverse
/// handler (`--state-saving auto` picks it then).
pub fn differential_tw(model: &[&str], seq: &serde_json::Value) {
    let shm_before = dev_shm();
    let has_reverse = model[1].starts_with("phold");
    let savings: &[&str] = if has_reverse {
        &["copy", "reverse"]
    } else {
        &["copy"]
    };
    for saving in savings {
        for procs in ["1", "2", "3"] {
            for threads in ["1", "2"] {
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
                let r = report(&args);
                assert_eq!(&history(&r), seq, "{args:?}");
                let st = &r["executor_stats"];
                let p: f64 = procs.parse().unwrap();
                let t: f64 = threads.parse().unwrap();
                assert_eq!(st["procs"].as_f64(), Some(p), "{args:?}");
                assert_eq!(
                    st["reverse_computation"].as_f64(),
                    Some(f64::from(u8::from(*saving == "reverse"))),
                    "{args:?}"
                );
                assert!(st["gvt_rounds"].as_f64().unwrap() >= 1.0, "{args:?}");
                let workers = r["workers"].as_array().unwrap();
                assert_eq!(workers.len() as f64, p * t);
                let committed: f64 = workers
                    .iter()
                    .map(|w| w["committed"].as_f64().unwrap())
                    .sum();
                assert_eq!(committed, r["committed"].as_f64().unwrap(), "{args:?}");
                if p * t > 1.0 {
                    let busy = workers
                        .iter()
                        .filter(|w| w["committed"].as_f64().unwrap() > 0.0)
                        .count();
                    assert!(busy > 1, "{args:?}: one worker did everything");
                }
            }
        }
    }
    differential_preempt(model, seq);
    assert_eq!(
        dev_shm(),
        shm_before,
        "a shared-memory file was left behind"
    );
}

/// Preemptive Time Warp across processes: 2 processes × 1–2 threads, `--preempt`,
/// commits the sequential history; the report's preemption and rollback figures are the sums
/// of the workers' (every process's).
pub fn differential_preempt(model: &[&str], seq: &serde_json::Value) {
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
        let r = report(&args);
        assert_eq!(&history(&r), seq, "{args:?}");
        let st = &r["executor_stats"];
        let workers = r["workers"].as_array().unwrap();
        for k in ["preempt_started", "preemptions", "rollbacks"] {
            let sum: f64 = workers.iter().map(|w| w[k].as_f64().unwrap()).sum();
            assert_eq!(st[k].as_f64(), Some(sum), "{args:?}: {k}");
        }
        // Every event processed ran in a context (or unpreemptibly) once, plus the dropped ones.
        assert_eq!(
            st["preempt_started"].as_f64().unwrap() + st["preempt_fallbacks"].as_f64().unwrap(),
            r["processed"].as_f64().unwrap() + st["preempt_discarded"].as_f64().unwrap(),
            "{args:?}"
        );
    }
}
