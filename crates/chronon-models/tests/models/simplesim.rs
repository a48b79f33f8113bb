use chronon::QueueKind;
use chronon_models::simplesim::Touch;
use chronon_models::SimpleSim;

use crate::{check_fingerprints, pending, run, stat};

fn small() -> SimpleSim {
    SimpleSim {
        lps: 8,
        queue_bound: 150,
        payload_bytes: 64,
        warmup: 150.0,
        ..SimpleSim::default()
    }
}

/// Every message is received exactly once or still pending: sent + start events = received +
/// start events + pending (the pending count is the engine's, not the model's). Every payload
/// arrives intact (with `--touch write`, which writes and checks every byte).
#[test]
fn messages_are_conserved_and_payloads_read() {
    let m = SimpleSim {
        touch: Touch::Write,
        ..small()
    };
    let r = run(m.clone(), m.lps, 300.0, 5, QueueKind::Ladder);
    let sent = stat(&r, "messages_sent");
    let received = stat(&r, "messages_received");
    assert!(received > 10_000.0);
    assert_eq!(sent, received + pending(&r));
    assert_eq!(r.committed as f64, received + f64::from(m.lps));
    assert_eq!(stat(&r, "bad_payloads"), 0.0);
    assert_eq!(stat(&r, "bytes_read"), received * m.payload_bytes as f64);
}

/// Little's law: the event rate equals the number of messages in flight over the mean delay.
/// Every event sends at least one message, so the number in flight N(t) never falls; we take it
/// from the engine's pending count at the warm-up time (a second run of the same seed, cut
/// there) and at the end, and Little's law must put rate × mean delay between the two. The
/// queue bound must hold N near lps × queue_bound.
#[test]
fn steady_rate_obeys_littles_law() {
    let m = small();
    let end = 400.0;
    let r = run(m.clone(), m.lps, end, 6, QueueKind::Ladder);
    let at_warmup = run(m.clone(), m.lps, m.warmup, 6, QueueKind::Ladder);
    let (n0, n1) = (pending(&at_warmup), pending(&r));
    let rate = stat(&r, "steady_events") / (end - m.warmup);
    let in_flight = rate * m.mean_delay();
    eprintln!("simplesim: rate x delay = {in_flight}, in flight {n0} at warm-up, {n1} at end");
    assert!(
        in_flight > 0.98 * n0 && in_flight < 1.02 * n1,
        "Little: rate {rate} x delay {} = {in_flight}, not within in-flight [{n0}, {n1}]",
        m.mean_delay()
    );
    let bound = f64::from(m.lps * m.queue_bound);
    assert!(
        n0 > 0.95 * bound && n1 < 1.5 * bound,
        "in flight {n0}..{n1}, bound {bound}"
    );
}

#[test]
fn fingerprints() {
    let m = SimpleSim {
        queue_bound: 20,
        ..small()
    };
    check_fingerprints(|| m.clone(), m.lps, 100.0);
}

/// Written payloads (`--touch write`, what `000-fig7`/`000-fig8` run so that copies and MPI
/// batches carry the bytes): every executor commits the sequential run's history and model
/// statistics, and every payload arrives intact.
#[test]
fn fingerprints_with_written_payloads() {
    let m = SimpleSim {
        queue_bound: 20,
        touch: Touch::Write,
        ..small()
    };
    check_fingerprints(|| m.clone(), m.lps, 100.0);
    let r = run(m.clone(), m.lps, 100.0, 11, QueueKind::Ladder);
    assert_eq!(stat(&r, "bad_payloads"), 0.0);
    assert_eq!(
        stat(&r, "bytes_read"),
        stat(&r, "messages_received") * m.payload_bytes as f64
    );
}

/// `--touch`: the history does not depend on it; `none` reads nothing although every
/// message still carries its payload; `read` and `write` read every byte; only `write` has
/// sums to check.
#[test]
fn touch_changes_only_the_work_on_the_payload() {
    let base = SimpleSim {
        queue_bound: 20,
        payload_bytes: 100,
        ..small()
    };
    let runs: Vec<_> = [Touch::None, Touch::Read, Touch::Write]
        .into_iter()
        .map(|touch| {
            let m = SimpleSim {
                touch,
                ..base.clone()
            };
            run(m, base.lps, 50.0, 5, QueueKind::Ladder)
        })
        .collect();
    let received = stat(&runs[0], "messages_received");
    assert!(received > 100.0);
    for r in &runs {
        assert_eq!(r.fingerprint, runs[0].fingerprint);
        assert_eq!(stat(r, "bytes_carried"), received * 100.0);
        assert_eq!(stat(r, "bad_payloads"), 0.0);
    }
    assert_eq!(stat(&runs[0], "bytes_read"), 0.0);
    assert_eq!(stat(&runs[1], "bytes_read"), received * 100.0);
    assert_eq!(stat(&runs[2], "bytes_read"), received * 100.0);
    assert_eq!(SimpleSim::default().touch, Touch::None);
    let e = "all".parse::<Touch>().unwrap_err();
    assert_eq!(e, "unknown touch 'all' (allowed: none, read, write)");
}

#[test]
fn bad_parameters_are_named() {
    let e = SimpleSim {
        delay_min: -1.0,
        ..SimpleSim::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("delay-min"), "{e}");
}
