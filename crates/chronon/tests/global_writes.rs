//! Global events that change the model (seed 001 §2.2.3): handlers that change LP states
//! (`GlobalCtx::state_mut`) and send LP events (`GlobalCtx::send`) commit the sequential
//! history under every executor on threads — fingerprint, committed count, final states (folded
//! by `finish`), counters, statistics and series — with copy and reverse state saving, safe
//! commits, preemption and load balancing; checkpoints taken between global events restore
//! and continue to the same history; bad sends end the run with one line.

use std::path::PathBuf;

use chronon::checkpoint::checkpoint_path;
use chronon::partition::Mapping;
use chronon::{
    ConservativeConfig, Ctx, Executor, GlobalCtx, LpId, Model, ModelStats, Report, ReverseCtx,
    ReverseFn, Runtime, SimError, Simulation, StateSaving, TimeWarpConfig,
};

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Events hop between LPs; every `period` (from `first`) a global event reads every state,
/// changes two of them and sends LP events: one of `1..=3` quanta later, one exactly at the
/// next global event's time (which must run before that global event), one a hair after the
/// global event (`tiny`), and, with `to_idle`, one to an LP that has no event of its own.
#[derive(Clone, Debug)]
struct Shaken {
    lps: u32,
    la: f64,
    quantum: f64,
    first: f64,
    period: f64,
    /// Probability of a zero-delay self-send.
    zero_self: f64,
    /// The first this many LPs start idle.
    idle: u32,
    tiny: bool,
    /// What `on_global` does wrong on purpose at its second call.
    fault: Fault,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    ZeroDelay,
    NoSuchLp,
    NanDelay,
    BadStateLp,
}

impl Shaken {
    fn new(lps: u32) -> Self {
        Shaken {
            lps,
            la: 0.5,
            quantum: 0.25,
            first: 0.75,
            period: 1.25,
            zero_self: 0.2,
            idle: 2,
            tiny: true,
            fault: Fault::None,
        }
    }

    fn undo(&self, st: &mut St, _: &u64, _: &ReverseCtx) {
        st.seen -= 1;
        st.hash = st.undo.pop().expect("a hash to restore");
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct St {
    seen: u64,
    hash: u64,
    /// What global events changed here.
    bumps: u64,
    /// The hash before each event not yet committed-and-forgotten (for the reverse handler).
    undo: Vec<u64>,
}

chronon::counters!(Counters { events });

impl Model for Shaken {
    type State = St;
    type Event = u64;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> St {
        let me = ctx.me();
        if me >= self.idle {
            for i in 0..1 + ctx.rng().below(2) {
                let d = self.quantum * (1 + ctx.rng().below(4)) as f64;
                ctx.send(me, d, i);
            }
        }
        St {
            seen: 0,
            hash: u64::from(me),
            bumps: 0,
            undo: Vec::new(),
        }
    }

    fn on_event(&self, st: &mut St, ev: &u64, ctx: &mut Ctx<'_, Self>) {
        st.undo.push(st.hash);
        st.seen += 1;
        st.hash = mix(st.hash ^ *ev ^ ctx.now().to_bits());
        ctx.count(Counters::events, 1);
        let fanout = [0, 1, 1, 2][ctx.rng().below(4) as usize];
        for _ in 0..fanout {
            let extra = self.quantum * ctx.rng().below(3) as f64;
            if ctx.rng().uniform() < self.zero_self {
                ctx.send(ctx.me(), 0.0, st.hash);
            } else {
                let dst = ctx.rng().below(u64::from(self.lps)) as LpId;
                ctx.send(dst, self.la + extra, st.hash);
            }
        }
    }

    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        Some(Self::undo)
    }

    fn lookahead(&self) -> f64 {
        self.la
    }

    fn counter_names(&self) -> &'static [&'static str] {
        Counters::NAMES
    }

