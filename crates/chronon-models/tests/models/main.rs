//! Model tests: one module per model. Each checks its model against something we did not
//! write (queueing theory, renewal theory, conservation) and checks its fingerprints.

mod datastore;
mod manufacturing;
mod net;
mod pcs;
mod phold_phases;
mod simplesim;

use chronon::{Executor, Model, QueueKind, Report, Simulation, StateSaving, TimeWarpConfig};

/// Runs `model` sequentially with the given queue.
pub(crate) fn run<M: Model>(model: M, lps: u32, end: f64, seed: u64, queue: QueueKind) -> Report {
    Simulation::new(model)
        .lps(lps)
        .end_time(end)
        .seed(seed)
        .queue(queue)
        .run()
        .expect("the run succeeds")
}

/// Same seed → same fingerprint; other seed → other fingerprint; heap and ladder agree.
pub(crate) fn check_fingerprints<M: Model>(make: impl Fn() -> M, lps: u32, end: f64) {
    let a = run(make(), lps, end, 11, QueueKind::Ladder);
    assert!(
        a.committed > 100,
        "too few events ({}) to compare",
        a.committed
    );
    let b = run(make(), lps, end, 11, QueueKind::Ladder);
    let c = run(make(), lps, end, 12, QueueKind::Ladder);
    let h = run(make(), lps, end, 11, QueueKind::Heap);
    assert_eq!(a.fingerprint, b.fingerprint, "same seed, same history");
    assert_ne!(
        a.fingerprint, c.fingerprint,
        "another seed, another history"
    );
    assert_eq!(
        a.fingerprint, h.fingerprint,
        "heap and ladder commit the same history"
    );
    assert_eq!(a.model_stats, h.model_stats);
    for exec in parallel_executors()
        .into_iter()
        .chain(preemptive_time_warp())
    {
        let p = Simulation::new(make())
            .lps(lps)
            .end_time(end)
            .seed(11)
            .executor(exec.clone())
            .run()
            .unwrap_or_else(|e| panic!("{exec:?}: {e}"));
        let exec = format!("{exec:?}");
        assert_eq!(
            p.fingerprint, a.fingerprint,
            "{exec} commits the sequential history"
        );
        assert_eq!(p.committed, a.committed, "{exec}");
        assert_eq!(p.model_stats, a.model_stats, "{exec}");
        assert_eq!(p.last_time, a.last_time, "{exec}: last_time");
        assert_eq!(p.pending_at_end, a.pending_at_end, "{exec}: pending_at_end");
    }
}

/// Every parallel executor at 1 to 4 threads (lock-step with both mappings, on the
/// work-stealing runtime with 1, 7 and 50 LPs per task and on the active-threads runtime with
/// 3 LPs per light-weight thread), so each model's
/// declared topology is used and checked (a send along an undeclared link, or below its
/// lookahead, fails the run) with links inside and between workers.
pub(crate) fn parallel_executors() -> Vec<Executor> {
    use chronon::partition::Mapping;
    use chronon::{ConservativeConfig, Runtime};
    let mut v = Vec::new();
    for t in 1..=4 {
        let c = ConservativeConfig::new(t);
        v.push(Executor::Window(c.clone()));
        v.push(Executor::Lockstep(c.clone()));
        v.push(Executor::Lockstep(c.clone().mapping(Mapping::RoundRobin)));
        for threshold in [1, 7, 50] {
            v.push(Executor::Lockstep(
                c.clone().runtime(Runtime::WorkStealing { threshold }),
            ));
        }
        v.push(Executor::Lockstep(
            c.clone().runtime(Runtime::ActiveThreads { threshold: 3 }),
        ));
        v.push(Executor::NullMessage(c));
        v.push(Executor::TimeWarp(TimeWarpConfig::new(t)));
    }
    v
}

/// Preemptive Time Warp at 1 to 4 threads, with copy state saving and with the model's
/// default (reverse computation where the model has it).
pub(crate) fn preemptive_time_warp() -> Vec<Executor> {
    let mut v = Vec::new();
    for threads in 1..=4 {
        for saving in [StateSaving::Copy, StateSaving::Auto] {
            v.push(Executor::TimeWarp(
                TimeWarpConfig::new(threads)
                    .preempt(true)
                    .state_saving(saving),
            ));
        }
    }
    v
}

/// Whether `m` declares links for every one of its `lps` LPs (none falls back to the full mesh).
pub(crate) fn declares_topology<M: Model>(m: &M, lps: u32) -> bool {
    (0..lps).all(|lp| m.topology(lp).is_some())
}

/// The named model statistic (panics when it is missing).
pub(crate) fn stat(r: &Report, name: &str) -> f64 {
    r.model_stats
        .get(name)
        .unwrap_or_else(|| panic!("model_stats has no '{name}'"))
}

/// Events still pending when the run stopped (every executor reports it).
pub(crate) fn pending(r: &Report) -> f64 {
    r.pending_at_end as f64
}

/// Relative difference of `measured` from `expected`.
pub(crate) fn rel(measured: f64, expected: f64) -> f64 {
    (measured - expected).abs() / expected.abs()
}
