//! A model that breaks the engine's rules on purpose, to test that every executor reports each
//! kind of fault as a clear error (and never panics, hangs or loses results).

use chronon::{Ctx, Model};

/// Which rule the model breaks, at its first event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Sends to an LP that does not exist.
    BadDestination,
    /// Sends with a negative delay.
    NegativeDelay,
    /// Sends with a NaN delay.
    NanDelay,
    /// Sends with a delay below the declared lookahead.
    BelowLookahead,
    /// Panics in the handler.
    Panic,
    /// Panics in `Model::finish` for the culprit.
    FinishPanic,
    /// Panics in `Model::topology` for the culprit.
    TopologyPanic,
    /// Panics in a global event at time `at`.
    GlobalPanic,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "bad-destination" => Fault::BadDestination,
            "negative-delay" => Fault::NegativeDelay,
            "nan-delay" => Fault::NanDelay,
            "below-lookahead" => Fault::BelowLookahead,
            "panic" => Fault::Panic,
            "finish-panic" => Fault::FinishPanic,
            "topology-panic" => Fault::TopologyPanic,
            "global-panic" => Fault::GlobalPanic,
            _ => {
                return Err(format!(
                "unknown fault '{s}' (allowed: bad-destination, negative-delay, nan-delay, below-lookahead, panic, finish-panic, topology-panic, global-panic)"
            ))
            }
        })
    }
}

/// Every LP ticks every `1.0` time units; LP `culprit` breaks `fault` at its event at time
/// `at` or later.
#[derive(Clone, Debug)]
pub struct Faulty {
    /// The rule to break.
    pub fault: Fault,
    /// The LP that breaks it.
    pub culprit: u32,
    /// From which time on.
    pub at: f64,
    /// Number of LPs (at least 2).
    pub lps: u32,
}

impl Model for Faulty {
    type State = ();
    type Event = ();

    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps)
    }

    fn init(&self, ctx: &mut Ctx<'_, Self>) {
        ctx.send(ctx.me(), 1.0, ());
    }

    fn on_event(&self, _: &mut (), _: &(), ctx: &mut Ctx<'_, Self>) {
        if ctx.me() == self.culprit && ctx.now() >= self.at {
            match self.fault {
                Fault::BadDestination => ctx.send(ctx.lps(), 1.0, ()),
                Fault::NegativeDelay => ctx.send(ctx.me(), -1.0, ()),
                Fault::NanDelay => ctx.send(ctx.me(), f64::NAN, ()),
                Fault::BelowLookahead => ctx.send((ctx.me() + 1) % ctx.lps(), 0.25, ()),
                Fault::Panic => panic!("the faulty model panics on purpose"),
                Fault::FinishPanic | Fault::TopologyPanic | Fault::GlobalPanic => {
                    ctx.send((ctx.me() + 1) % ctx.lps(), 1.0, ())
                }
            }
            return;
        }
        ctx.send((ctx.me() + 1) % ctx.lps(), 1.0, ());
    }

    fn lookahead(&self) -> f64 {
        0.5
    }

    fn finish(&self, lp: u32, _: &(), _: &mut chronon::ModelStats) {
        if self.fault == Fault::FinishPanic && lp == self.culprit {
            panic!("the faulty model panics in finish on purpose");
        }
    }

    fn topology(&self, lp: u32) -> Option<Vec<(u32, f64)>> {
        if self.fault == Fault::TopologyPanic && lp == self.culprit {
            panic!("the faulty model panics in topology on purpose");
        }
        None
    }

    fn global_events(&self) -> Vec<f64> {
        if self.fault == Fault::GlobalPanic {
            vec![self.at]
        } else {
            Vec::new()
        }
    }

    fn on_global(&self, _: &mut chronon::GlobalCtx<'_, Self>) {
        panic!("the faulty model panics in a global event on purpose");
    }
}
