//! Preemption by interrupt: a tick switches off a context whose handler never calls the engine,
//! the interrupted computation resumes with every register intact, a context switched off that
//! way is dropped without running further, and platform mode is never interrupted.

use std::cell::Cell;
use std::time::{Duration, Instant};

use corosensei::stack::Stack;

use super::interrupt::{self, Arm};
use super::ticks::{Flag, Timer};
use super::{BhMin, Context, StackPool, Step, Switch};
use crate::types::Time;

struct Reg(Cell<Time>);
impl BhMin for Reg {
    fn bh_min(&self) -> Time {
        self.0.get()
    }
}

/// Integer and floating-point work with many values live at once, no call into the engine and
/// no allocation: what an interrupt must leave exactly as it found it.
#[inline(never)]
fn work(rounds: u64) -> (u64, f64) {
    let mut a = [0x9E37_79B9_7F4A_7C15u64, 1, 2, 3, 4, 5, 6, 7];
    let mut f = [0.5f64, 1.5, 2.5, 3.5];
    for r in 0..rounds {
        for i in 0..8 {
            a[i] = a[i]
                .wrapping_mul(0xBF58_476D_1CE4_E5B9)
                .rotate_left((r as u32 + i as u32) % 63 + 1)
                ^ a[(i + 1) % 8];
        }
        for j in 0..4 {
            f[j] = (f[j] * 1.000_000_1 + (a[j] >> 40) as f64 * 1e-9).sin() + 1.0;
        }
    }
    (a.iter().fold(0, |x, y| x ^ y), f.iter().sum())
}

fn ticks(period_us: f64) -> (Box<Flag>, Timer) {
    let flag = Box::new(Flag::default());
    flag.set_gating(true);
    let timer = Timer::new(&flag, period_us).expect("a tick timer");
    (flag, timer)
}

#[test]
fn this_machine_can_preempt_by_interrupt() {
    // x86-64 Linux with XSAVE, and the tests' allocator marks platform mode (lib.rs).
    let _ = Box::new(0u8);
    assert!(interrupt::available());
}

#[test]
fn a_tick_switches_off_a_loop_that_never_calls_the_engine_and_it_resumes_intact() {
    const ROUNDS: u64 = 300_000;
    let expected = work(ROUNDS);
    let reg = Reg(Cell::new(0.0)); // an earlier message always waits: every check switches
    let (flag, mut timer) = ticks(100.0);
    let mut pool = StackPool::default();
    let stack = pool.get().unwrap();
    let limit = stack.limit().get();
    let fl: &Flag = &flag;
    let mut ctx = Context::new(stack, |y| {
        let sw = Switch::new(&reg, y, Some(fl), 5.0);
        let _armed = Arm::new(&sw, limit);
        (work(ROUNDS), sw.checks())
    });
    timer.set(true);
    let mut switches = 0u64;
    let (got, checks) = loop {
        match ctx.resume() {
            Step::Suspended { interrupted } => {
                assert!(interrupted, "the loop makes no engine call");
                switches += 1;
            }
            Step::Done(r) => break r,
        }
    };
    timer.set(false);
    pool.put(ctx.into_stack());
    assert!(
        switches > 0,
        "no tick switched the loop off ({} delivered)",
        flag.delivered()
    );
    assert_eq!(
        checks, switches,
        "every interrupt checked and switched once"
    );
    assert_eq!(got.0, expected.0, "integer registers intact");
    assert_eq!(
        got.1.to_bits(),
        expected.1.to_bits(),
        "floating-point registers intact"
    );
}

#[test]
fn a_context_a_tick_switched_off_is_dropped_without_running_further() {
    let reg = Reg(Cell::new(0.0));
    let (flag, mut timer) = ticks(100.0);
    let mut pool = StackPool::default();
    let stack = pool.get().unwrap();
    let limit = stack.limit().get();
    let steps = Cell::new(0u64);
    let (fl, st): (&Flag, &Cell<u64>) = (&flag, &steps);
    let mut ctx = Context::new(stack, move |y| {
        let sw = Switch::new(&reg, y, Some(fl), 5.0);
        let _armed = Arm::new(&sw, limit);
        loop {
            st.set(std::hint::black_box(st.get() + 1));
        }
    });
    timer.set(true);
    let start = Instant::now();
    let step = ctx.resume();
    timer.set(false);
    assert!(matches!(step, Step::Suspended { interrupted: true }));
    assert!(start.elapsed() < Duration::from_secs(30));
    let at_switch = steps.get();
    assert!(at_switch > 0);
    // Dropped without unwinding; the stack goes back to the pool and serves a new context.
    pool.put(ctx.discard());
    assert_eq!(steps.get(), at_switch, "nothing ran after the switch");
    let mut again = Context::new(pool.get().unwrap(), |_| 7);
    assert!(matches!(again.resume(), Step::Done(7)));
    assert_eq!(pool.created, 1, "the stack was reused");
}

#[test]
fn platform_mode_is_never_interrupted() {
    let reg = Reg(Cell::new(0.0));
    let (flag, mut timer) = ticks(100.0);
    let mut pool = StackPool::default();
    let stack = pool.get().unwrap();
    let limit = stack.limit().get();
    let fl: &Flag = &flag;
    let mut ctx = Context::new(stack, |y| {
        let sw = Switch::new(&reg, y, Some(fl), 5.0);
        let _armed = Arm::new(&sw, limit);
        crate::preempt::platform_mode(|| {
            let until = Instant::now() + Duration::from_millis(50);
            let mut n = 0u64;
            while Instant::now() < until {
                n = std::hint::black_box(n + 1);
            }
            n
        })
    });
    timer.set(true);
    let step = ctx.resume();
    timer.set(false);
    assert!(
        matches!(step, Step::Done(n) if n > 0),
        "platform mode ran to its end"
    );
    assert!(flag.delivered() > 0, "ticks came meanwhile");
}

#[test]
fn a_context_dropped_after_a_tick_leaves_no_engine_lock_held() {
    // `Ctx::same_process` reads a lock. Contexts that ask it in a loop are switched off by
    // ticks and dropped (never resumed): none may keep the lock, or the next run's set-up
    // would wait for it forever.
    let reg = Reg(Cell::new(0.0));
    let (flag, mut timer) = ticks(20.0);
    let fl: &Flag = &flag;
    let mut pool = StackPool::default();
    for _ in 0..30 {
        let stack = pool.get().unwrap();
        let limit = stack.limit().get();
        let reg = &reg;
        let mut ctx = Context::new(stack, move |y| {
            let sw = Switch::new(reg, y, Some(fl), 5.0);
            let _armed = Arm::new(&sw, limit);
            let mut n = 0u32;
            loop {
                n = std::hint::black_box(
                    n.wrapping_add(1 + u32::from(crate::partition::in_this_process(n % 64))),
                );
            }
        });
        timer.set(true);
        let step = ctx.resume();
        timer.set(false);
        assert!(matches!(step, Step::Suspended { interrupted: true }));
        pool.put(ctx.discard());
    }
    // Other tests may read it meanwhile: the lock must come free within a second.
    let until = Instant::now() + Duration::from_secs(1);
    while !crate::partition::free_for_writing() {
        assert!(Instant::now() < until, "a dropped context keeps the lock");
        std::thread::sleep(Duration::from_millis(5));
    }
}