    fn global_events(&self) -> Vec<f64> {
        vec![self.first]
    }

    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let now = ctx.now();
        let n = u64::from(ctx.lps());
        let mut h = now.to_bits();
        let mut seen = 0;
        for lp in 0..ctx.lps() {
            h = mix(h ^ ctx.state(lp).hash);
            seen += ctx.state(lp).seen;
        }
        ctx.stats().add("calls", 1.0);
        ctx.record("seen", seen as f64);
        ctx.record("hash", (h & 0xffff) as f64);
        let (a, b) = ((h % n) as LpId, (mix(h) % n) as LpId);
        {
            let st = ctx.state_mut(a);
            st.hash = mix(st.hash ^ h);
            st.bumps += 1;
        }
        ctx.state_mut(b).bumps += 10;
        let payload = ctx.state(a).hash;
        ctx.send(a, self.quantum * (1 + (h >> 40) % 3) as f64, payload);
        // Exactly at the next global event's time: it runs before that global event.
        ctx.send(b, self.period, payload ^ 1);
        if self.tiny {
            ctx.send((h >> 20) as LpId % ctx.lps(), 1e-9, payload ^ 2);
        }
        if self.idle > 0 {
            ctx.send((h >> 8) as LpId % self.idle, self.quantum, payload ^ 3);
        }
        if now == self.first + self.period {
            match self.fault {
                Fault::None => {}
                Fault::ZeroDelay => ctx.send(a, 0.0, 0),
                Fault::NoSuchLp => ctx.send(ctx.lps(), 1.0, 0),
                Fault::NanDelay => ctx.send(a, f64::NAN, 0),
                Fault::BadStateLp => ctx.state_mut(ctx.lps() + 3).bumps += 1,
            }
        }
        ctx.schedule(self.period);
    }

    fn finish(&self, lp: LpId, st: &St, stats: &mut ModelStats) {
        stats.add("seen", st.seen as f64);
        stats.add("bumps", st.bumps as f64);
        stats.add("hash_lo", (st.hash & 0xffff_ffff) as f64);
        stats.add("hash_lp", ((st.hash ^ u64::from(lp)) & 0xffff) as f64);
    }
}

/// Every executor on threads, `threads` workers, with its options varied.
fn executors(threads: usize) -> Vec<(String, Executor)> {
    let c = ConservativeConfig::new(threads);
    let tw = TimeWarpConfig::new(threads);
    let mut v = vec![
        ("window".into(), Executor::Window(c.clone())),
        (
            "window rr".into(),
            Executor::Window(c.clone().mapping(Mapping::RoundRobin)),
        ),
        ("lockstep".into(), Executor::Lockstep(c.clone())),
        (
            "lockstep ws".into(),
            Executor::Lockstep(c.clone().runtime(Runtime::WorkStealing {
                threshold: [1, 3, 50][threads % 3],
            })),
        ),
        (
            "lockstep at".into(),
            Executor::Lockstep(c.clone().runtime(Runtime::ActiveThreads {
                threshold: [2, 5, 1][threads % 3],
            })),
        ),
        ("null-message".into(), Executor::NullMessage(c.clone())),
        (
            "timewarp copy".into(),
            Executor::TimeWarp(tw.clone().state_saving(StateSaving::Copy)),
        ),
        (
            "timewarp copy k=5".into(),
            Executor::TimeWarp(
                tw.clone()
                    .state_saving(StateSaving::Copy)
                    .save_every(Some(5)),
            ),
        ),
        (
            "timewarp reverse".into(),
            Executor::TimeWarp(tw.clone().state_saving(StateSaving::Reverse)),
        ),
        (
            "timewarp reverse unsafe".into(),
            Executor::TimeWarp(
                tw.clone()
                    .state_saving(StateSaving::Reverse)
                    .safe_commit(false)
                    .window(Some(0.5)),
            ),
        ),
        (
            "timewarp preempt".into(),
            Executor::TimeWarp(tw.clone().state_saving(StateSaving::Copy).preempt(true)),
        ),
    ];
    if threads > 1 {
        v.push((
            "window balanced".into(),
            Executor::Window(c.dedicated(0.5).shared_sets(2)),
        ));
    }
    v
}

fn run(m: &Shaken, exec: Executor, end: f64, seed: u64) -> Result<Report, SimError> {
    Simulation::new(m.clone())
        .lps(m.lps)
        .end_time(end)
        .seed(seed)
        .executor(exec)
        .run()
}

fn same(r: &Report, reference: &Report, name: &str) {
    assert_eq!(r.fingerprint, reference.fingerprint, "{name}: fingerprint");
    assert_eq!(r.committed, reference.committed, "{name}: committed");
    assert_eq!(r.model_stats, reference.model_stats, "{name}: model_stats");
    assert_eq!(
        r.model_series, reference.model_series,
        "{name}: model_series"
    );
    assert_eq!(
        r.pending_at_end, reference.pending_at_end,
        "{name}: pending"
    );
    assert_eq!(
        r.executor_stats.get("global_events"),
        reference.executor_stats.get("global_events"),
        "{name}: global events run"
    );
}

