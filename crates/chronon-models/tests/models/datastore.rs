use chronon::QueueKind;
use chronon_models::datastore::Alloc;
use chronon_models::DataStore;

use crate::{check_fingerprints, rel, run, stat};

/// Every transaction started is committed, aborted, or still waiting for replies; the last
/// figure is counted from the nodes' pending batches, not from the counters.
#[test]
fn transactions_are_conserved() {
    let m = DataStore {
        nodes: 16,
        hold: 2.0,
        keys_per_partition: 20,
        work_us: 0.0,
        ..DataStore::default()
    };
    let r = run(m.clone(), m.lps(), 200.0, 3, QueueKind::Ladder);
    let started = stat(&r, "tx_started");
    let pending = stat(&r, "tx_pending_in_batches");
    assert!(started > 20_000.0);
    assert!(stat(&r, "aborted") > 1000.0, "the run must have conflicts");
    assert_eq!(
        started,
        stat(&r, "committed") + stat(&r, "aborted") + pending
    );
    assert_eq!(stat(&r, "tx_decided") + pending, started);
    assert_eq!(stat(&r, "tx_in_flight"), pending);
    assert_eq!(stat(&r, "stray_replies"), 0.0);
}

/// Leases that end at once never conflict: no aborts, and the throughput is the offered load
/// (a Poisson count, so within a few standard errors).
#[test]
fn no_conflicts_means_no_aborts_and_full_throughput() {
    let m = DataStore {
        hold: 0.0,
        keys_per_partition: 1,
        partitions_per_node: 1,
        ops_per_tx: 2,
        warmup: 10.0,
        work_us: 0.0,
        ..DataStore::default()
    };
    let r = run(m.clone(), m.lps(), 510.0, 4, QueueKind::Ladder);
    assert_eq!(stat(&r, "aborted"), 0.0);
    assert_eq!(stat(&r, "abort_rate"), 0.0);
    let t = stat(&r, "throughput");
    eprintln!("datastore: throughput {t} vs offered {}", m.offered_load());
    assert!(rel(t, m.offered_load()) < 0.02, "throughput {t}");
    // Every decision waits for at most one round trip.
    assert!(stat(&r, "mean_latency") <= 2.0 * m.net_delay + 1e-9);
}

/// One access per transaction and one transaction per batch: the accesses to a key are a
/// Poisson stream into a one-server loss system with hold time `hold`, so the failed fraction
/// is Erlang B(1, r·hold) = r·hold / (1 + r·hold) (insensitive to the hold time's law).
#[test]
fn conflict_rate_matches_erlang_b_one_server() {
    let m = DataStore {
        nodes: 64,
        partitions_per_node: 4,
        keys_per_partition: 25,
        batching_factor: 1,
        ops_per_tx: 1,
        remote: 0.5,
        batch_interarrival: 1.0,
        hold: 25.0,
        work_us: 0.0,
        ..DataStore::default()
    };
    let r = run(m.clone(), m.lps(), 5000.0, 5, QueueKind::Ladder);
    let a = m.access_rate_per_key() * m.hold;
    let theory = a / (1.0 + a);
    let conflicts = stat(&r, "access_conflicts") / stat(&r, "accesses");
    eprintln!("datastore: access conflict rate {conflicts} vs Erlang B(1, {a}) = {theory}");
    assert!(
        rel(conflicts, theory) < 0.03,
        "conflicts {conflicts}, theory {theory}"
    );
    // With one access per transaction, a transaction aborts exactly when its access fails.
    assert!(rel(stat(&r, "abort_rate"), conflicts) < 0.01);
}

#[test]
fn fingerprints() {
    let m = DataStore {
        nodes: 8,
        keys_per_partition: 10,
        work_us: 0.0,
        ..DataStore::default()
    };
    check_fingerprints(|| m.clone(), m.lps(), 60.0);
}

/// The clustered allocation (`--alloc upfront`, Table II's varied configuration), whose
/// platform-mode returns come at other points of the event: every executor, preemptive Time
/// Warp included, commits the sequential history.
#[test]
fn fingerprints_with_upfront_allocation() {
    let m = DataStore {
        nodes: 8,
        keys_per_partition: 10,
        work_us: 0.0,
        alloc: Alloc::Upfront,
        ..DataStore::default()
    };
    check_fingerprints(|| m.clone(), m.lps(), 60.0);
}

/// The seed's "varied" configuration allocates the same request meta-data at another point of
/// the batch event: same history, same statistics, one record per access in both.
#[test]
fn upfront_allocation_is_the_same_model() {
    let m = DataStore {
        nodes: 8,
        keys_per_partition: 10,
        work_us: 0.0,
        ..DataStore::default()
    };
    let rr = run(m.clone(), m.lps(), 40.0, 3, QueueKind::Ladder);
    let up = DataStore {
        alloc: Alloc::Upfront,
        ..m.clone()
    };
    let up = run(up, m.lps(), 40.0, 3, QueueKind::Ladder);
    assert_eq!(rr.fingerprint, up.fingerprint);
    assert_eq!(rr.model_stats, up.model_stats);
    let accesses = stat(&rr, "tx_started") * f64::from(m.ops_per_tx);
    assert_eq!(stat(&rr, "request_metas_allocated"), accesses);
}

#[test]
fn the_default_work_is_the_examples() {
    assert_eq!(DataStore::default().work_us, 30.0);
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/datastore.toml"
    ))
    .unwrap();
    assert!(example.contains("work-us = 30.0"), "{example}");
    assert_eq!("upfront".parse::<Alloc>(), Ok(Alloc::Upfront));
    let e = "later".parse::<Alloc>().unwrap_err();
    assert_eq!(e, "unknown alloc 'later' (allowed: round-robin, upfront)");
}

#[test]
fn bad_parameters_are_named() {
    let e = DataStore {
        net_delay: 0.0,
        work_us: 0.0,
        ..DataStore::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("net-delay"), "{e}");
    let e = DataStore {
        batching_factor: 0,
        work_us: 0.0,
        ..DataStore::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("batching-factor"), "{e}");
}
