//! LPs that move between workers at run time (`Simulation::balance`): a model whose busy
//! region moves over simulated time commits the sequential history — fingerprint, committed
//! count, pending events, final states and counters — under every executor, on threads and
//! over worker processes, while LPs move (the report says `lps_moved > 0`); a Time Warp run
//! moves LPs while it rolls back; a run that moved LPs saves a checkpoint that another
//! executor restores; the per-LP costs in the report find the busy LPs; bad settings get one
//! line.
#![cfg(all(target_os = "linux", not(chronon_loom)))]

use chronon::{
    ConservativeConfig, Ctx, Executor, LpId, Model, ModelStats, Report, Runtime, SimError,
    Simulation, StateSaving, TimeWarpConfig,
};

/// Tokens hop to a random LP near their sender; the LPs of the busy region (`width` LPs,
/// moving on by `width` every `every` units of time) compute `work` steps more per event.
#[derive(Clone, Debug)]
struct Drift {
    lps: LpId,
    width: LpId,
    every: f64,
    work: u64,
    /// The LPs' states refuse to be encoded.
    opaque: bool,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct St {
    seen: u64,
    hash: u64,
    #[serde(serialize_with = "refuse_if")]
    opaque: bool,
}

/// Encodes `false`; fails for `true` (a state that cannot be written to a file).
fn refuse_if<S: serde::Serializer>(opaque: &bool, s: S) -> Result<S::Ok, S::Error> {
    if *opaque {
        return Err(serde::ser::Error::custom(
            "this state refuses to be encoded",
        ));
    }
    s.serialize_bool(false)
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Hop {
    value: u64,
}
chronon::impl_shm_safe!(Hop { value });

fn spin(steps: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for i in 0..steps {
        x = std::hint::black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i).rotate_left(7);
    }
    x
}

impl Drift {
    fn new() -> Self {
        Drift {
            lps: 24,
            width: 4,
            every: 2.0,
            work: 3000,
            opaque: false,
        }
    }

    fn busy(&self, lp: LpId, now: f64) -> bool {
        let at = ((now / self.every) as LpId * self.width) % self.lps;
        (lp + self.lps - at) % self.lps < self.width
    }
}

impl Model for Drift {
    type State = St;
    type Event = Hop;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> St {
        for k in 0..2 {
            let d = 0.5 + ctx.rng().below(4) as f64 * 0.25;
            ctx.send(ctx.me(), d, Hop { value: k });
        }
        St {
            seen: 0,
            hash: u64::from(ctx.me()),
            opaque: self.opaque,
        }
    }

    fn on_event(&self, st: &mut St, hop: &Hop, ctx: &mut Ctx<'_, Self>) {
        st.seen += 1;
        let extra = if self.busy(ctx.me(), ctx.now()) {
            spin(self.work, st.hash)
        } else {
            0
        };
        st.hash = st
            .hash
            .rotate_left(5)
            .wrapping_add(hop.value ^ ctx.now().to_bits() ^ (extra & 1));
        let step = ctx.rng().below(5) as LpId;
        let dst = (ctx.me() + self.lps + step - 2) % self.lps;
        let d = 0.5 + ctx.rng().below(4) as f64 * 0.25;
        ctx.send(dst, d, Hop { value: st.hash });
        ctx.count(0, 1);
    }

    fn lookahead(&self) -> f64 {
        0.5
    }

    fn counter_names(&self) -> &'static [&'static str] {
        &["hops"]
    }

    fn finish(&self, _lp: LpId, st: &St, stats: &mut ModelStats) {
        stats.add("seen", st.seen as f64);
        stats.add("digest", (st.hash >> 12) as f64);
    }
}

const END: f64 = 16.0;

fn sim(exec: Executor) -> Simulation<Drift> {
    let m = Drift::new();
    Simulation::new(m.clone())
        .lps(m.lps)
        .end_time(END)
        .seed(5)
        .executor(exec)
}

fn seq() -> Report {
    sim(Executor::Sequential).run().expect("seq")
}

fn figure(r: &Report, k: &str) -> f64 {
    r.executor_stats.get(k).copied().unwrap_or(0.0)
}

/// `r` commits `seq`'s history and moved LPs at `END / 1.0 - 1` cuts.
fn same(r: &Report, seq: &Report, what: &str) {
    assert_eq!(r.fingerprint, seq.fingerprint, "{what}: fingerprint");
    assert_eq!(r.committed, seq.committed, "{what}: committed");
    assert_eq!(r.pending_at_end, seq.pending_at_end, "{what}: pending");
    assert_eq!(
        r.model_stats, seq.model_stats,
        "{what}: states and counters"
    );
    assert!(r.complete, "{what}");
    assert_eq!(
        figure(r, "balance_cuts"),
        END - 1.0,
        "{what}: a cut at every 1.0"
    );
    assert!(
        figure(r, "balance_remaps") > 0.0,
        "{what}: the mapping changed"
    );
    assert!(figure(r, "lps_moved") > 0.0, "{what}: LPs moved");
    // Every LP's events are counted once over every stretch.
    let events: u64 = r.lp_costs.iter().map(|c| c.events).sum();
    assert_eq!(events, r.processed, "{what}: per-LP events");
}

