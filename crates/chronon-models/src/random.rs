//! A randomized test model for differential testing (`chronon check`): the corners that the
//! benchmark models rarely reach, all in one place.
//!
//! - **Idle LPs and late starts**: the first `idle_lps` LPs start with no event, and the others
//!   start at `start_at` or later, so with a block mapping whole workers begin with nothing
//!   to do before events reach them.
//! - **A random declared topology**: every LP has up to `degree` out-links drawn from
//!   `topology_seed`, each with lookahead `lookahead × {1, 2, 3}`, or 0 with probability
//!   `zero_links` (only towards higher LP ids when `zero_acyclic`, so no zero-lookahead cycle).
//! - **Ties**: every delay is a link lookahead plus a multiple of `quantum`, so many events
//!   share a timestamp.
//! - **Zero delays**: a self-send has delay 0 with probability `zero_self`.
//! - **Uneven load**: the last `hot_lps` LPs spin `hot_work` rounds of a hash per event.
//! - **Global events** every `global_period` (0: none) read every LP's state; with
//!   `global_writes` each also changes two LPs' states and sends one or two LP events (one
//!   to an LP drawn among all, idle ones included).
//!
//! An event sends 0, 1, 1 or 2 events (mean 1), so the population stays about constant. The
//! statistics (counters, per-LP figures folded in `finish`, and the global events' figures)
//! depend on every event's payload and time, so any difference in the committed history shows.

use chronon::measure::{Histogram, Tally, TimeAverage};
use chronon::{Ctx, GlobalCtx, LpId, Model, ModelStats};

/// The random model's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Random {
    /// Number of LPs.
    pub lps: u32,
    /// Out-links per LP (before removing self-links and duplicates).
    pub degree: u32,
    /// The smallest positive link lookahead.
    pub lookahead: f64,
    /// Probability that a link has lookahead 0.
    pub zero_links: f64,
    /// Zero-lookahead links only go from lower to higher LP ids (no zero-lookahead cycle).
    pub zero_acyclic: bool,
    /// Probability that a self-send has delay 0.
    pub zero_self: f64,
    /// Every delay is a lookahead plus 0, 1 or 2 times this.
    pub quantum: f64,
    /// The first this many LPs start with no event.
    pub idle_lps: u32,
    /// The other LPs' start events are at this time or later.
    pub start_at: f64,
    /// The last this many LPs are hot.
    pub hot_lps: u32,
    /// Rounds of hashing per event of a hot LP.
    pub hot_work: u32,
    /// Period of the global events; 0 = none.
    pub global_period: f64,
    /// The global events also change LP states and send LP events.
    pub global_writes: bool,
    /// Seed of the topology (the run's `--seed` drives the events).
    pub topology_seed: u64,
}

impl Default for Random {
    fn default() -> Self {
        Random {
            lps: 16,
            degree: 3,
            lookahead: 0.5,
            zero_links: 0.0,
            zero_acyclic: true,
            zero_self: 0.0,
            quantum: 0.25,
            idle_lps: 4,
            start_at: 1.0,
            hot_lps: 2,
            hot_work: 200,
            global_period: 0.0,
            global_writes: false,
            topology_seed: 1,
        }
    }
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Keeps a 64-bit value exactly representable in an `f64` statistic.
fn low32(x: u64) -> f64 {
    (x & 0xffff_ffff) as f64
}

impl Random {
    /// The number of LPs.
    pub fn lps(&self) -> u32 {
        self.lps
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        crate::check::at_least("lps", u64::from(self.lps), 1)?;
        if self.lps > 1 << 20 {
            return Err(format!("lps is {}; it must be at most 2^20", self.lps));
        }
        if self.degree > 64 {
            return Err(format!("degree is {}; it must be at most 64", self.degree));
        }
        crate::check::positive("lookahead", self.lookahead)?;
        crate::check::probability("zero-links", self.zero_links)?;
        if !(0.0..=0.5).contains(&self.zero_self) {
            return Err(format!(
                "zero-self is {}; it must be in [0, 0.5] (zero-delay chains must end)",
                self.zero_self
            ));
        }
        crate::check::positive("quantum", self.quantum)?;
        if self.idle_lps > self.lps {
            return Err(format!(
                "idle-lps is {}; it must be at most lps ({})",
                self.idle_lps, self.lps
            ));
        }
        crate::check::nonneg("start-at", self.start_at)?;
        if self.hot_lps > self.lps {
            return Err(format!(
                "hot-lps is {}; it must be at most lps ({})",
                self.hot_lps, self.lps
            ));
        }
        if self.hot_work > 1_000_000 {
            return Err(format!(
                "hot-work is {}; it must be at most 1000000",
                self.hot_work
            ));
        }
        crate::check::nonneg("global-period", self.global_period)?;
        Ok(())
    }

