//! A multi-producer, single-consumer mailbox of event batches with a minimum-timestamp register.
//!
//! Producers push whole batches (a `Vec` per destination worker, so one atomic operation moves
//! many events) onto a Treiber stack (R. K. Treiber, "Systems Programming: Coping with
//! Parallelism", IBM RJ 5118, 1986); the single consumer takes the whole stack at once with one
//! swap, so nodes are never popped one by one and the ABA problem cannot arise. Payloads are
//! moved, never copied. Beside the stack, `min` holds a lower bound on the timestamps of the
//! events not yet taken — the MOM register of the GSU (seed 000 §3.1) and the BH_min register of
//! the bottom-half queues (seed 003 §2.2). The protocol and its proof are in `README.md`.

use std::ptr;

use crate::event::Keyed;
use crate::loom::atomic::{AtomicPtr, AtomicU64, Ordering::SeqCst};

struct Node<T> {
    batch: Vec<T>,
    next: *mut Node<T>,
}

/// An MPSC mailbox of event batches with a minimum-timestamp register (see module docs).
pub struct Mailbox<T> {
    head: AtomicPtr<Node<T>>,
    /// Bits of a lower bound on the times of the events in the mailbox (`+inf` when none).
    min: AtomicU64,
}

impl<T> std::fmt::Debug for Mailbox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox")
            .field("min_time", &f64::from_bits(self.min.load(SeqCst)))
            .finish_non_exhaustive()
    }
}

// Safety: the mailbox owns its nodes; producers hand a batch over (T: Send moves between
// threads) and only the consumer, after taking a node out with a swap, reads or frees it.
unsafe impl<T: Send> Send for Mailbox<T> {}
// Safety: see `Send`; every shared access goes through the two atomics.
unsafe impl<T: Send> Sync for Mailbox<T> {}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Mailbox<T> {
    /// An empty mailbox.
    pub fn new() -> Self {
        Mailbox {
            head: AtomicPtr::new(ptr::null_mut()),
            min: AtomicU64::new(f64::INFINITY.to_bits()),
        }
    }

    /// A lower bound on the timestamps of the events not yet taken (`+inf` when there are
    /// none). It may be lower than the true minimum (an event already taken can still hold it
    /// down until the next `take`), never higher.
    #[inline]
    pub fn min_time(&self) -> f64 {
        f64::from_bits(self.min.load(SeqCst))
    }

    /// Whether no batch is waiting (a hint: a producer may be pushing right now).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.load(SeqCst).is_null()
    }

    /// Takes every waiting batch and hands each event to `f`. Only one thread may take from a
    /// mailbox at a time (the owning worker); returns the number of events taken.
    pub fn take(&self, mut f: impl FnMut(T)) -> usize {
        // Reset the register first, then take the stack: every batch this swap misses is
        // pushed after it, so its producer lowers the register after this reset (README, I2).
        self.min.store(f64::INFINITY.to_bits(), SeqCst);
        let mut node = self.head.swap(ptr::null_mut(), SeqCst);
        let mut count = 0;
        while !node.is_null() {
            // Safety: `node` came from `Box::into_raw` in `push_batch` and was taken out of the
            // stack by the swap above, so this thread is its only owner now.
            let boxed = unsafe { Box::from_raw(node) };
            node = boxed.next;
            count += boxed.batch.len();
            boxed.batch.into_iter().for_each(&mut f);
        }
        count
    }
}

impl<T: Keyed> Mailbox<T> {
    /// Pushes a batch (no-op when empty) and lowers the register to its earliest time.
    pub fn push_batch(&self, batch: Vec<T>) {
        if batch.is_empty() {
            return;
        }
        let min = batch
            .iter()
            .map(|e| e.key().time)
            .fold(f64::INFINITY, f64::min);
        let node = Box::into_raw(Box::new(Node {
            batch,
            next: ptr::null_mut(),
        }));
        let mut head = self.head.load(SeqCst);
        loop {
            // Safety: `node` is ours until the CAS below publishes it.
            unsafe { (*node).next = head };
            match self.head.compare_exchange_weak(head, node, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
        // Lower the register only after the batch is visible (README, I1 and I2).
        self.min.fetch_min(min.to_bits(), SeqCst);
    }

    /// Pushes one event.
    pub fn push(&self, event: T) {
        self.push_batch(vec![event]);
    }
}

impl<T> Drop for Mailbox<T> {
    fn drop(&mut self) {
        self.take(drop);
    }
}
