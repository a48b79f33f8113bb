//! The barrier (window) algorithm of seed 001 §2.2.2, after YAWNS: each round every worker
//! publishes the key of its earliest event through the GSU, and everyone computes the same
//! LBTS = min over workers of (earliest event time + the worker's smallest outgoing lookahead),
//! including the messages still in transit (MOM + lookahead). Each worker then executes its
//! events with time below the LBTS — no event they send can land below it. With zero lookahead
//! the LBTS equals the global minimum time; the one event holding the globally smallest key
//! still runs (nothing can ever precede it), so every round makes progress.

use crate::gsu::Snapshot;

/// The window's LBTS for this round.
pub(super) fn lbts(snap: &Snapshot, worker_la: &[f64]) -> f64 {
    snap.min_bound(worker_la)
}
