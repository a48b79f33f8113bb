//! Ticks that preempt by interrupt (preempt/README.md, "Ticks that preempt"): a model whose
//! handlers compute in a loop that never calls the engine is switched off the CPU by ticks in
//! the middle of that loop, and preemptive Time Warp still commits the sequential history.
//! This test program installs `PlatformAlloc`, as every program on the runner does.

mod common;

use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
use std::sync::Arc;

use chronon::{
    Ctx, Executor, LpId, Model, ModelStats, Report, ReverseCtx, ReverseFn, Simulation, StateSaving,
    Ticks, TimeWarpConfig,
};
use common::{assert_same_history, figure, Cell, Token};

#[global_allocator]
static ALLOC: chronon::PlatformAlloc = chronon::PlatformAlloc;

/// A local on the handler's stack that counts its drop: an interrupted context that is dropped
/// leaks it (no unwinding can start at an arbitrary instruction), one that returns drops it.
struct Local(Arc<AtomicI64>);

impl Drop for Local {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

#[derive(Clone, Debug)]
struct Busy {
    /// Steps of plain computation per event, after the state changed and one event was sent.
    steps: u64,
    live: Arc<AtomicI64>,
}

const LPS: LpId = 12;
const END: f64 = 30.0;

/// Computation the engine never sees: no call into it, no allocation.
#[inline(never)]
fn compute(steps: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for i in 0..steps {
        x = std::hint::black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i).rotate_left(13);
    }
    x
}

impl Model for Busy {
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
        self.live.fetch_add(1, SeqCst);
        let _local = Local(self.live.clone());
        cell.apply(tok, ctx.now());
        let dst = ctx.rng().below(u64::from(LPS)) as LpId;
        let delay = (1 + ctx.rng().below(4)) as f64 * 0.5;
        // Where the event goes depends on the computation: an interrupted loop that resumed
        // with a register changed would change the history.
        let v = compute(self.steps, cell.hash);
        let dst = if v % 3 == 0 { ctx.me() } else { dst };
        ctx.send(dst, delay, Token { value: v });
    }

    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        Some(Self::undo)
    }

    fn finish(&self, lp: LpId, cell: &Cell, stats: &mut ModelStats) {
        cell.finish(lp, stats);
    }
}

impl Busy {
    fn undo(&self, cell: &mut Cell, tok: &Token, ctx: &ReverseCtx) {
        cell.uncount();
        cell.unhash(tok, ctx);
    }
}

fn run(m: &Busy, threads: usize, saving: StateSaving, ticks: Ticks) -> Report {
    Simulation::new(m.clone())
        .lps(LPS)
        .end_time(END)
        .seed(9)
        .executor(Executor::TimeWarp(
            TimeWarpConfig::default()
                .threads(threads)
                .preempt(true)
                .state_saving(saving)
                .ticks(Some(ticks)),
        ))
        .run()
        .expect("run")
}

#[test]
fn handlers_that_never_call_the_engine_are_preempted_and_the_history_is_sequential() {
    let model = || Busy {
        steps: 40_000,
        live: Arc::new(AtomicI64::new(0)),
    };
    let seq = common::sequential(&model(), 9, LPS, END);
    let (mut interrupts, mut dropped) = (0.0, 0.0);
    for threads in [1, 2, 3] {
        for saving in [StateSaving::Copy, StateSaving::Reverse] {
            let m = model();
            let what = format!("{threads} threads, {saving:?}");
            let tw = run(&m, threads, saving, Ticks::new(20.0, -0.99));
            assert_same_history(&seq, &tw, &what);
            assert_eq!(
                figure(&tw, "preempt_interrupts_on"),
                threads as f64,
                "{what}"
            );
            let (i, d) = (
                figure(&tw, "preempt_interrupts"),
                figure(&tw, "preempt_interrupts_dropped"),
            );
            assert!(i <= figure(&tw, "preemptions"), "{what}");
            assert!(
                d <= i,
                "{what}: only an interrupted context is dropped as one"
            );
            // A dropped interrupted context leaks the handler's local if the tick came while
            // it was alive, and nothing if the tick came before it was made or after it was
            // dropped (the engine's own code around the handler); every other context drops it.
            let leaked = m.live.load(SeqCst) as f64;
            assert!(
                (0.0..=d).contains(&leaked),
                "{what}: {leaked} locals leaked by {d} dropped interrupted contexts"
            );
            interrupts += i;
            dropped += d;
        }
    }
    eprintln!("interrupts {interrupts}, dropped {dropped}");
    assert!(
        interrupts > 0.0,
        "ticks switched handlers off mid-computation"
    );
}

#[test]
fn cooperative_ticks_never_interrupt() {
    let m = Busy {
        steps: 40_000,
        live: Arc::new(AtomicI64::new(0)),
    };
    let seq = common::sequential(&m, 9, LPS, END);
    let tw = run(
        &m,
        2,
        StateSaving::Copy,
        Ticks::new(20.0, -0.99).interrupts(false),
    );
    assert_same_history(&seq, &tw, "cooperative");
    assert_eq!(figure(&tw, "preempt_interrupts"), 0.0);
    assert_eq!(figure(&tw, "preempt_interrupts_on"), 0.0);
    assert!(figure(&tw, "ticks_delivered") > 0.0, "ticks ran");
    assert_eq!(m.live.load(SeqCst), 0, "every local dropped");
}
