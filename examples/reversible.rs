//! Reverse computation for Time Warp: hot potatoes thrown between LPs. Each potato carries a
//! number that changes at every throw (the Collatz step); an LP adds up what it caught. The
//! handler's changes to the state are undone by its reverse handler (`undo`), so Time Warp rolls an event back
//! without saving a copy of the state (`--state-saving reverse`, or `auto`, which picks it).
//! `--check-reverse` runs every event forward, then in reverse, and checks the state is restored.
//!
//! Its statistics are kept the reversible way: an [`ExactTally`] of the values caught, an
//! [`ExactTimeAverage`] of the running total and a [`Histogram`] of the values, each updated
//! in `on_event` and taken back in `undo` (`unrecord`, `unadd`), exactly, so Time Warp with
//! reverse computation reports the sequential run's figures bit for bit. The time average
//! closes at the end time by itself in `finish`.
//!
//! ```sh
//! cargo run --release --example reversible -- run --sync timewarp --threads 2 --check-reverse
//! ```

use chronon::measure::{ExactTally, ExactTimeAverage, Histogram};
use chronon::{Ctx, LpId, Model, ModelStats, ReverseCtx, ReverseFn};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
struct Potatoes {
    /// Number of LPs.
    #[arg(long, default_value_t = 32)]
    lps: u32,
    /// Potatoes each LP starts with.
    #[arg(long, default_value_t = 2)]
    potatoes: u32,
    /// Smallest time of a throw (the lookahead).
    #[arg(long, default_value_t = 0.2)]
    lookahead: f64,
    /// Mean of the exponential time of a throw beyond the lookahead.
    #[arg(long, default_value_t = 1.0)]
    mean: f64,
    /// Have no reverse handler: Time Warp saves copies of the states instead (`--state-saving
    /// auto` copies; `reverse` and `--check-reverse` are refused). A plain `bool` parameter:
    /// `--copy-states` turns it on.
    #[arg(long)]
    #[serde(default)]
    copy_states: bool,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Potato {
    value: u64,
}
chronon::impl_shm_safe!(Potato { value });

/// What an LP caught: `PartialEq`, so that `--check-reverse` can compare states.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Catcher {
    caught: u64,
    total: u64,
    /// The values caught.
    values: ExactTally,
    /// The running total, over time.
    level: ExactTimeAverage,
    /// The values caught, in bins of 128 up to 1024.
    sizes: Histogram,
}

fn collatz(n: u64) -> u64 {
    if n <= 1 {
        27
    } else if n % 2 == 0 {
        n / 2
    } else {
        3 * n + 1
    }
}

impl Potatoes {
    fn throw(&self, ctx: &mut Ctx<'_, Self>, value: u64) {
        let lps = u64::from(ctx.lps());
        let to = ctx.rng().below(lps) as LpId;
        let delay = self.lookahead + ctx.rng().exponential_mean(self.mean);
        ctx.send(to, delay, Potato { value });
    }
}

impl Potatoes {
    /// Undoes `on_event`'s changes to the state; the engine itself restores the LP's random
    /// stream and cancels what the event sent.
    fn undo(&self, st: &mut Catcher, p: &Potato, ctx: &ReverseCtx) {
        st.caught -= 1;
        st.total -= p.value;
        st.values.unrecord(p.value as f64);
        st.level.unadd(ctx.now, p.value as f64);
        st.sizes.unrecord(p.value as f64);
    }
}

impl Model for Potatoes {
    type State = Catcher;
    type Event = Potato;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Catcher {
        for k in 0..self.potatoes {
            let value = u64::from(ctx.me()) * 7 + u64::from(k) + 1;
            self.throw(ctx, value);
        }
        Catcher {
            caught: 0,
            total: 0,
            values: ExactTally::new(),
            level: ExactTimeAverage::new(0.0, 0.0),
            sizes: Histogram::new(0.0, 1024.0, 8),
        }
    }

    fn on_event(&self, st: &mut Catcher, p: &Potato, ctx: &mut Ctx<'_, Self>) {
        st.caught += 1;
        st.total += p.value;
        st.values.record(p.value as f64);
        st.level.add(ctx.now(), p.value as f64);
        st.sizes.record(p.value as f64);
        self.throw(ctx, collatz(p.value));
    }

    // The model's reverse handler: one declaration, so there is no way to have one without
    // the engine knowing. Whether there is one depends on a parameter.
    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        if self.copy_states {
            None
        } else {
            Some(Self::undo)
        }
    }

    fn lookahead(&self) -> f64 {
        self.lookahead
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(self.lps)
    }

    fn finish(&self, _lp: LpId, st: &Catcher, stats: &mut ModelStats) {
        stats.add("caught", st.caught as f64);
        stats.add("total", st.total as f64);
        stats.tally("value", &st.values);
        // Closed at the end time by `time_average` itself.
        stats.time_average("level", &st.level);
        stats.histogram("size", &st.sizes);
    }
}

impl chronon_cli::ModelSpec for Potatoes {
    type Model = Potatoes;

    fn build(&self) -> Result<Potatoes, String> {
        if self.lps == 0 {
            return Err("--lps must be at least 1".into());
        }
        if !(self.lookahead >= 0.0 && self.lookahead.is_finite()) {
            return Err(format!(
                "--lookahead is {}; it must be >= 0",
                self.lookahead
            ));
        }
        if !(self.mean >= 0.0 && self.mean.is_finite()) {
            return Err(format!("--mean is {}; it must be >= 0", self.mean));
        }
        Ok(self.clone())
    }

    fn default_end() -> Option<f64> {
        Some(1000.0)
    }

    fn about() -> &'static str {
        "Hot potatoes: a model with reverse computation."
    }

    fn draw(d: &mut chronon_cli::Draw, f: &mut chronon_cli::Flags) {
        f.set("lps", d.int(1, 40))
            .set("potatoes", d.int(1, 3))
            .set("lookahead", d.pick(&["0.1", "0.5"]))
            .set("end", d.int(5, 40))
            // A plain bool: `check` passes `--copy-states` or leaves it out.
            .set("copy-states", d.chance(0.5));
    }

    // The states are `PartialEq`: `--check-reverse` may compare them.
    fn check_reverse() -> Option<chronon_cli::SimHook<Potatoes>> {
        Some(chronon::Simulation::check_reverse)
    }
}

fn main() -> std::process::ExitCode {
    chronon_cli::App::new("reversible")
        .model::<Potatoes>("potatoes")
        .run()
}
