use chronon::QueueKind;
use chronon_models::Manufacturing;

use crate::{check_fingerprints, pending, rel, run, stat};

/// Many independent lines of one processing station each (control stations pass-through, no
/// rework, no assembly): every processing station is an M/M/1 queue.
fn mm1(lines: u32, lambda: f64, mu: f64) -> Manufacturing {
    Manufacturing {
        lines,
        stations_per_line: 1,
        assembly_stations: 0,
        testing_stations: 0,
        interarrival: 1.0 / lambda,
        processing_mean: 1.0 / mu,
        control_mean: 0.0,
        rework: 0.0,
        transfer: 0.5,
        warmup: 100.0,
        ..Manufacturing::default()
    }
}

/// M/M/1 with rho = 0.5: L = rho / (1 - rho), Wq = rho / (mu - lambda), W = 1 / (mu - lambda).
/// 400 replicas × 2500 time units after the warm-up keep the standard error near 0.5%.
#[test]
fn single_station_matches_mm1() {
    let (lambda, mu) = (0.5, 1.0);
    let m = mm1(400, lambda, mu);
    let r = run(m.clone(), m.lps(), 2600.0, 21, QueueKind::Ladder);
    let rho = lambda / mu;
    let l = stat(&r, "processing_mean_in_station");
    let wq = stat(&r, "processing_mean_wait");
    let w = stat(&r, "processing_mean_time_in_station");
    eprintln!("M/M/1 rho {rho}: L {l} (theory 1), Wq {wq} (1), W {w} (2)");
    assert!(
        rel(l, rho / (1.0 - rho)) < 0.02,
        "L = {l}, M/M/1: {}",
        rho / (1.0 - rho)
    );
    assert!(
        rel(wq, rho / (mu - lambda)) < 0.02,
        "Wq = {wq}, M/M/1: {}",
        rho / (mu - lambda)
    );
    assert!(
        rel(w, 1.0 / (mu - lambda)) < 0.02,
        "W = {w}, M/M/1: {}",
        1.0 / (mu - lambda)
    );
    // Pass-through control stations hold nothing.
    assert_eq!(stat(&r, "control_mean_wait"), 0.0);
    // Every station is observed from the warm-up to the end time, not to its last event.
    assert_eq!(stat(&r, "processing_observed_time"), 400.0 * 2500.0);
}

/// Parts in = parts out + work in progress, where the work in progress is what sits in join
/// buffers plus the part events the engine still holds (its own count, not the model's).
#[test]
fn parts_are_conserved() {
    let m = Manufacturing::default();
    let r = run(m.clone(), m.lps(), 3000.0, 4, QueueKind::Ladder);
    let lines = f64::from(m.lines);
    let created = stat(&r, "parts_created");
    let assembled = stat(&r, "products_assembled");
    let out = stat(&r, "products_out");
    let join = stat(&r, "join_buffered_parts");
    assert!(out > 100.0, "only {out} products out");
    // Pending events: one tick per source, the products not yet out, and the parts in flight.
    let parts_in_flight = pending(&r) - lines - (assembled - out);
    assert_eq!(created, lines * assembled + join + parts_in_flight);
    assert_eq!(stat(&r, "parts_out"), lines * out);
    // Every product leaves after its oldest component was created.
    assert!(stat(&r, "mean_cycle_time") > 0.0);
}

/// With rework probability p a part visits its processing station 1 / (1 - p) times on average
/// (a geometric number of passes).
#[test]
fn rework_gives_geometric_visits() {
    let p = 0.3;
    let m = Manufacturing {
        stations_per_line: 1,
        lines: 20,
        rework: p,
        control_mean: 1.0,
        processing_mean: 2.0,
        interarrival: 10.0,
        ..mm1(20, 0.1, 0.5)
    };
    let r = run(m.clone(), m.lps(), 20_000.0, 8, QueueKind::Ladder);
    let visits = stat(&r, "processing_visits") / stat(&r, "parts_created");
    eprintln!(
        "rework {p}: visits per part {visits} (theory {})",
        1.0 / (1.0 - p)
    );
    assert!(
        rel(visits, 1.0 / (1.0 - p)) < 0.02,
        "visits per part {visits}"
    );
}

/// One line, one assembly station: each product is one part, so parts out = products out.
#[test]
fn single_line_products_count_once() {
    let m = Manufacturing {
        lines: 1,
        assembly_stations: 1,
        testing_stations: 1,
        ..Manufacturing::default()
    };
    let r = run(m.clone(), m.lps(), 5000.0, 4, QueueKind::Ladder);
    let out = stat(&r, "products_out");
    assert!(out > 100.0);
    assert_eq!(stat(&r, "parts_out"), out);
    assert_eq!(stat(&r, "join_buffered_parts"), 0.0);
}

#[test]
fn fingerprints() {
    let m = Manufacturing::default();
    assert!(crate::declares_topology(&m, m.lps()));
    check_fingerprints(|| m.clone(), m.lps(), 500.0);
}

