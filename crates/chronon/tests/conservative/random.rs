//! The random model of the conservative differential tests, the executors they run and the
//! comparison with the sequential run. A module of the `conservative` test binary.

use chronon::partition::Mapping;
use chronon::{
    ConservativeConfig, Ctx, Executor, GlobalCtx, LpId, Model, ModelStats, Report, Runtime,
    SimError, Simulation,
};

/// A random model. Every LP has a few out-links, each with a lookahead from `las`; an event
/// sends 0..=max_fanout events along random links (or to itself) with delay = link lookahead +
/// a small multiple of `quantum` (so timestamps collide). Global events every `period` read
/// all states.
#[derive(Clone, Debug)]
pub struct Random {
    pub lps: u32,
    pub seed: u64,
    pub las: Vec<f64>,
    pub degree: u32,
    pub max_fanout: u32,
    pub quantum: f64,
    pub period: f64,
    /// Links with zero lookahead only go from lower to higher LP ids (no zero cycle).
    pub acyclic_zero: bool,
    /// Break the declared links at this time (send to an undeclared LP).
    pub cheat_at: Option<f64>,
    pub log: Option<SharedLog>,
}

/// (LP, time, value) of every global event, shared with the test.
pub type SharedLog = std::sync::Arc<std::sync::Mutex<Vec<(u32, f64, u64)>>>;

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

impl Random {
    /// `lps` LPs with links of the lookaheads `las`: one link each, one event sent per event,
    /// timestamps on a 0.25 grid, zero-lookahead links without cycles, no global events.
    pub fn new(lps: u32, seed: u64, las: Vec<f64>) -> Self {
        Random {
            lps,
            seed,
            las,
            degree: 1,
            max_fanout: 1,
            quantum: 0.25,
            period: 0.0,
            acyclic_zero: true,
            cheat_at: None,
            log: None,
        }
    }

    /// The model of seed `seed` with `lps` LPs used by the differential tests: zero and
    /// positive lookaheads on even seeds, positive only on odd ones; 1 to 4 links per LP,
    /// fan-out up to 1 to 3; global events every 1.5 except on every third seed.
    pub fn seeded(seed: u64, lps: u32) -> Self {
        Random {
            degree: 1 + (seed as u32 % 4),
            max_fanout: 1 + (seed as u32 % 3),
            period: if seed % 3 == 0 { 0.0 } else { 1.5 },
            ..Random::new(
                lps,
                seed,
                if seed % 2 == 0 {
                    vec![0.0, 0.25, 1.0]
                } else {
                    vec![0.5, 1.0, 2.0]
                },
            )
        }
    }

    fn links(&self, lp: u32) -> Vec<(LpId, f64)> {
        let mut v = Vec::new();
        for k in 0..self.degree {
            let h = mix(self.seed ^ (u64::from(lp) << 20) ^ u64::from(k));
            let d = (h % u64::from(self.lps)) as u32;
            if d == lp {
                continue;
            }
            let mut la = self.las[(h >> 32) as usize % self.las.len()];
            if la == 0.0 && self.acyclic_zero && d < lp {
                la = self
                    .las
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min)
                    .max(0.5);
            }
            if !v.iter().any(|&(x, _)| x == d) {
                v.push((d, la));
            }
        }
        v
    }
}

#[derive(Clone, Debug, Default)]
pub struct St {
    seen: u64,
    hash: u64,
}

impl Model for Random {
    type State = St;
    type Event = u64;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> St {
        let n = 2 + ctx.rng().below(3);
        for i in 0..n {
            let d = self.quantum * ctx.rng().below(4) as f64;
            ctx.send(ctx.me(), d, i);
        }
        St::default()
    }

    fn on_event(&self, st: &mut St, ev: &u64, ctx: &mut Ctx<'_, Self>) {
        st.seen += 1;
        st.hash = mix(st.hash ^ *ev ^ ctx.now().to_bits());
        let me = ctx.me();
        if let Some(t) = self.cheat_at {
            if ctx.now() >= t {
                let links = self.links(me);
                let bad = (0..self.lps).find(|d| *d != me && !links.iter().any(|l| l.0 == *d));
                if let Some(d) = bad {
                    ctx.send(d, 1.0, 0);
                    return;
                }
            }
        }
        let links = self.links(me);
        // Fan-out 0, 1 or 2 (mean 1) keeps the population stable on average.
        let fanout = if self.max_fanout > 1 {
            [0, 1, 1, 2][ctx.rng().below(4) as usize]
        } else {
            1
        };
        for _ in 0..fanout {
            let pick = ctx.rng().below(links.len() as u64 + 1) as usize;
            let extra = self.quantum * ctx.rng().below(3) as f64;
            let payload = st.hash;
            if pick == links.len() {
                ctx.send(me, self.quantum + extra, payload);
            } else {
                let (d, la) = links[pick];
                ctx.send(d, la + extra, payload);
            }
        }
    }

    fn commit(&self, ev: &u64, ctx: &chronon::CommitCtx) {
        if let Some(l) = &self.log {
            l.lock().unwrap().push((ctx.me, ctx.now, *ev));
        }
    }

    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        Some(self.links(lp))
    }

    fn global_events(&self) -> Vec<f64> {
        if self.period > 0.0 {
            vec![self.period * 0.5]
        } else {
            Vec::new()
        }
    }

    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let mut total = 0u64;
        let mut h = ctx.now().to_bits();
        for lp in 0..ctx.lps() {
            let s = ctx.state(lp);
            total += s.seen;
            h = mix(h ^ s.hash);
        }
        let now = ctx.now();
        ctx.stats().add("global_seen_sum", total as f64);
        ctx.stats()
            .set("global_state_hash_lo", (h & 0xffff_ffff) as f64);
        ctx.stats().add("global_calls", 1.0);
        let _ = now;
        ctx.schedule(self.period);
    }

    fn finish(&self, _lp: LpId, st: &St, stats: &mut ModelStats) {
        stats.add("seen", st.seen as f64);
    }
}

pub fn executors(threads: usize) -> Vec<Executor> {
    let c = ConservativeConfig::new(threads);
    vec![
        Executor::Window(c.clone()),
        Executor::Lockstep(c.clone().mapping(Mapping::RoundRobin)),
        // The work-stealing (Cilk) runtime with 1, 7 or 50 LPs per task.
        Executor::Lockstep(c.clone().runtime(Runtime::WorkStealing {
            threshold: [1, 7, 50][threads % 3],
        })),
        // The active-threads runtime with 2, 5 or 1 LPs per light-weight thread.
        Executor::Lockstep(c.clone().runtime(Runtime::ActiveThreads {
            threshold: [2, 5, 1][threads % 3],
        })),
        Executor::NullMessage(c),
    ]
}

/// Four LPs, one link each, lookahead 1: the small model of the settings tests.
pub fn tiny() -> Random {
    Random {
        quantum: 0.5,
        ..Random::new(4, 0, vec![1.0])
    }
}

pub fn run(m: &Random, exec: Executor, end: f64) -> Result<chronon::Report, SimError> {
    Simulation::new(m.clone())
        .lps(m.lps)
        .end_time(end)
        .seed(m.seed)
        .executor(exec)
        .run()
}

/// Asserts that `r` commits the history of the reference run `reference`: fingerprint,
/// committed count, final states and counters (`model_stats`).
pub fn assert_same_history(r: &Report, reference: &Report, name: &str) {
    assert_eq!(r.fingerprint, reference.fingerprint, "{name}");
    assert_eq!(r.committed, reference.committed, "{name}");
    assert_eq!(r.model_stats, reference.model_stats, "{name}");
}
