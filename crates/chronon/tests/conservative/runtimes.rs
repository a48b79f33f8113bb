//! The lock-step runtimes of seed 002 at LP granularity: the work-stealing (Cilk) runtime and
//! the active-threads runtime commit the sequential history with several tasks or
//! light-weight threads per lock-step, and their settings are checked. A module of the
//! `conservative` test binary.

use chronon::barrier::BarrierKind;
use chronon::partition::Mapping;
use chronon::{ConservativeConfig, Executor, Runtime, Setting};

use super::random::{assert_same_history, run, tiny, Random};

fn runtimes(threshold: usize) -> [Runtime; 2] {
    [
        Runtime::WorkStealing { threshold },
        Runtime::ActiveThreads { threshold },
    ]
}

#[test]
fn lockstep_runtimes_match_the_sequential_history_with_several_tasks() {
    // Random topology, zero and positive lookaheads, equal timestamps, global events.
    for seed in 0..8u64 {
        let m = Random::seeded(seed, 9 + (seed as u32 * 7) % 13);
        let end = 15.0;
        let seq = run(&m, Executor::Sequential, end).unwrap();
        assert!(seq.committed > 50, "seed {seed}: {}", seq.committed);
        for threads in 1..=4 {
            for threshold in [1, 2, 3, 7] {
                for rt in runtimes(threshold) {
                    let name = format!(
                        "seed {seed}, {} x{threads}, threshold {threshold}",
                        rt.name()
                    );
                    let c = ConservativeConfig::new(threads).runtime(rt);
                    let r = run(&m, Executor::Lockstep(c), end)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_same_history(&r, &seq, &name);
                    // Every LP is spawned each lock-step: ceil(LPs / threshold) pieces, so
                    // several tasks (or light-weight threads) per lock-step here.
                    let pieces = m.lps.div_ceil(threshold as u32) as f64;
                    assert!(pieces >= 2.0, "{name}");
                    assert_eq!(r.executor_stats["tasks_per_round"], pieces, "{name}");
                    assert_eq!(r.workers.len(), threads, "{name}: one entry per thread");
                    let events: f64 = r.workers.iter().map(|w| w["events"]).sum();
                    assert_eq!(events as u64, r.committed, "{name}");
                }
            }
        }
    }
}

#[test]
fn active_threads_bind_many_light_weight_threads_per_worker() {
    let m = Random::seeded(3, 20);
    let c = ConservativeConfig::new(2).runtime(Runtime::ActiveThreads { threshold: 3 });
    let r = run(&m, Executor::Lockstep(c), 10.0).unwrap();
    assert_eq!(r.executor_stats["light_weight_threads"], 7.0);
    assert_eq!(r.executor_stats["threshold"], 3.0);
    // Light-weight threads 0, 2, 4, 6 on worker 0 and 1, 3, 5 on worker 1, each resumed once
    // per lock-step and once for the first pass, which only gathers the heads.
    let rounds = r.executor_stats["rounds"];
    assert!(rounds > 1.0);
    assert_eq!(r.workers[0]["tasks"], 4.0 * (rounds + 1.0));
    assert_eq!(r.workers[1]["tasks"], 3.0 * (rounds + 1.0));
}

#[test]
fn lockstep_runtime_settings_are_checked() {
    let m = tiny();
    for rt in runtimes(0) {
        let e = run(
            &m,
            Executor::Lockstep(ConservativeConfig::new(2).runtime(rt)),
            5.0,
        )
        .unwrap_err();
        assert!(e.is_config() && e.to_string().contains("threshold"), "{e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }
    for rt in runtimes(5) {
        let c = ConservativeConfig::new(2).runtime(rt);
        for exec in [
            Executor::Window(c.clone()),
            Executor::NullMessage(c.clone()),
        ] {
            let e = run(&m, exec, 5.0).unwrap_err();
            let msg = e.to_string();
            assert!(e.is_config(), "{msg}");
            assert!(
                msg.contains(&format!("runtime {} applies to", rt.name()))
                    && msg.contains("lockstep only"),
                "{msg}"
            );
            assert_eq!(msg.lines().count(), 1, "{msg}");
        }
        for (exec, setting) in [
            (
                Executor::Lockstep(c.clone().mapping(Mapping::RoundRobin)),
                Setting::Mapping,
            ),
            (
                Executor::Lockstep(c.clone().barrier(BarrierKind::Spin)),
                Setting::Barrier,
            ),
        ] {
            let e = run(&m, exec, 5.0).unwrap_err();
            assert!(e.is_config(), "{e}");
            assert!(e.to_string().contains(rt.name()), "{e}");
            assert!(e.to_string().contains(setting.name()), "{e}");
        }
    }
}
