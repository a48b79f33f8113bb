//! Errors, refusals and stops: broken declared links, zero threads, a stop request, and a run
//! without an end time. A module of the `conservative` test binary.

use chronon::{
    ConservativeConfig, Ctx, Executor, GlobalCtx, Model, SimError, Simulation, TimeWarpConfig,
};

use super::random::{executors, run, tiny, Random};

#[test]
fn breaking_the_declared_links_is_a_model_error_everywhere() {
    let m = Random {
        degree: 2,
        cheat_at: Some(4.0),
        ..Random::new(8, 5, vec![0.5, 1.0])
    };
    let seq = run(&m, Executor::Sequential, 20.0).unwrap_err();
    assert!(matches!(seq, SimError::Model(_)), "{seq}");
    assert!(seq.to_string().contains("declared links"), "{seq}");
    for threads in [1, 2, 4] {
        let mut execs = executors(threads);
        execs.push(Executor::Window(
            ConservativeConfig::new(threads)
                .dedicated(0.0)
                .shared_sets(2),
        ));
        execs.push(Executor::TimeWarp(TimeWarpConfig::new(threads)));
        for exec in execs {
            let e = run(&m, exec, 20.0).unwrap_err();
            assert!(matches!(e, SimError::Model(_)), "{e}");
            assert!(e.to_string().contains("declared links"), "{e}");
        }
    }
}

/// A barrier or mapping the run would not use is refused rather than ignored: null messages
/// meet at no barrier, and the work-stealing runtime has neither a barrier nor LP owners.
#[test]
fn a_barrier_or_mapping_the_run_would_not_use_is_refused() {
    use chronon::barrier::BarrierKind;
    use chronon::partition::Mapping;
    use chronon::{Runtime, Setting};
    let m = tiny();
    let ws = ConservativeConfig::new(2).runtime(Runtime::WorkStealing { threshold: 2 });
    for (exec, setting, needle) in [
        (
            Executor::NullMessage(ConservativeConfig::new(2).barrier(BarrierKind::Spin)),
            Setting::Barrier,
            "(null messages use no barrier); got ConservativeConfig::barrier spin",
        ),
        (
            Executor::Lockstep(ws.clone().barrier(BarrierKind::Tree { fan_in: 2 })),
            Setting::Barrier,
            "(the work-stealing runtime has no barrier); got ConservativeConfig::barrier tree with fan-in 2",
        ),
        (
            Executor::Lockstep(ws.mapping(Mapping::RoundRobin)),
            Setting::Mapping,
            "the work-stealing runtime has no LP owners",
        ),
    ] {
        match run(&m, exec.clone(), 5.0) {
            Err(SimError::Config(e)) => {
                assert_eq!(e.setting, setting, "{exec:?}: {e}");
                assert!(e.to_string().contains(needle), "{exec:?}: {e}");
            }
            other => panic!("{exec:?}: expected a configuration error, got {other:?}"),
        }
    }
    // The default barrier is the one they are built with: accepted.
    run(&m, Executor::NullMessage(ConservativeConfig::new(2)), 5.0).unwrap();
}

#[test]
fn zero_threads_is_a_config_error() {
    let m = tiny();
    for exec in executors(0) {
        let e = run(&m, exec, 5.0).unwrap_err();
        assert!(e.is_config() && e.to_string().contains("at least 1"), "{e}");
    }
}

#[test]
fn a_stop_request_ends_every_protocol_cleanly() {
    let m = Random {
        degree: 2,
        period: 1.0,
        ..Random::new(10, 2, vec![0.5])
    };
    for threads in [1, 2, 4] {
        for exec in executors(threads) {
            let progress = std::sync::Arc::new(chronon::Progress::new());
            progress.request_stop();
            let r = Simulation::new(m.clone())
                .lps(m.lps)
                .end_time(1e9)
                .seed(1)
                .executor(exec)
                .progress(progress)
                .run()
                .unwrap();
            assert!(!r.complete);
        }
    }
}

/// Tokens that hop along a ring, each for a limited number of hops.
#[derive(Clone)]
struct Hops;

impl Model for Hops {
    type State = u64;
    type Event = u32;
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send(ctx.me(), 0.5, 20 + ctx.me());
        0
    }
    fn on_event(&self, n: &mut u64, ttl: &u32, ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        if *ttl > 0 {
            let next = (ctx.me() + 1) % ctx.lps();
            let d = 0.5 + 0.5 * ctx.rng().below(2) as f64;
            ctx.send(next, d, ttl - 1);
        }
    }
    fn lookahead(&self) -> f64 {
        0.5
    }
    fn global_events(&self) -> Vec<f64> {
        vec![1.0]
    }
    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let total: u64 = (0..ctx.lps()).map(|lp| *ctx.state(lp)).sum();
        ctx.stats().add("census", total as f64);
        ctx.schedule(1.0);
    }
}

#[test]
fn a_run_without_an_end_time_is_refused() {
    let e = Simulation::new(Hops).lps(6).seed(4).run().unwrap_err();
    assert!(e.is_config(), "{e}");
    assert!(
        e.to_string().contains("no end time: call .end_time(T)"),
        "{e}"
    );
}

#[test]
fn a_run_without_end_time_stops_when_no_event_is_left() {
    // An infinite end time: the run ends when the last token stops, and global events stop
    // with it.
    let seq = Simulation::new(Hops)
        .lps(6)
        .seed(4)
        .end_time(f64::INFINITY)
        .run()
        .unwrap();
    assert!(seq.complete);
    assert_eq!(seq.committed, (0..6).map(|i| 21 + i).sum::<u64>());
    assert!(seq.model_stats.get("census").unwrap() > 0.0);
    for threads in [1, 2, 3] {
        for exec in executors(threads) {
            let r = Simulation::new(Hops)
                .lps(6)
                .seed(4)
                .end_time(f64::INFINITY)
                .executor(exec)
                .run()
                .unwrap();
            assert_eq!(r.fingerprint, seq.fingerprint);
            assert_eq!(r.model_stats, seq.model_stats);
        }
    }
}

/// A model that knows its LP count (`Model::lp_count`): `.lps()` is not needed, and a
/// different count is refused.
struct Counted(u32);

impl Model for Counted {
    type State = u64;
    type Event = ();
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send((ctx.me() + 1) % ctx.lps(), 1.0, ());
        0
    }
    fn on_event(&self, n: &mut u64, _: &(), ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        ctx.send((ctx.me() + 1) % ctx.lps(), 1.0, ());
    }
    fn lookahead(&self) -> f64 {
        1.0
    }
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.0)
    }
}

#[test]
fn the_lp_count_is_given_once() {
    let own = Simulation::new(Counted(5)).end_time(3.5).run().unwrap();
    assert_eq!(own.lps, 5);
    assert_eq!(own.committed, 15);
    let same = Simulation::new(Counted(5))
        .lps(5)
        .end_time(3.5)
        .run()
        .unwrap();
    assert_eq!(same.fingerprint, own.fingerprint);
    let e = Simulation::new(Counted(5))
        .lps(4)
        .end_time(3.5)
        .run()
        .unwrap_err();
    assert!(e.is_config(), "{e}");
    assert!(
        e.to_string()
            .contains(".lps(4) but the model says it has 5 LPs"),
        "{e}"
    );
    let e = Simulation::new(Hops).end_time(3.5).run().unwrap_err();
    assert!(
        e.to_string().contains("the number of LPs is not set"),
        "{e}"
    );
}
