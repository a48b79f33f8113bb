//! A personal communication system (seed 003, §3.4): wireless cells on a hexagonal grid, each
//! with a fixed number of channels; calls arrive, last, move to neighbouring cells (handoffs)
//! and are blocked or dropped when a cell has no free channel.
//!
//! Each of the `width × height` cells (default 32 × 32 = 1024) is one LP, laid out in offset
//! rows ("odd-r": odd rows shift half a cell right), so an inner cell has 6 neighbours and a
//! border cell fewer. New calls arrive at every cell as a Poisson process (mean gap
//! `call_interarrival`, minutes). A call lasts `Exp(call_duration)` in total and stays in a
//! cell for `Exp(residence)` (the residual residence time; `residence = 0` turns handoffs off).
//! If it leaves before it ends, its channel is released and the call is handed to a uniformly
//! chosen neighbour, where it arrives `handoff_delay` later (the model's lookahead) with its
//! remaining duration and needs a free channel there, or is dropped. A new call that finds all
//! channels busy is blocked.
//!
//! A cell decides when each accepted call will release its channel the moment it accepts it,
//! and keeps those release times in its state, so releases need no events; the handoff is sent
//! at once with the full delay. New calls are generated one window ahead (see the crate docs).
//! Fading (seed 003 §3.4: fading coefficients and SIR are recomputed "both on the occurrence of
//! specific events (e.g. the startup of a call) and periodically"): on every call setup (a new
//! call or a handoff) the cell makes `fading_work` floating-point passes over its active calls,
//! and with `fading_period > 0` every cell also recomputes them every `fading_period` minutes
//! (a self-event; `max(1, fading_work)` passes over the calls still active).
//!
//! With handoffs off every cell is an M/M/c/c loss system, so the blocking probability must be
//! Erlang B of the offered load `call_duration / call_interarrival` (the tests check it).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use chronon::{Ctx, GlobalCtx, LpId, Model, ModelStats, SizeHint};

/// The PCS model's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Pcs {
    /// Cells per row.
    pub width: u32,
    /// Rows of cells.
    pub height: u32,
    /// Channels per cell.
    pub channels: u32,
    /// Mean time between new calls in a cell (minutes).
    pub call_interarrival: f64,
    /// Mean call duration (minutes).
    pub call_duration: f64,
    /// Mean residual residence time of a caller in a cell (minutes); 0 turns handoffs off.
    pub residence: f64,
    /// Time a handed-off call takes to reach the next cell: the lookahead (minutes).
    pub handoff_delay: f64,
    /// Passes of fading recomputation over the active calls per call setup (0: none).
    pub fading_work: u32,
    /// Minutes between periodic fading recomputations in every cell (0: none; else at least
    /// `handoff_delay`, the lookahead that self-events keep too).
    pub fading_period: f64,
    /// Statistics count calls arriving at or after this time.
    pub warmup: f64,
    /// Minutes between samples of the channel occupancy, a global event that reads every
    /// cell and records the report's `model_series["channel_occupancy"]` (0: no sampling).
    pub sample_period: f64,
}

impl Default for Pcs {
    /// The seed's cell count and call times: 1024 cells of 1000 channels, 2-minute calls,
    /// 5-minute residence, offered load 500 Erlang per cell (about 50 % utilization).
    fn default() -> Self {
        Pcs {
            width: 32,
            height: 32,
            channels: 1000,
            call_interarrival: 0.004,
            call_duration: 2.0,
            residence: 5.0,
            handoff_delay: 0.01,
            fading_work: 0,
            fading_period: 0.0,
            warmup: 0.0,
            sample_period: 0.0,
        }
    }
}

impl Pcs {
    /// The number of LPs: one per cell.
    pub fn lps(&self) -> u32 {
        self.width.saturating_mul(self.height)
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        use crate::check::*;
        at_least("width", u64::from(self.width), 1)?;
        at_least("height", u64::from(self.height), 1)?;
        if self.width.checked_mul(self.height).is_none() {
            return Err("width × height overflows; it must be below 2^32".into());
        }
        at_least("channels", u64::from(self.channels), 1)?;
        positive("call-interarrival", self.call_interarrival)?;
        positive("call-duration", self.call_duration)?;
        nonneg("residence", self.residence)?;
        if self.residence > 0.0 && self.lps() < 2 {
            return Err(
                "width × height is 1; handoffs (residence > 0) need at least 2 cells".into(),
            );
        }
        positive("handoff-delay", self.handoff_delay)?;
        nonneg("fading-period", self.fading_period)?;
        if self.fading_period > 0.0 && self.fading_period < self.handoff_delay {
            return Err(format!(
                "fading-period is {}; it must be 0 (off) or at least handoff-delay {}",
                self.fading_period, self.handoff_delay
            ));
        }
        nonneg("sample-period", self.sample_period)?;
        nonneg("warmup", self.warmup)
    }

    /// The offered load of new calls per cell, in Erlang.
    pub fn offered_load(&self) -> f64 {
        self.call_duration / self.call_interarrival
    }

