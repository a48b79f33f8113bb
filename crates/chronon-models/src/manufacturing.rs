//! A generic manufacturing process (seed 002, §2.2): production lines of processing and control
//! stations with rework, assembly stations that join components from every line, and testing
//! stations.
//!
//! ```text
//! line l:  source ─▶ P0 ─▶ C0 ─▶ P1 ─▶ C1 ─▶ … ─▶ C(S-1) ─┐   (C sends a part back to its P
//!                     ▲────┘ rework                          │    with probability `rework`)
//!                                                           ▼
//!          assembly a (join: one component from every line) ─▶ fork ─▶ testing t ─▶ out
//! ```
//!
//! Every station is one LP and a single FIFO server with exponential service (mean per station
//! type; a mean of 0 makes it a pass-through). The first processing station of a line is fed
//! by a Poisson source (its own LP, mean inter-arrival `interarrival`). A line's last control
//! station deals its parts to the assembly stations in turn; an assembly station joins one
//! component from each line into a product (the *join* node, in zero time), assembles it and
//! forks it to a uniformly chosen testing station; a tested product leaves (the *collect* node).
//! With `assembly_stations = 0` the lines' parts leave after their last control station.
//!
//! **Timing without short self-events.** A station computes a part's departure when it
//! arrives, by Lindley's recursion (`start = max(arrival, server free)`, `departure = start +
//! service`), and sends the part straight to the next station to arrive `transfer` after the
//! departure. Sources generate their arrivals one window ahead. So every send after `init` waits
//! at least `transfer`, the model's lookahead, and no LP needs a timer shorter than that.
//!
//! **Links.** Every LP declares its links ([`Manufacturing::links`]), so the conservative
//! executors see the line structure rather than a full mesh at the smallest delay.
//! `work_us` spins on every event (seed 002's event-handling time).
//!
//! Each station records the time-average number of parts in it (from the departure times it
//! holds), the mean wait in queue and the mean time in station, counting only parts that arrive
//! after `warmup`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use chronon::{Ctx, LpId, Model, ModelStats, SizeHint};

use crate::phold::spin_for_us;

/// The manufacturing model's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Manufacturing {
    /// Production lines (one component type each).
    pub lines: u32,
    /// Processing stations per line (each followed by a control station).
    pub stations_per_line: u32,
    /// Assembly stations (0: parts leave after their line).
    pub assembly_stations: u32,
    /// Testing stations (at least 1 when there are assembly stations).
    pub testing_stations: u32,
    /// Mean time between part arrivals at each line's source (Poisson arrivals).
    pub interarrival: f64,
    /// Mean service time of a processing station.
    pub processing_mean: f64,
    /// Mean service time of a control station.
    pub control_mean: f64,
    /// Mean service time of an assembly station.
    pub assembly_mean: f64,
    /// Mean service time of a testing station.
    pub testing_mean: f64,
    /// Probability that a control station sends a part back for re-processing.
    pub rework: f64,
    /// Transport time between stations: the model's lookahead.
    pub transfer: f64,
    /// Statistics count parts arriving at or after this time.
    pub warmup: f64,
    /// Busy work per event, microseconds (seed 002's event-handling time, 1–50 µs in its
    /// Graph 1): the handler spins this long after doing its part.
    pub work_us: f64,
}

impl Default for Manufacturing {
    fn default() -> Self {
        Manufacturing {
            lines: 4,
            stations_per_line: 3,
            assembly_stations: 2,
            testing_stations: 3,
            interarrival: 10.0,
            processing_mean: 5.0,
            control_mean: 2.0,
            assembly_mean: 8.0,
            testing_mean: 15.0,
            rework: 0.1,
            transfer: 0.5,
            warmup: 0.0,
            work_us: 0.0,
        }
    }
}

/// What an LP is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The source of line `line`.
    Source {
        /// The line.
        line: u32,
    },
    /// Processing station `stage` of line `line`.
    Processing {
        /// The line.
        line: u32,
        /// The station's place on the line.
        stage: u32,
    },
    /// Control station `stage` of line `line`.
    Control {
        /// The line.
        line: u32,
        /// The station's place on the line.
        stage: u32,
    },
    /// Assembly station `index`.
    Assembly {
        /// Which one.
        index: u32,
    },
    /// Testing station `index`.
    Testing {
        /// Which one.
        index: u32,
    },
}

