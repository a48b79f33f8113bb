//! An open Jackson network: three M/M/1 stations with Poisson arrivals from outside and
//! probabilistic routing, feedback included. Station k gets outside customers at rate
//! `γ_k × --arrival-scale` (γ = 1, 0.5, 0), serves one at a time at rate μ_k (4, 3, 2), and
//! sends a finished customer to station j with probability `ROUTES[k][j]` after `--transfer`
//! (the lookahead), or out of the network with what is left:
//!
//! | from \ to | 0 | 1 | 2 | out |
//! |---|---|---|---|---|
//! | 0 | 0 | 0.5 | 0.3 | 0.2 |
//! | 1 | 0.2 | 0 | 0.5 | 0.3 |
//! | 2 | 0.1 | 0 | 0 | 0.9 |
//!
//! By Jackson's theorem each station is, in steady state, an M/M/1 queue with the rate λ_k that
//! solves the traffic equations λ = γ + λ·ROUTES, so `in_system<k>.mean` (time-average number
//! at station k) is near ρ_k/(1−ρ_k) with ρ_k = λ_k/μ_k, and `sojourn<k>.mean` (time per visit)
//! near 1/(μ_k − λ_k). At `--arrival-scale 1`: λ = (1.3314, 1.1657, 0.9822), L = (0.4989,
//! 0.6355, 0.9651). Statistics count from `--warmup` on.
//!
//! The study it was written for: one warm-up, saved, and many replications branched from it.
//!
//! ```sh
//! jackson run --end 1000 --warmup 1000 --checkpoint-at 1000 --checkpoint-dir ck/
//! jackson sweep --restore ck/t1000 --end 5000 --arrival-scale 0.8,1.2 --replications 5 --out sb/
//! ```

use std::collections::VecDeque;

use chronon::measure::{Tally, TimeAverage};
use chronon::{Ctx, LpId, Model, ModelStats};
use serde::{Deserialize, Serialize};

/// Stations.
const STATIONS: usize = 3;
/// Outside arrivals per time unit at each station (γ), before `--arrival-scale`.
const OUTSIDE: [f64; STATIONS] = [1.0, 0.5, 0.0];
/// Service rate of each station (μ).
const SERVICE: [f64; STATIONS] = [4.0, 3.0, 2.0];
/// `ROUTES[k][j]`: the probability that a customer done at k goes to j next.
const ROUTES: [[f64; STATIONS]; STATIONS] = [[0.0, 0.5, 0.3], [0.2, 0.0, 0.5], [0.1, 0.0, 0.0]];

#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
struct Jackson {
    /// Multiplies every station's rate of outside arrivals (may change after a restore).
    #[arg(long, default_value_t = 1.0)]
    arrival_scale: f64,
    /// Time from one station to the next (the lookahead).
    #[arg(long, default_value_t = 0.1)]
    transfer: f64,
    /// Statistics count from this time on (may change after a restore).
    #[arg(long, default_value_t = 0.0)]
    warmup: f64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
enum Ev {
    /// A customer from outside arrives (and the next one is scheduled).
    Outside,
    /// A customer arrives from another station.
    Routed,
    /// The customer in service is done.
    Done,
}
chronon::impl_shm_safe!(
    enum Ev {
        Outside,
        Routed,
        Done,
    }
);

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Station {
    /// Arrival times of the customers here, the one in service first.
    waiting: VecDeque<f64>,
    /// When the number here last changed.
    changed: f64,
    /// Whether the statistics count (from the warm-up on).
    counting: bool,
    in_system: TimeAverage,
    sojourn: Tally,
}

impl Jackson {
    fn outside_rate(&self, k: usize) -> f64 {
        OUTSIDE[k] * self.arrival_scale
    }

    fn next_outside(&self, ctx: &mut Ctx<'_, Self>) {
        let rate = self.outside_rate(ctx.me() as usize);
        if rate > 0.0 {
            let t = ctx.rng().exponential_rate(rate);
            ctx.send(ctx.me(), t, Ev::Outside);
        }
    }

