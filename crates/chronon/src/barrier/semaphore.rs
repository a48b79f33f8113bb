//! The master/slave semaphore barrier of seed 001 §3.2, with two alternating slave semaphores
//! so that a fast slave cannot cross two barriers while the master has crossed one.

use std::sync::{Condvar, Mutex};

use super::Barrier;
use crate::loom::atomic::{AtomicUsize, Ordering::SeqCst};

/// A counting semaphore (a mutex-protected count and a condition variable).
#[derive(Debug, Default)]
struct Semaphore {
    count: Mutex<usize>,
    cv: Condvar,
}

impl Semaphore {
    fn post(&self, k: usize) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *c += k;
        if k == 1 {
            self.cv.notify_one();
        } else {
            self.cv.notify_all();
        }
    }
    fn wait(&self) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *c == 0 {
            c = self.cv.wait(c).unwrap_or_else(|e| e.into_inner());
        }
        *c -= 1;
    }
}

/// Thread 0 is the master: it waits for `n - 1` posts of the master semaphore, switches the
/// current slave semaphore, then posts the old one `n - 1` times. A slave reads the current
/// slave semaphore, posts the master's, and waits on the one it read.
#[derive(Debug)]
pub struct SemaphoreBarrier {
    n: usize,
    master: Semaphore,
    slaves: [Semaphore; 2],
    current: AtomicUsize,
}

impl SemaphoreBarrier {
    /// A barrier for `n` threads.
    pub fn new(n: usize) -> Self {
        SemaphoreBarrier {
            n,
            master: Semaphore::default(),
            slaves: [Semaphore::default(), Semaphore::default()],
            current: AtomicUsize::new(0),
        }
    }
}

impl Barrier for SemaphoreBarrier {
    fn wait(&self, me: usize) {
        if me == 0 {
            for _ in 1..self.n {
                self.master.wait();
            }
            // Every slave read `current` before posting the master, so switching it now
            // cannot change which semaphore a slave of this round waits on.
            let cur = self.current.load(SeqCst);
            self.current.store(1 - cur, SeqCst);
            if self.n > 1 {
                self.slaves[cur].post(self.n - 1);
            }
        } else {
            let cur = self.current.load(SeqCst);
            self.master.post(1);
            self.slaves[cur].wait();
        }
    }
    fn threads(&self) -> usize {
        self.n
    }
}