fn executors() -> Vec<(&'static str, Executor)> {
    vec![
        ("window", Executor::Window(ConservativeConfig::new(2))),
        (
            "window, shared sets",
            Executor::Window(ConservativeConfig::new(2).dedicated(0.5).shared_sets(2)),
        ),
        (
            "null-message",
            Executor::NullMessage(ConservativeConfig::new(2)),
        ),
        ("lockstep", Executor::Lockstep(ConservativeConfig::new(3))),
        (
            "timewarp",
            Executor::TimeWarp(TimeWarpConfig::default().threads(2)),
        ),
        (
            "timewarp, preemptive",
            Executor::TimeWarp(
                TimeWarpConfig::default()
                    .threads(2)
                    .state_saving(StateSaving::Copy)
                    .preempt(true),
            ),
        ),
    ]
}

#[test]
fn every_executor_on_threads_moves_lps_and_keeps_the_history() {
    let seq = seq();
    assert!(seq.committed > 500);
    for (what, exec) in executors() {
        let r = sim(exec)
            .serde_model()
            .balance(1.0)
            .run()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        same(&r, &seq, what);
    }
}

/// [`sim`]'s model with states that cannot be encoded, on the sequential executor.
fn opaque() -> Simulation<Drift> {
    let m = Drift {
        opaque: true,
        ..Drift::new()
    };
    Simulation::new(m.clone()).lps(m.lps).end_time(END).seed(5)
}

#[test]
fn on_threads_lps_move_as_values_never_encoded() {
    // States that cannot be encoded: on threads the cuts stay in memory and LPs move as they
    // are (over worker processes the cut is written: `across_processes` below).
    let seq = opaque().run().expect("seq");
    for (what, exec) in executors() {
        let r = opaque()
            .executor(exec)
            .serde_model()
            .balance(1.0)
            .run()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        same(&r, &seq, what);
    }
}

#[test]
fn an_automatic_period_keeps_the_history_and_says_its_last_period() {
    let seq = seq();
    for (what, exec) in executors() {
        let r = sim(exec)
            .serde_model()
            .balance(chronon::balance::BalancePeriod::Auto)
            .run()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(r.fingerprint, seq.fingerprint, "{what}");
        assert_eq!(r.model_stats, seq.model_stats, "{what}");
        let cuts = figure(&r, "balance_cuts");
        assert!(cuts >= 1.0, "{what}: the first cut at END / AUTO_FIRST");
        assert!(
            cuts < END / (END / chronon::balance::AUTO_FIRST),
            "{what}: {cuts} cuts"
        );
        let p = figure(&r, "balance_period");
        assert!(
            (END / chronon::balance::AUTO_MIN..=END).contains(&p),
            "{what}: {p}"
        );
        assert!(figure(&r, "balance_cut_s") > 0.0, "{what}");
    }
}

#[test]
fn the_costliest_lps_are_the_busy_ones() {
    // A busy region that never moves: LPs 0..4 spin on every event, under every executor.
    let m = Drift {
        every: 1e9,
        work: 20_000,
        ..Drift::new()
    };
    for (what, exec) in executors() {
        let r = Simulation::new(m.clone())
            .lps(m.lps)
            .end_time(END)
            .seed(5)
            .executor(exec)
            .run()
            .unwrap();
        assert_eq!(r.lp_costs.len(), 24, "{what}");
        let events: u64 = r.lp_costs.iter().map(|c| c.events).sum();
        assert_eq!(events, r.processed, "{what}: every event counted once");
        let top: Vec<LpId> = chronon::lp_cost::top(&r.lp_costs, 4)
            .iter()
            .map(|t| t.0)
            .collect();
        let busy = top.iter().filter(|&&lp| lp < 4).count();
        assert!(
            busy >= 3,
            "{what}: the costliest LPs {top:?} are the busy ones"
        );
    }
}

#[test]
fn a_run_in_stretches_reports_where_the_load_was_over_time() {
    // The busy region moves on by 4 LPs every 2 units; a stretch of 1 unit each.
    let m = Drift {
        work: 20_000,
        ..Drift::new()
    };
    let r = Simulation::new(m.clone())
        .lps(m.lps)
        .end_time(END)
        .seed(5)
        .executor(Executor::Window(ConservativeConfig::new(2)))
        .serde_model()
        .balance(1.0)
        .run()
        .unwrap();
    let heat = r.lp_heat.expect("a run in stretches has a heat strip");
    assert_eq!(heat.lps_per_group, 1, "24 LPs: one per group");
    assert_eq!(heat.stretches.len(), END as usize);
    let mut found = 0;
    for (k, s) in heat.stretches.iter().enumerate() {
        assert_eq!((s.from, s.to), (k as f64, k as f64 + 1.0));
        assert_eq!(s.cost_s.len(), 24);
        let hottest = (0..24).max_by(|&a, &b| s.cost_s[a].total_cmp(&s.cost_s[b]));
        found += usize::from(hottest.is_some_and(|lp| m.busy(lp as LpId, s.from)));
    }
    // Timing is noisy (a thread preempted in a timed event): most stretches, not all.
    assert!(
        found >= 12,
        "the busy region is the hottest in {found} of 16"
    );
    // A run in one stretch has none.
    let one = sim(Executor::Window(ConservativeConfig::new(2)))
        .run()
        .unwrap();
    assert!(one.lp_heat.is_none());
}

