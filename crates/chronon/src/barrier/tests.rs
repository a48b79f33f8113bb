use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use super::BarrierKind;

/// Every thread bumps its own round counter before each wait; after the wait, every other
/// thread must have reached at least this round, and none may be two rounds ahead.
fn check(kind: BarrierKind, threads: usize, rounds: usize) {
    let b: Arc<dyn super::Barrier> = Arc::from(kind.build(threads));
    let done: Arc<Vec<AtomicUsize>> = Arc::new((0..threads).map(|_| AtomicUsize::new(0)).collect());
    let hs: Vec<_> = (0..threads)
        .map(|me| {
            let (b, done) = (b.clone(), done.clone());
            std::thread::spawn(move || {
                for r in 1..=rounds {
                    done[me].store(r, SeqCst);
                    b.wait(me);
                    for d in done.iter() {
                        let v = d.load(SeqCst);
                        assert!(v >= r && v <= r + 1, "{kind:?}: round {r}, saw {v}");
                    }
                    b.wait(me);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn every_barrier_separates_rounds() {
    for kind in [
        BarrierKind::Std,
        BarrierKind::Semaphore,
        BarrierKind::Spin,
        BarrierKind::Tree { fan_in: 1 },
        BarrierKind::Tree { fan_in: 2 },
        BarrierKind::Tree { fan_in: 4 },
    ] {
        for threads in [1, 2, 3, 5] {
            check(kind, threads, 200);
        }
    }
}

#[test]
fn parse_names_and_reject_bad_ones() {
    assert_eq!(
        BarrierKind::parse("tree", 3),
        Ok(BarrierKind::Tree { fan_in: 3 })
    );
    assert_eq!(BarrierKind::parse("spin", 4), Ok(BarrierKind::Spin));
    assert!(BarrierKind::parse("posix", 4)
        .unwrap_err()
        .contains("allowed"));
    assert!(BarrierKind::parse("tree", 0).is_err());
}
