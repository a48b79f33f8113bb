//! A worker's scratch buffers: where a handler's sends, counter deltas and error go before its
//! record takes them, the same for coasting forward, and the lists a rollback or a safe event
//! builds. Between two events each is empty (the counter deltas zero), so an event allocates
//! nothing once they have grown.

use crate::error::ModelError;
use crate::event::Event;
use crate::tw_msg::Anti;

/// The scratch buffers of one worker (payload type `P`).
pub(super) struct Scratch<P> {
    /// The running handler's sends, counter deltas (one per counter) and model error.
    pub(super) out: Vec<Event<P>>,
    pub(super) deltas: Vec<i64>,
    pub(super) err: Option<ModelError>,
    /// The same while coasting forward (dropped after each event).
    pub(super) coast_out: Vec<Event<P>>,
    pub(super) coast_deltas: Vec<i64>,
    /// Arena positions of the records to re-execute while coasting forward.
    pub(super) coast_seqs: Vec<u64>,
    /// Arena positions of a safe event's LP's records to commit first (safe.rs).
    pub(super) early: Vec<u64>,
    /// Anti-messages for this worker's own LPs, applied once the rollback that made them ends.
    pub(super) local_antis: Vec<Anti>,
    /// A rollback's anti-messages for other workers' LPs (with the worker), newest first: sent
    /// oldest first once the rollback has undone every event.
    pub(super) remote_antis: Vec<(usize, Anti)>,
}

impl<P> Scratch<P> {
    pub(super) fn new(counters: usize) -> Self {
        Scratch {
            out: Vec::with_capacity(16),
            deltas: vec![0; counters],
            err: None,
            coast_out: Vec::with_capacity(16),
            coast_deltas: vec![0; counters],
            coast_seqs: Vec::new(),
            early: Vec::new(),
            local_antis: Vec::new(),
            remote_antis: Vec::new(),
        }
    }
}
