//! Loom models of the lock-free counts: two threads clone and drop concurrently; the item is
//! freed exactly once, after both are done with it.

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

use super::*;

struct Tracked {
    value: loom::cell::UnsafeCell<u64>,
    drops: Arc<AtomicUsize>,
}

// Safety (test): the cell is written only by the drop, which the schemes run after every
// handle's last read; loom reports a race otherwise.
unsafe impl Sync for Tracked {}

impl Drop for Tracked {
    fn drop(&mut self) {
        // A write that loom reports as a race if a handle still reads the value.
        self.value.with_mut(|v| unsafe { *v = 0 });
        self.drops.fetch_add(1, SeqCst);
    }
}

fn model<S: Scheme>() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let s = Shared::<_, S>::new(Tracked {
            value: loom::cell::UnsafeCell::new(7),
            drops: drops.clone(),
        });
        let other = s.clone();
        let t = thread::spawn(move || {
            let again = other.clone();
            // Safety (test): a read through a live handle.
            assert_eq!(again.value.with(|v| unsafe { *v }), 7);
            drop(other);
            drop(again);
        });
        assert_eq!(s.value.with(|v| unsafe { *v }), 7);
        drop(s);
        t.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1);
    });
}

#[test]
fn loom_lock_add() {
    model::<LockAdd>();
}

#[test]
fn loom_xadd() {
    model::<XAdd>();
}

#[test]
fn loom_cas() {
    model::<Cas>();
}

#[test]
fn loom_per_thread() {
    model::<PerThread>();
}

#[test]
fn loom_locked() {
    model::<Locked>();
}
