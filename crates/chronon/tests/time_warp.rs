//! Time Warp against the sequential executor on a randomized model whose state depends on the
//! order of its events: random fan-out, random delays with many exact ties and zero delays.
//! A wrong rollback, a lost or duplicated event or a wrong tie order changes the fingerprint or
//! the final states (compared through `Model::finish`).
//! The model is in `time_warp/scramble.rs`.

mod common;

use std::sync::Arc;

use chronon::{
    Ctx, Executor, LpId, Model, Report, SimError, Simulation, StateSaving, TimeWarpConfig,
};
use common::{assert_same_history, Commits};

#[path = "time_warp/scramble.rs"]
mod scramble;
use scramble::Scramble;

const LPS: LpId = 24;
const END: f64 = 25.0;

fn sequential(m: &Scramble, seed: u64) -> Report {
    sequential_sized(m, seed, LPS, END)
}

fn sequential_sized(m: &Scramble, seed: u64, lps: LpId, end: f64) -> Report {
    common::sequential(m, seed, lps, end)
}

fn time_warp(
    m: &Scramble,
    seed: u64,
    threads: usize,
    opts: TimeWarpConfig,
) -> Result<Report, SimError> {
    time_warp_sized(m, seed, threads, opts, LPS, END)
}

fn time_warp_sized(
    m: &Scramble,
    seed: u64,
    threads: usize,
    opts: TimeWarpConfig,
    lps: LpId,
    end: f64,
) -> Result<Report, SimError> {
    Simulation::new(m.clone())
        .lps(lps)
        .end_time(end)
        .seed(seed)
        // Frequent GVT rounds, so that fossil collection runs often in these short runs.
        .executor(Executor::TimeWarp(
            if opts.gvt_every == TimeWarpConfig::default().gvt_every {
                opts.gvt_every(64)
            } else {
                opts
            }
            .threads(threads),
        ))
        .run()
}

/// [`assert_same_history`], the same events left pending at the end (none lost in an outbox
/// or a mailbox), and GVT rounds ran (fossil collection) when there are workers to
/// synchronize.
fn assert_same(seq: &Report, tw: &Report, what: &str) {
    assert_same_history(seq, tw, what);
    assert_eq!(
        tw.pending_at_end, seq.pending_at_end,
        "{what}: pending at end"
    );
    if tw.threads > 1 {
        assert!(tw.executor_stats["gvt_rounds"] > 1.0, "{what}: GVT rounds");
    }
}

#[test]
fn random_model_matches_sequential_for_every_saving_and_thread_count() {
    let m = Scramble::new();
    for seed in [1, 2, 3] {
        let seq = sequential(&m, seed);
        assert!(seq.committed > 500, "the model must do something");
        for threads in 1..=4 {
            for (name, opts) in [
                (
                    "reverse",
                    TimeWarpConfig::default().state_saving(StateSaving::Reverse),
                ),
                (
                    "copy k=1",
                    TimeWarpConfig::default()
                        .state_saving(StateSaving::Copy)
                        .save_every(Some(1)),
                ),
                (
                    "copy k=3",
                    TimeWarpConfig::default()
                        .state_saving(StateSaving::Copy)
                        .save_every(Some(3)),
                ),
                (
                    "copy auto",
                    TimeWarpConfig::default().state_saving(StateSaving::Copy),
                ),
            ] {
                let tw = time_warp(&m, seed, threads, opts).expect("time warp run");
                assert_same(
                    &seq,
                    &tw,
                    &format!("seed {seed}, {threads} threads, {name}"),
                );
            }
        }
    }
}

#[test]
fn round_robin_mapping_and_zero_delay_chains_match_sequential() {
    // Mostly zero delays: long same-time chains, where the sequential order is not key order.
    let m = Scramble {
        zero: 0.45,
        ..Scramble::new()
    };
    for seed in [4, 5] {
        let seq = sequential(&m, seed);
        for threads in [2, 3] {
            let opts = TimeWarpConfig::default().mapping(chronon::partition::Mapping::RoundRobin);
            let tw = time_warp(&m, seed, threads, opts).expect("time warp run");
            assert_same(&seq, &tw, &format!("seed {seed}, {threads} threads"));
        }
    }
}