    /// LP `lp`'s out-links (destination, lookahead), without self-links or duplicates.
    pub fn links(&self, lp: LpId) -> Vec<(LpId, f64)> {
        let mut v: Vec<(LpId, f64)> = Vec::new();
        if self.lps < 2 {
            return v;
        }
        for k in 0..self.degree {
            let h = mix(self.topology_seed ^ (u64::from(lp) << 24) ^ u64::from(k));
            let d = (h % u64::from(self.lps)) as u32;
            if d == lp || v.iter().any(|&(x, _)| x == d) {
                continue;
            }
            let u = (mix(h) >> 11) as f64 / (1u64 << 53) as f64;
            let zero = u < self.zero_links && (!self.zero_acyclic || d > lp);
            let la = if zero {
                0.0
            } else {
                self.lookahead * (1 + (h >> 40) % 3) as f64
            };
            v.push((d, la));
        }
        v
    }

    fn hot(&self, lp: LpId) -> bool {
        lp >= self.lps - self.hot_lps
    }

    /// `global_writes`: from the hash `h` of every state, changes two LPs' states (one of
    /// them twice over, through two `state_mut` calls) and sends one or two LP events with
    /// delays in `{1, 2, 3} × quantum` (ties with LP events included), whose payloads carry
    /// the changed hash: any executor that loses a change or misplaces an event shows it in
    /// the statistics.
    fn change_and_send(&self, ctx: &mut GlobalCtx<'_, Self>, h: u64) {
        let n = u64::from(self.lps);
        let a = (h % n) as LpId;
        let b = (mix(h) % n) as LpId;
        let now = ctx.now();
        let st = ctx.state_mut(a);
        st.hash = mix(st.hash ^ now.to_bits());
        st.level.set(now, (st.hash % 7) as f64);
        let payload = ctx.state(a).hash;
        ctx.state_mut(b).hash ^= h;
        ctx.state_mut(a).seen += 1;
        let sends = 1 + (h >> 33) % 2;
        for i in 0..sends {
            let dst = if i == 0 { a } else { ((h >> 13) % n) as LpId };
            let delay = self.quantum * (1 + (h >> (40 + 2 * i)) % 3) as f64;
            ctx.send(dst, delay, payload ^ i);
        }
        ctx.stats().add("global_sends", sends as f64);
        ctx.stats().add("global_changed_hash_sum", low32(payload));
    }
}

/// One LP's state.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RandomLp {
    seen: u64,
    hash: u64,
    links: Vec<(LpId, f64)>,
    /// Simulated time between this LP's events.
    gap: Tally,
    last: f64,
    /// A level that changes at each event (its time-weighted mean is a report figure).
    level: TimeAverage,
    /// Where in its quantum each event falls.
    phase: Histogram,
}

chronon::counters!(Counters {
    events,
    sends,
    zero_sends
});

