//! A declared topology with a lookahead per link: trucks drive between cities on a ring road.
//! City `i` has a road to each neighbour; the road between `i` and `i + 1` takes at least
//! `--base + --step * (i % 5)` time units, so every link has its own lookahead. The conservative
//! executors use these per-link figures (not one global lookahead) to compute how far each
//! worker may run; every executor refuses a send along a road not declared, or faster than the
//! road's lookahead.
//!
//! This model has no default end: a run says how long it is.
//!
//! ```sh
//! cargo run --release --example links -- run --end 500 --sync null-message --threads 2
//! ```

use chronon::{Ctx, LpId, Model, ModelStats, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
struct Roads {
    /// Cities on the ring road (at least 3).
    #[arg(long, default_value_t = 24)]
    cities: u32,
    /// Trucks starting in each city.
    #[arg(long, default_value_t = 3)]
    trucks: u32,
    /// Shortest drive between two neighbours.
    #[arg(long, default_value_t = 0.5)]
    base: f64,
    /// How much longer each of the five road kinds is than the previous one.
    #[arg(long, default_value_t = 0.25)]
    step: f64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Truck {
    /// Cities visited so far.
    stops: u32,
}
chronon::impl_shm_safe!(Truck { stops });

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct City {
    visits: u64,
}

impl Roads {
    /// The shortest drive on the road between city `a` and its clockwise neighbour.
    fn road(&self, a: LpId) -> Time {
        self.base + self.step * f64::from(a % 5)
    }

    /// The shortest drive from `from` to its neighbour `to`.
    fn drive(&self, from: LpId, to: LpId) -> Time {
        if to == (from + 1) % self.cities {
            self.road(from)
        } else {
            self.road(to)
        }
    }

    fn depart(&self, ctx: &mut Ctx<'_, Self>, stops: u32) {
        let me = ctx.me();
        let to = if ctx.rng().uniform() < 0.5 {
            (me + 1) % self.cities
        } else {
            (me + self.cities - 1) % self.cities
        };
        let extra = ctx.rng().exponential_mean(1.0);
        ctx.send(to, self.drive(me, to) + extra, Truck { stops });
    }
}

impl Model for Roads {
    type State = City;
    type Event = Truck;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> City {
        for _ in 0..self.trucks {
            self.depart(ctx, 0);
        }
        City::default()
    }

    fn on_event(&self, city: &mut City, truck: &Truck, ctx: &mut Ctx<'_, Self>) {
        city.visits += 1;
        self.depart(ctx, truck.stops + 1);
    }

    // The smallest lookahead of any road: what an executor may assume without the topology.
    fn lookahead(&self) -> f64 {
        self.base
    }

    // The roads out of `lp`, each with its own lookahead.
    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, Time)>> {
        let next = (lp + 1) % self.cities;
        let prev = (lp + self.cities - 1) % self.cities;
        Some(vec![
            (next, self.drive(lp, next)),
            (prev, self.drive(lp, prev)),
        ])
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(self.cities)
    }

    fn finish(&self, lp: LpId, city: &City, stats: &mut ModelStats) {
        stats.add("visits", city.visits as f64);
        stats.max("busiest_city_visits", city.visits as f64);
        let _ = lp;
    }
}

impl chronon_cli::ModelSpec for Roads {
    type Model = Roads;

    fn build(&self) -> Result<Roads, String> {
        if self.cities < 3 {
            return Err(format!(
                "--cities is {}; a ring road needs at least 3",
                self.cities
            ));
        }
        if !(self.base > 0.0 && self.base.is_finite()) {
            return Err(format!("--base is {}; it must be > 0", self.base));
        }
        if !(self.step >= 0.0 && self.step.is_finite()) {
            return Err(format!("--step is {}; it must be >= 0", self.step));
        }
        Ok(self.clone())
    }

    fn about() -> &'static str {
        "Trucks on a ring road whose roads each have their own lookahead."
    }

    fn draw(d: &mut chronon_cli::Draw, f: &mut chronon_cli::Flags) {
        f.set("cities", d.int(3, 30))
            .set("trucks", d.int(1, 4))
            .set("base", d.pick(&["0.25", "0.5", "1"]))
            .set("step", d.pick(&["0", "0.25", "1"]))
            .set("end", d.int(5, 60));
    }
}

fn main() -> std::process::ExitCode {
    chronon_cli::App::new("links").model::<Roads>("roads").run()
}