    /// The hexagonal-grid neighbours of cell `lp`.
    pub fn neighbours(&self, lp: LpId) -> Vec<LpId> {
        let (w, h) = (i64::from(self.width), i64::from(self.height));
        let (x, y) = (i64::from(lp) % w, i64::from(lp) / w);
        let shift = y & 1; // odd rows sit half a cell to the right
        let cand = [
            (x - 1, y),
            (x + 1, y),
            (x - 1 + shift, y - 1),
            (x + shift, y - 1),
            (x - 1 + shift, y + 1),
            (x + shift, y + 1),
        ];
        cand.iter()
            .filter(|&&(cx, cy)| cx >= 0 && cx < w && cy >= 0 && cy < h)
            .map(|&(cx, cy)| (cy * w + cx) as LpId)
            .collect()
    }

    /// The arrival generation window: at least the lookahead, about 10 arrivals long.
    fn window(&self) -> f64 {
        self.handoff_delay.max(10.0 * self.call_interarrival)
    }

    fn generate(&self, cell: &mut Cell, until: f64, ctx: &mut Ctx<'_, Self>) {
        let me = ctx.me();
        while cell.next_call < until {
            ctx.send(me, cell.next_call - ctx.now(), CellEvent::NewCall);
            cell.scheduled_calls += 1;
            cell.next_call += ctx.rng().exponential_mean(self.call_interarrival);
        }
    }

    /// Tries to give a channel to a call with `duration` left; returns whether it got one.
    fn admit(&self, cell: &mut Cell, duration: f64, ctx: &mut Ctx<'_, Self>) -> bool {
        let now = ctx.now();
        while cell.busy.peek().is_some_and(|r| f64::from_bits(r.0) <= now) {
            cell.busy.pop();
        }
        if cell.busy.len() >= self.channels as usize {
            return false;
        }
        let stay = if self.residence > 0.0 {
            ctx.rng().exponential_mean(self.residence)
        } else {
            f64::INFINITY
        };
        if duration <= stay {
            cell.busy.push(Reverse((now + duration).to_bits()));
        } else {
            cell.busy.push(Reverse((now + stay).to_bits()));
            let near = self.neighbours(ctx.me());
            let dst = near[ctx.rng().below(near.len() as u64) as usize];
            ctx.send(
                dst,
                stay + self.handoff_delay,
                CellEvent::Handoff {
                    remaining: duration - stay,
                },
            );
            cell.handoffs_out += 1;
        }
        true
    }

    fn fading(&self, cell: &mut Cell, passes: u32, ctx: &mut Ctx<'_, Self>) {
        let mut x = cell.fading;
        for p in 0..passes {
            if p > 0 {
                // Instrumented application code (seed 003 §2.1): the event may switch off here.
                ctx.preemption_point();
            }
            for (i, r) in cell.busy.iter().enumerate() {
                // A stand-in for recomputing one channel's fading gain and SIR.
                let g = (f64::from_bits(r.0) * 0.37 + i as f64).sin().abs() + 1e-3;
                x = 0.999 * x + (g / (1.0 + g)).ln_1p();
            }
        }
        cell.fading = x;
    }
}

/// One cell.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    /// Release times (ordered bits) of the channels in use at the last look. The fading
    /// recomputation visits them in the heap's own order, which a saved state keeps: serde
    /// writes a heap in that order and reads it back by pushing each in turn, and a push of
    /// the elements of a heap in its order moves none of them.
    busy: BinaryHeap<Reverse<u64>>,
    /// The next new call, not yet scheduled.
    next_call: f64,
    /// New-call events scheduled.
    pub scheduled_calls: u64,
    /// New calls that arrived.
    pub arrived_calls: u64,
    /// New calls after the warm-up.
    pub calls: u64,
    /// Of those, blocked.
    pub blocked: u64,
    /// Handoffs sent to neighbours.
    pub handoffs_out: u64,
    /// Handoffs that arrived.
    pub handoffs_in: u64,
    /// Handoffs after the warm-up.
    pub handoffs_counted: u64,
    /// Of those, dropped for lack of a channel.
    pub dropped: u64,
    /// The fading recomputation's running value.
    fading: f64,
    /// Periodic fading recomputations run.
    fading_runs: u64,
}

/// What a cell receives.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum CellEvent {
    /// Generate the next window of new calls.
    Tick,
    /// A new call.
    NewCall,
    /// A call handed over from a neighbour with `remaining` minutes to go.
    Handoff {
        /// Remaining call duration.
        remaining: f64,
    },
    /// The periodic fading recomputation.
    Fading,
}