#[test]
fn global_events_that_change_states_and_send_commit_the_sequential_history_everywhere() {
    let models = [
        Shaken::new(12),
        Shaken {
            zero_self: 0.0,
            tiny: false,
            idle: 0,
            period: 0.5,
            ..Shaken::new(7)
        },
        Shaken {
            la: 1.0,
            quantum: 0.5,
            period: 2.0,
            first: 2.0,
            ..Shaken::new(30)
        },
    ];
    for (i, m) in models.iter().enumerate() {
        for seed in [1, 2] {
            let seq = run(m, Executor::Sequential, 15.0, seed).unwrap();
            assert!(seq.committed > 50, "model {i}: {}", seq.committed);
            let calls = seq.model_stats.get("calls").unwrap_or(0.0);
            assert!(calls >= 5.0, "model {i}: {calls} global events");
            // The changes show: without them the states would differ.
            assert!(seq.model_stats.get("bumps").unwrap_or(0.0) > 0.0);
            for threads in 1..=4 {
                for (name, exec) in executors(threads) {
                    let name = format!("model {i} seed {seed} {name} x{threads}");
                    let r = run(m, exec, 15.0, seed).unwrap_or_else(|e| panic!("{name}: {e}"));
                    same(&r, &seq, &name);
                }
            }
        }
    }
}

#[test]
fn an_event_sent_at_the_next_global_events_time_runs_before_it() {
    // Two LPs, no LP sends at all: only the global events make events. Each global event
    // records LP 1's hash, which the event it sent at exactly its own period changed.
    #[derive(Clone)]
    struct Ping;
    impl Model for Ping {
        type State = u64;
        type Event = u64;
        fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
            if ctx.me() == 0 {
                // Keeps the run alive: global events run only while an LP event is pending.
                ctx.send(0, 100.0, 0);
            }
            0
        }
        fn on_event(&self, st: &mut u64, ev: &u64, _: &mut Ctx<'_, Self>) {
            *st = *st * 3 + ev;
        }
        fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
            Some(|_, st, ev, _| *st = (*st - ev) / 3)
        }
        fn lookahead(&self) -> f64 {
            1.0
        }
        fn global_events(&self) -> Vec<f64> {
            vec![1.0]
        }
        fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
            let now = ctx.now();
            ctx.record("lp1", *ctx.state(1) as f64);
            *ctx.state_mut(0) += 1;
            ctx.send(1, 1.0, now as u64);
            ctx.schedule(1.0);
        }
        fn finish(&self, lp: LpId, st: &u64, stats: &mut ModelStats) {
            stats.add(&format!("lp{lp}"), *st as f64);
        }
    }
    let sim = |e: Executor| {
        Simulation::new(Ping)
            .lps(2)
            .end_time(6.5)
            .executor(e)
            .run()
            .unwrap()
    };
    let seq = sim(Executor::Sequential);
    // At 2: the event sent at 1 (payload 1) ran first: 0*3+1 = 1; at 3: 1*3+2 = 5; ...
    let lp1: Vec<f64> = seq.model_series["lp1"].iter().map(|p| p.1).collect();
    assert_eq!(lp1, vec![0.0, 1.0, 5.0, 18.0, 58.0, 179.0]);
    assert_eq!(seq.model_stats.get("lp0"), Some(6.0));
    assert_eq!(
        seq.committed, 5,
        "the events sent at 1..=5 ran; the one at 100 did not"
    );
    for threads in 1..=3 {
        for (name, exec) in executors(threads) {
            same(&sim(exec), &seq, &format!("{name} x{threads}"));
        }
    }
}

