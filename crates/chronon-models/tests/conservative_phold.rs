//! PHOLD under every conservative executor at 1 to 4 threads commits the sequential history.

use chronon::barrier::BarrierKind;
use chronon::partition::Mapping;
use chronon::{ConservativeConfig, Executor, Runtime, Simulation};
use chronon_models::phold::{Phold, PholdTopology};

fn run(p: &Phold, end: f64, seed: u64, exec: Executor) -> chronon::Report {
    Simulation::new(p.clone())
        .lps(p.lps)
        .end_time(end)
        .seed(seed)
        .executor(exec)
        .run()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn check(p: &Phold, end: f64, seed: u64, protocols: &[&str]) {
    let seq = run(p, end, seed, Executor::Sequential);
    assert!(seq.committed > 100);
    for threads in 1..=4 {
        for &name in protocols {
            let c = ConservativeConfig::new(threads);
            let mapped = c.clone().mapping(if seed % 2 == 0 {
                Mapping::Block
            } else {
                Mapping::RoundRobin
            });
            let exec = match name {
                "window" => Executor::Window(mapped),
                "lockstep" => Executor::Lockstep(mapped),
                // The work-stealing runtime (no LP owners, so no mapping), 1, 7 or 50 LPs per
                // task.
                "lockstep-ws" => Executor::Lockstep(c.runtime(Runtime::WorkStealing {
                    threshold: [1, 7, 50][threads % 3],
                })),
                _ => Executor::NullMessage(mapped),
            };
            let r = run(p, end, seed, exec);
            let what = format!("{name} x{threads}, seed {seed}, {p:?}");
            assert_eq!(r.fingerprint, seq.fingerprint, "{what}");
            assert_eq!(r.model_stats, seq.model_stats, "{what}");
            assert_eq!(r.workers.len(), threads, "{what}");
            let events: f64 = r.workers.iter().map(|w| w["events"]).sum();
            assert_eq!(events as u64, seq.committed, "{what}");
        }
    }
}

#[test]
fn positive_lookahead_every_protocol() {
    for (seed, remote) in [(1, 0.1), (2, 0.5), (3, 1.0)] {
        let p = Phold {
            lps: 24,
            start_events: 3,
            remote,
            lookahead: 0.2,
            ..Phold::default()
        };
        check(
            &p,
            12.0,
            seed,
            &["window", "lockstep", "lockstep-ws", "null-message"],
        );
    }
}

#[test]
fn zero_lookahead_window_and_lockstep() {
    for (seed, remote) in [(4, 0.25), (5, 0.9)] {
        let p = Phold {
            lps: 12,
            start_events: 2,
            remote,
            lookahead: 0.0,
            ..Phold::default()
        };
        check(&p, 8.0, seed, &["window", "lockstep", "lockstep-ws"]);
    }
}

#[test]
fn mesh2d_topology_every_protocol() {
    let p = Phold {
        lps: 36,
        start_events: 2,
        remote: 0.5,
        lookahead: 0.3,
        topology: PholdTopology::Mesh2d,
        ..Phold::default()
    };
    check(
        &p,
        10.0,
        6,
        &["window", "lockstep", "lockstep-ws", "null-message"],
    );
    // Under null messages the graph is sparse: fewer channels than a full mesh would have.
    let r = run(
        &p,
        10.0,
        6,
        Executor::NullMessage(ConservativeConfig::new(4)),
    );
    assert!(r.executor_stats["null_messages"] > 0.0);
}

#[test]
fn four_threads_with_every_barrier_finish_and_agree() {
    // The machines running these tests have 2 cores: 4 spinning workers must not livelock.
    let p = Phold {
        lps: 32,
        start_events: 2,
        remote: 0.3,
        lookahead: 0.25,
        ..Phold::default()
    };
    let seq = run(&p, 10.0, 9, Executor::Sequential);
    for b in [
        BarrierKind::Std,
        BarrierKind::Semaphore,
        BarrierKind::Spin,
        BarrierKind::Tree { fan_in: 1 },
        BarrierKind::Tree { fan_in: 4 },
    ] {
        // Null messages meet at no barrier (and refuse one other than the default).
        for exec in [
            Executor::Window(ConservativeConfig::new(4).barrier(b)),
            Executor::Lockstep(ConservativeConfig::new(4).barrier(b)),
        ] {
            assert_eq!(run(&p, 10.0, 9, exec).fingerprint, seq.fingerprint, "{b:?}");
        }
    }
    let nm = Executor::NullMessage(ConservativeConfig::new(4));
    assert_eq!(run(&p, 10.0, 9, nm).fingerprint, seq.fingerprint);
}

#[test]
fn a_panicking_handler_stops_every_worker_with_lp_and_time() {
    #[derive(Clone)]
    struct Bomb(Phold);
    impl chronon::Model for Bomb {
        type State = <Phold as chronon::Model>::State;
        type Event = <Phold as chronon::Model>::Event;
        fn init(&self, ctx: &mut chronon::Ctx<'_, Self>) -> Self::State {
            // Same events as PHOLD's init, through this model's context.
            for _ in 0..self.0.start_events {
                let d =
                    self.0.lookahead + ctx.rng().exponential_mean(self.0.mean - self.0.lookahead);
                ctx.send(ctx.me(), d, chronon_models::phold::Job);
            }
            Self::State::default()
        }
        fn on_event(
            &self,
            s: &mut Self::State,
            _e: &Self::Event,
            ctx: &mut chronon::Ctx<'_, Self>,
        ) {
            if ctx.me() == 5 && ctx.now() > 3.0 {
                panic!("boom");
            }
            s.events += 1;
            let d = self.0.lookahead + ctx.rng().exponential_mean(1.0);
            let n = u64::from(ctx.lps());
            let dst = ctx.rng().below(n) as u32;
            ctx.send(dst, d, chronon_models::phold::Job);
        }
        fn lookahead(&self) -> f64 {
            self.0.lookahead
        }
    }
    let p = Phold {
        lps: 16,
        start_events: 2,
        lookahead: 0.5,
        ..Phold::default()
    };
    for threads in [2, 4] {
        for exec in [
            Executor::Window(ConservativeConfig::new(threads)),
            Executor::Lockstep(ConservativeConfig::new(threads)),
            Executor::NullMessage(ConservativeConfig::new(threads)),
        ] {
            let e = Simulation::new(Bomb(p.clone()))
                .lps(16)
                .end_time(50.0)
                .seed(1)
                .executor(exec)
                .run()
                .unwrap_err();
            match e {
                chronon::SimError::Panic { lp, time, message } => {
                    assert_eq!(lp, 5);
                    assert!(time > 3.0);
                    assert!(message.contains("boom"));
                }
                other => panic!("expected a panic error, got {other}"),
            }
        }
    }
}

#[test]
fn load_balanced_window_matches_sequential() {
    for (seed, remote, hot) in [(11, 0.1, 0), (12, 1.0, 3), (13, 1.0, 0)] {
        let p = Phold {
            lps: 20,
            start_events: 2,
            remote,
            lookahead: 0.2,
            hot_lps: hot,
            ..Phold::default()
        };
        let seq = run(&p, 10.0, seed, Executor::Sequential);
        assert!(seq.committed > 100);
        // Shared-LP runs by a worker other than the LP's owner in the mapping (2+ threads).
        let mut foreign = 0.0;
        for threads in 1..=4 {
            for (dedicated, sets) in [(0.0, 1), (0.0, 2), (0.5, 1), (0.5, 2), (0.5, 3)] {
                let c = ConservativeConfig::new(threads)
                    .dedicated(dedicated)
                    .shared_sets(sets);
                let r = run(&p, 10.0, seed, Executor::Window(c));
                let what = format!("x{threads}, dedicated {dedicated}, sets {sets}, {p:?}");
                assert_eq!(r.fingerprint, seq.fingerprint, "{what}");
                assert_eq!(r.model_stats, seq.model_stats, "{what}");
                let events: f64 = r.workers.iter().map(|w| w["events"]).sum();
                assert_eq!(events as u64, seq.committed, "{what}");
                let shared: f64 = r.workers.iter().map(|w| w["shared_events"]).sum();
                assert!(shared > 0.0, "{what}");
                foreign += r
                    .workers
                    .iter()
                    .map(|w| w["foreign_shared_lp_runs"])
                    .sum::<f64>();
            }
        }
        assert!(
            foreign > 0.0,
            "seed {seed}: no worker ever claimed a shared LP of another worker"
        );
    }
}

#[test]
fn hot_lps_leave_the_history_unchanged() {
    let p = Phold {
        lps: 16,
        start_events: 2,
        ..Phold::default()
    };
    let hot = Phold {
        hot_lps: 4,
        hot_work_us: 1.0,
        ..p.clone()
    };
    let a = run(&p, 5.0, 7, Executor::Sequential);
    let b = run(&hot, 5.0, 7, Executor::Sequential);
    assert_eq!(a.fingerprint, b.fingerprint);
    assert!(Phold {
        hot_lps: 17,
        ..p.clone()
    }
    .validate()
    .is_err());
    assert!(Phold {
        hot_work_us: -1.0,
        ..p
    }
    .validate()
    .is_err());
}

#[test]
fn a_moving_hot_region_moves_and_leaves_the_history_unchanged() {
    let p = Phold {
        lps: 16,
        hot_lps: 4,
        hot_work_us: 1.0,
        hot_move: 2.0,
        ..Phold::default()
    };
    let hot = |now: f64| (0..16).filter(|&lp| p.is_hot(lp, now)).collect::<Vec<_>>();
    assert_eq!(hot(0.0), [0, 1, 2, 3]);
    assert_eq!(hot(1.99), [0, 1, 2, 3]);
    assert_eq!(hot(2.0), [4, 5, 6, 7]);
    assert_eq!(hot(7.5), [12, 13, 14, 15]);
    assert_eq!(hot(8.0), [0, 1, 2, 3], "it wraps around");
    // Not a multiple of the LP count: the region straddles the end.
    let odd = Phold {
        lps: 10,
        ..p.clone()
    };
    let hot10: Vec<u32> = (0..10).filter(|&lp| odd.is_hot(lp, 4.0)).collect();
    assert_eq!(hot10, [0, 1, 8, 9]);
    let still = Phold {
        hot_move: 0.0,
        ..p.clone()
    };
    assert!((0..4).all(|lp| still.is_hot(lp, 100.0)) && !still.is_hot(4, 100.0));
    let plain = Phold {
        hot_lps: 0,
        hot_move: 0.0,
        ..p.clone()
    };
    let a = run(&plain, 5.0, 7, Executor::Sequential);
    let b = run(&p, 5.0, 7, Executor::Sequential);
    assert_eq!(a.fingerprint, b.fingerprint);
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let e = Phold {
            hot_move: bad,
            ..p.clone()
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("hot-move"), "{e}");
    }
}

/// Null-message workers leave without receiving events at or after the end; the GSU's TMC
/// registers count those still in a mailbox, and the run reports them as pending, as many as
/// the sequential run leaves.
#[test]
fn events_left_in_transit_are_counted_by_the_gsu() {
    let p = Phold {
        lps: 16,
        start_events: 4,
        remote: 1.0,
        lookahead: 0.5,
        ..Phold::default()
    };
    let mut seen_in_transit = false;
    for seed in 1..=6 {
        let seq = run(&p, 10.0, seed, Executor::Sequential);
        let r = run(
            &p,
            10.0,
            seed,
            Executor::NullMessage(ConservativeConfig::new(2)),
        );
        assert_eq!(r.pending_at_end, seq.pending_at_end, "seed {seed}");
        let in_transit = r.executor_stats["in_transit_at_end"];
        assert!(in_transit <= r.pending_at_end as f64);
        seen_in_transit |= in_transit > 0.0;
    }
    assert!(seen_in_transit, "no run left an event in transit");
}
