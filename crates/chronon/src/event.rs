//! Event keys, the total order on them, and the events that carry payloads.
//!
//! Every executor orders events by [`EventKey`]: (receive time, sender LP, the sender's send
//! counter). The key is unique (a sender never reuses a counter value) and depends only on the
//! simulated history, never on which thread ran what, so every executor that respects it commits
//! the same events in the same order.

use std::cmp::Ordering;

use crate::types::{LpId, Time};

/// The sender used for events that no LP sent (global events scheduled by the engine).
pub const ENGINE_SENDER: LpId = LpId::MAX;

/// The unique, execution-independent key of an event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventKey {
    /// Receive timestamp. Always finite and non-negative (never `-0.0`).
    pub time: Time,
    /// The sender's send counter when it sent this event.
    pub seq: u64,
    /// The LP that sent the event ([`ENGINE_SENDER`] for engine-scheduled events).
    pub src: LpId,
}

impl EventKey {
    /// The time as an integer that orders like the time itself (valid for non-negative times).
    #[inline(always)]
    pub fn time_bits(&self) -> u64 {
        self.time.to_bits()
    }
}

impl Eq for EventKey {}

impl Ord for EventKey {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> Ordering {
        // Times are finite and >= +0.0, so their bit patterns order like the values.
        self.time_bits()
            .cmp(&other.time_bits())
            .then(self.src.cmp(&other.src))
            .then(self.seq.cmp(&other.seq))
    }
}

impl PartialOrd for EventKey {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A pending event: its key fields, its destination, an executor tag and its payload (moved,
/// never cloned).
///
/// The key's fields are stored flat (not as an [`EventKey`]) so that the destination and the tag
/// fill what would be padding: an event with an empty payload takes 32 bytes. (A 24-byte layout
/// without the tag measured about 25% slower on PHOLD: with 32 bytes no event straddles a cache
/// line and every copy is two 16-byte moves.)
#[derive(Debug)]
pub struct Event<P> {
    /// Receive time (see [`EventKey::time`]).
    pub time: Time,
    /// The sender's send counter (see [`EventKey::seq`]).
    pub seq: u64,
    /// The sender (see [`EventKey::src`]).
    pub src: LpId,
    /// The destination LP.
    pub dst: LpId,
    /// Free for executors (Time Warp marks anti-messages here); 0 when a model sends.
    pub tag: u32,
    /// The model's payload.
    pub payload: P,
}

impl<P> Event<P> {
    /// A new event.
    #[inline(always)]
    pub fn new(key: EventKey, dst: LpId, payload: P) -> Self {
        Event {
            time: key.time,
            seq: key.seq,
            src: key.src,
            dst,
            tag: 0,
            payload,
        }
    }
}

/// Anything a pending-event set can order: it exposes an [`EventKey`].
pub trait Keyed {
    /// The key that orders this item.
    fn key(&self) -> EventKey;
}

impl<P> Keyed for Event<P> {
    #[inline(always)]
    fn key(&self) -> EventKey {
        EventKey {
            time: self.time,
            seq: self.seq,
            src: self.src,
        }
    }
}

impl Keyed for EventKey {
    #[inline(always)]
    fn key(&self) -> EventKey {
        *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(time: f64, src: u32, seq: u64) -> EventKey {
        EventKey { time, src, seq }
    }

    #[test]
    fn order_is_time_then_sender_then_counter() {
        assert!(k(1.0, 9, 9) < k(2.0, 0, 0));
        assert!(k(1.0, 1, 9) < k(1.0, 2, 0));
        assert!(k(1.0, 1, 1) < k(1.0, 1, 2));
        assert_eq!(k(0.5, 3, 4).cmp(&k(0.5, 3, 4)), Ordering::Equal);
        // Bit order equals numeric order for non-negative floats, subnormals included.
        assert!(k(0.0, 0, 0) < k(f64::from_bits(1), 0, 0));
        assert!(k(1e-300, 0, 0) < k(1e300, 0, 0));
    }

    #[test]
    fn unit_payload_event_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Event<()>>(), 32);
    }
}