#[test]
fn bad_sends_and_lp_ids_in_a_global_event_end_the_run_with_one_line() {
    let cases = [
        (Fault::ZeroDelay, "delay 0; it must be finite and > 0"),
        (Fault::NanDelay, "delay NaN; it must be finite and > 0"),
        (Fault::NoSuchLp, "sent to LP 12, but there are 12 LPs"),
        (
            Fault::BadStateLp,
            "global event changed LP 15, but there are 12 LPs",
        ),
    ];
    for (fault, want) in cases {
        let m = Shaken {
            fault,
            ..Shaken::new(12)
        };
        let mut execs = vec![("seq".to_string(), Executor::Sequential)];
        execs.extend(executors(2));
        for (name, exec) in execs {
            let e = run(&m, exec, 15.0, 1).expect_err(&name);
            let shown = e.to_string();
            assert!(shown.contains(want), "{name}: {shown}");
            assert!(!shown.contains('\n'), "{name}: {shown}");
            match (&e, fault) {
                (SimError::Panic { time, .. }, Fault::BadStateLp) => assert_eq!(*time, 2.0),
                (SimError::Model(m), f) if f != Fault::BadStateLp => {
                    assert_eq!(m.time, 2.0, "{name}")
                }
                _ => panic!("{name}: {e:?}"),
            }
        }
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chronon-gw-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn checkpoints_between_changing_global_events_restore_to_the_same_history() {
    let m = Shaken::new(10);
    let sim = |e: &Executor| {
        Simulation::new(m.clone())
            .lps(m.lps)
            .seed(4)
            .executor(e.clone())
    };
    let whole = sim(&Executor::Sequential).end_time(12.0).run().unwrap();
    let mut all = vec![("seq".to_string(), Executor::Sequential)];
    all.extend(executors(2));
    // Cuts between global events (0.75 + 1.25 k) and at one's time: 3.0 (between 2.0 and
    // 3.25) and 4.5 (a global event's time: it runs after the cut).
    for (i, (name, saver)) in all.iter().enumerate() {
        let dir = tmp(&format!("s{i}"));
        let chained = sim(saver)
            .end_time(12.0)
            .checkpoint_at(3.0, &dir)
            .checkpoint_at(4.5, &dir)
            .run()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        same(&chained, &whole, &format!("{name} saving"));
        for (rname, restorer) in &all {
            for cut in [3.0, 4.5] {
                let rest = sim(restorer)
                    .end_time(12.0)
                    .restore(checkpoint_path(&dir, cut))
                    .run()
                    .unwrap_or_else(|e| panic!("{name} -> {rname} at {cut}: {e}"));
                same(&rest, &whole, &format!("{name} -> {rname} at {cut}"));
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Across worker processes: the run ends at a cut before each global event, which runs on the
/// whole cut in the parent; every family commits the sequential history. One multi-process
/// run per test (a worker process re-executes the test binary with `entry`, the test's name,
/// and must reach the same run).
#[cfg(all(target_os = "linux", not(chronon_loom)))]
mod across_processes {
    use super::*;

    fn sim(m: &Shaken, exec: Executor) -> Simulation<Shaken> {
        Simulation::new(m.clone())
            .lps(m.lps)
            .end_time(12.0)
            .seed(3)
            .executor(exec)
    }

    /// Runs `exec` over `procs` processes (`with`: more settings) and checks it against `seq`.
    fn check(
        entry: &str,
        m: &Shaken,
        procs: usize,
        exec: Executor,
        with: impl Fn(Simulation<Shaken>) -> Simulation<Shaken>,
    ) -> Option<Report> {
        let seq = (!chronon::is_worker_process()).then(|| sim(m, Executor::Sequential).run());
        let r = with(sim(m, exec.clone()).serde_model())
            .processes(procs)
            .process_args([entry, "--exact", "--nocapture", "--test-threads=1"])
            .run()
            .unwrap_or_else(|e| panic!("{entry}: {e}"));
        let seq = seq.expect("only the parent gets a report").unwrap();
        assert!(seq.model_stats.get("calls").unwrap_or(0.0) >= 5.0);
        assert!(seq.model_stats.get("bumps").unwrap_or(0.0) > 0.0);
        same(&r, &seq, entry);
        // A link ended at a cut for every global event run.
        assert_eq!(
            r.executor_stats.get("global_cuts"),
            seq.executor_stats.get("global_events"),
            "{entry}"
        );
        Some(seq)
    }

    #[test]
    fn window_2_processes_2_threads() {
        let c = ConservativeConfig::new(2);
        check(
            "across_processes::window_2_processes_2_threads",
            &Shaken::new(12),
            2,
            Executor::Window(c),
            |s| s,
        );
    }

    #[test]
    fn lockstep_3_processes() {
        let c = ConservativeConfig::new(1);
        check(
            "across_processes::lockstep_3_processes",
            &Shaken::new(12),
            3,
            Executor::Lockstep(c),
            |s| s,
        );
    }

    #[test]
    fn null_message_2_processes_2_threads() {
        let c = ConservativeConfig::new(2);
        let m = Shaken {
            zero_self: 0.0,
            ..Shaken::new(12)
        };
        check(
            "across_processes::null_message_2_processes_2_threads",
            &m,
            2,
            Executor::NullMessage(c),
            |s| s,
        );
    }

    #[test]
    fn time_warp_copy_2_processes_2_threads() {
        let tw = TimeWarpConfig::new(2).state_saving(StateSaving::Copy);
        check(
            "across_processes::time_warp_copy_2_processes_2_threads",
            &Shaken::new(12),
            2,
            Executor::TimeWarp(tw),
            |s| s,
        );
    }

    #[test]
    fn time_warp_reverse_3_processes() {
        let tw = TimeWarpConfig::new(1).state_saving(StateSaving::Reverse);
        check(
            "across_processes::time_warp_reverse_3_processes",
            &Shaken::new(12),
            3,
            Executor::TimeWarp(tw),
            |s| s,
        );
    }

    #[test]
    fn checkpoints_across_processes_keep_the_global_events_and_restore_anywhere() {
        // Cuts at 3.0 (between global events) and 4.5 (a global event's time); the
        // checkpoints hold the chain's global events, and restore on threads and in processes.
        let entry = "across_processes::checkpoints_across_processes_keep_the_global_events_and_restore_anywhere";
        let m = Shaken::new(10);
        // The parent's process id names the directory in the worker processes too.
        let parent = match chronon::is_worker_process() {
            true => std::env::var("CHRONON_SHM_PARENT").unwrap(),
            false => std::process::id().to_string(),
        };
        let dir = std::env::temp_dir().join(format!("chronon-gwp-{parent}"));
        let exec = Executor::Window(ConservativeConfig::new(1));
        let Some(seq) = check(entry, &m, 2, exec, |s| {
            s.checkpoint_at(3.0, &dir).checkpoint_at(4.5, &dir)
        }) else {
            return;
        };
        let hidden: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(
            hidden.is_empty(),
            "cuts left in {}: {hidden:?}",
            dir.display()
        );
        for cut in [3.0, 4.5] {
            for (name, exec) in [
                ("seq", Executor::Sequential),
                ("timewarp", Executor::TimeWarp(TimeWarpConfig::new(2))),
            ] {
                let rest = sim(&m, exec)
                    .restore(checkpoint_path(&dir, cut))
                    .run()
                    .unwrap_or_else(|e| panic!("{name} at {cut}: {e}"));
                same(&rest, &seq, &format!("restored under {name} at {cut}"));
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_serde_a_model_with_global_events_is_refused_in_one_line() {
        let e = Simulation::new(Shaken::new(12))
            .lps(12)
            .end_time(12.0)
            .executor(Executor::Window(ConservativeConfig::new(1)))
            .processes(2)
            .run()
            .unwrap_err();
        let shown = e.to_string();
        assert!(shown.contains("serde_model()"), "{shown}");
        assert!(!shown.contains('\n'), "{shown}");
    }

    #[test]
    fn a_bad_send_of_a_global_event_across_processes_ends_the_run_with_one_line() {
        let m = Shaken {
            fault: Fault::ZeroDelay,
            ..Shaken::new(12)
        };
        if chronon::is_worker_process() {
            // Worker processes reach the run they were started for, and exit inside it.
            let _ = sim(&m, Executor::Lockstep(ConservativeConfig::new(1)))
                .serde_model()
                .processes(2)
                .run();
            return;
        }
        let e = sim(&m, Executor::Lockstep(ConservativeConfig::new(1)))
            .serde_model()
            .processes(2)
            .process_args([
                "across_processes::a_bad_send_of_a_global_event_across_processes_ends_the_run_with_one_line",
                "--exact",
                "--test-threads=1",
            ])
            .run()
            .unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.contains("delay 0; it must be finite and > 0"),
            "{shown}"
        );
        assert!(!shown.contains('\n'), "{shown}");
        match e {
            SimError::Model(m) => assert_eq!(m.time, 2.0),
            other => panic!("{other:?}"),
        }
    }
}
