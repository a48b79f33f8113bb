//! A panic in any model method the engine calls — not only an LP's event handler, but also
//! `Model::finish`, `Model::topology`, `Model::lookahead`, `Model::global_events` and a global
//! event handler — comes back as a `SimError` naming where it happened, under every executor,
//! and never as a panic of the caller, a hang, or "LP 4294967295".

use chronon::event::ENGINE_SENDER;
use chronon::{
    ConservativeConfig, Ctx, Executor, GlobalCtx, LpId, Model, ModelStats, Runtime, SimError,
    Simulation, TimeWarpConfig,
};

/// Which method panics.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Where {
    Finish,
    Topology,
    Lookahead,
    GlobalEvents,
    Global,
}

/// A ring: every LP passes a token to the next one every 1.0 time units. LP 2 (or the global
/// event at 2.5) panics in the method `at`.
#[derive(Clone, Debug)]
struct Ring {
    at: Where,
}

impl Model for Ring {
    type State = u64;
    type Event = ();

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send(ctx.me(), 1.0, ());
        0
    }

    fn on_event(&self, n: &mut u64, _: &(), ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        ctx.send((ctx.me() + 1) % ctx.lps(), 1.0, ());
    }

    fn lookahead(&self) -> f64 {
        if self.at == Where::Lookahead {
            panic!("lookahead panics on purpose");
        }
        1.0
    }

    fn finish(&self, lp: LpId, n: &u64, stats: &mut ModelStats) {
        if self.at == Where::Finish && lp == 2 {
            panic!("finish panics on purpose");
        }
        stats.add("tokens", *n as f64);
    }

    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        if self.at == Where::Topology && lp == 2 {
            panic!("topology panics on purpose");
        }
        None
    }

    fn global_events(&self) -> Vec<f64> {
        match self.at {
            Where::GlobalEvents => panic!("global_events panics on purpose"),
            Where::Global => vec![2.5],
            _ => Vec::new(),
        }
    }

    fn on_global(&self, _: &mut GlobalCtx<'_, Self>) {
        panic!("the global event panics on purpose");
    }
}

/// Every executor, at 1 and 2 threads (lock-step on each runtime of one process).
fn executors() -> Vec<Executor> {
    let mut v = vec![Executor::Sequential];
    for t in [1, 2] {
        v.push(Executor::Window(ConservativeConfig::new(t)));
        v.push(Executor::NullMessage(ConservativeConfig::new(t)));
        v.push(Executor::Lockstep(ConservativeConfig::new(t)));
        for rt in [
            Runtime::WorkStealing { threshold: 2 },
            Runtime::ActiveThreads { threshold: 2 },
        ] {
            v.push(Executor::Lockstep(ConservativeConfig::new(t).runtime(rt)));
        }
        v.push(Executor::TimeWarp(TimeWarpConfig::new(t)));
    }
    v
}

fn run(at: Where, exec: &Executor) -> SimError {
    Simulation::new(Ring { at })
        .lps(6)
        .end_time(10.0)
        .seed(1)
        .executor(exec.clone())
        .run()
        .expect_err("the model panics")
}

fn method_panic(at: Where, method: &str, lp: Option<LpId>, words: &str) {
    for exec in executors() {
        let e = run(at, &exec);
        match &e {
            SimError::MethodPanic {
                method: m,
                lp: l,
                message,
            } => {
                assert_eq!((*m, *l), (method, lp), "{exec:?}: {e}");
                assert!(message.contains("on purpose"), "{exec:?}: {e}");
            }
            other => panic!("{exec:?}: expected a MethodPanic, got {other:?}"),
        }
        let shown = e.to_string();
        assert!(shown.contains(words), "{exec:?}: {shown}");
        assert_eq!(shown.lines().count(), 1);
    }
}

#[test]
fn a_panic_in_finish_names_the_method_and_lp() {
    method_panic(
        Where::Finish,
        "Model::finish",
        Some(2),
        "model panicked: Model::finish for LP 2: finish panics on purpose",
    );
}

#[test]
fn a_panic_in_topology_names_the_method_and_lp() {
    method_panic(
        Where::Topology,
        "Model::topology",
        Some(2),
        "Model::topology for LP 2",
    );
}

#[test]
fn a_panic_in_lookahead_or_global_events_names_the_method() {
    method_panic(
        Where::Lookahead,
        "Model::lookahead",
        None,
        "Model::lookahead:",
    );
    method_panic(
        Where::GlobalEvents,
        "Model::global_events",
        None,
        "Model::global_events:",
    );
}

#[test]
fn a_panic_in_a_global_event_is_named_as_such() {
    for exec in executors() {
        let e = run(Where::Global, &exec);
        let SimError::Panic { lp, time, .. } = &e else {
            panic!("{exec:?}: expected a panic error, got {e:?}");
        };
        assert_eq!((*lp, *time), (ENGINE_SENDER, 2.5), "{exec:?}");
        let shown = e.to_string();
        assert_eq!(
            shown, "model panicked: global event at time 2.5: the global event panics on purpose",
            "{exec:?}"
        );
        assert!(!shown.contains(&ENGINE_SENDER.to_string()));
    }
}