impl Model for Pcs {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps())
    }

    type State = Cell;
    type Event = CellEvent;

    fn global_events(&self) -> Vec<f64> {
        crate::check::sampling(self.sample_period)
    }

    /// Samples the channel occupancy: the fraction of all channels in use at this time (a call
    /// holds its channel until its release time, kept in the cell's `busy` heap).
    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let now = ctx.now();
        let busy: usize = (0..ctx.lps())
            .map(|lp| {
                let cell = ctx.state(lp);
                cell.busy
                    .iter()
                    .filter(|r| f64::from_bits(r.0) > now)
                    .count()
            })
            .sum();
        let occupancy = busy as f64 / (f64::from(ctx.lps()) * f64::from(self.channels));
        ctx.record("channel_occupancy", occupancy);
        ctx.schedule(self.sample_period);
    }

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Cell {
        let mut cell = Cell {
            next_call: ctx.rng().exponential_mean(self.call_interarrival),
            ..Cell::default()
        };
        self.generate(&mut cell, 2.0 * self.window(), ctx);
        let me = ctx.me();
        ctx.send(me, self.window(), CellEvent::Tick);
        if self.fading_period > 0.0 {
            ctx.send(me, self.fading_period, CellEvent::Fading);
        }
        cell
    }

    fn on_event(&self, cell: &mut Cell, ev: &CellEvent, ctx: &mut Ctx<'_, Self>) {
        let now = ctx.now();
        let counted = now >= self.warmup;
        match *ev {
            CellEvent::Tick => {
                self.generate(cell, now + 2.0 * self.window(), ctx);
                let me = ctx.me();
                ctx.send(me, self.window(), CellEvent::Tick);
                return;
            }
            CellEvent::Fading => {
                while cell.busy.peek().is_some_and(|r| f64::from_bits(r.0) <= now) {
                    cell.busy.pop();
                }
                self.fading(cell, self.fading_work.max(1), ctx);
                cell.fading_runs += 1;
                let me = ctx.me();
                ctx.send(me, self.fading_period, CellEvent::Fading);
                return;
            }
            CellEvent::NewCall => {
                cell.arrived_calls += 1;
                let duration = ctx.rng().exponential_mean(self.call_duration);
                let ok = self.admit(cell, duration, ctx);
                if counted {
                    cell.calls += 1;
                    cell.blocked += u64::from(!ok);
                }
            }
            CellEvent::Handoff { remaining } => {
                cell.handoffs_in += 1;
                let ok = self.admit(cell, remaining, ctx);
                if counted {
                    cell.handoffs_counted += 1;
                    cell.dropped += u64::from(!ok);
                }
            }
        }
        self.fading(cell, self.fading_work, ctx);
    }

    /// Each cell keeps the call arrivals of its next two windows pending, and an end or a
    /// handoff per call in progress (at most `channels`).
    fn size_hint(&self) -> SizeHint {
        let ahead = crate::check::count(2.0 * self.window() / self.call_interarrival);
        let calls = crate::check::count(self.offered_load()).min(u64::from(self.channels));
        SizeHint {
            state_heap_bytes: calls.saturating_mul(8),
            ..SizeHint::pending(ahead.saturating_add(calls).saturating_add(2))
        }
    }

    fn lookahead(&self) -> f64 {
        self.handoff_delay
    }

    /// A cell hands calls off only to its hexagonal neighbours, `handoff_delay` or more ahead.
    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        Some(
            self.neighbours(lp)
                .into_iter()
                .map(|d| (d, self.handoff_delay))
                .collect(),
        )
    }

    fn finish(&self, lp: LpId, cell: &Cell, stats: &mut ModelStats) {
        stats.add("calls", cell.calls as f64);
        stats.add("blocked", cell.blocked as f64);
        stats.add("handoffs", cell.handoffs_counted as f64);
        stats.add("dropped", cell.dropped as f64);
        stats.add("handoffs_sent", cell.handoffs_out as f64);
        stats.add("handoffs_received", cell.handoffs_in as f64);
        stats.add(
            "new_calls_pending",
            (cell.scheduled_calls - cell.arrived_calls) as f64,
        );
        stats.add("fading_checksum", cell.fading);
        stats.add("fading_recomputations", cell.fading_runs as f64);
        if lp + 1 == self.lps() {
            let get = |s: &ModelStats, n: &str| s.get(n).unwrap_or(0.0);
            let (calls, handoffs) = (get(stats, "calls"), get(stats, "handoffs"));
            if calls > 0.0 {
                let b = get(stats, "blocked") / calls;
                stats.set("blocking_probability", b);
            }
            if handoffs > 0.0 {
                let d = get(stats, "dropped") / handoffs;
                stats.set("dropping_probability", d);
            }
        }
    }
}

// Safety: every variant holds plain data (an `f64` at most), no pointer: a cell's events may
// cross a process boundary (`--procs`).
#[cfg(target_os = "linux")]
unsafe impl chronon::shm::ShmSafe for CellEvent {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_survives_a_json_round_trip() {
        let mut cell = Cell {
            next_call: 0.125,
            scheduled_calls: 9,
            arrived_calls: 7,
            calls: 7,
            blocked: 1,
            handoffs_out: 2,
            fading: 0.1 + 0.2,
            fading_runs: 3,
            ..Cell::default()
        };
        for t in [5.0, 1.0, 4.0, 2.0, 3.0, 1.0 / 3.0, 2.0] {
            cell.busy.push(Reverse(f64::to_bits(t)));
        }
        let back = crate::json_again(&cell);
        // The fading recomputation visits the release times in the heap's order: kept.
        assert!(back.busy.iter().eq(cell.busy.iter()));
        assert_eq!(back.fading, cell.fading);
    }
}