const KINDS: [&str; 4] = ["processing", "control", "assembly", "testing"];

impl Manufacturing {
    fn per_line(&self) -> u32 {
        1 + 2 * self.stations_per_line
    }

    /// The number of LPs: per line a source and 2 stations per stage, then the assembly and
    /// testing stations.
    pub fn lps(&self) -> u32 {
        self.lines * self.per_line() + self.assembly_stations + self.testing_stations
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        use crate::check::*;
        at_least("lines", u64::from(self.lines), 1)?;
        at_least("stations-per-line", u64::from(self.stations_per_line), 1)?;
        if self.assembly_stations > 0 {
            at_least("testing-stations", u64::from(self.testing_stations), 1)?;
        }
        let lps = u64::from(self.lines) * (1 + 2 * u64::from(self.stations_per_line))
            + u64::from(self.assembly_stations)
            + u64::from(self.testing_stations);
        if lps > u64::from(u32::MAX) {
            return Err(format!(
                "the model needs {lps} LPs; at most 2^32 - 1 are allowed"
            ));
        }
        positive("interarrival", self.interarrival)?;
        nonneg("processing-mean", self.processing_mean)?;
        nonneg("control-mean", self.control_mean)?;
        nonneg("assembly-mean", self.assembly_mean)?;
        nonneg("testing-mean", self.testing_mean)?;
        probability("rework", self.rework)?;
        if self.rework >= 1.0 {
            return Err("rework is 1; it must be < 1 or no part ever leaves".into());
        }
        nonneg("transfer", self.transfer)?;
        nonneg("warmup", self.warmup)?;
        nonneg("work-us", self.work_us)?;
        if self.work_us > 1e6 {
            return Err(format!(
                "work-us is {}; it must be at most 1000000 (one second per event)",
                self.work_us
            ));
        }
        Ok(())
    }

    /// The links of LP `lp` (see [`Model::topology`]): a source feeds its line's first
    /// processing station one generation window ahead; a processing station sends to its
    /// control station; a control station back to its processing station (rework) and on to
    /// the next processing station, or from the last stage to every assembly station; an
    /// assembly station to every testing station. Every station link's lookahead is
    /// `transfer` (a part leaves after a service time >= 0, then travels `transfer`).
    pub fn links(&self, lp: LpId) -> Vec<(LpId, f64)> {
        let t = self.transfer;
        match self.role(lp) {
            Role::Source { line } => vec![(self.processing(line, 0), self.window())],
            Role::Processing { .. } => vec![(lp + 1, t)],
            Role::Control { stage, .. } => {
                let mut v = vec![(lp - 1, t)];
                if stage + 1 < self.stations_per_line {
                    v.push((lp + 1, t));
                } else {
                    v.extend((0..self.assembly_stations).map(|a| (self.assembly(a), t)));
                }
                v
            }
            Role::Assembly { .. } => (0..self.testing_stations)
                .map(|k| (self.testing(k), t))
                .collect(),
            Role::Testing { .. } => Vec::new(),
        }
    }

    /// The role of LP `lp`.
    pub fn role(&self, lp: LpId) -> Role {
        let lines_end = self.lines * self.per_line();
        if lp < lines_end {
            let line = lp / self.per_line();
            match lp % self.per_line() {
                0 => Role::Source { line },
                k => {
                    let stage = (k - 1) / 2;
                    if k % 2 == 1 {
                        Role::Processing { line, stage }
                    } else {
                        Role::Control { line, stage }
                    }
                }
            }
        } else if lp < lines_end + self.assembly_stations {
            Role::Assembly {
                index: lp - lines_end,
            }
        } else {
            Role::Testing {
                index: lp - lines_end - self.assembly_stations,
            }
        }
    }

    fn processing(&self, line: u32, stage: u32) -> LpId {
        line * self.per_line() + 1 + 2 * stage
    }

    fn assembly(&self, index: u32) -> LpId {
        self.lines * self.per_line() + index
    }

    fn testing(&self, index: u32) -> LpId {
        self.lines * self.per_line() + self.assembly_stations + index
    }

    /// The source's generation window: at least the lookahead, and never 0.
    fn window(&self) -> f64 {
        self.transfer.max(self.interarrival)
    }

