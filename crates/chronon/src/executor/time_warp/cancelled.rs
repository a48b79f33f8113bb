//! The ids of the events that anti-messages cancelled before they were processed (lazy
//! cancellation, README.md "Anti-messages"), with a lower bound on their times.
//!
//! An anti-message whose event is still pending (or not yet arrived) leaves the event's id here;
//! the event is dropped where it is met: at the head of the pending set, on arrival, or when
//! its suspended context would resume. Looking every head up in the table cost a hash probe
//! per event whenever the table held anything, which under rollbacks is most of the time.
//! `floor` is at most the time of every id held, so a head earlier than it is certainly not
//! cancelled and needs no probe; in practice the probes happen only near the cancelled events'
//! own times.
//!
//! Invariants: (F1) `floor <= time(id)` for every id held (`+inf` when empty); (F2) if `exact`,
//! `floor` is the least such time. Insert lowers `floor` to the new time (F1; F2 kept: the
//! least of an exact floor and the new time is exact). Remove leaves `floor` (F1: removing only
//! raises the least time) and clears `exact`, unless the table is now empty (then `+inf`,
//! exact). `refresh` recomputes the floor by a scan; it is called after a head at or past the
//! floor was probed and not found, and scans only when the floor is stale and the table small,
//! so a burst of cancellations costs no more than the probes did before.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::lp::IdHasher;
use crate::model::Time;

/// The largest table `refresh` scans (a larger one keeps its stale floor: probes as before).
const SCAN_MAX: usize = 256;

#[derive(Debug)]
pub(super) struct Cancelled {
    ids: HashMap<u64, Time, BuildHasherDefault<IdHasher>>,
    floor: Time,
    exact: bool,
}

impl Default for Cancelled {
    fn default() -> Self {
        Cancelled {
            ids: HashMap::default(),
            floor: Time::INFINITY,
            exact: true,
        }
    }
}

impl Cancelled {
    /// Whether an event at time `t` may be cancelled (`false`: certainly not; no probe).
    #[inline(always)]
    pub(super) fn may_hold(&self, t: Time) -> bool {
        t >= self.floor
    }

    /// Remembers that the event `id` at time `t` is cancelled.
    pub(super) fn insert(&mut self, id: u64, t: Time) {
        self.ids.insert(id, t);
        self.floor = self.floor.min(t);
    }

    /// Forgets `id`; whether it was held (the event at time `t` is cancelled: drop it).
    #[inline]
    pub(super) fn remove(&mut self, id: u64, t: Time) -> bool {
        if !self.may_hold(t) || self.ids.remove(&id).is_none() {
            return false;
        }
        if self.ids.is_empty() {
            (self.floor, self.exact) = (Time::INFINITY, true);
        } else {
            self.exact = false;
        }
        true
    }

    /// Whether `id` (an event at time `t`) is cancelled.
    pub(super) fn contains(&self, id: u64, t: Time) -> bool {
        self.may_hold(t) && self.ids.contains_key(&id)
    }

    /// Tightens a stale floor (a head at or past it was not cancelled), when the table is
    /// small enough to scan.
    #[cold]
    pub(super) fn refresh(&mut self) {
        if self.exact {
            return;
        }
        if self.ids.capacity() > SCAN_MAX {
            if self.ids.len() > SCAN_MAX / 4 {
                return;
            }
            // A burst is over: give its table back so that scans stay short.
            self.ids.shrink_to(SCAN_MAX / 4);
        }
        self.floor = self.ids.values().fold(Time::INFINITY, |a, &b| a.min(b));
        self.exact = true;
    }

    /// Bytes held by the table (its capacity: an id, a time and a control byte each).
    pub(super) fn bytes(&self) -> u64 {
        self.ids.capacity() as u64 * 17
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn the_floor_skips_probes_before_it() {
        let mut c = Cancelled::default();
        assert!(!c.may_hold(f64::MAX));
        c.insert(7, 2.0);
        c.insert(8, 5.0);
        assert!(!c.may_hold(1.5));
        assert!(
            !c.remove(7, 1.5),
            "an event before every cancelled time is not cancelled"
        );
        assert!(c.remove(7, 2.0));
        // Stale (2.0) until refreshed, then exact (5.0).
        assert!(c.may_hold(3.0));
        c.refresh();
        assert!(!c.may_hold(3.0));
        assert!(c.contains(8, 5.0));
        assert!(c.remove(8, 5.0));
        assert!(c.ids.is_empty());
        assert!(!c.may_hold(1e300));
    }

    #[test]
    fn a_burst_is_scanned_once_it_has_drained() {
        let mut c = Cancelled::default();
        for i in 0..10_000u64 {
            c.insert(i, i as f64);
        }
        for i in 0..9_990u64 {
            assert!(c.remove(i, i as f64));
        }
        c.refresh();
        assert!(c.ids.capacity() <= 2 * SCAN_MAX);
        assert!(!c.may_hold(9_989.5));
        assert!(c.may_hold(9_990.0));
    }

    proptest! {
        /// Against a plain set of ids: the same answers to every remove and contains, and the
        /// floor never above a held time.
        #[test]
        fn matches_a_plain_set(ops in proptest::collection::vec((0u8..4, 0u64..40), 1..400)) {
            let time = |id: u64| (id % 13) as f64 * 0.5;
            let mut c = Cancelled::default();
            let mut reference = HashSet::new();
            for (op, id) in ops {
                match op {
                    0 => {
                        c.insert(id, time(id));
                        reference.insert(id);
                    }
                    1 => prop_assert_eq!(c.remove(id, time(id)), reference.remove(&id)),
                    2 => prop_assert_eq!(c.contains(id, time(id)), reference.contains(&id)),
                    _ => c.refresh(),
                }
                for &id in &reference {
                    prop_assert!(c.may_hold(time(id)), "floor {} above a held time", c.floor);
                }
                prop_assert_eq!(c.ids.is_empty(), reference.is_empty());
            }
        }
    }
}
