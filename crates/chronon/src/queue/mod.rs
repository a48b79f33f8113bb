//! Pending-event sets behind one trait.
//!
//! Both implementations order items by their full [`EventKey`](crate::event::EventKey), which is
//! unique, so they pop exactly the same sequence — ties in time included — and give the same
//! committed history. [`LadderQueue`] is the default: amortized O(1) and cache-friendly when
//! millions of events are pending; [`HeapQueue`] (a binary heap) is the simple reference.
//! See docs/architecture.md for why a ladder queue rather than a calendar queue.

mod binary_heap;
mod chunks;
mod ladder;
mod segments;

pub use binary_heap::HeapQueue;
pub use ladder::LadderQueue;

use crate::event::Keyed;

/// A priority queue of pending events, smallest key first.
pub trait PendingSet<T: Keyed>: Send {
    /// An empty set.
    fn new() -> Self
    where
        Self: Sized;
    /// Adds an item.
    fn push(&mut self, item: T);
    /// Removes and returns the item with the smallest key.
    fn pop(&mut self) -> Option<T>;
    /// The item with the smallest key, without removing it.
    fn peek(&mut self) -> Option<&T>;
    /// The number of items.
    fn len(&self) -> usize;
    /// Whether the set is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The most resident memory the set holds now and while its items move inside it, as a
    /// multiple of `len()` items' `size_of` (what Time Warp's memory bound charges for it).
    /// Vectors that grow by doubling and items copied from one container to another hold up
    /// to twice their bytes: measured, 100 000 PHOLD LPs with 10 events each reached 1.8–2×
    /// the events' bytes over the init footprint, with either set.
    fn peak_factor(&self) -> f64 {
        2.0
    }
}

/// `$f::<$m, Q, …>(args)` with `Q` the pending set that `$kind` (a [`QueueKind`]) names, its
/// element type inferred from `$f`'s bound: the one place where a run picks its pending set.
macro_rules! with_queue {
    ($kind:expr, $f:ident :: <$m:ty $(, $rest:ty)*> ($($arg:expr),* $(,)?)) => {
        match $kind {
            $crate::queue::QueueKind::Heap => {
                $f::<$m, $crate::queue::HeapQueue<_> $(, $rest)*>($($arg),*)
            }
            $crate::queue::QueueKind::Ladder => {
                $f::<$m, $crate::queue::LadderQueue<_> $(, $rest)*>($($arg),*)
            }
        }
    };
}
pub(crate) use with_queue;

/// Which pending-event set an executor uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    /// [`HeapQueue`].
    Heap,
    /// [`LadderQueue`] (the default).
    #[default]
    Ladder,
}

impl QueueKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Heap => "heap",
            QueueKind::Ladder => "ladder",
        }
    }
}

impl std::str::FromStr for QueueKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "heap" => Ok(QueueKind::Heap),
            "ladder" => Ok(QueueKind::Ladder),
            _ => Err(format!("unknown queue '{s}' (allowed: heap, ladder)")),
        }
    }
}

#[cfg(test)]
mod tests;