    /// Schedules the source's arrivals that fall before `until`, from time `now`.
    fn generate(&self, src: &mut SourceState, until: f64, ctx: &mut Ctx<'_, Self>) {
        let line = src.line;
        let dst = self.processing(line, 0);
        while src.next < until {
            let born = src.next;
            ctx.send(dst, born - ctx.now(), Flow::Part { line, born });
            src.created += 1;
            src.next += ctx.rng().exponential_mean(self.interarrival);
        }
    }
}

/// A source's state.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SourceState {
    line: u32,
    /// The next arrival, not yet scheduled.
    next: f64,
    /// Parts created (scheduled to arrive).
    pub created: u64,
}

/// A single-server FIFO station's state, with its statistics.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct StationState {
    /// When the server finishes its last accepted part.
    free_at: f64,
    /// Departure times (as ordered bits) of the parts in the station at the last event.
    inside: BinaryHeap<Reverse<u64>>,
    /// The time of the last event.
    last: f64,
    /// ∫ N(t) dt after the warm-up, up to `last`.
    area: f64,
    /// Parts that arrived after the warm-up.
    counted: u64,
    /// Their summed wait in queue.
    wait_sum: f64,
    /// Their summed time in station.
    sojourn_sum: f64,
    /// All part arrivals (visits).
    arrivals: u64,
    /// Last control stations: parts dealt out to the assembly stations so far.
    routed: u64,
    /// Assembly: the join buffers, one per line, holding each waiting component's birth time.
    join: Vec<VecDeque<f64>>,
    /// Assembly: products built. Testing: products that left.
    products: u64,
    /// Parts that left the system at this station (lines without assembly).
    left_parts: u64,
    /// Testing: summed cycle time (leave − birth of the product's oldest component).
    cycle_sum: f64,
}

impl StationState {
    /// Moves the time-average bookkeeping to `now`.
    fn advance(&mut self, now: f64, warmup: f64) {
        while let Some(&Reverse(bits)) = self.inside.peek() {
            let d = f64::from_bits(bits);
            if d > now {
                break;
            }
            self.area += self.inside.len() as f64 * (d.max(warmup) - self.last.max(warmup));
            self.last = d;
            self.inside.pop();
        }
        self.area += self.inside.len() as f64 * (now.max(warmup) - self.last.max(warmup));
        self.last = now;
    }

    /// Accepts a job at `now` with service time `service`; returns its departure time.
    fn serve(&mut self, now: f64, service: f64, warmup: f64) -> f64 {
        self.advance(now, warmup);
        let start = now.max(self.free_at);
        let departure = start + service;
        self.free_at = departure;
        self.inside.push(Reverse(departure.to_bits()));
        self.arrivals += 1;
        if now >= warmup {
            self.counted += 1;
            self.wait_sum += start - now;
            self.sojourn_sum += departure - now;
        }
        departure
    }
}

/// One LP's state.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum MfgState {
    /// A line's source.
    Source(SourceState),
    /// Any station.
    Station(StationState),
}

/// What moves between LPs.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Flow {
    /// The source's generation tick.
    Tick,
    /// A component of line `line`, created at `born`.
    Part {
        /// Its line.
        line: u32,
        /// Its creation time.
        born: f64,
    },
    /// An assembled product whose oldest component was created at `born`.
    Product {
        /// The oldest component's creation time.
        born: f64,
    },
    /// A tested product, or a part of a line without assembly, leaving the system.
    Leave {
        /// A product (rather than a part).
        product: bool,
        /// The oldest component's creation time.
        born: f64,
    },
}

