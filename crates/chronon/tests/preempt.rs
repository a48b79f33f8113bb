//! Preemptive Time Warp (`TimeWarpConfig::preempt`) against the sequential executor, on a
//! randomized model whose events write their state *before* long stretches of work with
//! preemption points, so that suspended contexts are resumed, dropped by stragglers and
//! rolled back. Locals on the contexts' stacks count their drops: a dropped context must leave
//! no trace, and commit hooks run exactly once per committed event.

mod common;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use chronon::{
    CommitCtx, Ctx, Executor, LpId, Model, ModelStats, Report, ReverseCtx, ReverseFn, SimError,
    Simulation, StateSaving, Ticks, TimeWarpConfig,
};
use common::{assert_same_history, figure, Cell, Commits, Token};

/// Shared with the test: live drop-counted locals, and the commit hooks.
#[derive(Debug)]
struct Probe {
    live: AtomicI64,
    created: AtomicU64,
    commits: Commits,
}

/// A local on the handler's stack (hence on the context's stack) that counts its drop.
struct Local<'p>(&'p Probe);

impl<'p> Local<'p> {
    fn new(p: &'p Probe) -> Self {
        p.live.fetch_add(1, SeqCst);
        p.created.fetch_add(1, SeqCst);
        Local(p)
    }
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, SeqCst);
    }
}

#[derive(Clone, Debug)]
struct Churn {
    /// Preemption points per event, with `spin` spin-loop hints between two.
    points: u32,
    spin: u32,
    panic_at: Option<(LpId, f64)>,
    probe: Arc<Probe>,
}

impl Churn {
    fn new(points: u32) -> Self {
        Churn {
            points,
            spin: 300,
            panic_at: None,
            probe: Arc::new(Probe {
                live: AtomicI64::new(0),
                created: AtomicU64::new(0),
                commits: Commits::new(LPS),
            }),
        }
    }
}

impl Model for Churn {
    type State = Cell;
    type Event = Token;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Cell {
        for i in 0..2 {
            let d = (1 + ctx.rng().below(4)) as f64 * 0.5;
            ctx.send(ctx.me(), d, Token { value: i });
        }
        Cell::new(ctx.me())
    }

    fn on_event(&self, cell: &mut Cell, tok: &Token, ctx: &mut Ctx<'_, Self>) {
        let _local = Local::new(&self.probe);
        // The state changes first: a context dropped after this point must not leak it.
        cell.apply(tok, ctx.now());
        let fan = match ctx.rng().below(4) {
            0 => 0,
            3 => 2,
            _ => 1,
        };
        // A send before the work: it must leave only if the event completes.
        if fan > 0 {
            let dst = ctx.rng().below(u64::from(LPS)) as LpId;
            let delay = (1 + ctx.rng().below(4)) as f64 * 0.5;
            ctx.send(dst, delay, Token { value: cell.hash });
            ctx.count(0, 1);
        }
        for _ in 0..self.points {
            for _ in 0..self.spin {
                std::hint::spin_loop();
            }
            ctx.preemption_point();
        }
        if let Some((lp, t)) = self.panic_at {
            if ctx.me() == lp && ctx.now() >= t {
                panic!("churn exploded after its preemption points");
            }
        }
        if fan > 1 {
            let dst = if ctx.rng().uniform() < 0.5 {
                ctx.me()
            } else {
                ctx.rng().below(u64::from(LPS)) as LpId
            };
            let delay = if ctx.rng().uniform() < 0.2 {
                0.0
            } else {
                (1 + ctx.rng().below(4)) as f64 * 0.5
            };
            ctx.send(dst, delay, Token { value: cell.hash });
            ctx.count(0, 1);
        }
    }

    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        Some(Self::undo)
    }

    fn commit(&self, _tok: &Token, ctx: &CommitCtx) {
        self.probe.commits.record(ctx);
    }

    fn counter_names(&self) -> &'static [&'static str] {
        &["sends"]
    }

    fn finish(&self, lp: LpId, cell: &Cell, stats: &mut ModelStats) {
        cell.finish(lp, stats);
    }
}

impl Churn {
    /// The reverse handler ([`Model::reverse_handler`]): undoes `on_event`.
    fn undo(&self, cell: &mut Cell, tok: &Token, ctx: &ReverseCtx) {
        cell.uncount();
        cell.unhash(tok, ctx);
    }
}

const LPS: LpId = 24;
const END: f64 = 40.0;

