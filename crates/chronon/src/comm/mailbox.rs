//! A multi-producer, single-consumer mailbox of event batches with a minimum-timestamp register.
//!
//! Producers push whole batches (one per destination worker, so one atomic operation moves
//! many events) onto a Treiber stack (R. K. Treiber, "Systems Programming: Coping with
//! Parallelism", IBM RJ 5118, 1986); the single consumer takes the whole stack at once with one
//! swap, so nodes are never popped one by one and the ABA problem cannot arise. Payloads are
//! moved, never copied. Beside the stack, `min` holds a lower bound on the timestamps of the
//! events not yet taken — the MOM register of the GSU (seed 000 §3.1) and the BH_min register of
//! the bottom-half queues (seed 003 §2.2). The protocol and its proof are in `README.md`.
//!
//! A batch is a [`Batch`]: a stack node and its event vector in one allocation that outlives
//! the send. The consumer empties it and gives it back to its owner's [`BatchPool`] (the way
//! mimalloc returns remote frees to the owning thread), so a sender that reuses its batches
//! allocates nothing per send once the pool is warm.

use std::ptr;

use crate::event::Keyed;
use crate::loom::atomic::{AtomicPtr, AtomicU64, Ordering::SeqCst};

/// The owner of a batch that no pool takes back (it is freed once emptied).
const NO_OWNER: u32 = u32::MAX;

struct Node<T> {
    items: Vec<T>,
    next: *mut Node<T>,
    owner: u32,
}

/// A batch of items on its way to a mailbox: the stack node and the items' vector, owned by the
/// worker whose [`BatchPool`] it returns to once emptied.
pub struct Batch<T> {
    node: Box<Node<T>>,
}

// Safety: a batch owns its node and items outright; `next` is null while a batch exists (it is
// set only inside a stack, and `Stack::take_all` clears it before handing the node out).
unsafe impl<T: Send> Send for Batch<T> {}

impl<T> std::fmt::Debug for Batch<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("len", &self.node.items.len())
            .field("owner", &self.node.owner)
            .finish()
    }
}

impl<T> Batch<T> {
    /// An empty batch that returns to pool number `owner` once a consumer has emptied it.
    pub fn new(owner: u32) -> Self {
        Batch {
            node: Box::new(Node {
                items: Vec::new(),
                next: ptr::null_mut(),
                owner,
            }),
        }
    }

    /// A batch that holds `items` and is freed, not recycled, once taken.
    pub fn from_vec(items: Vec<T>) -> Self {
        let mut b = Batch::new(NO_OWNER);
        b.node.items = items;
        b
    }

    /// Adds an item.
    #[inline]
    pub fn push(&mut self, item: T) {
        self.node.items.push(item);
    }

    /// The items.
    pub fn items(&self) -> &[T] {
        &self.node.items
    }

    /// Whether the batch holds no item.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.node.items.is_empty()
    }

    /// The pool this batch returns to (`None`: it is freed once taken).
    pub fn owner(&self) -> Option<usize> {
        (self.node.owner != NO_OWNER).then_some(self.node.owner as usize)
    }

    /// Moves every item out to `f`, leaving the batch empty with its capacity (at most
    /// `MAX_KEPT` items' worth: a burst does not pin memory forever).
    pub fn drain_into(&mut self, f: &mut impl FnMut(T)) -> usize {
        const MAX_KEPT: usize = 1024;
        let n = self.node.items.len();
        self.node.items.drain(..).for_each(&mut *f);
        if self.node.items.capacity() > MAX_KEPT {
            self.node.items.shrink_to(MAX_KEPT);
        }
        n
    }
}

/// A Treiber stack of nodes that many threads push onto and one thread empties at once.
struct Stack<T> {
    head: AtomicPtr<Node<T>>,
}

