//! Differential tests: every conservative executor, at 1 to 4 threads, commits the same history
//! as the sequential executor on random models (random topology, lookaheads, fan-out, equal
//! timestamps, zero delays, global events); models that break their declared links get a
//! clear error.

use chronon::barrier::BarrierKind;
use chronon::partition::Mapping;
use chronon::{
    ConservativeConfig, Ctx, Executor, GlobalCtx, LpId, Model, ModelStats, Runtime, SimError,
    Simulation,
};

/// A random model. Every LP has a few out-links, each with a lookahead from `las`; an event
/// sends 0..=max_fanout events along random links (or to itself) with delay = link lookahead +
/// a small multiple of `quantum` (so timestamps collide). Global events every `period` read
/// all states.
#[derive(Clone, Debug)]
struct Random {
    lps: u32,
    seed: u64,
    las: Vec<f64>,
    degree: u32,
    max_fanout: u32,
    quantum: f64,
    period: f64,
    /// Links with zero lookahead only go from lower to higher LP ids (no zero cycle).
    acyclic_zero: bool,
    /// Break the declared links at this time (send to an undeclared LP).
    cheat_at: Option<f64>,
    log: Option<SharedLog>,
}

/// (LP, time, value) of every global event, shared with the test.
type SharedLog = std::sync::Arc<std::sync::Mutex<Vec<(u32, f64, u64)>>>;

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

