//! Drop counting for `Ctx::alloc_shared` in one process: after a run of a model whose events
//! carry nested, forwarded and fresh `BPtr`s, on every executor, every shared-heap item came
//! back to its heap exactly once (none outstanding; a second return would underflow the count
//! and fail in `collect`) and every heap number went back to the pool. One test function, so
//! that no other simulation in this process holds heap items meanwhile.
#![cfg(all(target_os = "linux", not(chronon_loom)))]

#[path = "bptr_model.rs"]
mod bptr_model;

use bptr_model::Courier;
use chronon::shm::local::{free_heap_numbers, outstanding_items};
use chronon::shm::{BPtr, HeapError};
use chronon::{ConservativeConfig, Executor, Simulation, TimeWarpConfig};

#[test]
fn every_payload_is_freed_once_and_every_heap_released() {
    let all = free_heap_numbers();
    assert_eq!(all, 256);
    let mut fingerprints = Vec::new();
    for ex in [
        Executor::Sequential,
        Executor::Window(ConservativeConfig::new(2)),
        Executor::Lockstep(ConservativeConfig::new(3)),
        Executor::NullMessage(ConservativeConfig::new(2)),
        Executor::TimeWarp(TimeWarpConfig::new(2)),
    ] {
        let r = Simulation::new(Courier { leak_at: None })
            .lps(9)
            .end_time(60.0)
            .seed(3)
            .executor(ex.clone())
            .run()
            .unwrap();
        assert!(r.committed > 200);
        assert_eq!(r.model_stats.get("bad_payloads"), Some(0.0), "{ex:?}");
        fingerprints.push((r.fingerprint, r.model_stats.get("payload_sum")));
        assert_eq!(
            outstanding_items(),
            0,
            "{ex:?} left shared-heap items behind"
        );
        assert_eq!(free_heap_numbers(), all, "{ex:?} kept a heap number");
    }
    assert!(
        fingerprints.windows(2).all(|w| w[0] == w[1]),
        "{fingerprints:?}"
    );

    // Heap numbers: 256 threads may hold a heap at once; the 257th gets a clear error; all
    // come back when the threads end.
    let gate = std::sync::Barrier::new(257);
    std::thread::scope(|s| {
        let held: Vec<_> = (0..256)
            .map(|_| {
                s.spawn(|| {
                    let p = BPtr::new(7u64).unwrap();
                    gate.wait();
                    gate.wait();
                    drop(p);
                })
            })
            .collect();
        gate.wait();
        let e = s.spawn(|| BPtr::new(1u64).unwrap_err()).join().unwrap();
        assert!(matches!(e, HeapError::NoHeapNumber), "{e}");
        assert!(e.to_string().contains("at most 256 threads"), "{e}");
        gate.wait();
        for h in held {
            h.join().unwrap();
        }
    });
    assert_eq!(free_heap_numbers(), all);
    assert_eq!(outstanding_items(), 0);

    // A BPtr kept past its thread's end keeps its heap (retired, not released) until dropped.
    let kept = std::thread::spawn(|| BPtr::new([1u8; 40]).unwrap())
        .join()
        .unwrap();
    assert_eq!(free_heap_numbers(), all - 1);
    assert_eq!(outstanding_items(), 1);
    assert_eq!(kept[39], 1);
    drop(kept);
    assert_eq!(outstanding_items(), 0);
    assert_eq!(free_heap_numbers(), all);
}
