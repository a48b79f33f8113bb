//! One worker's sending side: the batch being filled per destination worker, flushed through
//! the run's transport (`transport/tw.rs`, the Time Warp seam).

use crate::comm::Batch;
use crate::event::Keyed;
use crate::transport::tw::Wires;
use crate::tw_msg::Msg;

/// One worker's sending side: the batch being filled per destination worker, the
/// destinations with something to send, and emptied batches that came back.
pub(super) struct Endpoint<P> {
    w: usize,
    outbox: Vec<Option<Batch<Msg<P>>>>,
    dirty: Vec<usize>,
    spare: Vec<Batch<Msg<P>>>,
    /// The earliest time queued since the last flush (`+inf`: nothing is).
    earliest: f64,
    /// Whether an anti-message is queued (it leaves at the next [`Worker::flush_when_due`]).
    urgent: bool,
}

impl<P: Send + 'static> Endpoint<P> {
    pub(super) fn new(w: usize, workers: usize) -> Self {
        Endpoint {
            w,
            outbox: (0..workers).map(|_| None).collect(),
            dirty: Vec::new(),
            spare: Vec::new(),
            earliest: f64::INFINITY,
            urgent: false,
        }
    }

    /// Queues `m` for worker `o` (pushed at the next [`flush`](Self::flush)).
    #[inline]
    pub(super) fn send(&mut self, wires: &dyn Wires<P>, o: usize, m: Msg<P>) {
        self.earliest = self.earliest.min(m.key().time);
        self.urgent |= matches!(m, Msg::Anti(_));
        let slot = &mut self.outbox[o];
        if slot.is_none() {
            if self.spare.is_empty() {
                // Across processes there are no pools: a sender keeps its own batches.
                if let Some(pool) = wires.pool(self.w) {
                    pool.take_all(&mut self.spare);
                }
            }
            let b = self
                .spare
                .pop()
                .unwrap_or_else(|| Batch::new(self.w as u32));
            *slot = Some(b);
            self.dirty.push(o);
        }
        if let Some(b) = slot {
            b.push(m);
        }
    }

    /// Whether nothing is queued.
    #[inline(always)]
    pub(super) fn is_clean(&self) -> bool {
        self.dirty.is_empty()
    }

    /// The earliest time queued (`+inf`: nothing is).
    #[inline(always)]
    pub(super) fn earliest(&self) -> f64 {
        self.earliest
    }

    /// Whether an anti-message is queued.
    #[inline(always)]
    pub(super) fn urgent(&self) -> bool {
        self.urgent
    }

    /// Pushes every queued batch; returns the earliest time pushed (`+inf`: nothing was).
    /// `over()`: whether the run is over (across processes, a sender that cannot get ring
    /// space then drops what is left, which is at or after the end time).
    #[inline]
    pub(super) fn flush(&mut self, wires: &dyn Wires<P>, over: impl Fn() -> bool) -> f64 {
        if self.dirty.is_empty() {
            // Nothing queued (every event without a remote send): nothing to push.
            return f64::INFINITY;
        }
        let min = std::mem::replace(&mut self.earliest, f64::INFINITY);
        self.urgent = false;
        wires.push(
            self.w,
            &mut self.dirty,
            &mut self.outbox,
            &mut self.spare,
            &over,
        );
        min
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKey;
    use crate::transport::threads::Mailboxes;
    use crate::tw_msg::{Anti, TwEvent};

    fn event(time: f64, id: u64) -> Msg<u32> {
        Msg::Event(
            TwEvent {
                time,
                seq: 0,
                id,
                src: 0,
                dst: 1,
                payload: 7,
            },
            None,
        )
    }

    #[test]
    fn an_endpoint_keeps_its_earliest_time_until_the_flush() {
        let wires = Mailboxes::<u32>::new(2);
        let mut end = Endpoint::new(0, 2);
        assert!(end.is_clean());
        assert_eq!(end.earliest(), f64::INFINITY);
        end.send(&wires, 1, event(5.0, 1));
        end.send(&wires, 1, event(3.0, 2));
        let key = EventKey {
            time: 4.0,
            seq: 0,
            src: 0,
        };
        assert!(!end.urgent());
        end.send(&wires, 1, Msg::Anti(Anti { dst: 1, key, id: 9 }));
        assert!(end.urgent(), "an anti-message is due at once");
        assert_eq!(end.earliest(), 3.0);
        assert!(!wires.has_mail(1), "nothing leaves before the flush");
        assert_eq!(end.flush(&wires, || false), 3.0);
        assert!(end.is_clean());
        assert_eq!(end.earliest(), f64::INFINITY, "the flush resets it");
        assert!(!end.urgent());
        assert_eq!(wires.bh_min(1), 3.0);
        let mut got = Vec::new();
        wires.receive(1, &mut |m| got.push(m.key().time));
        got.sort_by(f64::total_cmp);
        assert_eq!(got, [3.0, 4.0, 5.0]);
        assert_eq!(end.flush(&wires, || false), f64::INFINITY);
        // The emptied batch went back to the sender's pool and is reused.
        end.send(&wires, 1, event(8.0, 3));
        assert_eq!(end.earliest(), 8.0);
        assert_eq!(end.flush(&wires, || false), 8.0);
    }
}
