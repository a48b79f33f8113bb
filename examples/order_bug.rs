//! A model with a planted bug, for `check` to find: its handler reads a counter shared by the
//! whole process, so where a token goes depends on the order in which *all* LPs' events ran,
//! not only on the LP's own history. The sequential run is the same every time; a parallel run
//! interleaves the LPs differently and commits another history. `order-bug check` stops at the
//! first mismatch and names the first LP and event where the histories part, the likely cause
//! (state outside the LP) and two shrunk command lines (`--trace`) that reproduce it.
//!
//! ```sh
//! cargo run --release --example order-bug -- check --runs 3
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use chronon::{Ctx, LpId, Model, ModelStats};
use serde::{Deserialize, Serialize};

/// THE BUG: state outside the LPs, shared by every event of the process.
static EVENTS_SO_FAR: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
struct OrderBug {
    /// Number of LPs.
    #[arg(long, default_value_t = 16)]
    lps: u32,
}

impl Model for OrderBug {
    type State = u64;
    type Event = ();

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send(ctx.me(), 1.0, ());
        0
    }

    fn on_event(&self, n: &mut u64, _: &(), ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        // Ordering: the bug does not need more than a count.
        let k = EVENTS_SO_FAR.fetch_add(1, Ordering::Relaxed);
        let to = (ctx.me() + 1 + (k % 3) as LpId) % ctx.lps();
        let delay = 1.0 + ctx.rng().uniform();
        ctx.send(to, delay, ());
    }

    fn lookahead(&self) -> f64 {
        1.0
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(self.lps)
    }

    fn finish(&self, _lp: LpId, n: &u64, stats: &mut ModelStats) {
        stats.add("hops", *n as f64);
    }
}

impl chronon_cli::ModelSpec for OrderBug {
    type Model = OrderBug;

    fn build(&self) -> Result<OrderBug, String> {
        if self.lps < 2 {
            return Err("--lps must be at least 2".into());
        }
        Ok(self.clone())
    }

    fn default_end() -> Option<f64> {
        Some(50.0)
    }

    fn draw(d: &mut chronon_cli::Draw, f: &mut chronon_cli::Flags) {
        f.set("lps", d.int(8, 32));
    }
}

fn main() -> std::process::ExitCode {
    chronon_cli::App::new("order-bug")
        .model::<OrderBug>("order-bug")
        .run()
}
