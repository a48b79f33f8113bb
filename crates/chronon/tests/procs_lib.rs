//! `Simulation::processes` from the library: this test binary re-executes itself as the
//! worker processes (`process_args` names the test), each of which builds the same simulation
//! and calls `run`, which does the worker's part and exits. The report equals the sequential
//! run's: fingerprint, committed count and `model_stats`, including floating-point sums and a
//! figure `finish` derives from the others on the last LP (it reads the figures, so the
//! parent has that LP's process run it on the figures so far). A run without an end time
//! closes its time averages at its last event, as the sequential run does.
#![cfg(all(target_os = "linux", not(chronon_loom)))]

use chronon::{
    ConservativeConfig, Ctx, Executor, LpId, Model, ModelStats, Simulation, TimeWarpConfig,
};

struct Ring {
    lps: LpId,
}

#[derive(Clone, Copy)]
struct Token {
    lap: u32,
    weight: f64,
}
chronon::impl_shm_safe!(Token { lap, weight });

impl Model for Ring {
    type State = (u64, f64);
    type Event = Token;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> (u64, f64) {
        for k in 0..3 {
            let delay = 1.0 + ctx.rng().exponential_mean(1.0);
            let weight = 0.1 * f64::from(k) + 1.0 / 3.0;
            ctx.send(ctx.me(), delay, Token { lap: 0, weight });
        }
        ctx.count(0, 3);
        (0, 0.0)
    }

    fn on_event(&self, st: &mut (u64, f64), token: &Token, ctx: &mut Ctx<'_, Self>) {
        st.0 += 1;
        st.1 += token.weight * f64::from(token.lap + 1);
        let next = (ctx.me() + 1 + ctx.rng().below(3) as LpId) % ctx.lps();
        let delay = 1.0 + ctx.rng().exponential_mean(1.0);
        ctx.send(
            next,
            delay,
            Token {
                lap: token.lap + 1,
                weight: token.weight * 1.01,
            },
        );
        ctx.count(1, 1);
    }

    fn lookahead(&self) -> f64 {
        1.0
    }

    fn counter_names(&self) -> &'static [&'static str] {
        &["started", "hops"]
    }

    fn finish(&self, lp: LpId, st: &(u64, f64), stats: &mut ModelStats) {
        stats.add("seen", st.0 as f64);
        stats.add("weight", st.1);
        if lp + 1 == self.lps {
            let per_hop = stats.get("weight").unwrap_or(0.0) / stats.get("hops").unwrap_or(1.0);
            stats.set("weight_per_hop", per_hop);
        }
    }
}

fn sim(executor: Executor) -> Simulation<Ring> {
    Simulation::new(Ring { lps: 12 })
        .lps(12)
        .end_time(40.0)
        .seed(7)
        .executor(executor)
}

/// One multi-process run per test function: a worker process re-executes the test binary with
/// `entry` (the test's own name), so it builds exactly this simulation and reaches this `run`.
fn check(entry: &str, procs: usize, threads: usize, ex: Executor) {
    // In a worker process only the simulation below is built (and `run` exits the process).
    let seq = (!chronon::is_worker_process()).then(|| sim(Executor::Sequential).run().unwrap());
    let r = sim(ex.clone())
        .processes(procs)
        .process_args([entry, "--exact", "--nocapture", "--test-threads=1"])
        .run()
        .unwrap();
    let seq = seq.expect("only the parent gets a report");
    assert!(seq.committed > 100);
    assert_eq!(r.fingerprint, seq.fingerprint, "{ex:?} × {procs}");
    assert_eq!(r.committed, seq.committed);
    assert_eq!(r.pending_at_end, seq.pending_at_end);
    // Exactly: the float sums are added in LP order, as in the sequential run.
    assert_eq!(r.model_stats, seq.model_stats, "{ex:?} × {procs}");
    assert!(r.model_stats.get("weight_per_hop").unwrap() > 0.0);
    assert_eq!(r.workers.len(), procs * threads);
}

#[test]
fn window_2_processes() {
    check(
        "window_2_processes",
        2,
        1,
        Executor::Window(ConservativeConfig::new(1)),
    );
}

#[test]
fn window_3_processes_2_threads() {
    check(
        "window_3_processes_2_threads",
        3,
        2,
        Executor::Window(ConservativeConfig::new(2)),
    );
}