impl Random {
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
struct St {
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

fn executors(threads: usize) -> Vec<Executor> {
    let c = ConservativeConfig::new(threads);
    vec![
        Executor::Window(c.clone()),
        Executor::Lockstep(c.clone().mapping(Mapping::RoundRobin)),
        // The work-stealing runtime with 1, 7 or 50 LPs per task.
        Executor::Lockstep(c.clone().runtime(Runtime::WorkStealing {
            threshold: [1, 7, 50][threads % 3],
        })),
        Executor::NullMessage(c),
    ]
}

/// Four LPs, one link each, lookahead 1: the small model of the settings tests.
fn tiny() -> Random {
    Random {
        lps: 4,
        seed: 0,
        las: vec![1.0],
        degree: 1,
        max_fanout: 1,
        quantum: 0.5,
        period: 0.0,
        acyclic_zero: true,
        cheat_at: None,
        log: None,
    }
}

#[test]
fn work_stealing_settings_are_checked() {
    let m = tiny();
    let ws = |threshold| ConservativeConfig::new(2).runtime(Runtime::WorkStealing { threshold });
    let e = run(&m, Executor::Lockstep(ws(0)), 5.0).unwrap_err();
    assert!(
        e.is_config() && e.to_string().contains("--threshold"),
        "{e}"
    );
    for exec in [Executor::Window(ws(5)), Executor::NullMessage(ws(5))] {
        let e = run(&m, exec, 5.0).unwrap_err();
        assert!(
            e.is_config() && e.to_string().contains("lockstep only"),
            "{e}"
        );
    }
    let r = run(&m, Executor::Lockstep(ws(3)), 5.0).unwrap();
    assert_eq!(r.workers.len(), 2, "one entry per pool thread");
    let events: f64 = r.workers.iter().map(|w| w["events"]).sum();
    assert_eq!(events as u64, r.committed);
    assert_eq!(r.executor_stats["threshold"], 3.0);
}

fn run(m: &Random, exec: Executor, end: f64) -> Result<chronon::Report, SimError> {
    Simulation::new(m.clone())
        .lps(m.lps)
        .end_time(end)
        .seed(m.seed)
        .executor(exec)
        .run()
}

#[test]
fn random_models_match_the_sequential_history() {
    for seed in 0..16u64 {
        let m = Random {
            lps: 5 + (seed as u32 * 7) % 13,
            seed,
            las: if seed % 2 == 0 {
                vec![0.0, 0.25, 1.0]
            } else {
                vec![0.5, 1.0, 2.0]
            },
            degree: 1 + (seed as u32 % 4),
            max_fanout: 1 + (seed as u32 % 3),
            quantum: 0.25,
            period: if seed % 3 == 0 { 0.0 } else { 1.5 },
            acyclic_zero: true,
            cheat_at: None,
            log: None,
        };
        let end = 20.0;
        let seq = run(&m, Executor::Sequential, end).unwrap();
        assert!(
            seq.committed > 50,
            "seed {seed}: a trivial run ({})",
            seq.committed
        );
        // Null messages need positive lookahead between workers: the same model with every
        // zero lookahead raised (its own sequential reference).
        let m_nm = Random {
            las: m
                .las
                .iter()
                .map(|&l| if l == 0.0 { 0.25 } else { l })
                .collect(),
            ..m.clone()
        };
        let seq_nm = run(&m_nm, Executor::Sequential, end).unwrap();
        for threads in 1..=4 {
            for exec in executors(threads) {
                let name = format!("seed {seed}, {} x{threads}", exec.name());
                let (model, reference) = if matches!(exec, Executor::NullMessage(_)) {
                    (&m_nm, &seq_nm)
                } else {
                    (&m, &seq)
                };
                let r = run(model, exec, end).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(r.fingerprint, reference.fingerprint, "{name}");
                assert_eq!(r.committed, reference.committed, "{name}");
                assert_eq!(r.model_stats, reference.model_stats, "{name}");
            }
        }
    }
}

#[test]
fn every_barrier_gives_the_same_history() {
    let m = Random {
        lps: 12,
        seed: 3,
        las: vec![0.0, 0.5],
        degree: 3,
        max_fanout: 2,
        quantum: 0.5,
        period: 2.0,
        acyclic_zero: false,
        cheat_at: None,
        log: None,
    };
    let seq = run(&m, Executor::Sequential, 20.0).unwrap();
    for b in [
        BarrierKind::Std,
        BarrierKind::Semaphore,
        BarrierKind::Spin,
        BarrierKind::Tree { fan_in: 2 },
    ] {
        for exec in [
            Executor::Window(ConservativeConfig::new(3).barrier(b)),
            Executor::Lockstep(ConservativeConfig::new(3).barrier(b)),
        ] {
            let r = run(&m, exec, 20.0).unwrap();
            assert_eq!(r.fingerprint, seq.fingerprint, "{b:?}");
            assert_eq!(r.model_stats, seq.model_stats, "{b:?}");
        }
    }
}

#[test]
fn zero_lookahead_cycles_are_rejected_by_null_messages_only() {
    // Full mesh with lookahead 0 between two workers: a zero-lookahead cycle.
    let m = Random {
        lps: 6,
        seed: 1,
        las: vec![0.0],
        degree: 6,
        max_fanout: 1,
        quantum: 0.5,
        period: 0.0,
        acyclic_zero: false,
        cheat_at: None,
        log: None,
    };
    let e = run(&m, Executor::NullMessage(ConservativeConfig::new(2)), 10.0).unwrap_err();
    assert!(e.is_config(), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("cycle") && msg.contains("LP "), "{msg}");
    assert_eq!(msg.lines().count(), 1);
    // One worker has no links between workers: fine. Window and lock-step run it too.
    let seq = run(&m, Executor::Sequential, 10.0).unwrap();
    for exec in [
        Executor::NullMessage(ConservativeConfig::new(1)),
        Executor::Window(ConservativeConfig::new(2)),
        Executor::Lockstep(ConservativeConfig::new(2)),
    ] {
        assert_eq!(run(&m, exec, 10.0).unwrap().fingerprint, seq.fingerprint);
    }
}

#[test]
fn breaking_the_declared_links_is_a_model_error_everywhere() {
    let m = Random {
        lps: 8,
        seed: 5,
        las: vec![0.5, 1.0],
        degree: 2,
        max_fanout: 1,
        quantum: 0.25,
        period: 0.0,
        acyclic_zero: true,
        cheat_at: Some(4.0),
        log: None,
    };
    let seq = run(&m, Executor::Sequential, 20.0).unwrap_err();
    assert!(matches!(seq, SimError::Model(_)), "{seq}");
    assert!(seq.to_string().contains("declared links"), "{seq}");
    for threads in [1, 2, 4] {
        let mut execs = executors(threads);
        execs.push(Executor::Window(
            ConservativeConfig::new(threads)
                .dedicated(0.0)
                .shared_sets(2),
        ));
        execs.push(Executor::TimeWarp { threads });
        for exec in execs {
            let e = run(&m, exec, 20.0).unwrap_err();
            assert!(matches!(e, SimError::Model(_)), "{e}");
            assert!(e.to_string().contains("declared links"), "{e}");
        }
    }
}

#[test]
fn zero_threads_is_a_config_error() {
    let m = tiny();
    for exec in executors(0) {
        let e = run(&m, exec, 5.0).unwrap_err();
        assert!(e.is_config() && e.to_string().contains("at least 1"), "{e}");
    }
}

#[test]
fn a_stop_request_ends_every_protocol_cleanly() {
    let m = Random {
        lps: 10,
        seed: 2,
        las: vec![0.5],
        degree: 2,
        max_fanout: 1,
        quantum: 0.25,
        period: 1.0,
        acyclic_zero: true,
        cheat_at: None,
        log: None,
    };
    for threads in [1, 2, 4] {
        for exec in executors(threads) {
            let progress = std::sync::Arc::new(chronon::Progress::new());
            progress.request_stop();
            let r = Simulation::new(m.clone())
                .lps(m.lps)
                .end_time(1e9)
                .seed(1)
                .executor(exec)
                .progress(progress)
                .run()
                .unwrap();
            assert!(!r.complete);
        }
    }
}

/// Tokens that hop along a ring, each for a limited number of hops.
#[derive(Clone)]
struct Hops;

impl Model for Hops {
    type State = u64;
    type Event = u32;
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send(ctx.me(), 0.5, 20 + ctx.me());
        0
    }
    fn on_event(&self, n: &mut u64, ttl: &u32, ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        if *ttl > 0 {
            let next = (ctx.me() + 1) % ctx.lps();
            let d = 0.5 + 0.5 * ctx.rng().below(2) as f64;
            ctx.send(next, d, ttl - 1);
        }
    }
    fn lookahead(&self) -> f64 {
        0.5
    }
    fn global_events(&self) -> Vec<f64> {
        vec![1.0]
    }
    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let total: u64 = (0..ctx.lps()).map(|lp| *ctx.state(lp)).sum();
        ctx.stats().add("census", total as f64);
        ctx.schedule(1.0);
    }
}

