//! Load balancing: the work-stealing runtime's and the load-balanced window's settings, shared
//! LP sets committing the sequential history, and a panic in a shared LP. A module of the
//! `conservative` test binary.

use chronon::{ConservativeConfig, Ctx, Executor, Model, Runtime, SimError, Simulation};

use super::random::{assert_same_history, run, tiny, Random};

#[test]
fn work_stealing_settings_are_checked() {
    let m = tiny();
    let ws = |threshold| ConservativeConfig::new(2).runtime(Runtime::WorkStealing { threshold });
    let e = run(&m, Executor::Lockstep(ws(0)), 5.0).unwrap_err();
    assert!(e.is_config() && e.to_string().contains("threshold"), "{e}");
    for exec in [Executor::Window(ws(5)), Executor::NullMessage(ws(5))] {
        let e = run(&m, exec, 5.0).unwrap_err();
        assert!(
            e.is_config() && e.to_string().contains("lockstep only"),
            "{e}"
        );
    }
    let r = run(&m, Executor::Lockstep(ws(3)), 5.0).unwrap();
    assert_eq!(r.workers.len(), 2, "one entry per pool thread");
    let events: f64 = r.workers.iter().map(|w| w["events"]).sum();
    assert_eq!(events as u64, r.committed);
    assert_eq!(r.executor_stats["threshold"], 3.0);
}

#[test]
fn load_balanced_window_matches_the_sequential_history() {
    // Shared LPs run on whichever worker claims them: zero-lookahead links, equal timestamps
    // and global events must still give the sequential history.
    for seed in [0u64, 1, 2, 3, 5, 6] {
        let m = Random::seeded(seed, 6 + (seed as u32 * 5) % 11);
        let end = 12.0;
        let seq = run(&m, Executor::Sequential, end).unwrap();
        assert!(seq.committed > 50, "seed {seed}: {}", seq.committed);
        // Runs of a shared LP by a worker the mapping did not give it to, over this seed's
        // runs with 2 or more threads: 0 would mean no worker ever took another's load.
        let mut foreign = 0.0;
        for threads in 1..=4 {
            for (dedicated, sets) in [(0.0, 1), (0.5, 2), (0.0, 3), (0.5, 1)] {
                let c = ConservativeConfig::new(threads)
                    .dedicated(dedicated)
                    .shared_sets(sets);
                let name = format!("seed {seed}, x{threads}, dedicated {dedicated}, sets {sets}");
                let r = run(&m, Executor::Window(c), end).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_same_history(&r, &seq, &name);
                assert!(r.executor_stats["shared_lps"] > 0.0, "{name}");
                let shared: f64 = r.workers.iter().map(|w| w["shared_events"]).sum();
                assert!(shared > 0.0, "{name}: no shared LP ran");
                let f: f64 = r.workers.iter().map(|w| w["foreign_shared_lp_runs"]).sum();
                if threads == 1 {
                    assert_eq!(f, 0.0, "{name}: one worker owns every LP");
                }
                foreign += f;
            }
        }
        assert!(
            foreign > 0.0,
            "seed {seed}: no worker ever claimed a shared LP of another worker"
        );
    }
}

#[test]
fn load_balancing_settings_are_checked() {
    let m = Random {
        degree: 2,
        ..Random::new(8, 1, vec![1.0])
    };
    let cases = [
        (
            Executor::Window(ConservativeConfig::new(2).dedicated(1.5).shared_sets(1)),
            "[0, 1]",
        ),
        (
            Executor::Window(
                ConservativeConfig::new(2)
                    .dedicated(f64::NAN)
                    .shared_sets(1),
            ),
            "[0, 1]",
        ),
        (
            Executor::Window(ConservativeConfig::new(2).dedicated(0.5)),
            "shared_sets",
        ),
        (
            Executor::Lockstep(ConservativeConfig::new(2).dedicated(0.5).shared_sets(1)),
            "window only",
        ),
        (
            Executor::NullMessage(ConservativeConfig::new(2).shared_sets(2)),
            "window only",
        ),
    ];
    for (exec, needle) in cases {
        match run(&m, exec, 5.0) {
            Err(SimError::Config(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(needle), "{msg}");
                assert!(!msg.contains('\n'), "{msg}");
            }
            other => panic!("expected a config error with {needle}, got {other:?}"),
        }
    }
}

/// A ring where LP 3 panics at its first event at or after time 5.
struct Boom;

impl Model for Boom {
    type State = ();
    type Event = ();
    fn init(&self, ctx: &mut Ctx<'_, Self>) {
        ctx.send(ctx.me(), 1.0, ());
    }
    fn on_event(&self, _s: &mut (), _e: &(), ctx: &mut Ctx<'_, Self>) {
        if ctx.me() == 3 && ctx.now() >= 5.0 {
            panic!("boom");
        }
        let next = (ctx.me() + 1) % ctx.lps();
        ctx.send(next, 1.0, ());
    }
    fn lookahead(&self) -> f64 {
        1.0
    }
}

#[test]
fn a_panic_in_a_shared_lp_stops_every_worker_with_its_lp_and_time() {
    let run_boom = |exec: Executor| {
        Simulation::new(Boom)
            .lps(8)
            .end_time(50.0)
            .seed(1)
            .executor(exec)
            .run()
            .unwrap_err()
    };
    let seq = run_boom(Executor::Sequential);
    let SimError::Panic { lp, time, .. } = seq else {
        panic!("expected a panic error, got {seq}");
    };
    assert_eq!(lp, 3);
    for threads in 1..=4 {
        for dedicated in [0.0, 0.5] {
            let c = ConservativeConfig::new(threads)
                .dedicated(dedicated)
                .shared_sets(2);
            match run_boom(Executor::Window(c)) {
                SimError::Panic {
                    lp: l,
                    time: t,
                    message,
                } => {
                    assert_eq!((l, t), (lp, time), "x{threads}, dedicated {dedicated}");
                    assert!(message.contains("boom"), "{message}");
                }
                other => panic!("x{threads}, dedicated {dedicated}: {other}"),
            }
        }
    }
}