fn sequential(m: &Churn, seed: u64) -> Report {
    common::sequential(m, seed, LPS, END)
}

fn preemptive(
    m: &Churn,
    seed: u64,
    threads: usize,
    opts: TimeWarpConfig,
) -> Result<Report, SimError> {
    Simulation::new(m.clone())
        .lps(LPS)
        .end_time(END)
        .seed(seed)
        .executor(Executor::TimeWarp(
            opts.threads(threads).preempt(true).gvt_every(64),
        ))
        .run()
}

#[test]
fn preemptive_time_warp_commits_the_sequential_history() {
    let (mut preemptions, mut discarded, mut resumed, mut restores) = (0.0, 0.0, 0.0, 0.0);
    for points in [0, 12] {
        for seed in [1, 2] {
            let m = Churn::new(points);
            let seq = sequential(&m, seed);
            assert!(seq.committed > 500, "the model must do something");
            for threads in 1..=4 {
                for (name, opts) in [
                    (
                        "reverse",
                        TimeWarpConfig::default().state_saving(StateSaving::Reverse),
                    ),
                    (
                        "copy k=3",
                        TimeWarpConfig::default()
                            .state_saving(StateSaving::Copy)
                            .save_every(Some(3)),
                    ),
                    (
                        "copy, 1 suspended at most",
                        TimeWarpConfig::default()
                            .state_saving(StateSaving::Copy)
                            .max_suspended(1),
                    ),
                ] {
                    let m = Churn::new(points);
                    let what = format!("{points} points, seed {seed}, {threads} threads, {name}");
                    let tw = preemptive(&m, seed, threads, opts).expect("run");
                    assert_same_history(&seq, &tw, &what);
                    let p = &m.probe;
                    assert_eq!(
                        p.live.load(SeqCst),
                        0,
                        "{what}: a dropped context leaked a local"
                    );
                    p.commits.assert_once_in_order(&tw, &what);
                    // Every started handler either completed (processed) or was dropped.
                    let started = figure(&tw, "preempt_started") + figure(&tw, "preempt_fallbacks");
                    assert_eq!(
                        started,
                        tw.processed as f64 + figure(&tw, "preempt_discarded"),
                        "{what}"
                    );
                    assert_eq!(
                        p.created.load(SeqCst) as f64,
                        started + coasted(&tw),
                        "{what}: handler entries = started + coasted"
                    );
                    if name.starts_with("copy, 1") {
                        assert!(tw.workers.iter().all(|w| w["preemptions"]
                            - w["preempt_resumed"]
                            - w["preempt_discarded"]
                            <= 1.0));
                    }
                    assert_rollback_figures(&tw, &what);
                    // No ticks: every preemption came at a return checked with ticks off.
                    assert_eq!(figure(&tw, "preemptions_on_tick"), 0.0, "{what}");
                    preemptions += figure(&tw, "preemptions");
                    discarded += figure(&tw, "preempt_discarded");
                    resumed += figure(&tw, "preempt_resumed");
                    restores += figure(&tw, "preempt_restores");
                    if name == "reverse" {
                        // Reverse saving cannot undo half an event: contexts work on clones.
                        assert_eq!(figure(&tw, "preempt_restores"), 0.0, "{what}");
                    }
                }
            }
        }
    }
    eprintln!("preemptions {preemptions}, resumed {resumed}, discarded {discarded}");
    assert!(preemptions > 0.0, "the test must exercise preemption");
    assert!(resumed > 0.0, "the test must resume suspended contexts");
    // Copy saving moves the LP's state into the context: a dropped one restores it.
    assert!(
        restores > 0.0,
        "the test must restore states of dropped contexts"
    );
}

