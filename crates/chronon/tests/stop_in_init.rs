//! A stop request (Ctrl-C in the CLI) that arrives while the LPs are being initialized ends the
//! run with the usual incomplete report — nothing committed, `complete: false` — under every
//! executor, instead of finishing a long initialization first.

use std::sync::Arc;

use chronon::{ConservativeConfig, Ctx, Executor, Model, Progress, Simulation, TimeWarpConfig};

/// Every LP sends itself one event per time unit.
struct Tick;

impl Model for Tick {
    type State = u64;
    type Event = ();
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send(ctx.me(), 1.0, ());
        0
    }
    fn lookahead(&self) -> f64 {
        1.0
    }
    fn on_event(&self, n: &mut u64, _: &(), ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        ctx.send(ctx.me(), 1.0, ());
    }
}

#[test]
fn a_stop_during_initialization_gives_an_empty_incomplete_report() {
    for exec in [
        Executor::Sequential,
        Executor::Window(ConservativeConfig::new(2)),
        Executor::NullMessage(ConservativeConfig::new(2)),
        Executor::Lockstep(ConservativeConfig::new(2)),
        Executor::TimeWarp(TimeWarpConfig::new(2)),
    ] {
        // Requested before the run: initialization sees it at its first poll.
        let progress = Arc::new(Progress::new());
        progress.request_stop();
        let r = Simulation::new(Tick)
            .lps(100_000)
            .end_time(10.0)
            .executor(exec.clone())
            .progress(progress)
            .run()
            .unwrap_or_else(|e| panic!("{exec:?}: {e}"));
        assert!(!r.complete, "{exec:?}");
        assert_eq!(r.committed, 0, "{exec:?}");
        assert_eq!(r.sync, exec.name(), "{exec:?}");
        // Without the request the same run completes.
        let r = Simulation::new(Tick)
            .lps(10_000)
            .end_time(3.0)
            .executor(exec.clone())
            .run()
            .unwrap_or_else(|e| panic!("{exec:?}: {e}"));
        assert!(r.complete, "{exec:?}");
        assert_eq!(r.committed, 20_000, "{exec:?}");
    }
}
