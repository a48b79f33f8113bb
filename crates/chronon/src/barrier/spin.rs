//! Spin barriers (seed 001 §3.2): one global sense-reversing counter, and a tree of them.

use crossbeam_utils::CachePadded;

use super::park::Sleepers;
use super::Barrier;
use crate::loom::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The global sense-reversing spin barrier: every thread increments one counter; the last one
/// resets it and flips the global sense, which the others spin on (then park).
#[derive(Debug)]
pub struct SpinBarrier {
    n: usize,
    count: CachePadded<AtomicUsize>,
    sense: CachePadded<AtomicBool>,
    /// Each thread's own sense; only thread `i` touches `local[i]`.
    local: Box<[CachePadded<AtomicBool>]>,
    sleepers: Sleepers,
}

impl SpinBarrier {
    /// A barrier for `n` threads.
    pub fn new(n: usize) -> Self {
        SpinBarrier {
            n,
            count: CachePadded::new(AtomicUsize::new(0)),
            sense: CachePadded::new(AtomicBool::new(false)),
            local: (0..n)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            sleepers: Sleepers::new(n),
        }
    }
}

impl Barrier for SpinBarrier {
    fn wait(&self, me: usize) {
        // Ordering: `local[me]` is private to this thread; relaxed is enough.
        let s = !self.local[me].load(Ordering::Relaxed);
        self.local[me].store(s, Ordering::Relaxed);
        // Ordering: AcqRel makes the RMWs on `count` one release sequence, so the last arriver
        // acquires everything every thread did before arriving.
        if self.count.fetch_add(1, Ordering::AcqRel) == self.n - 1 {
            // Ordering: published by the SeqCst sense store below; nobody arrives again before
            // seeing that store.
            self.count.store(0, Ordering::Relaxed);
            self.sense.store(s, Ordering::SeqCst);
            self.sleepers.wake_all();
        } else {
            self.sleepers
                .wait_until(me, || self.sense.load(Ordering::SeqCst) == s);
        }
    }
    fn threads(&self) -> usize {
        self.n
    }
}

/// The tree-shaped spin barrier with fan-in `m` (seed 001 §3.2): thread 0 is the root, threads
/// `1..=m` its children, the next `m` the children of thread 1, and so on. A node's counter waits
/// for the node itself and its children's subtrees; the last arriver at a node carries the
/// arrival to the parent, and the last arriver at the root flips the global sense.
#[derive(Debug)]
pub struct TreeBarrier {
    n: usize,
    m: usize,
    count: Box<[CachePadded<AtomicUsize>]>,
    expected: Box<[usize]>,
    sense: CachePadded<AtomicBool>,
    local: Box<[CachePadded<AtomicBool>]>,
    sleepers: Sleepers,
}

impl TreeBarrier {
    /// A barrier for `n` threads with fan-in `m` (at least 1).
    pub fn new(n: usize, m: usize) -> Self {
        let m = m.max(1);
        let expected = (0..n)
            .map(|i| 1 + (n - 1).saturating_sub(i * m).min(m))
            .collect();
        TreeBarrier {
            n,
            m,
            count: (0..n)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            expected,
            sense: CachePadded::new(AtomicBool::new(false)),
            local: (0..n)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            sleepers: Sleepers::new(n),
        }
    }

    /// The fan-in.
    pub fn fan_in(&self) -> usize {
        self.m
    }
}

impl Barrier for TreeBarrier {
    fn wait(&self, me: usize) {
        // Ordering: private to this thread (see SpinBarrier).
        let s = !self.local[me].load(Ordering::Relaxed);
        self.local[me].store(s, Ordering::Relaxed);
        let mut node = me;
        loop {
            // Ordering: AcqRel chains the arrivals at this node (see SpinBarrier); the carrier
            // to the parent thereby carries everything its subtree did.
            if self.count[node].fetch_add(1, Ordering::AcqRel) + 1 == self.expected[node] {
                // Ordering: published by the root's SeqCst sense store, which every thread
                // sees before arriving again.
                self.count[node].store(0, Ordering::Relaxed);
                if node == 0 {
                    self.sense.store(s, Ordering::SeqCst);
                    self.sleepers.wake_all();
                    return;
                }
                node = (node - 1) / self.m;
            } else {
                self.sleepers
                    .wait_until(me, || self.sense.load(Ordering::SeqCst) == s);
                return;
            }
        }
    }
    fn threads(&self) -> usize {
        self.n
    }
}