/// The seed's own case: zero transfer time, so every station link has lookahead 0. Window and
/// lock-step (both mappings) at 1–4 threads and Time Warp commit the sequential history.
#[test]
fn zero_transfer_fingerprints() {
    use chronon::partition::Mapping;
    use chronon::{ConservativeConfig, Executor, Runtime, Simulation, TimeWarpConfig};
    let m = Manufacturing {
        transfer: 0.0,
        ..Manufacturing::default()
    };
    let seq = run(m.clone(), m.lps(), 300.0, 7, QueueKind::Ladder);
    assert!(seq.committed > 500);
    for t in 1..=4 {
        let c = ConservativeConfig::new(t);
        for exec in [
            Executor::Window(c.clone()),
            Executor::Lockstep(c.clone()),
            Executor::Lockstep(c.clone().mapping(Mapping::RoundRobin)),
            Executor::Lockstep(c.clone().runtime(Runtime::WorkStealing { threshold: 7 })),
            Executor::Lockstep(c.clone().runtime(Runtime::ActiveThreads { threshold: 5 })),
            Executor::TimeWarp(TimeWarpConfig::new(t)),
        ] {
            let r = Simulation::new(m.clone())
                .lps(m.lps())
                .end_time(300.0)
                .seed(7)
                .executor(exec.clone())
                .run()
                .unwrap_or_else(|e| panic!("{exec:?}: {e}"));
            assert_eq!(r.fingerprint, seq.fingerprint, "{exec:?}");
            assert_eq!(r.model_stats, seq.model_stats, "{exec:?}");
        }
    }
}

/// Lock-step on zero-lookahead links is not serialized to one event per round: on the
/// default manufacturing model with `transfer` 0 and 2 threads, the old rule (a worker with a
/// zero-lookahead link to another runs only the event at GST) took one round per event
/// (1 759 rounds for 1 759 events up to time 500); now at most 0.6 rounds per event.
#[test]
fn zero_transfer_lockstep_runs_several_events_per_round() {
    use chronon::{ConservativeConfig, Executor, Simulation};
    let m = Manufacturing {
        transfer: 0.0,
        ..Manufacturing::default()
    };
    let r = Simulation::new(m.clone())
        .lps(m.lps())
        .end_time(500.0)
        .seed(1)
        .executor(Executor::Lockstep(ConservativeConfig::new(2)))
        .run()
        .unwrap();
    let rounds = r.executor_stats["rounds"];
    assert!(r.committed > 1000);
    assert!(
        rounds <= 0.6 * r.committed as f64,
        "{rounds} rounds for {} events",
        r.committed
    );
}

/// Null messages refuse zero transfer time, naming links the model declares with lookahead 0:
/// with a round-robin mapping a processing station and its control station (which sends
/// rework back) sit on two workers — a real cycle; with blocks, a line's last control station
/// feeds an assembly station on the other worker — a real link, and no cycle is claimed.
#[test]
fn null_message_errors_name_declared_zero_links() {
    use chronon::partition::Mapping;
    use chronon::{ConservativeConfig, Executor, Simulation};
    let m = Manufacturing {
        transfer: 0.0,
        ..Manufacturing::default()
    };
    let run_nm = |mapping: Mapping| {
        Simulation::new(m.clone())
            .lps(m.lps())
            .end_time(100.0)
            .executor(Executor::NullMessage(
                ConservativeConfig::new(2).mapping(mapping),
            ))
            .run()
            .unwrap_err()
            .to_string()
    };
    // Every "LP a -> LP b" named is a declared zero-lookahead link.
    let hops = |msg: &str| -> Vec<(u32, u32)> {
        msg.split("LP ")
            .skip(1)
            .collect::<Vec<_>>()
            .chunks(2)
            .map(|p| {
                let num = |s: &str| {
                    s.split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap()
                };
                (num(p[0]), num(p[1]))
            })
            .collect()
    };
    let rr = run_nm(Mapping::RoundRobin);
    assert!(rr.contains("cycle of zero-lookahead links"), "{rr}");
    let cycle = hops(&rr);
    assert!(cycle.len() >= 2, "{rr}");
    assert_eq!(cycle.first().unwrap().0, cycle.last().unwrap().1, "{rr}");
    for &(a, b) in &cycle {
        assert!(m.links(a).contains(&(b, 0.0)), "{rr}: LP {a} -> LP {b}");
    }
    let block = run_nm(Mapping::Block);
    assert!(!block.contains("cycle"), "{block}");
    for (a, b) in hops(&block) {
        assert!(m.links(a).contains(&(b, 0.0)), "{block}: LP {a} -> LP {b}");
    }
}

/// `work_us` spins on every event: the run takes at least events × work.
#[test]
fn work_us_spins_on_every_event() {
    let m = Manufacturing {
        work_us: 200.0,
        ..Manufacturing::default()
    };
    let start = std::time::Instant::now();
    let r = run(m.clone(), m.lps(), 200.0, 1, QueueKind::Ladder);
    let spent = start.elapsed().as_secs_f64();
    assert!(r.committed > 50);
    assert!(
        spent >= r.committed as f64 * 200e-6,
        "{spent} s for {} events",
        r.committed
    );
    let plain = run(
        Manufacturing::default(),
        m.lps(),
        200.0,
        1,
        QueueKind::Ladder,
    );
    assert_eq!(plain.fingerprint, r.fingerprint);
    let e = Manufacturing {
        work_us: -1.0,
        ..Manufacturing::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("work-us"), "{e}");
}

#[test]
fn bad_parameters_are_named() {
    let e = Manufacturing {
        rework: 1.5,
        ..Manufacturing::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("rework"), "{e}");
    let e = Manufacturing {
        testing_stations: 0,
        ..Manufacturing::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("testing-stations"), "{e}");
}