impl Model for Manufacturing {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps())
    }

    type State = MfgState;
    type Event = Flow;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> MfgState {
        match self.role(ctx.me()) {
            Role::Source { line } => {
                let mut src = SourceState {
                    line,
                    next: 0.0,
                    created: 0,
                };
                src.next = ctx.rng().exponential_mean(self.interarrival);
                self.generate(&mut src, 2.0 * self.window(), ctx);
                let me = ctx.me();
                ctx.send(me, self.window(), Flow::Tick);
                MfgState::Source(src)
            }
            Role::Assembly { .. } => MfgState::Station(StationState {
                join: vec![VecDeque::new(); self.lines as usize],
                ..StationState::default()
            }),
            _ => MfgState::Station(StationState::default()),
        }
    }

    fn on_event(&self, state: &mut MfgState, ev: &Flow, ctx: &mut Ctx<'_, Self>) {
        spin_for_us(self.work_us);
        let now = ctx.now();
        let me = ctx.me();
        let role = self.role(me);
        let st = match state {
            MfgState::Source(src) => {
                // The only event a source gets is its tick.
                self.generate(src, now + 2.0 * self.window(), ctx);
                ctx.send(me, self.window(), Flow::Tick);
                return;
            }
            MfgState::Station(st) => st,
        };
        let w = self.warmup;
        match (*ev, role) {
            (Flow::Leave { product, born }, _) => {
                st.advance(now, w);
                if product {
                    st.products += 1;
                } else {
                    st.left_parts += 1;
                }
                st.cycle_sum += now - born;
            }
            (Flow::Part { line, born }, Role::Processing { .. }) => {
                let s = ctx.rng().exponential_mean(self.processing_mean);
                let d = st.serve(now, s, w);
                ctx.send(me + 1, d - now + self.transfer, Flow::Part { line, born });
            }
            (Flow::Part { line, born }, Role::Control { stage, .. }) => {
                let s = ctx.rng().exponential_mean(self.control_mean);
                let d = st.serve(now, s, w);
                let delay = d - now + self.transfer;
                if ctx.rng().bernoulli(self.rework) {
                    ctx.send(me - 1, delay, Flow::Part { line, born });
                } else if stage + 1 < self.stations_per_line {
                    ctx.send(me + 1, delay, Flow::Part { line, born });
                } else if self.assembly_stations == 0 {
                    ctx.send(
                        me,
                        delay,
                        Flow::Leave {
                            product: false,
                            born,
                        },
                    );
                } else {
                    let a = (st.routed % u64::from(self.assembly_stations)) as u32;
                    st.routed += 1;
                    ctx.send(self.assembly(a), delay, Flow::Part { line, born });
                }
            }
            (Flow::Part { line, born }, Role::Assembly { .. }) => {
                st.advance(now, w);
                st.join[line as usize].push_back(born);
                if st.join.iter().all(|q| !q.is_empty()) {
                    let born = st
                        .join
                        .iter_mut()
                        .map(|q| q.pop_front().expect("checked non-empty"))
                        .fold(f64::INFINITY, f64::min);
                    let s = ctx.rng().exponential_mean(self.assembly_mean);
                    let d = st.serve(now, s, w);
                    st.products += 1;
                    let t = ctx.rng().below(u64::from(self.testing_stations)) as u32;
                    ctx.send(
                        self.testing(t),
                        d - now + self.transfer,
                        Flow::Product { born },
                    );
                }
            }
            (Flow::Product { born }, Role::Testing { .. }) => {
                let s = ctx.rng().exponential_mean(self.testing_mean);
                let d = st.serve(now, s, w);
                ctx.send(
                    me,
                    d - now + self.transfer,
                    Flow::Leave {
                        product: true,
                        born,
                    },
                );
            }
            (ev, role) => unreachable!("{role:?} cannot receive {ev:?}"),
        }
    }

    fn lookahead(&self) -> f64 {
        self.transfer
    }

    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        Some(self.links(lp))
    }

    /// Each line's source keeps the arrivals of its next two windows pending; each assembly
    /// station has a join queue per line.
    fn size_hint(&self) -> SizeHint {
        let ahead = crate::check::count(2.0 * self.window() / self.interarrival).saturating_add(2);
        let total = ahead.saturating_mul(u64::from(self.lines));
        let lps = u64::from(self.lps().max(1));
        let joins = u64::from(self.lines)
            .checked_mul(u64::from(self.assembly_stations))
            .and_then(|n| n.checked_mul(std::mem::size_of::<VecDeque<u8>>() as u64));
        SizeHint {
            model_bytes: joins,
            ..SizeHint::pending(total.div_ceil(lps).saturating_add(1))
        }
    }

    fn finish(&self, lp: LpId, state: &MfgState, stats: &mut ModelStats) {
        let role = self.role(lp);
        match state {
            MfgState::Source(src) => stats.add("parts_created", src.created as f64),
            MfgState::Station(st) => {
                let kind = match role {
                    Role::Processing { .. } => 0,
                    Role::Control { .. } => 1,
                    Role::Assembly { .. } => 2,
                    _ => 3,
                };
                let k = KINDS[kind];
                match role {
                    Role::Assembly { .. } => {
                        stats.add("products_assembled", st.products as f64);
                        let waiting: usize = st.join.iter().map(VecDeque::len).sum();
                        stats.add("join_buffered_parts", waiting as f64);
                    }
                    Role::Testing { .. } => {
                        stats.add("products_out", st.products as f64);
                        stats.add("parts_out", (st.products * u64::from(self.lines)) as f64);
                        stats.add("cycle_time_sum", st.cycle_sum);
                    }
                    Role::Control { .. } if st.left_parts > 0 => {
                        stats.add("parts_out", st.left_parts as f64);
                        stats.add("cycle_time_sum", st.cycle_sum);
                    }
                    _ => {}
                }
                stats.add(&format!("{k}_visits"), st.arrivals as f64);
                // The jobs inside count up to the end time, not only to the station's last
                // event.
                let (area, last) = match stats.end_time() {
                    Some(end) if end > st.last => {
                        let mut closed = st.clone();
                        closed.advance(end, self.warmup);
                        (closed.area, end)
                    }
                    _ => (st.area, st.last),
                };
                stats.add(&format!("{k}_area"), area);
                stats.add(&format!("{k}_observed_time"), (last - self.warmup).max(0.0));
                stats.add(&format!("{k}_counted"), st.counted as f64);
                stats.add(&format!("{k}_wait_sum"), st.wait_sum);
                stats.add(&format!("{k}_sojourn_sum"), st.sojourn_sum);
            }
        }
        if lp + 1 == self.lps() {
            self.summarize(stats);
        }
    }
}