#[test]
fn lockstep_3_processes_2_threads() {
    check(
        "lockstep_3_processes_2_threads",
        3,
        2,
        Executor::Lockstep(ConservativeConfig::new(2)),
    );
}

#[test]
fn null_message_2_processes_2_threads() {
    check(
        "null_message_2_processes_2_threads",
        2,
        2,
        Executor::NullMessage(ConservativeConfig::new(2)),
    );
}

#[test]
fn a_worker_process_that_reaches_another_run_is_refused() {
    // The worker processes run this test, which builds a simulation with another seed than
    // the parent's signature: each refuses in one line instead of running the wrong model.
    if chronon::is_worker_process() {
        let e = sim(Executor::Window(ConservativeConfig::new(1)))
            .seed(8)
            .processes(2)
            .run();
        panic!("a worker process must exit inside run, not return {e:?}");
    }
    let e = sim(Executor::Window(ConservativeConfig::new(1)))
        .processes(2)
        .process_args([
            "a_worker_process_that_reaches_another_run_is_refused",
            "--exact",
            "--test-threads=1",
        ])
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("different multi-process run"), "{e}");
}

/// The worker processes meet at their own shared-memory barrier: a barrier other than the
/// default is refused before any process starts, not ignored.
#[test]
fn a_barrier_other_than_the_default_is_refused_across_processes() {
    use chronon::barrier::BarrierKind;
    for ex in [
        Executor::Window(ConservativeConfig::new(1).barrier(BarrierKind::Spin)),
        Executor::Lockstep(ConservativeConfig::new(2).barrier(BarrierKind::Tree { fan_in: 2 })),
    ] {
        match sim(ex.clone()).processes(2).run() {
            Err(chronon::SimError::Config(e)) => {
                assert_eq!(e.setting, chronon::Setting::Barrier, "{ex:?}: {e}");
                assert!(
                    e.to_string().contains(
                        "worker processes (processes) meet at their own shared-memory barrier"
                    ),
                    "{ex:?}: {e}"
                );
            }
            other => panic!("{ex:?}: expected a configuration error, got {other:?}"),
        }
    }
}

#[test]
fn time_warp_3_processes_2_threads() {
    check(
        "time_warp_3_processes_2_threads",
        3,
        2,
        Executor::TimeWarp(TimeWarpConfig::new(2)),
    );
}

#[test]
fn time_warp_2_processes() {
    check(
        "time_warp_2_processes",
        2,
        1,
        Executor::TimeWarp(TimeWarpConfig::new(1)),
    );
}

/// Tokens that stop after a few laps, each LP's level (tokens it has seen) a time average:
/// a run without an end time ends at its last event, where every LP's average closes.
struct Relay;

impl Model for Relay {
    type State = chronon::measure::TimeAverage;
    type Event = Token;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> chronon::measure::TimeAverage {
        let delay = 1.0 + ctx.rng().exponential_mean(1.0);
        ctx.send(
            ctx.me(),
            delay,
            Token {
                lap: 0,
                weight: 1.0,
            },
        );
        chronon::measure::TimeAverage::new(0.0, 0.0)
    }

    fn on_event(&self, st: &mut chronon::measure::TimeAverage, t: &Token, ctx: &mut Ctx<'_, Self>) {
        st.add(ctx.now(), t.weight);
        if t.lap < 15 {
            let next = (ctx.me() + 1) % ctx.lps();
            let delay = 1.0 + ctx.rng().exponential_mean(1.0);
            ctx.send(
                next,
                delay,
                Token {
                    lap: t.lap + 1,
                    weight: 1.0,
                },
            );
        }
    }

    fn lookahead(&self) -> f64 {
        1.0
    }

    fn finish(&self, _: LpId, st: &chronon::measure::TimeAverage, stats: &mut ModelStats) {
        stats.time_average("level", st);
    }
}

fn relay(executor: Executor) -> Simulation<Relay> {
    Simulation::new(Relay)
        .lps(6)
        .end_time(f64::INFINITY)
        .seed(3)
        .executor(executor)
}

