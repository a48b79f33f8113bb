//! The model of the Time Warp tests: a randomized ring of cells whose state depends on the
//! order of its events (random fan-out, delays with many exact ties, zero delays, short
//! self-sends), with switches for the faults the tests plant (a broken reverse handler, a slow
//! LP, a panic, a bad send) and commit hooks.

use std::sync::Arc;

use chronon::{CommitCtx, Ctx, LpId, Model, ModelStats, ReverseCtx, ReverseFn};

use crate::common::{Cell, Commits, Token};

#[derive(Clone, Debug)]
pub struct Scramble {
    /// Probability of a zero delay.
    pub zero: f64,
    /// Delays are multiples of this (many exact ties).
    pub grid: f64,
    /// Declared lookahead, added to every delay (with `zero` 0: lookahead > 0 turns on safe
    /// commits between threads).
    pub lookahead: f64,
    /// Probability that a send to the LP itself comes sooner than the lookahead (0, 1/3 or 2/3
    /// of it): self-sends may take any delay.
    pub self_short: f64,
    /// Makes `reverse` wrong now and then.
    pub broken_reverse: bool,
    /// Wall-time spin per event on LP 0, in microseconds (a slow LP).
    pub slow_lp0_us: u64,
    /// LP that panics at or after this time.
    pub panic_at: Option<(LpId, f64)>,
    /// LP whose events in [t, t + 0.5) send to a nonexistent LP.
    pub bad_send_at: Option<(LpId, f64)>,
    pub hooks: Option<Arc<Commits>>,
}

impl Scramble {
    pub fn new() -> Self {
        Scramble {
            zero: 0.2,
            grid: 0.5,
            lookahead: 0.0,
            self_short: 0.0,
            broken_reverse: false,
            slow_lp0_us: 0,
            panic_at: None,
            bad_send_at: None,
            hooks: None,
        }
    }
}

impl Model for Scramble {
    type State = Cell;
    type Event = Token;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Cell {
        for i in 0..2 {
            let d = (1 + ctx.rng().below(4)) as f64 * self.grid;
            ctx.send(ctx.me(), d, Token { value: i });
        }
        Cell::new(ctx.me())
    }

    fn on_event(&self, cell: &mut Cell, tok: &Token, ctx: &mut Ctx<'_, Self>) {
        if let Some((lp, t)) = self.panic_at {
            if ctx.me() == lp && ctx.now() >= t {
                panic!("scramble exploded");
            }
        }
        if self.slow_lp0_us > 0 && ctx.me() == 0 {
            let start = std::time::Instant::now();
            while start.elapsed().as_micros() < u128::from(self.slow_lp0_us) {
                std::hint::spin_loop();
            }
        }
        cell.apply(tok, ctx.now());
        // Fan-out 0, 1 or 2 (mean 1) so the population stays about constant.
        let fan = match ctx.rng().below(4) {
            0 => 0,
            3 => 2,
            _ => 1,
        };
        for _ in 0..fan {
            let dst = if ctx.rng().uniform() < 0.5 {
                ctx.me()
            } else {
                let n = u64::from(ctx.lps());
                ctx.rng().below(n) as LpId
            };
            let short = dst == ctx.me() && self.self_short > 0.0 && {
                let u = ctx.rng().uniform();
                u < self.self_short
            };
            let delay = if short {
                ctx.rng().below(3) as f64 * self.lookahead / 3.0
            } else {
                self.lookahead
                    + if ctx.rng().uniform() < self.zero {
                        0.0
                    } else {
                        (1 + ctx.rng().below(4)) as f64 * self.grid
                    }
            };
            ctx.send(dst, delay, Token { value: cell.hash });
            ctx.count(0, 1);
        }
        if let Some((lp, t)) = self.bad_send_at {
            if ctx.me() == lp && ctx.now() >= t && ctx.now() < t + 0.5 {
                ctx.send(ctx.lps() + 7, 1.0, Token { value: 0 });
            }
        }
    }

    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        Some(Self::undo)
    }

    fn lookahead(&self) -> f64 {
        self.lookahead
    }

    fn commit(&self, _tok: &Token, ctx: &CommitCtx) {
        if let Some(h) = &self.hooks {
            h.record(ctx);
        }
    }

    fn counter_names(&self) -> &'static [&'static str] {
        &["sends"]
    }

    fn finish(&self, lp: LpId, cell: &Cell, stats: &mut ModelStats) {
        cell.finish(lp, stats);
    }
}

impl Scramble {
    /// The reverse handler ([`Model::reverse_handler`]): undoes `on_event`.
    fn undo(&self, cell: &mut Cell, tok: &Token, ctx: &ReverseCtx) {
        cell.uncount();
        if self.broken_reverse && cell.count % 5 == 3 {
            return;
        }
        cell.unhash(tok, ctx);
    }
}
