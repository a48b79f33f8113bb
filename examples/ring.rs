//! A token ring: the whole program of a model of one's own. Every LP starts with a few tokens;
//! a token waits at an LP for the lookahead plus an exponential time, then moves on to the
//! next LP. `ring run`, `ring check`, `ring sweep` and `ring report` all work with no more code:
//! `cargo run --release -- run --sync window --threads 2` in its own crate (docs/tutorial.md),
//! `cargo run --release --example ring -- run --sync window --threads 2` in chronon's.

use chronon::{Ctx, LpId, Model, ModelStats};
use serde::{Deserialize, Serialize};

/// The model's parameters: each field is a flag (`--tokens 8`) and a key of a `--config` file.
#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
struct Ring {
    /// Number of LPs in the ring.
    #[arg(long, default_value_t = 64)]
    lps: u32,
    /// Tokens each LP starts with.
    #[arg(long, default_value_t = 4)]
    tokens: u32,
    /// Smallest time a token waits at an LP (the model's lookahead).
    #[arg(long, default_value_t = 0.5)]
    lookahead: f64,
    /// Mean of the exponential wait on top of the lookahead.
    #[arg(long, default_value_t = 1.0)]
    mean: f64,
}

/// An event: a token arriving, with the number of hops it made so far.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Token {
    hops: u32,
}
// Tokens may cross process boundaries (`--procs`): plain data, checked field by field.
chronon::impl_shm_safe!(Token { hops });

/// What an LP remembers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Station {
    passed: u64,
    hops: u64,
}

impl Model for Ring {
    type State = Station;
    type Event = Token;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Station {
        for _ in 0..self.tokens {
            let wait = self.lookahead + ctx.rng().exponential_mean(self.mean);
            ctx.send(ctx.me(), wait, Token { hops: 0 });
        }
        Station::default()
    }

    fn on_event(&self, st: &mut Station, token: &Token, ctx: &mut Ctx<'_, Self>) {
        st.passed += 1;
        st.hops += u64::from(token.hops);
        let next = (ctx.me() + 1) % ctx.lps();
        let wait = self.lookahead + ctx.rng().exponential_mean(self.mean);
        let hops = token.hops + 1;
        ctx.send(next, wait, Token { hops });
    }

    fn lookahead(&self) -> f64 {
        self.lookahead
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(self.lps)
    }

    fn finish(&self, _lp: LpId, st: &Station, stats: &mut ModelStats) {
        stats.add("tokens_passed", st.passed as f64);
        stats.max("longest_trip", st.hops as f64);
    }
}

impl chronon_cli::ModelSpec for Ring {
    type Model = Ring;

    fn build(&self) -> Result<Ring, String> {
        if self.lps == 0 {
            return Err("--lps must be at least 1".into());
        }
        if !(self.lookahead >= 0.0 && self.lookahead.is_finite()) {
            let la = self.lookahead;
            return Err(format!("--lookahead is {la}; it must be >= 0"));
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
        "A token ring."
    }

    // `ring check` draws small random rings (and a random seed for each).
    fn draw(d: &mut chronon_cli::Draw, f: &mut chronon_cli::Flags) {
        f.set("lps", d.int(1, 40))
            .set("tokens", d.int(1, 4))
            .set("lookahead", d.pick(&["0.25", "0.5", "1"]))
            .set("end", d.int(5, 50));
    }
}

fn main() -> std::process::ExitCode {
    chronon_cli::App::new("ring").model::<Ring>("ring").run()
}
