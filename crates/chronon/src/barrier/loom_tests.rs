//! Loom models of the spin barriers: nobody leaves a round before everybody arrived, and the
//! barrier can be reused at once.

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

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
    loom::model(|| two_rounds(Arc::new(SpinBarrier::new(2)), 2));
}

#[test]
fn tree_barrier_separates_rounds() {
    loom::model(|| two_rounds(Arc::new(TreeBarrier::new(3, 1)), 3));
}