#[test]
fn a_run_without_end_time_stops_when_no_event_is_left() {
    // No end time: the run ends when the last token stops, and global events stop with it.
    let seq = Simulation::new(Hops).lps(6).seed(4).run().unwrap();
    assert!(seq.complete);
    assert_eq!(seq.committed, (0..6).map(|i| 21 + i).sum::<u64>());
    assert!(seq.model_stats.get("census").unwrap() > 0.0);
    for threads in [1, 2, 3] {
        for exec in executors(threads) {
            let r = Simulation::new(Hops)
                .lps(6)
                .seed(4)
                .executor(exec)
                .run()
                .unwrap();
            assert_eq!(r.fingerprint, seq.fingerprint);
            assert_eq!(r.model_stats, seq.model_stats);
        }
    }
}

#[test]
fn load_balanced_window_matches_the_sequential_history() {
    // Shared LPs run on whichever worker claims them: zero-lookahead links, equal timestamps
    // and global events must still give the sequential history.
    for seed in [0u64, 1, 2, 3, 5, 6] {
        let m = Random {
            lps: 6 + (seed as u32 * 5) % 11,
            seed,
            las: if seed % 2 == 0 {
                vec![0.0, 0.25, 1.0]
            } else {
                vec![0.5, 1.0, 2.0]
            },
            degree: 1 + (seed as u32 % 4),
            max_fanout: 1 + (seed as u32 % 3),
            quantum: 0.25,
            period: if seed % 3 == 0 { 0.0 } else { 1.5 },
            acyclic_zero: true,
            cheat_at: None,
            log: None,
        };
        let end = 12.0;
        let seq = run(&m, Executor::Sequential, end).unwrap();
        assert!(seq.committed > 50, "seed {seed}: {}", seq.committed);
        // Runs of a shared LP by a worker the mapping did not give it to, over this seed's
        // runs with 2 or more threads: 0 would mean no worker ever took another's load.
        let mut foreign = 0.0;
        for threads in 1..=4 {
            for (dedicated, sets) in [(0.0, 1), (0.5, 2), (0.0, 3), (0.5, 1)] {
                let c = ConservativeConfig::new(threads)
                    .dedicated(dedicated)
                    .shared_sets(sets);
                let name = format!("seed {seed}, x{threads}, dedicated {dedicated}, sets {sets}");
                let r = run(&m, Executor::Window(c), end).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(r.fingerprint, seq.fingerprint, "{name}");
                assert_eq!(r.committed, seq.committed, "{name}");
                assert_eq!(r.model_stats, seq.model_stats, "{name}");
                assert!(r.executor_stats["shared_lps"] > 0.0, "{name}");
                let shared: f64 = r.workers.iter().map(|w| w["shared_events"]).sum();
                assert!(shared > 0.0, "{name}: no shared LP ran");
                let f: f64 = r.workers.iter().map(|w| w["foreign_shared_lp_runs"]).sum();
                if threads == 1 {
                    assert_eq!(f, 0.0, "{name}: one worker owns every LP");
                }
                foreign += f;
            }
        }
        assert!(
            foreign > 0.0,
            "seed {seed}: no worker ever claimed a shared LP of another worker"
        );
    }
}