    fn start_service(&self, ctx: &mut Ctx<'_, Self>) {
        let mu = SERVICE[ctx.me() as usize];
        let s = ctx.rng().exponential_rate(mu);
        ctx.send(ctx.me(), s, Ev::Done);
    }

    /// Starts the statistics at the warm-up's end, with the number present then (from the last
    /// change, should a restored run have moved the warm-up's end before it).
    fn count_from_warmup(&self, st: &mut Station, now: f64) {
        if !st.counting && now >= self.warmup {
            let from = self.warmup.max(st.changed);
            st.in_system = TimeAverage::new(from, st.waiting.len() as f64);
            st.sojourn = Tally::new();
            st.counting = true;
        }
    }
}

impl Model for Jackson {
    type State = Station;
    type Event = Ev;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Station {
        self.next_outside(ctx);
        Station {
            waiting: VecDeque::new(),
            changed: 0.0,
            counting: self.warmup <= 0.0,
            in_system: TimeAverage::new(0.0, 0.0),
            sojourn: Tally::new(),
        }
    }

    fn on_event(&self, st: &mut Station, ev: &Ev, ctx: &mut Ctx<'_, Self>) {
        let (me, now) = (ctx.me() as usize, ctx.now());
        self.count_from_warmup(st, now);
        match ev {
            Ev::Outside | Ev::Routed => {
                if matches!(ev, Ev::Outside) {
                    self.next_outside(ctx);
                }
                st.waiting.push_back(now);
                st.changed = now;
                st.in_system.set(now, st.waiting.len() as f64);
                if st.waiting.len() == 1 {
                    self.start_service(ctx);
                }
            }
            Ev::Done => {
                let arrived = st.waiting.pop_front().expect("a customer in service");
                if st.counting {
                    st.sojourn.record(now - arrived);
                }
                st.changed = now;
                st.in_system.set(now, st.waiting.len() as f64);
                if !st.waiting.is_empty() {
                    self.start_service(ctx);
                }
                let u = ctx.rng().uniform();
                let mut acc = 0.0;
                for (j, p) in ROUTES[me].iter().enumerate() {
                    acc += p;
                    if u < acc {
                        ctx.send(j as LpId, self.transfer, Ev::Routed);
                        break;
                    }
                }
            }
        }
    }

    fn lookahead(&self) -> f64 {
        self.transfer
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(STATIONS as LpId)
    }

    fn finish(&self, lp: LpId, st: &Station, stats: &mut ModelStats) {
        if st.counting {
            stats.tally(&format!("sojourn{lp}"), &st.sojourn);
            stats.time_average(&format!("in_system{lp}"), &st.in_system);
        }
    }
}

impl chronon_cli::ModelSpec for Jackson {
    type Model = Jackson;

    fn build(&self) -> Result<Jackson, String> {
        if !(self.arrival_scale > 0.0 && self.arrival_scale.is_finite()) {
            return Err(format!(
                "--arrival-scale is {}; it must be > 0",
                self.arrival_scale
            ));
        }
        if !(self.transfer > 0.0 && self.transfer.is_finite()) {
            return Err(format!("--transfer is {}; it must be > 0", self.transfer));
        }
        if !(self.warmup >= 0.0 && self.warmup.is_finite()) {
            return Err(format!("--warmup is {}; it must be >= 0", self.warmup));
        }
        Ok(self.clone())
    }

    fn default_end() -> Option<f64> {
        Some(10_000.0)
    }

    fn about() -> &'static str {
        "An open Jackson network of three M/M/1 stations with feedback."
    }

    fn changeable() -> &'static [&'static str] {
        // What arrives from now on, and from when the statistics count; the saved queues mean
        // the same under any.
        &["arrival-scale", "warmup"]
    }

    fn draw(d: &mut chronon_cli::Draw, f: &mut chronon_cli::Flags) {
        f.set("arrival-scale", d.pick(&["0.5", "1", "1.2"]))
            .set("transfer", d.pick(&["0.05", "0.1", "1"]))
            .set("warmup", d.pick(&["0", "10"]))
            .set("end", d.int(20, 200));
    }
}

fn main() -> std::process::ExitCode {
    chronon_cli::App::new("jackson")
        .model::<Jackson>("jackson")
        .run()
}