#[test]
fn commit_hooks_run_once_per_committed_event_in_time_order() {
    for threads in [1, 3] {
        let hooks = Arc::new(Commits::new(LPS));
        let m = Scramble {
            hooks: Some(hooks.clone()),
            ..Scramble::new()
        };
        let tw = time_warp(&m, 9, threads, TimeWarpConfig::default()).expect("run");
        hooks.assert_once_in_order(&tw, &format!("{threads} threads"));
        assert!(tw.committed > 0);
    }
}

/// Self-sends sooner than the lookahead (zero included), with safe commits (reverse state
/// saving, the lookahead rule) and without (copy), at 1 to 4 threads: the sequential history.
#[test]
fn self_sends_below_the_lookahead_keep_the_sequential_history() {
    let m = Scramble {
        zero: 0.0,
        lookahead: 0.9,
        self_short: 0.5,
        ..Scramble::new()
    };
    for seed in [3, 4] {
        let seq = sequential(&m, seed);
        assert!(seq.committed > 300, "{}", seq.committed);
        let mut safe = 0.0;
        for threads in 1..=4 {
            for opts in [
                TimeWarpConfig::default().state_saving(StateSaving::Reverse),
                TimeWarpConfig::default()
                    .state_saving(StateSaving::Reverse)
                    .window(Some(1.35))
                    .fixed_window(true),
                TimeWarpConfig::default().state_saving(StateSaving::Copy),
            ] {
                let what = format!("seed {seed}, {threads} threads, {opts:?}");
                let tw = time_warp(&m, seed, threads, opts).expect("time warp run");
                assert_same(&seq, &tw, &what);
                if threads > 1 {
                    safe += tw.executor_stats["safe_commits"];
                }
            }
        }
        // The lookahead rule ran between threads, with the short self-sends.
        assert!(safe > 0.0, "seed {seed}: no safe commit between threads");
    }
}

/// Safe commits (safe.rs): one worker commits every event as it runs; threads with a lookahead
/// commit those before GVT + lookahead; either way the history is the sequential one, with the
/// rule on or off, and commit hooks still run once per event in each LP's order. An optimism
/// window of about the lookahead keeps workers near GVT, so that safe and recorded events mix
/// on every LP (without it these small runs race ahead of GVT and few events are safe). A rule
/// with twice the lookahead fails this test (checked by hand).
#[test]
fn safe_commits_keep_the_sequential_history_and_the_commit_order() {
    for (zero, lookahead) in [(0.2, 0.0), (0.0, 0.3), (0.0, 1.1)] {
        let m = Scramble {
            zero,
            lookahead,
            ..Scramble::new()
        };
        let near = TimeWarpConfig::default()
            .state_saving(StateSaving::Reverse)
            .window(Some(1.5 * lookahead))
            .fixed_window(true);
        // Further ahead: stragglers land between GVT + lookahead and twice that (where a rule
        // with twice the lookahead fails).
        let ahead = near.clone().window(Some(3.0 * lookahead));
        // Records committed early, before a safe event of their LP.
        let mut early = 0.0;
        for seed in [1, 2] {
            let seq = sequential(&m, seed);
            for threads in 1..=4 {
                for (name, opts) in [
                    (
                        "on",
                        TimeWarpConfig::default().state_saving(StateSaving::Reverse),
                    ),
                    ("on, window", near.clone()),
                    ("on, wider window", ahead.clone()),
                    ("off", near.clone().safe_commit(false)),
                ] {
                    let what = format!(
                        "lookahead {lookahead}, seed {seed}, {threads} threads, safe commits {name}"
                    );
                    let tw = time_warp(&m, seed, threads, opts).expect("time warp run");
                    assert_same(&seq, &tw, &what);
                    let safe = tw.executor_stats["safe_commits"];
                    if name == "off" {
                        assert_eq!(safe, 0.0, "{what}");
                    } else if threads == 1 {
                        // A lone worker: every event.
                        assert_eq!(safe, tw.committed as f64, "{what}");
                    } else if lookahead == 0.0 {
                        assert_eq!(safe, 0.0, "{what}: no lookahead, no safe events");
                    } else if name == "on, window" {
                        // Both kinds, on the same LPs.
                        assert!(safe > 0.1 * tw.committed as f64, "{what}: {safe} safe");
                        assert!(safe < tw.committed as f64, "{what}: {safe} safe");
                        early += tw.executor_stats["early_commits"];
                    }
                }
            }
        }
        if lookahead > 0.0 {
            assert!(
                early > 0.0,
                "lookahead {lookahead}: no record committed early"
            );
        }
        // Copy state saving keeps every record (it may coast over any event).
        let opts = TimeWarpConfig::default().state_saving(StateSaving::Copy);
        let tw = time_warp(&m, 1, 1, opts).expect("time warp run");
        assert_eq!(tw.executor_stats["safe_commits"], 0.0);
        // Commit hooks: once per event, in each LP's order, with safe and recorded events mixed.
        for threads in [1, 3] {
            let hooks = Arc::new(Commits::new(LPS));
            let m = Scramble {
                hooks: Some(hooks.clone()),
                ..m.clone()
            };
            let opts = if lookahead > 0.0 {
                near.clone()
            } else {
                TimeWarpConfig::default()
            };
            let tw = time_warp(&m, 9, threads, opts).expect("run");
            hooks.assert_once_in_order(&tw, &format!("lookahead {lookahead}, {threads} threads"));
        }
    }
}

