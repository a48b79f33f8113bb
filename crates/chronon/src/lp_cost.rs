//! What each LP costs: the events its handlers ran and the time they took, measured in every
//! run by every executor.
//!
//! Reading the clock around every handler would cost a std PHOLD event (about 100 ns here,
//! where a clock read takes about 40) a good part more, so each LP times its first event and
//! every [`SAMPLE_EVERY`]th after it ([`LpClock`]), and its handler time is estimated as its
//! event count times the mean of its timed events: every LP that ran an event has at least
//! one timed. Events are counted exactly. Under Time Warp both include events later rolled
//! back (they cost as much).
//!
//! The report carries the costs per LP ([`Report::lp_costs`](crate::Report::lp_costs)); the
//! balancer (`--balance`) and profile mappings (`--mapping profile:FILE`) map LPs from them.

use std::time::Instant;

use crate::model::{LpId, Time};

/// One event in this many is timed, per LP (its first, then every this many).
pub const SAMPLE_EVERY: u64 = 128;

/// One LP's cost over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LpCost {
    /// Events its handlers ran (under Time Warp, rolled-back ones included).
    pub events: u64,
    /// The time those handlers took, in nanoseconds, estimated from one event in
    /// [`SAMPLE_EVERY`].
    pub ns: u64,
}

/// What an executor keeps beside each LP while it runs: its events and the time of the timed
/// ones, 8 bytes (beside a small LP's 64-byte record, 16 would cost it a cache line): both
/// counts stop at `u32::MAX` (4.3 G events per LP in one run; 4.3 s of timed time, about 9
/// minutes of its handlers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LpClock {
    events: u32,
    timed_ns: u32,
}

impl LpClock {
    /// The start of the handler about to run for this LP, if its event is one of the timed
    /// ones: the LP's first event and every [`SAMPLE_EVERY`]th after it.
    #[inline(always)]
    pub(crate) fn start(&self) -> Option<Instant> {
        (u64::from(self.events) % SAMPLE_EVERY == 0).then(Instant::now)
    }

    /// Counts the handler that began at `start` ([`start`](Self::start)'s value).
    #[inline(always)]
    pub(crate) fn stop(&mut self, start: Option<Instant>) {
        if let Some(t) = start {
            self.add_timed(t.elapsed().as_nanos() as u64);
        }
        self.events = self.events.saturating_add(1);
    }

    fn add_timed(&mut self, ns: u64) {
        let ns = u32::try_from(ns).unwrap_or(u32::MAX);
        self.timed_ns = self.timed_ns.saturating_add(ns);
    }

    /// Counts a handler whose time was measured anyway (`ns`), as a timed one if it is one.
    pub(crate) fn took(&mut self, ns: u64) {
        if u64::from(self.events) % SAMPLE_EVERY == 0 {
            self.add_timed(ns);
        }
        self.events = self.events.saturating_add(1);
    }

    /// The LP's cost: its events, and its handler time estimated as events times the mean
    /// of the timed ones (the first and every [`SAMPLE_EVERY`]th).
    pub(crate) fn cost(&self) -> LpCost {
        let events = u64::from(self.events);
        let timed = events.div_ceil(SAMPLE_EVERY).max(1);
        let ns = u128::from(self.timed_ns) * u128::from(events) / u128::from(timed);
        LpCost {
            events,
            ns: ns.min(u128::from(u64::MAX)) as u64,
        }
    }
}

impl LpCost {
    /// Adds another run's (or part's) cost of the same LP.
    pub fn add(&mut self, other: LpCost) {
        self.events += other.events;
        self.ns += other.ns;
    }
}

/// Per LP of `lps`, in LP order, from `(lp, cost)` pairs of any number of parts (an LP's
/// costs from several parts or runs add up).
pub(crate) fn gather(lps: LpId, parts: impl IntoIterator<Item = (LpId, LpCost)>) -> Vec<LpCost> {
    let mut all = vec![LpCost::default(); lps as usize];
    for (lp, c) in parts {
        if let Some(x) = all.get_mut(lp as usize) {
            x.add(c);
        }
    }
    all
}

/// The `k` costliest LPs, costliest first (ties: lower LP first).
pub fn top(costs: &[LpCost], k: usize) -> Vec<(LpId, LpCost)> {
    let mut v: Vec<(LpId, LpCost)> = costs
        .iter()
        .enumerate()
        .filter(|(_, c)| c.events > 0)
        .map(|(i, c)| (i as LpId, *c))
        .collect();
    v.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then(a.0.cmp(&b.0)));
    v.truncate(k);
    v
}

