//! PHOLD under Time Warp commits the sequential executor's history: several seeds, remote
//! fractions and lookaheads (zero included), 1 to 4 threads, copy and reverse state saving,
//! with and without preemption (`--preempt`; a test below gives PHOLD busy work with
//! preemption points so that contexts are suspended, resumed and dropped).

use chronon::{Executor, Report, Simulation, StateSaving, TimeWarpConfig};
use chronon_models::Phold;

fn phold(remote: f64, lookahead: f64) -> Phold {
    Phold {
        lps: 48,
        start_events: 4,
        remote,
        lookahead,
        mean: 1.0,
        work_us: 0.0,
        state_bytes: 8,
        ..Phold::default()
    }
}

fn run(p: &Phold, seed: u64, exec: Executor, saving: StateSaving) -> Report {
    run_with(p, seed, exec, saving, false)
}

fn run_with(p: &Phold, seed: u64, exec: Executor, saving: StateSaving, preempt: bool) -> Report {
    Simulation::new(p.clone())
        .lps(p.lps)
        .end_time(30.0)
        .seed(seed)
        .executor(match exec {
            Executor::TimeWarp(c) => {
                Executor::TimeWarp(c.state_saving(saving).gvt_every(128).preempt(preempt))
            }
            other => other,
        })
        .run()
        .expect("PHOLD runs")
}

#[test]
fn phold_commits_the_sequential_history() {
    for (seed, remote, lookahead) in [(1, 0.1, 0.1), (2, 0.5, 0.0), (3, 1.0, 0.0), (4, 0.9, 0.5)] {
        let p = phold(remote, lookahead);
        let seq = run(&p, seed, Executor::Sequential, StateSaving::Auto);
        assert!(seq.committed > 1000);
        for threads in 1..=4 {
            for (saving, preempt) in [
                (StateSaving::Reverse, false),
                (StateSaving::Copy, false),
                (StateSaving::Reverse, true),
                (StateSaving::Copy, true),
            ] {
                let what = format!("seed {seed}, remote {remote}, lookahead {lookahead}, {threads} threads, {saving:?}, preempt {preempt}");
                let tw = run_with(
                    &p,
                    seed,
                    Executor::TimeWarp(TimeWarpConfig::new(threads)),
                    saving,
                    preempt,
                );
                assert_eq!(tw.fingerprint, seq.fingerprint, "{what}");
                assert_eq!(tw.committed, seq.committed, "{what}");
                assert_eq!(tw.model_stats, seq.model_stats, "{what}");
                assert_eq!(tw.processed, tw.committed + tw.rolled_back, "{what}");
            }
        }
    }
}

#[test]
fn phold_reverse_handler_passes_the_check() {
    let p = phold(0.5, 0.0);
    let r = Simulation::new(p.clone())
        .lps(p.lps)
        .end_time(10.0)
        .seed(5)
        .executor(Executor::TimeWarp(TimeWarpConfig::new(2)))
        .check_reverse()
        .run()
        .expect("PHOLD's reverse handler undoes its events");
    assert!(r.committed > 0);
}

#[test]
fn phold_with_busy_work_is_preempted_and_commits_the_sequential_history() {
    let p = Phold {
        work_us: 6.0,
        ..phold(0.9, 0.0)
    };
    let seq = run(&p, 5, Executor::Sequential, StateSaving::Auto);
    let mut preemptions = 0.0;
    for threads in [2, 4] {
        for saving in [StateSaving::Reverse, StateSaving::Copy] {
            let what = format!("{threads} threads, {saving:?}");
            let tw = run_with(
                &p,
                5,
                Executor::TimeWarp(TimeWarpConfig::new(threads)),
                saving,
                true,
            );
            assert_eq!(tw.fingerprint, seq.fingerprint, "{what}");
            assert_eq!(tw.model_stats, seq.model_stats, "{what}");
            preemptions += tw.executor_stats["preemptions"];
        }
    }
    assert!(
        preemptions > 0.0,
        "busy work with preemption points is preempted"
    );
}
