use chronon::QueueKind;
use chronon_models::PholdPhases;

use crate::{check_fingerprints, rel, run, stat};

fn small() -> PholdPhases {
    PholdPhases {
        width: 20,
        height: 20,
        phase_length: 20.0,
        work_a_us: 0.0,
        work_b_us: 0.0,
        work_c_us: 0.0,
        ..PholdPhases::default()
    }
}

/// Each job is a renewal process with inter-event times `lookahead + Exp(mean - lookahead)`, so
/// by the elementary renewal theorem (with its second-order term) a phase of length L sees
/// about jobs × L / mean events; the first phase loses (mu^2 - sigma^2) / (2 mu^2) per job.
#[test]
fn events_per_phase_follow_renewal_theory() {
    let m = small();
    let jobs = f64::from(m.lps() * m.jobs_per_object);
    let (mu, sigma) = (m.mean, m.mean - m.lookahead);
    let first_correction = (sigma * sigma - mu * mu) / (2.0 * mu * mu);
    let r = run(
        m.clone(),
        m.lps(),
        3.0 * m.phase_length,
        3,
        QueueKind::Ladder,
    );
    let per_phase = jobs * m.phase_length / mu;
    let expected = [per_phase + jobs * first_correction, per_phase, per_phase];
    for (name, want) in ["phase_a_events", "phase_b_events", "phase_c_events"]
        .iter()
        .zip(expected)
    {
        let got = stat(&r, name);
        eprintln!("phold-phases: {name} {got}, renewal theory {want}");
        assert!(
            rel(got, want) < 0.02,
            "{name}: {got} vs renewal theory {want}"
        );
    }
    assert_eq!(stat(&r, "non_neighbour_hops"), 0.0);
    let total: f64 = ["phase_a_events", "phase_b_events", "phase_c_events"]
        .iter()
        .map(|n| stat(&r, n))
        .sum();
    assert_eq!(total, r.committed as f64);
}

#[test]
fn mesh_neighbours() {
    let m = PholdPhases {
        width: 4,
        height: 3,
        ..PholdPhases::default()
    };
    let mut n = m.neighbours(0);
    n.sort();
    assert_eq!(n, vec![1, 4]);
    let mut n = m.neighbours(5);
    n.sort();
    assert_eq!(n, vec![1, 4, 6, 9]);
    let t = PholdPhases { wrap: true, ..m };
    let mut n = t.neighbours(0);
    n.sort();
    assert_eq!(n, vec![1, 3, 4, 8]);
}

#[test]
fn fingerprints() {
    let m = PholdPhases {
        width: 8,
        height: 8,
        phase_length: 5.0,
        ..small()
    };
    assert!(crate::declares_topology(&m, m.lps()));
    check_fingerprints(|| m.clone(), m.lps(), 15.0);
}

#[test]
fn bad_parameters_are_named() {
    let e = PholdPhases {
        mean: 0.05,
        ..PholdPhases::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.contains("lookahead") && e.contains("mean"), "{e}");
    let e = PholdPhases {
        width: 0,
        ..PholdPhases::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.contains("width"), "{e}");
}
