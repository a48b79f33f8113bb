//! Null messages over several MPI ranks need a finite end time (transport/mpi/README.md, M4:
//! outside a barrier no rank can tell that every other rank has run out of events, so the
//! channels carry the run to its end). A library run with no end (or an infinite one) is one
//! configuration error, the same on every rank, before anything starts (no end time at all is
//! refused for every run); with an end the same run commits the sequential history. (The CLI
//! cannot ask for it: `--end` is always finite.)
//!
//! The test launches itself: run by `cargo test` it starts `mpirun -n 2` on its own binary,
//! filtered to this test; inside `mpirun` (the launcher's environment) it is one rank.
#![cfg(feature = "mpi")]

use std::process::Command;

use chronon::{ConservativeConfig, Ctx, Executor, Model, Simulation};

/// Every LP sends the next LP one event per time unit.
struct Ring;

impl Model for Ring {
    type State = u64;
    type Event = u32;
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send(ctx.me(), 1.0, 0);
        0
    }
    fn lookahead(&self) -> f64 {
        1.0
    }
    fn on_event(&self, n: &mut u64, hops: &u32, ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        let next = (ctx.me() + 1) % 8;
        ctx.send(next, 1.0, hops + 1);
    }
}

fn null_messages() -> Executor {
    Executor::NullMessage(ConservativeConfig::new(1))
}

const NAME: &str = "null_messages_over_ranks_need_a_finite_end";

#[test]
fn null_messages_over_ranks_need_a_finite_end() {
    if chronon::mpi::launched().is_some() {
        on_a_rank();
        return;
    }
    let out = Command::new("timeout")
        .args(["60", "mpirun", "-n", "2"])
        .arg(std::env::current_exe().unwrap())
        .args([NAME, "--exact", "--test-threads=1", "--nocapture"])
        .output()
        .expect("timeout and mpirun run (install mpich)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{:?}: {text}", out.status);
    // Both ranks ran the test, and it passed on both. (The harness writes "test result: ",
    // "ok" and the counts separately, so two ranks' summaries can interleave on the shared
    // pipe: count the part that is one write.)
    assert_eq!(text.matches("1 passed; 0 failed").count(), 2, "{text}");
    assert_eq!(text.matches("rank checked").count(), 2, "{text}");
}

/// One rank's part: the refusals, then the same run with an end.
fn on_a_rank() {
    let mpi = chronon::mpi::Mpi::init().unwrap();
    assert_eq!(mpi.size(), 2);
    for end in [None, Some(f64::INFINITY)] {
        let mut sim = Simulation::new(Ring).lps(8).executor(null_messages());
        if let Some(e) = end {
            sim = sim.end_time(e);
        }
        let err = sim.ranks().run().expect_err("no end over ranks is refused");
        let msg = err.to_string();
        // Every run needs an end time; an infinite one is refused here only.
        let want = match end {
            None => "no end time: call .end_time(T)",
            Some(_) => "executor null-message over several ranks needs a finite end time",
        };
        assert!(msg.contains(want), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }
    let seq = Simulation::new(Ring).lps(8).end_time(20.0).run().unwrap();
    let r = Simulation::new(Ring)
        .lps(8)
        .end_time(20.0)
        .executor(null_messages())
        .ranks()
        .run()
        .unwrap();
    assert!(r.complete);
    if mpi.rank() == 0 {
        assert_eq!(r.committed, seq.committed);
        assert_eq!(r.fingerprint, seq.fingerprint);
    }
    println!("rank checked");
}