#[test]
fn check_reverse_catches_a_broken_reverse_handler() {
    let good = Simulation::new(Scramble::new())
        .lps(LPS)
        .end_time(END)
        .seed(1)
        .executor(Executor::TimeWarp(TimeWarpConfig::new(2)))
        .check_reverse()
        .run()
        .expect("a correct reverse handler passes");
    assert!(good.committed > 0);
    let broken = Scramble {
        broken_reverse: true,
        ..Scramble::new()
    };
    let err = Simulation::new(broken)
        .lps(LPS)
        .end_time(END)
        .seed(1)
        .executor(Executor::TimeWarp(TimeWarpConfig::new(2)))
        .check_reverse()
        .run()
        .expect_err("a broken reverse handler is caught");
    match &err {
        SimError::Model(e) => {
            assert!(e.lp < LPS && e.time > 0.0);
            assert!(e.message.contains("reverse handler"), "{e}");
        }
        other => panic!("expected a model error, got {other}"),
    }
    // Checking needs Time Warp.
    let err = Simulation::new(Scramble::new())
        .lps(LPS)
        .end_time(END)
        .check_reverse()
        .run()
        .expect_err("the sequential executor cannot check");
    assert!(err.is_config());
}

/// VmRSS of this process (0 where /proc is unavailable).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

#[test]
fn memory_bound_holds_while_one_slow_lp_holds_gvt_back() {
    let m = Scramble {
        slow_lp0_us: 300,
        ..Scramble::new()
    };
    let (lps, end) = (64, 100.0);
    let seq = sequential_sized(&m, 3, lps, end);
    // The bound covers the whole process (the test binary, other tests' threads): give this
    // run 256 MiB above what the process holds now. The CLI tests check the bound in a child
    // process, where it is the run's own footprint.
    let bound = resident_bytes() + (256 << 20);
    // No cap on uncommitted events: only the memory bound may hold the fast worker back.
    let run = |opts: TimeWarpConfig| {
        time_warp_sized(&m, 3, 2, opts.max_uncommitted(Some(u64::MAX)), lps, end)
    };
    let wild = run(TimeWarpConfig::default()).expect("unbounded run");
    assert_same(&seq, &wild, "unbounded");
    let wild_peak = wild.executor_stats["peak_tracked_bytes"];
    assert!(wild_peak > 0.0, "the unbounded run counts: {wild_peak}");
    let tw = run(TimeWarpConfig::default().max_memory(Some(bound))).expect("run within the bound");
    assert_same(&seq, &tw, "bounded");
    let peak = tw.executor_stats["memory_peak_estimate"];
    assert!(
        peak > 0.0 && peak <= bound as f64,
        "peak estimate {peak} above {bound}"
    );
    // A bound below what the process already holds is refused up front.
    let err = run(TimeWarpConfig::default().max_memory(Some(256))).expect_err("too small a bound");
    assert!(
        matches!(&err, SimError::Resource(msg) if msg.contains("--max-memory")),
        "{err}"
    );
}

