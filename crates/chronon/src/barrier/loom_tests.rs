//! Loom models of the spin barriers: nobody leaves a round before everybody arrived, and the
//! barrier can be reused at once.

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

const PREEMPTIONS: usize = 2;

use super::{Barrier, SpinBarrier, TreeBarrier};

fn two_rounds<B: Barrier + 'static>(b: Arc<B>, n: usize) {
    let arrived = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (1..n)
        .map(|me| {
            let (b, arrived) = (b.clone(), arrived.clone());
            thread::spawn(move || {
                for r in 1..=2 {
                    arrived.fetch_add(1, SeqCst);
                    b.wait(me);
                    assert!(arrived.load(SeqCst) >= r * n);
                }
            })
        })
        .collect();
    for r in 1..=2 {
        arrived.fetch_add(1, SeqCst);
        b.wait(0);
        assert!(arrived.load(SeqCst) >= r * n);
    }
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn spin_barrier_separates_rounds() {
    bounded(|| two_rounds(Arc::new(SpinBarrier::new(2)), 2));
}

#[test]
fn tree_barrier_separates_rounds() {
    bounded(|| two_rounds(Arc::new(TreeBarrier::new(2, 1)), 2));
}

/// Loom with a preemption bound (the spin loops make the full state space explode; bounded
/// preemption still covers every interleaving with a few context switches).
fn bounded(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(PREEMPTIONS);
    b.max_branches = 100_000;
    b.check(f);
}