#[test]
fn load_balancing_settings_are_checked() {
    let m = Random {
        lps: 8,
        seed: 1,
        las: vec![1.0],
        degree: 2,
        max_fanout: 1,
        quantum: 0.25,
        period: 0.0,
        acyclic_zero: true,
        cheat_at: None,
        log: None,
    };
    let cases = [
        (
            Executor::Window(ConservativeConfig::new(2).dedicated(1.5).shared_sets(1)),
            "[0, 1]",
        ),
        (
            Executor::Window(
                ConservativeConfig::new(2)
                    .dedicated(f64::NAN)
                    .shared_sets(1),
            ),
            "[0, 1]",
        ),
        (
            Executor::Window(ConservativeConfig::new(2).dedicated(0.5)),
            "--shared-sets",
        ),
        (
            Executor::Lockstep(ConservativeConfig::new(2).dedicated(0.5).shared_sets(1)),
            "window only",
        ),
        (
            Executor::NullMessage(ConservativeConfig::new(2).shared_sets(2)),
            "window only",
        ),
    ];
    for (exec, needle) in cases {
        match run(&m, exec, 5.0) {
            Err(SimError::Config(msg)) => {
                assert!(msg.contains(needle), "{msg}");
                assert!(!msg.contains('\n'), "{msg}");
            }
            other => panic!("expected a config error with {needle}, got {other:?}"),
        }
    }
}

/// A ring where LP 3 panics at its first event at or after time 5.
struct Boom;

impl Model for Boom {
    type State = ();
    type Event = ();
    fn init(&self, ctx: &mut Ctx<'_, Self>) {
        ctx.send(ctx.me(), 1.0, ());
    }
    fn on_event(&self, _s: &mut (), _e: &(), ctx: &mut Ctx<'_, Self>) {
        if ctx.me() == 3 && ctx.now() >= 5.0 {
            panic!("boom");
        }
        let next = (ctx.me() + 1) % ctx.lps();
        ctx.send(next, 1.0, ());
    }
    fn lookahead(&self) -> f64 {
        1.0
    }
}

#[test]
fn a_panic_in_a_shared_lp_stops_every_worker_with_its_lp_and_time() {
    let run_boom = |exec: Executor| {
        Simulation::new(Boom)
            .lps(8)
            .end_time(50.0)
            .seed(1)
            .executor(exec)
            .run()
            .unwrap_err()
    };
    let seq = run_boom(Executor::Sequential);
    let SimError::Panic { lp, time, .. } = seq else {
        panic!("expected a panic error, got {seq}");
    };
    assert_eq!(lp, 3);
    for threads in 1..=4 {
        for dedicated in [0.0, 0.5] {
            let c = ConservativeConfig::new(threads)
                .dedicated(dedicated)
                .shared_sets(2);
            match run_boom(Executor::Window(c)) {
                SimError::Panic {
                    lp: l,
                    time: t,
                    message,
                } => {
                    assert_eq!((l, t), (lp, time), "x{threads}, dedicated {dedicated}");
                    assert!(message.contains("boom"), "{message}");
                }
                other => panic!("x{threads}, dedicated {dedicated}: {other}"),
            }
        }
    }
}