/// Worker processes do not know the run's last event time: the parent has each LP's `finish`
/// run on figures that carry it. One multi-process run per test function, as `check`.
fn relay_check(entry: &str, ex: Executor) {
    let seq = (!chronon::is_worker_process()).then(|| relay(Executor::Sequential).run().unwrap());
    let r = relay(ex.clone())
        .processes(2)
        .process_args([entry, "--exact", "--nocapture", "--test-threads=1"])
        .run()
        .unwrap();
    let seq = seq.expect("only the parent gets a report");
    assert!(seq.complete && seq.last_time > 16.0, "{}", seq.last_time);
    // Every LP observed up to the last event (summed over the LPs in LP order).
    let whole = (0..6).fold(0.0, |sum, _| sum + seq.last_time);
    assert_eq!(seq.model_stats.get("level.time"), Some(whole));
    assert_eq!(r.fingerprint, seq.fingerprint, "{ex:?}");
    assert_eq!(r.model_stats, seq.model_stats, "{ex:?}");
}

#[test]
fn without_an_end_time_averages_close_at_the_last_event_window_2_processes() {
    relay_check(
        "without_an_end_time_averages_close_at_the_last_event_window_2_processes",
        Executor::Window(ConservativeConfig::new(1)),
    );
}

#[test]
fn without_an_end_time_averages_close_at_the_last_event_time_warp_2_processes() {
    relay_check(
        "without_an_end_time_averages_close_at_the_last_event_time_warp_2_processes",
        Executor::TimeWarp(TimeWarpConfig::new(1)),
    );
}

/// The fields a report has across processes only: the transport's own figures.
const PROCS_ONLY: &[&str] = &[
    "procs",
    "procs_total_s",
    "workers_total",
    "workers_peak_rss_bytes",
];

/// The fields a report has on threads only: the barrier the threads met at (worker processes
/// meet at the shared-memory barrier of the control segment).
const THREADS_ONLY: &[&str] = &["tree_fan_in"];

/// Fields present when something happened, which depends on the run's timing, not on its
/// transport: Time Warp's optimism window's final and smallest values, once it was bounded.
const WHEN_IT_HAPPENED: &[&str] = &["window_final", "window_min"];

/// A family makes its report once, from its parts' outputs, whatever carried them: the same
/// run on threads and across 2 processes (1 thread each, so the worker counts agree) has the
/// same run figures and per-worker figures, but for the transport's own.
fn same_fields(entry: &str, make: impl Fn(usize) -> Executor) {
    let ex = make(1);
    let threads = (!chronon::is_worker_process()).then(|| sim(make(2)).run().unwrap());
    let procs = sim(ex.clone())
        .processes(2)
        .process_args([entry, "--exact", "--nocapture", "--test-threads=1"])
        .run()
        .unwrap();
    let threads = threads.expect("only the parent gets a report");
    assert_eq!(procs.fingerprint, threads.fingerprint, "{ex:?}");
    let keys = |m: &std::collections::BTreeMap<String, f64>, only: &[&str]| {
        m.keys()
            .filter(|k| !only.contains(&k.as_str()) && !WHEN_IT_HAPPENED.contains(&k.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(&procs.executor_stats, PROCS_ONLY),
        keys(&threads.executor_stats, THREADS_ONLY),
        "{ex:?}: executor_stats"
    );
    // Per worker: the rings' retries are the shared-memory transport's own figure.
    let worker = |r: &chronon::Report, only: &[&str]| {
        r.workers.iter().map(|w| keys(w, only)).collect::<Vec<_>>()
    };
    assert_eq!(
        worker(&procs, &["ring_full_retries"]),
        worker(&threads, &[]),
        "{ex:?}: workers"
    );
    assert_eq!(
        procs.gvt_series.is_empty(),
        threads.gvt_series.is_empty(),
        "{ex:?}: gvt_series"
    );
}

#[test]
fn window_reports_the_same_fields_on_threads_and_across_processes() {
    same_fields(
        "window_reports_the_same_fields_on_threads_and_across_processes",
        |t| Executor::Window(ConservativeConfig::new(t)),
    );
}

#[test]
fn null_message_reports_the_same_fields_on_threads_and_across_processes() {
    same_fields(
        "null_message_reports_the_same_fields_on_threads_and_across_processes",
        |t| Executor::NullMessage(ConservativeConfig::new(t)),
    );
}

#[test]
fn lockstep_reports_the_same_fields_on_threads_and_across_processes() {
    same_fields(
        "lockstep_reports_the_same_fields_on_threads_and_across_processes",
        |t| Executor::Lockstep(ConservativeConfig::new(t)),
    );
}

#[test]
fn time_warp_reports_the_same_fields_on_threads_and_across_processes() {
    same_fields(
        "time_warp_reports_the_same_fields_on_threads_and_across_processes",
        |t| Executor::TimeWarp(TimeWarpConfig::new(t)),
    );
}
