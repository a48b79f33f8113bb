//! A tandem queue: M/M/1 stations in a line. Customers arrive at the first station (Poisson,
//! `--arrival-rate`); each station serves one at a time (exponential, `--service-rate`) and
//! passes a finished customer to the next station after `--transfer` (the lookahead). A
//! station schedules its own service completions: self-sends, most of them sooner than the
//! lookahead, which every executor allows.
//!
//! By Burke's theorem every station is an M/M/1 queue with ρ = λ/μ, so the report's
//! `in_system<k>.mean` (time-average number at station k) is near ρ/(1-ρ) and
//! `sojourn<k>.mean` (time at station k) near 1/(μ-λ); with the defaults both are 1.
//!
//! ```sh
//! cargo run --release --example tandem -- run --end 20000 --sync null-message --threads 2
//! ```

use std::collections::VecDeque;

use chronon::measure::{Tally, TimeAverage};
use chronon::{Ctx, LpId, Model, ModelStats};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
struct Tandem {
    /// Stations in the line.
    #[arg(long, default_value_t = 4)]
    stations: u32,
    /// Customers per time unit arriving at the first station (λ).
    #[arg(long, default_value_t = 1.0)]
    arrival_rate: f64,
    /// Customers per time unit a busy station serves (μ).
    #[arg(long, default_value_t = 2.0)]
    service_rate: f64,
    /// Time from one station to the next (the lookahead).
    #[arg(long, default_value_t = 0.1)]
    transfer: f64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
enum Ev {
    /// A customer arrives.
    Arrive,
    /// The customer in service is done.
    Done,
}
chronon::impl_shm_safe!(
    enum Ev {
        Arrive,
        Done,
    }
);

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Station {
    /// Arrival times of the customers here, the one in service first.
    waiting: VecDeque<f64>,
    in_system: TimeAverage,
    sojourn: Tally,
}

impl Tandem {
    fn start_service(&self, ctx: &mut Ctx<'_, Self>) {
        let s = ctx.rng().exponential_rate(self.service_rate);
        ctx.send(ctx.me(), s, Ev::Done);
    }
}

impl Model for Tandem {
    type State = Station;
    type Event = Ev;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Station {
        if ctx.me() == 0 {
            let t = ctx.rng().exponential_rate(self.arrival_rate);
            ctx.send(0, t, Ev::Arrive);
        }
        Station {
            waiting: VecDeque::new(),
            in_system: TimeAverage::new(0.0, 0.0),
            sojourn: Tally::new(),
        }
    }

    fn on_event(&self, st: &mut Station, ev: &Ev, ctx: &mut Ctx<'_, Self>) {
        let (me, now) = (ctx.me(), ctx.now());
        match ev {
            Ev::Arrive => {
                if me == 0 {
                    let t = ctx.rng().exponential_rate(self.arrival_rate);
                    ctx.send(0, t, Ev::Arrive);
                }
                st.waiting.push_back(now);
                st.in_system.set(now, st.waiting.len() as f64);
                if st.waiting.len() == 1 {
                    self.start_service(ctx);
                }
            }
            Ev::Done => {
                let arrived = st.waiting.pop_front().expect("a customer in service");
                st.sojourn.record(now - arrived);
                st.in_system.set(now, st.waiting.len() as f64);
                if !st.waiting.is_empty() {
                    self.start_service(ctx);
                }
                if me + 1 < self.stations {
                    ctx.send(me + 1, self.transfer, Ev::Arrive);
                }
            }
        }
    }

    fn lookahead(&self) -> f64 {
        self.transfer
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(self.stations)
    }

    fn finish(&self, lp: LpId, st: &Station, stats: &mut ModelStats) {
        stats.tally(&format!("sojourn{lp}"), &st.sojourn);
        stats.time_average(&format!("in_system{lp}"), &st.in_system);
    }
}

impl chronon_cli::ModelSpec for Tandem {
    type Model = Tandem;

    fn build(&self) -> Result<Tandem, String> {
        if self.stations == 0 {
            return Err("--stations must be at least 1".into());
        }
        for (flag, v) in [
            ("--arrival-rate", self.arrival_rate),
            ("--service-rate", self.service_rate),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("{flag} is {v}; it must be > 0"));
            }
        }
        if !(self.transfer > 0.0 && self.transfer.is_finite()) {
            return Err(format!("--transfer is {}; it must be > 0", self.transfer));
        }
        Ok(self.clone())
    }

    fn default_end() -> Option<f64> {
        Some(10_000.0)
    }

    fn about() -> &'static str {
        "M/M/1 stations in a line."
    }

    fn draw(d: &mut chronon_cli::Draw, f: &mut chronon_cli::Flags) {
        f.set("stations", d.int(1, 6))
            .set("arrival-rate", d.pick(&["0.5", "1", "2"]))
            .set("service-rate", d.pick(&["1", "2", "4"]))
            .set("transfer", d.pick(&["0.05", "0.1", "1"]))
            .set("end", d.int(20, 200));
    }
}

fn main() -> std::process::ExitCode {
    chronon_cli::App::new("tandem")
        .model::<Tandem>("tandem")
        .run()
}