/// The report's rollback lengths, in total and per worker: present, and
/// consistent with the counts (events undone = rollbacks × mean length, totals = sums).
fn assert_rollback_figures(r: &Report, what: &str) {
    const KEYS: [&str; 6] = [
        "rollbacks",
        "rollback_length_mean",
        "rollback_length_max",
        "rollback_wall_s",
        "rollback_wall_mean_us",
        "efficiency",
    ];
    let es = &r.executor_stats;
    for k in KEYS {
        assert!(es.contains_key(k), "{what}: {k} missing from the totals");
        assert!(
            r.workers.iter().all(|w| w.contains_key(k)),
            "{what}: {k} missing from a worker"
        );
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
    let rb = es["rollbacks"];
    assert_eq!(
        rb,
        es["primary_rollbacks"] + es["secondary_rollbacks"],
        "{what}: a rollback is primary or secondary"
    );
    assert!(
        close(rb * es["rollback_length_mean"], r.rolled_back as f64),
        "{what}: events undone = rollbacks × mean length"
    );
    assert!(
        close(
            es["efficiency"],
            r.committed as f64 / r.processed.max(1) as f64
        ),
        "{what}: efficiency"
    );
    let (mut sum_rb, mut sum_undone, mut sum_wall, mut longest) = (0.0, 0.0, 0.0, 0.0f64);
    for w in &r.workers {
        let n = w["rollbacks"];
        assert!(
            close(n * w["rollback_length_mean"], w["rolled_back"]),
            "{what}: a worker's events undone"
        );
        assert!(
            w["rollback_length_max"] >= w["rollback_length_mean"],
            "{what}: longest >= mean"
        );
        assert_eq!(
            n > 0.0,
            w["rollback_length_max"] >= 1.0,
            "{what}: a rollback undoes an event"
        );
        assert_eq!(
            n > 0.0,
            w["rollback_wall_s"] > 0.0,
            "{what}: a rollback takes time"
        );
        assert!(
            close(n * w["rollback_wall_mean_us"], w["rollback_wall_s"] * 1e6),
            "{what}: wall per rollback"
        );
        sum_rb += n;
        sum_undone += w["rolled_back"];
        sum_wall += w["rollback_wall_s"];
        longest = longest.max(w["rollback_length_max"]);
    }
    assert_eq!(sum_rb, rb, "{what}: rollbacks = the workers' sum");
    assert_eq!(
        sum_undone, r.rolled_back as f64,
        "{what}: rolled back = the workers' sum"
    );
    assert!(
        close(sum_wall, es["rollback_wall_s"]),
        "{what}: wall = the workers' sum"
    );
    assert_eq!(
        longest, es["rollback_length_max"],
        "{what}: longest = the workers' longest"
    );
}

/// Without `--preempt` the report has the same rollback figures, and no preemption figures.
#[test]
fn rollback_lengths_are_reported_with_and_without_preemption() {
    let mut rolled_back = [0u64; 2];
    for (i, preempt) in [false, true].into_iter().enumerate() {
        for threads in [2, 4] {
            for saving in [StateSaving::Reverse, StateSaving::Copy] {
                let m = Churn::new(12);
                let r = Simulation::new(m)
                    .lps(LPS)
                    .end_time(END)
                    .seed(3)
                    .executor(Executor::TimeWarp(
                        TimeWarpConfig::new(threads)
                            .state_saving(saving)
                            .preempt(preempt)
                            .gvt_every(64),
                    ))
                    .run()
                    .expect("run");
                let what = format!("preempt {preempt}, {threads} threads, {saving:?}");
                assert_rollback_figures(&r, &what);
                assert_eq!(
                    r.executor_stats.contains_key("preemptions"),
                    preempt,
                    "{what}"
                );
                rolled_back[i] += r.rolled_back;
            }
        }
    }
    assert!(
        rolled_back.iter().all(|&n| n > 0),
        "the runs must roll back: {rolled_back:?}"
    );
}

/// Events re-executed by coasting forward (copy state saving) also run the handler.
fn coasted(r: &Report) -> f64 {
    figure(r, "coasted_events")
}

#[test]
fn a_panic_after_a_preemption_point_names_the_lp_and_time() {
    let mut m = Churn::new(8);
    m.panic_at = Some((5, 7.0));
    for threads in [1, 3] {
        let err = preemptive(&m, 1, threads, TimeWarpConfig::default()).expect_err("panics");
        match err {
            SimError::Panic { lp, time, message } => {
                assert_eq!(lp, 5);
                assert!(time >= 7.0);
                assert!(message.contains("churn exploded"), "{message}");
            }
            other => panic!("expected a panic error, got {other}"),
        }
    }
}

#[test]
fn a_tick_storm_and_the_alpha_rule_keep_the_history() {
    // Few returns far apart (T well above the period): the rule turns ticks on.
    let slow = || Churn {
        spin: 3000,
        ..Churn::new(3)
    };
    let m = slow();
    let seq = sequential(&m, 3);
    let (mut delivered, mut acted) = (0.0, 0.0);
    // 50 µs ticks with alpha 0 (a storm for this machine's signal cost), and 1 s
    // ticks (the rule keeps them off: a return comes far more often than a tick).
    for (period, alpha) in [(50.0, 0.0), (1e6, 0.5)] {
        for threads in [1, 2, 4] {
            let m = slow();
            let what = format!("tick {period} µs, alpha {alpha}, {threads} threads");
            let opts = TimeWarpConfig::default().ticks(Some(Ticks::new(period, alpha)));
            let tw = preemptive(&m, 3, threads, opts).expect("run");
            assert_eq!(tw.fingerprint, seq.fingerprint, "{what}");
            assert_eq!(tw.model_stats, seq.model_stats, "{what}");
            assert_eq!(m.probe.live.load(SeqCst), 0, "{what}");
            if period > 1e3 {
                assert_eq!(
                    figure(&tw, "ticks_delivered"),
                    0.0,
                    "{what}: ticks stay off"
                );
            }
            // A tick is acted on at most once (it made one check due), and only if delivered;
            // every worker reports Δe and APMS.
            assert!(
                figure(&tw, "ticks_acted_on") <= figure(&tw, "ticks_delivered"),
                "{what}: acted on <= delivered"
            );
            // A preemption on a tick needs a check that a tick made due (seed 003 Fig. 8's
            // split of the preemptions by cause).
            let on_tick = figure(&tw, "preemptions_on_tick");
            assert!(
                on_tick <= figure(&tw, "preemptions"),
                "{what}: preemptions on a tick <= preemptions"
            );
            if period > 1e3 {
                assert_eq!(on_tick, 0.0, "{what}: ticks stay off");
            }
            assert!(
                tw.workers
                    .iter()
                    .all(|w| ["delta_e_us", "apms", "ticks_acted_on", "ticks_on_s"]
                        .iter()
                        .all(|k| w.contains_key(*k))),
                "{what}: per-worker tick figures"
            );
            delivered += figure(&tw, "ticks_delivered");
            acted += figure(&tw, "ticks_acted_on");
        }
    }
    assert!(delivered > 0.0, "the storm delivered ticks");
    assert!(acted > 0.0, "the storm's ticks made checks due");
}

/// The `--preempt --tick-us 50` stall (docs/timewarp.md, "Ticks and idle waits"): a worker
/// with nothing to run slept with `std::thread::sleep`, which a tick every ΔET <= the timer
/// slack restarts forever, so it never came back to report in the GVT round. The run's workers
/// inherit the timer slack of the thread that starts it: with 10 ms of slack and 50 µs ticks
/// (alpha -0.99: the rule keeps them on), every idle wait of the old code hung; the run must end
/// with the sequential history.
#[cfg(target_os = "linux")]
#[test]
fn ticks_faster_than_the_timer_slack_do_not_stall_idle_workers() {
    use std::time::Duration;
    let slow = || Churn {
        spin: 3000,
        ..Churn::new(3)
    };
    let seq = sequential(&slow(), 5);
    for threads in [2, 3] {
        let m = slow();
        let (tx, rx) = std::sync::mpsc::channel();
        let run = m.clone();
        std::thread::spawn(move || {
            // Safety: PR_SET_TIMERSLACK takes a plain value and changes this thread (and the
            // threads it starts) only.
            let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 10_000_000 as libc::c_ulong) };
            assert_eq!(rc, 0, "prctl(PR_SET_TIMERSLACK)");
            let opts = TimeWarpConfig::default().ticks(Some(Ticks::new(50.0, -0.99)));
            let _ = tx.send(preemptive(&run, 5, threads, opts));
        });
        // A stalled run leaves its threads behind (they end with the test process).
        let tw = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("{threads} threads: the run stalled (no end in 120 s)"))
            .expect("run");
        assert_eq!(tw.fingerprint, seq.fingerprint, "{threads} threads");
        assert_eq!(tw.model_stats, seq.model_stats, "{threads} threads");
        assert!(
            figure(&tw, "ticks_delivered") > 0.0,
            "{threads} threads: ticks ran"
        );
        assert_eq!(m.probe.live.load(SeqCst), 0, "{threads} threads");
    }
}

#[test]
fn bad_preemption_settings_are_config_errors() {
    let m = Churn::new(1);
    for opts in [
        TimeWarpConfig::default().ticks(Some(Ticks::new(chronon::MIN_TICK_US / 2.0, 0.5))),
        TimeWarpConfig::default().ticks(Some(Ticks::new(50.0, -1.0))),
        TimeWarpConfig::default().ticks(Some(Ticks::new(f64::NAN, 0.5))),
    ] {
        let err = preemptive(&m, 1, 2, opts).expect_err("rejected");
        assert!(matches!(err, SimError::Config(_)), "{err}");
    }
}
