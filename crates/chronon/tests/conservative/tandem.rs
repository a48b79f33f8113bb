//! The textbook tandem queue: stations in a line, each an M/M/1 queue that schedules its own
//! service completions (self-sends of any delay, most below the lookahead) and passes each
//! finished customer to the next station after a fixed transfer delay (the lookahead). Every
//! executor commits the sequential history, and the first station's mean number in system is
//! the M/M/1 figure; its time averages close at a global event's time and at the end time. A
//! module of the `conservative` test binary.

use chronon::measure::{Tally, TimeAverage};
use chronon::{
    ConservativeConfig, Ctx, Executor, GlobalCtx, LpId, Model, ModelStats, Simulation,
    TimeWarpConfig,
};

use super::random::executors;

const TRANSFER: f64 = 0.1;

struct Tandem {
    stations: u32,
    arrival_rate: f64,
    service_rate: f64,
    /// A global event at this time takes each station's time average so far.
    census: Option<f64>,
}

#[derive(Clone, Copy)]
enum Ev {
    Arrive,
    Done,
}

#[derive(Clone)]
struct Station {
    queue: u32,
    in_system: TimeAverage,
    sojourn: Tally,
    arrivals: Vec<f64>,
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
            queue: 0,
            in_system: TimeAverage::new(0.0, 0.0),
            sojourn: Tally::new(),
            arrivals: Vec::new(),
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
                st.queue += 1;
                st.arrivals.push(now);
                st.in_system.set(now, f64::from(st.queue));
                if st.queue == 1 {
                    // The service completion: a self-send, often sooner than the lookahead.
                    let s = ctx.rng().exponential_rate(self.service_rate);
                    ctx.send(me, s, Ev::Done);
                }
            }
            Ev::Done => {
                st.queue -= 1;
                let arrived = st.arrivals.remove(0);
                st.sojourn.record(now - arrived);
                st.in_system.set(now, f64::from(st.queue));
                if st.queue > 0 {
                    let s = ctx.rng().exponential_rate(self.service_rate);
                    ctx.send(me, s, Ev::Done);
                }
                if me + 1 < self.stations {
                    ctx.send(me + 1, TRANSFER, Ev::Arrive);
                }
            }
        }
    }

    fn lookahead(&self) -> f64 {
        TRANSFER
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(self.stations)
    }

    fn finish(&self, lp: LpId, st: &Station, stats: &mut ModelStats) {
        stats.tally(&format!("sojourn{lp}"), &st.sojourn);
        stats.time_average(&format!("in_system{lp}"), &st.in_system);
    }

    fn global_events(&self) -> Vec<f64> {
        self.census.into_iter().collect()
    }

    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        for lp in 0..ctx.lps() {
            let q = ctx.state(lp).in_system;
            ctx.stats().time_average(&format!("census{lp}"), &q);
        }
    }
}

#[test]
fn a_tandem_queue_with_self_sends_runs_under_every_executor() {
    let m = Tandem {
        stations: 4,
        arrival_rate: 1.0,
        service_rate: 2.0,
        census: None,
    };
    let run = |executor| {
        Simulation::new(Tandem { ..m })
            .end_time(4000.0)
            .seed(5)
            .executor(executor)
            .run()
            .expect("the tandem runs")
    };
    let seq = run(Executor::Sequential);
    // rho = 0.5 at the first station: L = rho / (1 - rho) = 1, W = 1 / (mu - lambda) = 1.
    let l = seq.model_stats.get("in_system0.mean").unwrap();
    let w = seq.model_stats.get("sojourn0.mean").unwrap();
    assert!((l - 1.0).abs() < 0.15, "L = {l}");
    assert!((w - 1.0).abs() < 0.15, "W = {w}");
    let mut all = executors(2);
    all.push(Executor::TimeWarp(TimeWarpConfig::new(2)));
    all.push(Executor::Window(ConservativeConfig::new(3)));
    for e in all {
        let what = format!("{e:?}");
        let r = run(e);
        assert_eq!(r.fingerprint, seq.fingerprint, "{what}");
        assert_eq!(r.committed, seq.committed, "{what}");
        assert_eq!(r.model_stats, seq.model_stats, "{what}");
    }
}

/// A time average taken in a global event closes at that event's time, one taken in `finish`
/// at the end time: each station observed exactly 1000 and 4000 time units, under every
/// executor.
#[test]
fn time_averages_close_at_a_global_event_and_at_the_end_time() {
    let run = |executor| {
        Simulation::new(Tandem {
            stations: 3,
            arrival_rate: 1.0,
            service_rate: 2.0,
            census: Some(1000.0),
        })
        .end_time(4000.0)
        .seed(8)
        .executor(executor)
        .run()
        .expect("the tandem runs")
    };
    let seq = run(Executor::Sequential);
    for k in 0..3 {
        assert_eq!(
            seq.model_stats.get(&format!("census{k}.time")),
            Some(1000.0)
        );
        assert_eq!(
            seq.model_stats.get(&format!("in_system{k}.time")),
            Some(4000.0)
        );
        let (early, whole) = (
            seq.model_stats.get(&format!("census{k}.mean")).unwrap(),
            seq.model_stats.get(&format!("in_system{k}.mean")).unwrap(),
        );
        assert!(early > 0.0 && early != whole, "{early} {whole}");
    }
    for e in [
        Executor::Window(ConservativeConfig::new(2)),
        Executor::TimeWarp(TimeWarpConfig::new(2)),
    ] {
        let what = format!("{e:?}");
        let r = run(e);
        assert_eq!(r.fingerprint, seq.fingerprint, "{what}");
        assert_eq!(r.model_stats, seq.model_stats, "{what}");
    }
}