impl Manufacturing {
    /// Turns the summed figures into means (called after the last LP).
    fn summarize(&self, stats: &mut ModelStats) {
        let get = |s: &ModelStats, n: &str| s.get(n).unwrap_or(0.0);
        for k in KINDS {
            let time = get(stats, &format!("{k}_observed_time"));
            let counted = get(stats, &format!("{k}_counted"));
            if time > 0.0 {
                let l = get(stats, &format!("{k}_area")) / time;
                stats.set(&format!("{k}_mean_in_station"), l);
            }
            if counted > 0.0 {
                let wq = get(stats, &format!("{k}_wait_sum")) / counted;
                let w = get(stats, &format!("{k}_sojourn_sum")) / counted;
                stats.set(&format!("{k}_mean_wait"), wq);
                stats.set(&format!("{k}_mean_time_in_station"), w);
            }
        }
        let leaving = if self.assembly_stations > 0 {
            get(stats, "products_out")
        } else {
            get(stats, "parts_out")
        };
        if leaving > 0.0 {
            let c = get(stats, "cycle_time_sum") / leaving;
            stats.set("mean_cycle_time", c);
        }
    }
}

// Safety: every variant holds plain data (`u32`, `f64`, `bool`), no pointer: the flows may
// cross a process boundary (`--procs`).
#[cfg(target_os = "linux")]
unsafe impl chronon::shm::ShmSafe for Flow {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_survive_a_json_round_trip() {
        let w = 0.7;
        let mut st = StationState {
            join: vec![VecDeque::from([1.5, 0.1 + 0.2]), VecDeque::new()],
            routed: 3,
            ..StationState::default()
        };
        for (now, service) in [(0.5, 2.0), (1.0, 0.1), (1.2, 1.0 / 3.0)] {
            st.serve(now, service, w);
        }
        st.advance(2.0, w);
        let MfgState::Station(mut back) = crate::json_again(&MfgState::Station(st.clone())) else {
            panic!("a station comes back a station");
        };
        // The restored station goes on as the original does.
        for s in [&mut st, &mut back] {
            assert_eq!(s.serve(4.0, 0.25, w), 4.25);
            s.advance(9.0, w);
        }
        let json = |s: &StationState| serde_json::to_string(s).unwrap();
        assert_eq!(json(&back), json(&st));
        let src = SourceState {
            line: 2,
            next: 13.625,
            created: 9,
        };
        let MfgState::Source(back) = crate::json_again(&MfgState::Source(src)) else {
            panic!("a source comes back a source");
        };
        assert_eq!((back.line, back.next, back.created), (2, 13.625, 9));
    }
}