impl<T> Stack<T> {
    fn new() -> Self {
        Stack {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    fn is_empty(&self) -> bool {
        self.head.load(SeqCst).is_null()
    }

    /// Links `node` on top (P1 in README.md).
    fn push(&self, node: Box<Node<T>>) {
        let node = Box::into_raw(node);
        let mut head = self.head.load(SeqCst);
        loop {
            // Safety: `node` is ours until the CAS below publishes it.
            unsafe { (*node).next = head };
            match self.head.compare_exchange_weak(head, node, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
    }

    /// Takes every node (T2 in README.md) and hands each to `f`, newest first.
    fn take_all(&self, mut f: impl FnMut(Box<Node<T>>)) {
        let mut node = self.head.swap(ptr::null_mut(), SeqCst);
        while !node.is_null() {
            // Safety: `node` came from `Box::into_raw` in `push` and was taken out of the
            // stack by the swap above, so this thread is its only owner now.
            let mut boxed = unsafe { Box::from_raw(node) };
            node = std::mem::replace(&mut boxed.next, ptr::null_mut());
            f(boxed);
        }
    }
}

impl<T> Drop for Stack<T> {
    fn drop(&mut self) {
        self.take_all(drop);
    }
}

/// An MPSC mailbox of event batches with a minimum-timestamp register (see module docs).
pub struct Mailbox<T> {
    stack: Stack<T>,
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
            stack: Stack::new(),
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
        self.stack.is_empty()
    }

    /// Takes every waiting batch and hands each to `f` (which should empty it and give it back
    /// to its owner's pool). Only one thread may take from a mailbox at a time (the owning
    /// worker).
    pub fn take_batches(&self, mut f: impl FnMut(Batch<T>)) {
        // Reset the register first, then take the stack: every batch this swap misses is
        // pushed after it, so its producer lowers the register after this reset (README, I2).
        self.min.store(f64::INFINITY.to_bits(), SeqCst);
        self.stack.take_all(|node| f(Batch { node }));
    }

    /// Takes every waiting batch and hands each event to `f`, freeing the batches; returns the
    /// number of events taken. Only one thread may take from a mailbox at a time.
    pub fn take(&self, mut f: impl FnMut(T)) -> usize {
        let mut count = 0;
        self.take_batches(|mut b| count += b.drain_into(&mut f));
        count
    }
}

impl<T: Keyed> Mailbox<T> {
    /// Pushes a batch (no-op when empty; an empty batch is dropped) and lowers the register to
    /// its earliest time.
    pub fn push_batch_node(&self, batch: Batch<T>) {
        if batch.is_empty() {
            return;
        }
        let min = batch
            .items()
            .iter()
            .map(|e| e.key().time)
            .fold(f64::INFINITY, f64::min);
        self.stack.push(batch.node);
        // Lower the register only after the batch is visible (README, I1 and I2).
        self.min.fetch_min(min.to_bits(), SeqCst);
    }

    /// Pushes a batch held in a vector (no-op when empty).
    pub fn push_batch(&self, batch: Vec<T>) {
        self.push_batch_node(Batch::from_vec(batch));
    }

    /// Pushes one event.
    pub fn push(&self, event: T) {
        self.push_batch(vec![event]);
    }
}

/// Where emptied batches return to their owner: any thread gives a batch back, the owner takes
/// them all at once (the same Treiber stack as the mailbox, without a register).
pub struct BatchPool<T> {
    stack: Stack<T>,
}

impl<T> std::fmt::Debug for BatchPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchPool").finish_non_exhaustive()
    }
}

// Safety: as for `Mailbox`: a batch given back is handed over, and only the owner, after
// taking the nodes out with a swap, touches them again.
unsafe impl<T: Send> Send for BatchPool<T> {}
// Safety: see `Send`; every shared access goes through the stack's atomic head.
unsafe impl<T: Send> Sync for BatchPool<T> {}

impl<T> Default for BatchPool<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> BatchPool<T> {
    /// An empty pool.
    pub fn new() -> Self {
        BatchPool {
            stack: Stack::new(),
        }
    }

    /// Gives an (emptied) batch back; any leftover items are dropped first.
    pub fn give_back(&self, mut batch: Batch<T>) {
        batch.node.items.clear();
        self.stack.push(batch.node);
    }

    /// Moves every batch given back so far into `spare`. Only the pool's owner may call it.
    pub fn take_all(&self, spare: &mut Vec<Batch<T>>) {
        self.stack.take_all(|node| spare.push(Batch { node }));
    }
}
