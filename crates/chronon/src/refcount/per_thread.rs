//! Thread-local counts through the handles (seed 001 §3.3.3, "the smart pointers way").
//!
//! Every handle points to a small *local count* owned by the thread that made it; the item's
//! shared count holds one reference per live local count. A clone on the owning thread raises
//! the local count only; a clone on another thread makes a new local count and raises the
//! shared one. So threads never write one cache line unless they start or stop holding the item.
//!
//! Departure from the seed: in C++ a copy constructor runs when a handle moves to another
//! thread; in Rust a handle moves without running code, so a handle may be dropped on a thread
//! that does not own its local count. The local count is therefore atomic too (uncontended in
//! the common case: still no cache line shared between threads).

use std::ptr::NonNull;

use crate::loom::atomic::{fence, AtomicUsize, Ordering};

use super::{Raw, Scheme};

#[cfg(chronon_loom)]
loom::thread_local! {
    static TOKEN: u8 = 0;
}
#[cfg(not(chronon_loom))]
std::thread_local! {
    static TOKEN: u8 = const { 0 };
}

/// A number unique among the threads alive now (the address of a thread-local byte).
fn thread_token() -> usize {
    TOKEN.with(|t| t as *const u8 as usize)
}

/// Local counts through the handles (seed 001 §3.3.3): each thread counts its own handles to
/// an item, and the item counts the threads; see `refcount/README.md`.
#[derive(Debug)]
pub enum PerThread {}

/// One thread's count of its handles to an item.
#[derive(Debug)]
struct Node {
    owner: usize,
    count: AtomicUsize,
}

/// The handle's pointer to its local count.
#[derive(Debug)]
pub struct NodePtr(NonNull<Node>);

// Safety: a node is only touched through atomics (its owner field never changes), and freed by
// the handle whose decrement takes its count to zero.
unsafe impl Send for NodePtr {}
// Safety: as for `Send`.
unsafe impl Sync for NodePtr {}

fn new_node() -> NodePtr {
    NodePtr(NonNull::from(Box::leak(Box::new(Node {
        owner: thread_token(),
        count: AtomicUsize::new(1),
    }))))
}

// Safety: the shared count is the number of live nodes; a node lives while its count is above
// zero, i.e. while a handle points to it. The item is freed when the last node goes, which is
// after the last handle goes. Every decrement is Release and each free is behind an Acquire
// fence, as in `Arc`.
unsafe impl Scheme for PerThread {
    const NAME: &'static str = "per-thread";
    type Header = AtomicUsize;
    type Local = NodePtr;

    fn new_header() -> AtomicUsize {
        AtomicUsize::new(1)
    }

    fn first_local(_: &AtomicUsize) -> NodePtr {
        new_node()
    }

    unsafe fn clone_ref(header: &AtomicUsize, local: &NodePtr, _: Raw) -> NodePtr {
        // Safety: the cloned handle keeps its node alive.
        let node = unsafe { local.0.as_ref() };
        if node.owner == thread_token() {
            // Ordering: the node is kept alive by the handle being cloned; nothing is
            // published by an increment.
            node.count.fetch_add(1, Ordering::Relaxed);
            NodePtr(local.0)
        } else {
            // Ordering: as above, for the item's count.
            header.fetch_add(1, Ordering::Relaxed);
            new_node()
        }
    }

    unsafe fn drop_ref(local: &mut NodePtr, raw: Raw) {
        // Safety: the handle being dropped keeps its node alive until this decrement.
        let node = unsafe { local.0.as_ref() };
        // Ordering: Release publishes this handle's uses to whoever frees the node and item.
        if node.count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Ordering: pairs with the node's other Release decrements.
        fence(Ordering::Acquire);
        // Safety: the node's count reached zero: no handle points to it any more.
        drop(unsafe { Box::from_raw(local.0.as_ptr()) });
        // Safety: the node held one reference to the item, so the header is alive.
        let header = unsafe { &*raw.header::<Self>() };
        // Ordering: as for the node.
        if header.fetch_sub(1, Ordering::Release) == 1 {
            // Ordering: pairs with the other nodes' Release decrements.
            fence(Ordering::Acquire);
            // Safety: the last node is gone: no handle remains.
            unsafe { raw.free() }
        }
    }
}