#[test]
fn optimism_window_keeps_the_history() {
    let m = Scramble::new();
    let seq = sequential(&m, 6);
    for w in [0.0, 1.0] {
        for fixed in [false, true] {
            let opts = TimeWarpConfig::default()
                .window(Some(w))
                .fixed_window(fixed);
            let tw = time_warp(&m, 6, 3, opts).expect("run");
            assert_same(&seq, &tw, &format!("window {w}, fixed {fixed}"));
            let es = &tw.executor_stats;
            assert_eq!(es["window_adaptive"], f64::from(u8::from(!fixed)));
            // A user's window is a cap, adaptive or not.
            assert!(es.get("window_final").is_none_or(|&f| f <= w), "{es:?}");
            assert_eq!(es.get("window_cap"), Some(&w));
        }
    }
}

#[test]
fn a_panic_stops_every_worker_and_names_the_lp_and_time() {
    let m = Scramble {
        panic_at: Some((5, 7.0)),
        ..Scramble::new()
    };
    for threads in [1, 4] {
        let err = time_warp(&m, 1, threads, TimeWarpConfig::default()).expect_err("panics");
        match err {
            SimError::Panic { lp, time, message } => {
                assert_eq!(lp, 5);
                assert!(time >= 7.0);
                assert!(message.contains("scramble exploded"));
            }
            other => panic!("expected a panic error, got {other}"),
        }
    }
}

#[test]
fn a_bad_send_is_reported_as_the_sequential_executor_reports_it() {
    let m = Scramble {
        bad_send_at: Some((2, 6.0)),
        ..Scramble::new()
    };
    let seq = Simulation::new(m.clone())
        .lps(LPS)
        .end_time(END)
        .seed(2)
        .run()
        .expect_err("bad send");
    for threads in [1, 3] {
        let tw = time_warp(&m, 2, threads, TimeWarpConfig::default()).expect_err("bad send");
        assert_eq!(tw, seq, "{threads} threads");
    }
}

#[test]
fn bad_settings_are_config_errors() {
    let m = Scramble::new();
    for opts in [
        TimeWarpConfig::default().save_every(Some(0)),
        TimeWarpConfig::default().max_memory(Some(0)),
        TimeWarpConfig::default().window(Some(-1.0)),
        TimeWarpConfig::default().gvt_every(0),
    ] {
        let err = time_warp(&m, 1, 2, opts).expect_err("rejected");
        assert!(err.is_config(), "{err}");
    }
    let err = Simulation::new(NoReverse)
        .lps(2)
        .end_time(1.0)
        .executor(Executor::TimeWarp(
            TimeWarpConfig::new(1).state_saving(StateSaving::Reverse),
        ))
        .run()
        .expect_err("no reverse handler");
    assert!(
        err.is_config() && err.to_string().contains("reverse"),
        "{err}"
    );
    // The same model runs with automatic state saving (copies).
    Simulation::new(NoReverse)
        .lps(2)
        .end_time(1.0)
        .executor(Executor::TimeWarp(TimeWarpConfig::new(2)))
        .run()
        .expect("copy state saving");
}

/// A model without a reverse handler and without `PartialEq` on its state.
#[derive(Debug)]
struct NoReverse;

#[derive(Clone)]
struct Opaque;

impl Model for NoReverse {
    type State = Opaque;
    type Event = ();
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Opaque {
        ctx.send(ctx.me(), 0.25, ());
        Opaque
    }
    fn on_event(&self, _: &mut Opaque, _: &(), ctx: &mut Ctx<'_, Self>) {
        ctx.send(1 - ctx.me(), 0.25, ());
    }
}

#[test]
fn a_stop_request_ends_every_worker_with_an_incomplete_report() {
    let progress = Arc::new(chronon::Progress::new());
    let p = progress.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        p.request_stop();
    });
    let m = Scramble {
        slow_lp0_us: 200,
        ..Scramble::new()
    };
    let r = Simulation::new(m)
        .lps(LPS)
        .end_time(1e9)
        .seed(1)
        .executor(Executor::TimeWarp(TimeWarpConfig::new(3)))
        .progress(progress)
        .run()
        .expect("a stopped run still reports");
    stopper.join().unwrap();
    assert!(!r.complete);
    assert!(r.committed <= r.processed);
    assert!(r.last_time < 1e9);
}
