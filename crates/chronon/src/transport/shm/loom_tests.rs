//! Loom model of the shared-memory transport's *absorb* (README.md, X1): a worker moves a
//! message from its incoming ring to its private stash inside an odd epoch of its registers,
//! lowering its stash register before the epoch ends, while another worker takes a snapshot
//! (seqlock double collect: epoch, MOM = min(ring register, stash register), epoch). A stable
//! snapshot never misses the message. The model replays `net.rs`'s absorb (`Ends::absorb`
//! inside an epoch) and one attempt of `Control::snapshot`'s reads on loom atomics; the ring
//! is the real `shm` ring. The real `Control::bracket` and `Control::snapshot` (the GSU's
//! register code over the shared layout) race the same kind of move in `gsu/loom_tests.rs`.

use loom::sync::atomic::{AtomicU64, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

use crate::shm::local_ring;

struct Words {
    /// The absorbing worker's epoch (odd: absorb in progress).
    epoch: AtomicU64,
    /// Its stash register (bits of a time; `+inf`: empty).
    stash_min: AtomicU64,
}

/// The message (time 5) is in transit for the whole model: in the ring, then in the stash.
/// Fails if the stash register is lowered after the epoch ends, or not at all.
#[test]
fn a_snapshot_racing_an_absorb_never_misses_the_message() {
    loom::model(|| {
        let (mut p, mut c) = local_ring::<u32>(2);
        assert_eq!(p.try_push_batch(&mut vec![5], |&v| f64::from(v)), 1);
        let ring = c.register();
        let w = Arc::new(Words {
            epoch: AtomicU64::new(0),
            stash_min: AtomicU64::new(f64::INFINITY.to_bits()),
        });
        let w2 = w.clone();
        let absorber = thread::spawn(move || {
            let mut stash = Vec::new();
            w2.epoch.fetch_add(1, SeqCst);
            let mut min = f64::INFINITY;
            c.drain(|v| {
                min = min.min(f64::from(v));
                stash.push(v);
            });
            w2.stash_min.fetch_min(min.to_bits(), SeqCst);
            w2.epoch.fetch_add(1, SeqCst);
            stash
        });
        // One snapshot attempt; a real snapshot retries until stable.
        let e1 = w.epoch.load(SeqCst);
        let mom = ring
            .min_time()
            .min(f64::from_bits(w.stash_min.load(SeqCst)));
        let e2 = w.epoch.load(SeqCst);
        if e1 % 2 == 0 && e1 == e2 {
            assert!(
                mom <= 5.0,
                "a stable snapshot missed the message (MOM {mom})"
            );
        }
        let stash = absorber.join().unwrap();
        assert_eq!(stash, [5]);
    });
}
