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
    check_fingerprints(|| m.clone(), m.lps(), 500.0);
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
