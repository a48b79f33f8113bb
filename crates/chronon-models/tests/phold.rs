//! PHOLD on the sequential executor: event counts, determinism, queue agreement, and faults.

use chronon::{QueueKind, SimError, Simulation};
use chronon_models::faulty::{Fault, Faulty};
use chronon_models::Phold;

fn run(p: &Phold, end: f64, seed: u64, queue: QueueKind) -> chronon::Report {
    Simulation::new(p.clone())
        .lps(p.lps)
        .end_time(end)
        .seed(seed)
        .queue(queue)
        .run()
        .expect("PHOLD runs")
}

fn small() -> Phold {
    Phold {
        lps: 64,
        start_events: 4,
        ..Phold::default()
    }
}

#[test]
fn committed_count_is_close_to_lps_times_start_events_times_end_over_mean() {
    let p = small();
    let end = 200.0;
    let r = run(&p, end, 1, QueueKind::Ladder);
    let expected = p.expected_events(end);
    let rel = (r.committed as f64 - expected).abs() / expected;
    // 51 200 expected; the count is a sum of renewal processes, its relative sd is ~0.5%.
    assert!(
        rel < 0.03,
        "committed {} vs expected {expected}",
        r.committed
    );
    assert_eq!(r.committed, r.processed);
    assert_eq!(r.rolled_back, 0);
    assert!(r.complete);
    assert!(r.last_time < end);
    assert_eq!(r.model_stats.get("events"), Some(r.committed as f64));
    // 10% remote, and a remote draw picks the sender itself 1 time in 64.
    let remote = r.model_stats.get("remote_sends").unwrap() / r.committed as f64;
    assert!(
        (remote - 0.1 * 63.0 / 64.0).abs() < 0.01,
        "remote share {remote}"
    );
}

#[test]
fn same_seed_same_fingerprint_other_seed_other_fingerprint() {
    let p = small();
    let a = run(&p, 50.0, 7, QueueKind::Ladder);
    let b = run(&p, 50.0, 7, QueueKind::Ladder);
    let c = run(&p, 50.0, 8, QueueKind::Ladder);
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_eq!(a.committed, b.committed);
    assert_ne!(a.fingerprint, c.fingerprint);
}

#[test]
fn heap_and_ladder_commit_the_same_history() {
    for (remote, lookahead, seed) in [(0.1, 0.1, 1), (1.0, 0.0, 2), (0.0, 0.5, 3), (0.5, 0.0, 4)] {
        let p = Phold {
            remote,
            lookahead,
            ..small()
        };
        let h = run(&p, 60.0, seed, QueueKind::Heap);
        let l = run(&p, 60.0, seed, QueueKind::Ladder);
        assert_eq!(
            h.fingerprint, l.fingerprint,
            "remote {remote} lookahead {lookahead}"
        );
        assert_eq!(h.committed, l.committed);
        assert_eq!(h.model_stats, l.model_stats);
    }
}

#[test]
fn state_bytes_and_work_do_not_change_the_history() {
    let base = run(&small(), 20.0, 3, QueueKind::Ladder);
    let heavy = Phold {
        state_bytes: 100,
        work_us: 0.5,
        ..small()
    };
    assert_eq!(
        run(&heavy, 20.0, 3, QueueKind::Ladder).fingerprint,
        base.fingerprint
    );
}

#[test]
fn invalid_parameters_are_named() {
    let bad = [
        (Phold { lps: 0, ..small() }, "lps"),
        (
            Phold {
                remote: 1.5,
                ..small()
            },
            "remote",
        ),
        (
            Phold {
                mean: f64::NAN,
                ..small()
            },
            "mean",
        ),
        (
            Phold {
                mean: -1.0,
                ..small()
            },
            "mean",
        ),
        (
            Phold {
                lookahead: 2.0,
                ..small()
            },
            "lookahead",
        ),
        (
            Phold {
                work_us: -1.0,
                ..small()
            },
            "work-us",
        ),
    ];
    for (p, name) in bad {
        let e = p.validate().unwrap_err();
        assert!(e.starts_with(name) || e.contains(name), "{e}");
        assert!(!e.contains('\n'));
    }
    assert!(small().validate().is_ok());
}

fn fault(fault: Fault) -> SimError {
    Simulation::new(Faulty {
        fault,
        culprit: 3,
        at: 5.0,
        lps: 8,
    })
    .end_time(100.0)
    .run()
    .unwrap_err()
}

#[test]
fn model_faults_are_errors_naming_the_lp_and_time() {
    for (f, words) in [
        (Fault::BadDestination, "LP 8"),
        (Fault::NegativeDelay, "delay -1"),
        (Fault::NanDelay, "delay NaN"),
        (
            Fault::BelowLookahead,
            "below the model's declared lookahead 0.5",
        ),
    ] {
        let e = fault(f);
        assert!(
            matches!(e, SimError::Model(ref m) if m.lp == 3 && m.time >= 5.0),
            "{e}"
        );
        let text = e.to_string();
        assert!(text.contains(words), "{text}");
        assert!(!text.contains('\n'));
    }
    let e = fault(Fault::Panic);
    assert!(
        matches!(e, SimError::Panic { lp: 3, ref message, .. } if message.contains("on purpose")),
        "{e}"
    );
}

#[test]
fn builder_rejects_bad_settings() {
    let p = small();
    let none = Phold { lps: 0, ..small() };
    let e = Simulation::new(none).end_time(1.0).run().unwrap_err();
    assert!(
        e.is_config() && e.to_string().contains("lps(0): it must be at least 1"),
        "{e}"
    );
    // PHOLD knows its LP count: another one is refused.
    let e = Simulation::new(p.clone())
        .lps(4)
        .end_time(1.0)
        .run()
        .unwrap_err();
    assert!(e.is_config() && e.to_string().contains("has 64 LPs"), "{e}");
    for end in [0.0, -1.0, f64::NAN] {
        let e = Simulation::new(p.clone()).end_time(end).run().unwrap_err();
        assert!(e.is_config() && e.to_string().contains("end_time("), "{e}");
    }
}
