//! A binary-heap pending-event set: the simple reference implementation.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::PendingSet;
use crate::event::Keyed;

/// Reverses the key order so that `BinaryHeap` (a max-heap) pops the smallest key first.
pub(super) struct MinFirst<T>(pub(super) T);

impl<T: Keyed> PartialEq for MinFirst<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}
impl<T: Keyed> Eq for MinFirst<T> {}
impl<T: Keyed> PartialOrd for MinFirst<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T: Keyed> Ord for MinFirst<T> {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.key().cmp(&self.0.key())
    }
}

/// A pending-event set on `std::collections::BinaryHeap`: O(log n) per operation.
pub struct HeapQueue<T> {
    heap: BinaryHeap<MinFirst<T>>,
}

impl<T> std::fmt::Debug for HeapQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeapQueue")
            .field("len", &self.heap.len())
            .finish()
    }
}

impl<T: Keyed + Send> PendingSet<T> for HeapQueue<T> {
    fn new() -> Self {
        HeapQueue {
            heap: BinaryHeap::new(),
        }
    }
    #[inline]
    fn push(&mut self, item: T) {
        self.heap.push(MinFirst(item));
    }
    #[inline]
    fn pop(&mut self) -> Option<T> {
        self.heap.pop().map(|m| m.0)
    }
    #[inline]
    fn peek(&mut self) -> Option<&T> {
        self.heap.peek().map(|m| &m.0)
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
}