/// Time Warp runs models with declared topologies (no global events) to the sequential
/// history, and refuses global events with a configuration error rather than skipping them.
#[test]
fn time_warp_keeps_topologies_and_runs_global_events() {
    for seed in 0..6u64 {
        let m = Random {
            lps: 6 + seed as u32,
            seed,
            las: vec![0.0, 0.25, 1.0],
            degree: 1 + (seed as u32 % 3),
            max_fanout: 2,
            quantum: 0.25,
            period: 0.0,
            acyclic_zero: true,
            cheat_at: None,
            log: None,
        };
        let seq = run(&m, Executor::Sequential, 15.0).unwrap();
        for threads in [2, 3] {
            let tw = run(&m, Executor::TimeWarp { threads }, 15.0).unwrap();
            assert_eq!(
                tw.fingerprint, seq.fingerprint,
                "seed {seed}, {threads} threads"
            );
            assert_eq!(tw.model_stats, seq.model_stats, "seed {seed}");
        }
    }
    // Global events run under Time Warp too (at GVT, on committed states): the same calls,
    // the same states seen (`global_seen_sum`, `global_state_hash_lo`), the same history.
    for seed in 0..8u64 {
        let with_globals = Random {
            lps: 6 + seed as u32,
            seed,
            las: if seed % 2 == 0 {
                vec![0.0, 0.25, 1.0]
            } else {
                vec![0.5]
            },
            degree: 2,
            max_fanout: 1 + (seed as u32 % 2),
            quantum: 0.25,
            period: if seed % 3 == 0 { 0.7 } else { 1.5 },
            acyclic_zero: true,
            cheat_at: None,
            log: None,
        };
        let seq = run(&with_globals, Executor::Sequential, 12.0).unwrap();
        assert!(
            seq.model_stats.get("global_calls").unwrap_or(0.0) >= 5.0,
            "seed {seed}: {:?}",
            seq.model_stats
        );
        for threads in 1..=4 {
            let name = format!("seed {seed}, timewarp x{threads}");
            let tw = run(&with_globals, Executor::TimeWarp { threads }, 12.0)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(tw.fingerprint, seq.fingerprint, "{name}");
            assert_eq!(tw.committed, seq.committed, "{name}");
            assert_eq!(tw.model_stats, seq.model_stats, "{name}");
            assert_eq!(
                tw.executor_stats.get("global_events"),
                seq.executor_stats.get("global_events"),
                "{name}"
            );
        }
    }
}

/// Lock-step with zero-lookahead links between workers (cycles included) runs batches of
/// events, not one per round (`lockstep.rs`), and still commits the sequential history:
/// random zero-lookahead models with many equal timestamps, 2–4 threads, both mappings.
/// `CHRONON_STRESS=N` runs seeds 0..N instead of 0..40 and 184 (the seed that caught a rule
/// which forgot this round's own sends to other workers).
#[test]
fn lockstep_with_zero_lookahead_links_matches_the_sequential_history() {
    let seeds: Vec<u64> = match std::env::var("CHRONON_STRESS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) => (0..n).collect(),
        None => (0..40).chain([184]).collect(),
    };
    for seed in seeds {
        let m = Random {
            lps: 4 + (seed as u32 * 5) % 11,
            seed: seed + 1000,
            las: [vec![0.0], vec![0.0, 0.25], vec![0.0, 0.0, 1.0]][seed as usize % 3].clone(),
            degree: 1 + (seed as u32 % 3),
            max_fanout: 1 + (seed as u32 % 3),
            quantum: 0.25,
            period: if seed % 4 == 0 { 1.25 } else { 0.0 },
            acyclic_zero: seed % 2 == 0,
            cheat_at: None,
            log: None,
        };
        let end = 12.0;
        let seq = run(&m, Executor::Sequential, end).unwrap();
        for threads in 2..=4 {
            for mapping in [Mapping::Block, Mapping::RoundRobin] {
                let exec =
                    Executor::Lockstep(ConservativeConfig::new(threads).mapping(mapping.clone()));
                let name = format!("seed {seed}, lockstep x{threads} {mapping:?}");
                let r = run(&m, exec, end).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(r.fingerprint, seq.fingerprint, "{name}");
                assert_eq!(r.model_stats, seq.model_stats, "{name}");
            }
        }
    }
}
