//! Differential tests: every conservative executor, at 1 to 4 threads, commits the same history
//! as the sequential executor on random models (random topology, lookaheads, fan-out, equal
//! timestamps, zero delays, global events); models that break their declared links get a
//! clear error. The model is in `conservative/random.rs`; load balancing in
//! `conservative/balance.rs`; the lock-step runtimes in `conservative/runtimes.rs`; errors, refusals and stops in `conservative/faults.rs`; a tandem
//! queue whose stations send themselves their service completions in `conservative/tandem.rs`.

#[path = "conservative/balance.rs"]
mod balance;
#[path = "conservative/faults.rs"]
mod faults;
#[path = "conservative/random.rs"]
mod random;
#[path = "conservative/runtimes.rs"]
mod runtimes;
#[path = "conservative/tandem.rs"]
mod tandem;

use chronon::barrier::BarrierKind;
use chronon::partition::Mapping;
use chronon::{ConservativeConfig, Executor, TimeWarpConfig};

use random::{assert_same_history, executors, run, Random};

#[test]
fn random_models_match_the_sequential_history() {
    for seed in 0..16u64 {
        let m = Random::seeded(seed, 5 + (seed as u32 * 7) % 13);
        let end = 20.0;
        let seq = run(&m, Executor::Sequential, end).unwrap();
        assert!(
            seq.committed > 50,
            "seed {seed}: a trivial run ({})",
            seq.committed
        );
        // Null messages need positive lookahead between workers: the same model with every
        // zero lookahead raised (its own sequential reference).
        let m_nm = Random {
            las: m
                .las
                .iter()
                .map(|&l| if l == 0.0 { 0.25 } else { l })
                .collect(),
            ..m.clone()
        };
        let seq_nm = run(&m_nm, Executor::Sequential, end).unwrap();
        for threads in 1..=4 {
            for exec in executors(threads) {
                let name = format!("seed {seed}, {} x{threads}", exec.name());
                let (model, reference) = if matches!(exec, Executor::NullMessage(_)) {
                    (&m_nm, &seq_nm)
                } else {
                    (&m, &seq)
                };
                let r = run(model, exec, end).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_same_history(&r, reference, &name);
            }
        }
    }
}

#[test]
fn every_barrier_gives_the_same_history() {
    let m = Random {
        degree: 3,
        max_fanout: 2,
        quantum: 0.5,
        period: 2.0,
        acyclic_zero: false,
        ..Random::new(12, 3, vec![0.0, 0.5])
    };
    let seq = run(&m, Executor::Sequential, 20.0).unwrap();
    for b in [
        BarrierKind::Std,
        BarrierKind::Semaphore,
        BarrierKind::Spin,
        BarrierKind::Tree { fan_in: 2 },
    ] {
        for exec in [
            Executor::Window(ConservativeConfig::new(3).barrier(b)),
            Executor::Lockstep(ConservativeConfig::new(3).barrier(b)),
        ] {
            let r = run(&m, exec, 20.0).unwrap();
            assert_eq!(r.fingerprint, seq.fingerprint, "{b:?}");
            assert_eq!(r.model_stats, seq.model_stats, "{b:?}");
        }
    }
}

#[test]
fn zero_lookahead_cycles_are_rejected_by_null_messages_only() {
    // Full mesh with lookahead 0 between two workers: a zero-lookahead cycle.
    let m = Random {
        degree: 6,
        quantum: 0.5,
        acyclic_zero: false,
        ..Random::new(6, 1, vec![0.0])
    };
    let e = run(&m, Executor::NullMessage(ConservativeConfig::new(2)), 10.0).unwrap_err();
    assert!(e.is_config(), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("cycle") && msg.contains("LP "), "{msg}");
    assert_eq!(msg.lines().count(), 1);
    // One worker has no links between workers: fine. Window and lock-step run it too.
    let seq = run(&m, Executor::Sequential, 10.0).unwrap();
    for exec in [
        Executor::NullMessage(ConservativeConfig::new(1)),
        Executor::Window(ConservativeConfig::new(2)),
        Executor::Lockstep(ConservativeConfig::new(2)),
    ] {
        assert_eq!(run(&m, exec, 10.0).unwrap().fingerprint, seq.fingerprint);
    }
}