#[test]
fn time_warp_moves_lps_while_it_rolls_back() {
    let seq = seq();
    // Rollbacks depend on timing: try a few runs until one both rolled back and moved LPs.
    let mut seen = false;
    for _ in 0..6 {
        let exec = Executor::TimeWarp(TimeWarpConfig::default().threads(3));
        let r = sim(exec).serde_model().balance(1.0).run().unwrap();
        same(&r, &seq, "timewarp, 3 threads");
        if r.rolled_back > 0 {
            seen = true;
            break;
        }
    }
    assert!(seen, "a Time Warp run with moves rolled back");
}

#[test]
fn a_run_that_moved_lps_saves_a_checkpoint_another_executor_restores() {
    let seq = seq();
    let dir = std::env::temp_dir().join(format!("chronon-balance-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let r = sim(Executor::Window(ConservativeConfig::new(2)))
        .balance(1.0)
        .checkpoint_at(7.5, &dir)
        .run()
        .unwrap();
    assert_eq!(r.fingerprint, seq.fingerprint);
    assert!(figure(&r, "lps_moved") > 0.0);
    assert_eq!(r.checkpoints.len(), 1);
    let cut = chronon::checkpoint::checkpoint_path(&dir, 7.5);
    for exec in [
        Executor::TimeWarp(TimeWarpConfig::default().threads(2)),
        Executor::NullMessage(ConservativeConfig::new(2)),
    ] {
        let r = sim(exec.clone())
            .restore(&cut)
            .balance(2.0)
            .run()
            .unwrap_or_else(|e| panic!("{exec:?}: {e}"));
        assert_eq!(r.fingerprint, seq.fingerprint, "{exec:?}");
        assert_eq!(r.model_stats, seq.model_stats, "{exec:?}");
    }
    // Only the checkpoint asked for is left: the balancing cuts are gone.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_balance_settings_get_one_line() {
    let refused = |s: Simulation<Drift>, what: &str| match s.run() {
        Err(SimError::Config(c)) => {
            let line = c.to_string();
            assert!(!line.contains('\n'), "{line}");
            assert!(line.contains(what), "{line}");
        }
        other => panic!("{what}: {other:?}"),
    };
    let w = || Executor::Window(ConservativeConfig::new(2));
    refused(sim(w()).serde_model().balance(0.0), "finite and > 0");
    refused(sim(w()).serde_model().balance(f64::NAN), "finite and > 0");
    refused(
        sim(w()).serde_model().balance(f64::INFINITY),
        "finite and > 0",
    );
    refused(sim(w()).balance(1.0), "serde_model()");
    refused(
        sim(w())
            .end_time(f64::INFINITY)
            .serde_model()
            .balance(chronon::balance::BalancePeriod::Auto),
        "a finite end_time",
    );
    refused(
        sim(Executor::Sequential).serde_model().balance(1.0),
        "workers that own them",
    );
    refused(
        sim(Executor::Lockstep(
            ConservativeConfig::new(2).runtime(Runtime::WorkStealing { threshold: 4 }),
        ))
        .serde_model()
        .balance(1.0),
        "workers that own them",
    );
}

mod across_processes {
    use super::*;

    fn check(entry: &str, procs: usize, exec: Executor) {
        let seq = (!chronon::is_worker_process()).then(seq);
        let r = sim(exec)
            .serde_model()
            .balance(1.0)
            .processes(procs)
            .process_args([entry, "--exact", "--nocapture", "--test-threads=1"])
            .run()
            .unwrap_or_else(|e| panic!("{entry}: {e}"));
        same(&r, &seq.expect("only the parent gets a report"), entry);
    }

    #[test]
    fn a_state_that_cannot_be_encoded_fails_in_one_line() {
        let r = opaque()
            .executor(Executor::Window(ConservativeConfig::new(1)))
            .serde_model()
            .balance(1.0)
            .processes(2)
            .process_args([
                "across_processes::a_state_that_cannot_be_encoded_fails_in_one_line",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .run();
        if chronon::is_worker_process() {
            return;
        }
        let line = r
            .expect_err("a cut of states that cannot be written")
            .to_string();
        assert!(line.contains("refuses to be encoded"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn window_2_processes_2_threads() {
        check(
            "across_processes::window_2_processes_2_threads",
            2,
            Executor::Window(ConservativeConfig::new(2)),
        );
    }

    #[test]
    fn null_message_2_processes() {
        check(
            "across_processes::null_message_2_processes",
            2,
            Executor::NullMessage(ConservativeConfig::new(1)),
        );
    }

    #[test]
    fn timewarp_2_processes_2_threads() {
        check(
            "across_processes::timewarp_2_processes_2_threads",
            2,
            Executor::TimeWarp(TimeWarpConfig::default().threads(2)),
        );
    }
}
