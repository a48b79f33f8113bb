//! Time Warp under many rollbacks: PHOLD with 90 % remote events and zero lookahead on 4 threads
//! (more threads than this machine's cores, so workers are descheduled mid-run), over random
//! seeds, copy and reverse state saving; every run must commit the sequential history.
//!
//! The seeds change with every run of the test (printed, so a failure can be replayed with
//! `CHRONON_STRESS_SEED=<seed>`).

mod common;

use common::{chronon, fingerprint};

/// Fingerprint, events rolled back and events committed as they ran (safe commits).
fn phold(seed: u64, extra: &[&str]) -> (String, u64) {
    let (f, rb, _) = phold_safe(seed, "0", extra);
    (f, rb)
}

fn phold_safe(seed: u64, lookahead: &str, extra: &[&str]) -> (String, u64, u64) {
    let seed = seed.to_string();
    let out =
        std::env::temp_dir().join(format!("chronon-stress-{}-{seed}.json", std::process::id()));
    let out_s = out.to_string_lossy().into_owned();
    let mut args = vec![
        "run",
        "phold",
        "--lps",
        "64",
        "--end",
        "40",
        "--remote",
        "0.9",
        "--lookahead",
        lookahead,
        "--mean",
        "0.5",
        "--seed",
        &seed,
        "--output",
        &out_s,
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = chronon(&args);
    assert_eq!(code, 0, "seed {seed} {extra:?}: {stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("a report")).expect("JSON");
    let _ = std::fs::remove_file(&out);
    (
        fingerprint(&stdout),
        report["rolled_back"].as_u64().unwrap_or(0),
        report["executor_stats"]["safe_commits"]
            .as_f64()
            .map_or(0, |x| x as u64),
    )
}

fn base_seed() -> u64 {
    std::env::var("CHRONON_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_007)
        })
}

#[test]
fn many_rollbacks_on_four_threads_commit_the_sequential_history() {
    let base = base_seed();
    println!("CHRONON_STRESS_SEED={base}");
    let mut rolled_back = 0;
    for i in 0..6u64 {
        let seed = base + i;
        let (seq, _) = phold(seed, &[]);
        let saving = if i % 2 == 0 { "reverse" } else { "copy" };
        let mut extra = vec![
            "--sync",
            "timewarp",
            "--threads",
            "4",
            "--state-saving",
            saving,
        ];
        if i % 4 == 1 {
            extra.extend(["--save-every", "3"]);
        }
        let (tw, rb) = phold(seed, &extra);
        assert_eq!(
            tw, seq,
            "seed {seed}, {extra:?}: Time Warp committed another history"
        );
        rolled_back += rb;
    }
    // The point of the test: the runs did roll back (a run without rollbacks tests little).
    assert!(rolled_back > 0, "no rollback in 6 runs (base seed {base})");
}

/// Safe commits (events before GVT + lookahead commit as they run, with no record) under many
/// rollbacks: a small lookahead, so that safe events and rolled-back ones sit close together
/// in time on every LP. Every run must commit the sequential history, and both must happen.
#[test]
fn safe_commits_among_many_rollbacks_on_four_threads_commit_the_sequential_history() {
    let base = base_seed();
    println!("CHRONON_STRESS_SEED={base}");
    let (mut rolled_back, mut safe) = (0, 0);
    for i in 0..4u64 {
        let seed = base + i;
        let lookahead = if i % 2 == 0 { "0.05" } else { "0.2" };
        let (seq, _, _) = phold_safe(seed, lookahead, &[]);
        let extra = [
            "--sync",
            "timewarp",
            "--threads",
            "4",
            "--state-saving",
            "reverse",
        ];
        let (tw, rb, sc) = phold_safe(seed, lookahead, &extra);
        assert_eq!(
            tw, seq,
            "seed {seed}, lookahead {lookahead}: Time Warp committed another history"
        );
        rolled_back += rb;
        safe += sc;
    }
    assert!(rolled_back > 0, "no rollback in 4 runs (base seed {base})");
    assert!(safe > 0, "no safe commit in 4 runs (base seed {base})");
}