/// Time Warp runs models with declared topologies (no global events) to the sequential
/// history, and refuses global events with a configuration error rather than skipping them.
#[test]
fn time_warp_keeps_topologies_and_runs_global_events() {
    for seed in 0..6u64 {
        let m = Random {
            degree: 1 + (seed as u32 % 3),
            max_fanout: 2,
            ..Random::new(6 + seed as u32, seed, vec![0.0, 0.25, 1.0])
        };
        let seq = run(&m, Executor::Sequential, 15.0).unwrap();
        for threads in [2, 3] {
            let tw = run(&m, Executor::TimeWarp(TimeWarpConfig::new(threads)), 15.0).unwrap();
            assert_eq!(
                tw.fingerprint, seq.fingerprint,
                "seed {seed}, {threads} threads"
            );
            assert_eq!(tw.model_stats, seq.model_stats, "seed {seed}");
        }
    }
    // Global events run under Time Warp too (at GVT, on committed states): the same calls,
    // the same states seen (`global_seen_sum`, `global_state_hash_lo`), the same history.
    for seed in 0..8u64 {
        let with_globals = Random {
            degree: 2,
            max_fanout: 1 + (seed as u32 % 2),
            period: if seed % 3 == 0 { 0.7 } else { 1.5 },
            ..Random::new(
                6 + seed as u32,
                seed,
                if seed % 2 == 0 {
                    vec![0.0, 0.25, 1.0]
                } else {
                    vec![0.5]
                },
            )
        };
        let seq = run(&with_globals, Executor::Sequential, 12.0).unwrap();
        assert!(
            seq.model_stats.get("global_calls").unwrap_or(0.0) >= 5.0,
            "seed {seed}: {:?}",
            seq.model_stats
        );
        for threads in 1..=4 {
            let name = format!("seed {seed}, timewarp x{threads}");
            let tw = run(
                &with_globals,
                Executor::TimeWarp(TimeWarpConfig::new(threads)),
                12.0,
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_same_history(&tw, &seq, &name);
            assert_eq!(
                tw.executor_stats.get("global_events"),
                seq.executor_stats.get("global_events"),
                "{name}"
            );
        }
    }
}

/// Lock-step with zero-lookahead links between workers (cycles included) runs batches of
/// events, not one per round (`lockstep.rs`), and still commits the sequential history:
/// random zero-lookahead models with many equal timestamps, 2–4 threads, both mappings.
/// `CHRONON_STRESS=N` runs seeds 0..N instead of 0..40 and 184 (the seed that caught a rule
/// which forgot this round's own sends to other workers).
#[test]
fn lockstep_with_zero_lookahead_links_matches_the_sequential_history() {
    let seeds: Vec<u64> = match std::env::var("CHRONON_STRESS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) => (0..n).collect(),
        None => (0..40).chain([184]).collect(),
    };
    for seed in seeds {
        let m = Random {
            degree: 1 + (seed as u32 % 3),
            max_fanout: 1 + (seed as u32 % 3),
            period: if seed % 4 == 0 { 1.25 } else { 0.0 },
            acyclic_zero: seed % 2 == 0,
            ..Random::new(
                4 + (seed as u32 * 5) % 11,
                seed + 1000,
                [vec![0.0], vec![0.0, 0.25], vec![0.0, 0.0, 1.0]][seed as usize % 3].clone(),
            )
        };
        let end = 12.0;
        let seq = run(&m, Executor::Sequential, end).unwrap();
        for threads in 2..=4 {
            for mapping in [Mapping::Block, Mapping::RoundRobin] {
                let exec =
                    Executor::Lockstep(ConservativeConfig::new(threads).mapping(mapping.clone()));
                let name = format!("seed {seed}, lockstep x{threads} {mapping:?}");
                let r = run(&m, exec, end).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(r.fingerprint, seq.fingerprint, "{name}");
                assert_eq!(r.model_stats, seq.model_stats, "{name}");
            }
        }
    }
}
