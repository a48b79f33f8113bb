use chronon::{Model, QueueKind};
use chronon_models::Pcs;

use crate::{check_fingerprints, pending, rel, run, stat};

/// Erlang's loss formula B(c, A), by the standard recursion B(k) = A B(k-1) / (k + A B(k-1)).
fn erlang_b(channels: u32, load: f64) -> f64 {
    (1..=channels).fold(1.0, |b, k| load * b / (f64::from(k) + load * b))
}

#[test]
fn erlang_b_reference_values() {
    // Textbook values: B(1, 1) = 0.5, B(2, 1) = 0.2, B(10, 5) ≈ 0.018385.
    assert!((erlang_b(1, 1.0) - 0.5).abs() < 1e-12);
    assert!((erlang_b(2, 1.0) - 0.2).abs() < 1e-12);
    assert!((erlang_b(10, 5.0) - 0.018385).abs() < 1e-6);
}

/// With handoffs off each cell is an M/M/c/c loss system: by PASTA the fraction of new calls
/// that find every channel busy is Erlang B of the offered load.
#[test]
fn blocking_matches_erlang_b_without_handoffs() {
    let m = Pcs {
        width: 32,
        height: 32,
        channels: 10,
        call_interarrival: 2.0 / 7.0,
        call_duration: 2.0,
        residence: 0.0,
        warmup: 20.0,
        ..Pcs::default()
    };
    let r = run(m.clone(), m.lps(), 620.0, 1, QueueKind::Ladder);
    let b = stat(&r, "blocking_probability");
    let theory = erlang_b(m.channels, m.offered_load());
    eprintln!(
        "PCS: blocking {b} vs Erlang B({}, {}) = {theory} over {} calls",
        m.channels,
        m.offered_load(),
        stat(&r, "calls")
    );
    assert!(stat(&r, "calls") > 2_000_000.0);
    assert!(rel(b, theory) < 0.02, "blocking {b}, Erlang B {theory}");
    assert_eq!(stat(&r, "handoffs_sent"), 0.0);
}

/// Every scheduled event is handled or still pending: the engine's pending count equals one
/// tick per cell, the new calls scheduled but not yet arrived, and the handoffs in flight.
#[test]
fn handoffs_are_conserved() {
    let m = Pcs {
        width: 8,
        height: 8,
        channels: 20,
        call_interarrival: 0.2,
        ..Pcs::default()
    };
    let r = run(m.clone(), m.lps(), 200.0, 2, QueueKind::Ladder);
    let in_flight = stat(&r, "handoffs_sent") - stat(&r, "handoffs_received");
    assert!(stat(&r, "handoffs_received") > 10_000.0);
    assert_eq!(
        pending(&r),
        f64::from(m.lps()) + stat(&r, "new_calls_pending") + in_flight
    );
    let d = stat(&r, "dropping_probability");
    assert!(d > 0.0 && d < 1.0, "dropping probability {d}");
}

#[test]
fn hex_neighbours() {
    let m = Pcs {
        width: 4,
        height: 4,
        ..Pcs::default()
    };
    let sorted = |lp| {
        let mut n = m.neighbours(lp);
        n.sort();
        n
    };
    assert_eq!(sorted(5), vec![1, 2, 4, 6, 9, 10]); // odd row: shifted right
    assert_eq!(sorted(9), vec![4, 5, 8, 10, 12, 13]); // even row
    assert_eq!(sorted(0), vec![1, 4]);
    // Neighbourhood is symmetric.
    for a in 0..16 {
        for b in m.neighbours(a) {
            assert!(m.neighbours(b).contains(&a), "{a} -> {b}");
        }
    }
}

#[test]
fn fingerprints() {
    let m = Pcs {
        width: 6,
        height: 6,
        channels: 8,
        call_interarrival: 0.5,
        fading_work: 1,
        fading_period: 7.5,
        ..Pcs::default()
    };
    assert!(crate::declares_topology(&m, m.lps()));
    assert_eq!(m.topology(7).unwrap().len(), m.neighbours(7).len());
    check_fingerprints(|| m.clone(), m.lps(), 100.0);
}

/// The periodic fading recomputation runs in every cell every `fading-period` minutes and
/// changes no call figure (it only reads the active calls).
#[test]
fn periodic_fading_runs_every_period_and_changes_no_call() {
    let m = Pcs {
        width: 4,
        height: 4,
        channels: 5,
        call_interarrival: 0.5,
        fading_work: 2,
        ..Pcs::default()
    };
    let periodic = Pcs {
        fading_period: 10.0,
        ..m.clone()
    };
    let a = run(m.clone(), m.lps(), 100.0, 2, QueueKind::Ladder);
    let b = run(periodic, m.lps(), 100.0, 2, QueueKind::Ladder);
    // Every cell at 10, 20, ..., 90 (events at the end time never run).
    assert_eq!(stat(&b, "fading_recomputations"), 16.0 * 9.0);
    assert_eq!(stat(&a, "fading_recomputations"), 0.0);
    for k in ["calls", "blocked", "handoffs", "dropped", "handoffs_sent"] {
        assert_eq!(stat(&a, k), stat(&b, k), "{k}");
    }
    assert_ne!(stat(&a, "fading_checksum"), stat(&b, "fading_checksum"));
    let e = Pcs {
        fading_period: 0.001,
        ..Pcs::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("fading-period"), "{e}");
}

#[test]
fn bad_parameters_are_named() {
    let e = Pcs {
        channels: 0,
        ..Pcs::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("channels"), "{e}");
    let e = Pcs {
        handoff_delay: 0.0,
        ..Pcs::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("handoff-delay"), "{e}");
}

/// `sample_period`: a global event samples the channel occupancy into the report's
/// `model_series`, the same series under every executor; each sample is a fraction of the
/// channels and the first comes after the network has filled up from empty.
#[test]
fn occupancy_series_is_the_same_under_every_executor() {
    use chronon::{Executor, Simulation};
    let m = Pcs {
        width: 6,
        height: 6,
        channels: 20,
        call_interarrival: 0.2,
        sample_period: 0.5,
        ..Pcs::default()
    };
    let go = |exec: Executor| {
        Simulation::new(m.clone())
            .lps(m.lps())
            .end_time(6.0)
            .seed(3)
            .executor(exec)
            .run()
            .expect("the run succeeds")
    };
    let seq = go(Executor::Sequential);
    let series = &seq.model_series["channel_occupancy"];
    assert_eq!(series.len(), 11, "{series:?}");
    assert!(series.iter().all(|&(_, v)| (0.0..=1.0).contains(&v)));
    assert!(series[0].1 < series[10].1, "{series:?}");
    for exec in crate::parallel_executors() {
        let name = format!("{exec:?}");
        let r = go(exec);
        assert_eq!(r.model_series, seq.model_series, "{name}");
        assert_eq!(r.fingerprint, seq.fingerprint, "{name}");
    }
}