/// At most this many groups of LPs in an [`LpHeat`].
pub const HEAT_GROUPS: u32 = 64;

/// What groups of consecutive LPs cost over stretches of simulated time: a heat strip of LPs
/// over time. A run in stretches (`--balance`, `--checkpoint-every`) records one per stretch
/// from the stretch's per-LP costs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LpHeat {
    /// LPs per group: group `g` holds LPs `g * lps_per_group ..` (the last may hold fewer).
    pub lps_per_group: u32,
    /// The stretches, in time order.
    pub stretches: Vec<HeatStretch>,
}

/// One stretch of an [`LpHeat`].
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct HeatStretch {
    /// Its start (simulated time).
    pub from: Time,
    /// Its end.
    pub to: Time,
    /// Each group's handler seconds in it (estimated as [`LpCost::ns`] is).
    pub cost_s: Vec<f64>,
}

impl LpHeat {
    /// An empty heat strip for `lps` LPs, in at most [`HEAT_GROUPS`] groups.
    pub(crate) fn new(lps: LpId) -> Self {
        LpHeat {
            lps_per_group: lps.div_ceil(HEAT_GROUPS).max(1),
            stretches: Vec::new(),
        }
    }

    /// Adds the stretch `from..to` whose LPs cost `costs` (in LP order; none measured: no
    /// stretch).
    pub(crate) fn add(&mut self, from: Time, to: Time, costs: &[LpCost]) {
        if costs.is_empty() {
            return;
        }
        let per = self.lps_per_group as usize;
        let cost_s = costs
            .chunks(per)
            .map(|g| g.iter().map(|c| c.ns as f64 * 1e-9).sum())
            .collect();
        self.stretches.push(HeatStretch { from, to, cost_s });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_event_in_sample_every_is_timed_and_stands_for_the_others() {
        let mut c = LpClock::default();
        let mut timed = 0;
        let n = SAMPLE_EVERY * 3 + 1;
        for _ in 0..n {
            let t = c.start();
            timed += u64::from(t.is_some());
            std::thread::sleep(std::time::Duration::from_micros(
                u64::from(t.is_some()) * 50,
            ));
            c.stop(t);
        }
        assert_eq!(timed, 4, "the first and every {SAMPLE_EVERY}th");
        let cost = c.cost();
        assert_eq!(cost.events, n);
        // Each timed event slept 50 µs: the estimate is about n × 50 µs.
        assert!(cost.ns >= n * 50_000, "{cost:?}");
        // One event: timed, and the estimate is its time.
        let mut one = LpClock::default();
        one.took(700);
        assert_eq!(one.cost(), LpCost { events: 1, ns: 700 });
        assert_eq!(LpClock::default().cost(), LpCost::default());
        // A handler longer than the count holds: the count stops, no wrap.
        let mut long = LpClock::default();
        long.took(10_000_000_000);
        assert_eq!(long.cost().ns, u64::from(u32::MAX));
    }

    #[test]
    fn a_heat_strip_sums_groups_of_lps_per_stretch() {
        let c = |ns| LpCost { events: 1, ns };
        let mut h = LpHeat::new(130);
        assert_eq!(h.lps_per_group, 3, "130 LPs in at most 64 groups");
        let mut costs = vec![c(0); 130];
        costs[4] = c(2_000_000_000);
        costs[129] = c(500_000_000);
        h.add(0.0, 1.5, &costs);
        h.add(1.5, 2.0, &[]);
        assert_eq!(h.stretches.len(), 1, "a stretch without costs adds nothing");
        let s = &h.stretches[0];
        assert_eq!((s.from, s.to, s.cost_s.len()), (0.0, 1.5, 44));
        assert_eq!(s.cost_s[1], 2.0);
        assert_eq!(s.cost_s[43], 0.5);
        assert_eq!(s.cost_s.iter().sum::<f64>(), 2.5);
    }

    #[test]
    fn costs_of_parts_add_up_per_lp_and_the_top_is_ordered() {
        let c = |events, ns| LpCost { events, ns };
        let all = gather(
            4,
            [(1, c(2, 50)), (3, c(1, 70)), (1, c(1, 30)), (9, c(5, 5))],
        );
        assert_eq!(all, vec![c(0, 0), c(3, 80), c(0, 0), c(1, 70)]);
        assert_eq!(top(&all, 5), vec![(1, c(3, 80)), (3, c(1, 70))]);
        assert_eq!(top(&all, 1).len(), 1);
    }
}