impl Model for Random {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps())
    }

    type State = RandomLp;
    type Event = u64;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> RandomLp {
        let me = ctx.me();
        if me >= self.idle_lps {
            let n = 1 + ctx.rng().below(3);
            for i in 0..n {
                let d = self.start_at + self.quantum * ctx.rng().below(4) as f64;
                ctx.send(me, d, i);
            }
        }
        RandomLp {
            seen: 0,
            hash: u64::from(me),
            links: self.links(me),
            gap: Tally::new(),
            last: 0.0,
            level: TimeAverage::new(0.0, 0.0),
            phase: Histogram::new(0.0, 1.0, 4),
        }
    }

    fn on_event(&self, st: &mut RandomLp, ev: &u64, ctx: &mut Ctx<'_, Self>) {
        let me = ctx.me();
        st.seen += 1;
        st.hash = mix(st.hash ^ *ev ^ ctx.now().to_bits());
        let now = ctx.now();
        st.gap.record(now - st.last);
        st.last = now;
        st.level.set(now, (st.hash % 5) as f64);
        st.phase.record((st.hash % 1000) as f64 / 1000.0);
        if self.hot(me) {
            for _ in 0..self.hot_work {
                st.hash = mix(st.hash);
            }
        }
        ctx.count(Counters::events, 1);
        let fanout = [0, 1, 1, 2][ctx.rng().below(4) as usize];
        for _ in 0..fanout {
            let pick = ctx.rng().below(st.links.len() as u64 + 1) as usize;
            let extra = self.quantum * ctx.rng().below(3) as f64;
            let payload = st.hash;
            ctx.count(Counters::sends, 1);
            if pick == st.links.len() {
                let zero = self.zero_self > 0.0 && ctx.rng().uniform() < self.zero_self;
                if zero {
                    ctx.count(Counters::zero_sends, 1);
                    ctx.send(me, 0.0, payload);
                } else {
                    ctx.send(me, self.lookahead + extra, payload);
                }
            } else {
                let (d, la) = st.links[pick];
                if la + extra == 0.0 {
                    ctx.count(Counters::zero_sends, 1);
                }
                ctx.send(d, la + extra, payload);
            }
        }
    }

    fn lookahead(&self) -> f64 {
        // Zero-delay self-sends need no zero lookahead: a send to the LP itself may take any
        // delay. Zero-lookahead links do.
        if self.zero_links > 0.0 {
            0.0
        } else {
            self.lookahead
        }
    }

    fn counter_names(&self) -> &'static [&'static str] {
        Counters::NAMES
    }

    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        Some(self.links(lp))
    }

    fn global_events(&self) -> Vec<f64> {
        if self.global_period > 0.0 {
            vec![self.global_period]
        } else {
            Vec::new()
        }
    }

    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let mut seen = 0u64;
        let mut h = ctx.now().to_bits();
        for lp in 0..ctx.lps() {
            let s = ctx.state(lp);
            seen += s.seen;
            h = mix(h ^ s.hash);
        }
        ctx.stats().add("global_calls", 1.0);
        ctx.stats().add("global_seen_sum", seen as f64);
        ctx.stats().add("global_hash_sum", low32(h));
        if self.global_writes {
            self.change_and_send(ctx, h);
        }
        ctx.schedule(self.global_period);
    }

    fn finish(&self, _lp: LpId, st: &RandomLp, stats: &mut ModelStats) {
        stats.add("seen", st.seen as f64);
        stats.add("hash_sum", low32(st.hash));
        stats.tally("gap", &st.gap);
        stats.time_average("level", &st.level);
        stats.histogram("phase", &st.phase);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acyclic_zero_links_only_go_up() {
        let m = Random {
            lps: 40,
            degree: 6,
            zero_links: 0.7,
            ..Random::default()
        };
        let mut zeros = 0;
        for lp in 0..m.lps {
            for (d, la) in m.links(lp) {
                assert_ne!(d, lp);
                if la == 0.0 {
                    zeros += 1;
                    assert!(d > lp, "zero link {lp} -> {d} goes down");
                }
            }
        }
        assert!(zeros > 10, "only {zeros} zero links");
    }

    #[test]
    fn a_state_survives_a_json_round_trip() {
        let m = Random::default();
        // A fresh LP: its gap tally is empty (infinite min and max).
        let mut st = RandomLp {
            seen: 0,
            hash: 5,
            links: m.links(5),
            gap: Tally::new(),
            last: 0.0,
            level: TimeAverage::new(0.0, 0.0),
            phase: Histogram::new(0.0, 1.0, 4),
        };
        crate::json_again(&st);
        for (now, x) in [(1.0, 0.3), (1.25, 0.7), (2.0 / 3.0 + 1.0, 0.05)] {
            st.seen += 1;
            st.gap.record(now - st.last);
            st.last = now;
            st.level.set(now, x * 5.0);
            st.phase.record(x);
        }
        let back = crate::json_again(&st);
        assert_eq!(back.links, st.links);
        assert_eq!(
            (back.gap, back.level, back.phase),
            (st.gap, st.level, st.phase)
        );
    }

    #[test]
    fn validate_rejects_bad_parameters() {
        let bad = [
            Random {
                lps: 0,
                ..Random::default()
            },
            Random {
                idle_lps: 17,
                ..Random::default()
            },
            Random {
                zero_self: 0.9,
                ..Random::default()
            },
            Random {
                lookahead: 0.0,
                ..Random::default()
            },
        ];
        for m in bad {
            assert!(m.validate().is_err(), "{m:?}");
        }
        assert!(Random::default().validate().is_ok());
    }
}
