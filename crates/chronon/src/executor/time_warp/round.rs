//! A worker's side of the GVT rounds (gvt.rs, README.md "GVT"): the GVT it acts on, the round
//! it last reported in, the earliest time it pushed since (rule R2), and what follows from GVT
//! for it: the safe bound (safe.rs) and the next global event's time (global.rs).

use crate::model::Time;

/// What a worker knows of GVT and the rounds.
#[derive(Debug)]
pub(super) struct Round {
    /// The GVT this worker last saw and collected fossils at.
    pub(super) gvt: Time,
    /// Events before this time commit as they run (safe.rs); set at each mailbox drain.
    pub(super) safe_until: Time,
    /// The next global event's time: no event after it runs before it (global.rs).
    pub(super) global_next: Time,
    /// The round this worker last reported in.
    reported: u64,
    /// The earliest time pushed while a round it has not reported in was in progress
    /// (rule R2: counted in its next report).
    send_min: Time,
}

impl Round {
    pub(super) fn new(global_next: Time) -> Self {
        Round {
            gvt: 0.0,
            safe_until: Time::NEG_INFINITY,
            global_next,
            reported: 0,
            send_min: Time::INFINITY,
        }
    }

    /// The round in progress (`active`), if this worker has not reported in it yet.
    #[inline(always)]
    pub(super) fn due(&self, active: Option<u64>) -> Option<u64> {
        active.filter(|&r| r > self.reported)
    }

    /// A push of sends whose earliest time is `min`, with round `active` in progress: one this
    /// worker has not reported in yet counts it (rule R2).
    #[inline]
    pub(super) fn pushed(&mut self, min: Time, active: Option<u64>) {
        if self.due(active).is_some() {
            self.send_min = self.send_min.min(min);
        }
    }

    /// The report in round `r` of a worker whose earliest unprocessed event is at `pending`:
    /// its local minimum (the pushes counted since included); the next round starts afresh.
    #[inline]
    pub(super) fn report(&mut self, r: u64, pending: Time) -> Time {
        let local_min = pending.min(self.send_min);
        self.reported = r;
        self.send_min = Time::INFINITY;
        local_min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_counts_only_in_a_round_not_reported_in() {
        let mut r = Round::new(Time::INFINITY);
        r.pushed(1.0, None);
        assert_eq!(r.report(1, 5.0), 5.0, "no round: nothing counted");
        r.pushed(2.0, Some(1));
        assert_eq!(r.due(Some(1)), None, "reported in round 1 already");
        r.pushed(3.0, Some(2));
        r.pushed(4.0, Some(2));
        assert_eq!(r.due(Some(2)), Some(2));
        assert_eq!(r.report(2, 5.0), 3.0);
        assert_eq!(r.report(3, 5.0), 5.0, "a report starts afresh");
    }
}
