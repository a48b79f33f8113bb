//! Contexts: suspend and resume, drop-on-discard, panics, and check-and-switch. A
//! platform-mode return is an engine call, so the tests make it in platform mode as `Ctx` does.

use std::cell::Cell;
use std::rc::Rc;

use super::{earlier_waits, BhMin, Context, PlatformReturn, StackPool, Step, Switch};
use crate::types::Time;

struct Reg(Cell<Time>);
impl BhMin for Reg {
    fn bh_min(&self) -> Time {
        self.0.get()
    }
}

struct Counted(Rc<Cell<i32>>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

#[test]
fn check_switches_only_for_an_earlier_message() {
    assert!(earlier_waits(1.0, 2.0));
    assert!(!earlier_waits(2.0, 2.0));
    assert!(!earlier_waits(f64::INFINITY, 2.0));
}

#[test]
fn a_context_suspends_at_a_platform_return_and_resumes_with_nothing_lost() {
    let reg = Reg(Cell::new(f64::INFINITY));
    let mut pool = StackPool::default();
    let mut ctx = Context::new(pool.get().unwrap(), |y| {
        let sw = Switch::new(&reg, y, None, 5.0);
        let mut sum = 0u64;
        for i in 0..10u64 {
            sum += i;
            super::platform_mode(|| sw.platform_return(5.0));
        }
        sum
    });
    reg.0.set(4.0); // something earlier waits: the first check switches
    assert!(matches!(
        ctx.resume(),
        Step::Suspended { interrupted: false }
    ));
    reg.0.set(f64::INFINITY);
    match ctx.resume() {
        Step::Done(s) => assert_eq!(s, 45),
        Step::Suspended { .. } => panic!("nothing earlier waits"),
    }
    pool.put(ctx.into_stack());
    assert_eq!(pool.created, 1);
}

#[test]
fn a_nested_engine_call_never_switches() {
    // An engine call inside platform mode (a handler's `platform_mode(f)`, a Python handler)
    // returns to platform code: even with something earlier waiting, it runs to its end.
    let reg = Reg(Cell::new(1.0));
    let mut pool = StackPool::default();
    let mut ctx = Context::new(pool.get().unwrap(), |y| {
        let sw = Switch::new(&reg, y, None, 5.0);
        super::platform_mode(|| {
            for _ in 0..3 {
                super::platform_mode(|| sw.platform_return(5.0));
            }
        });
        7
    });
    match ctx.resume() {
        Step::Done(v) => assert_eq!(v, 7),
        Step::Suspended { .. } => panic!("a nested return switched"),
    }
    pool.put(ctx.into_stack());
}

#[test]
fn a_discarded_context_drops_its_locals_once() {
    let live = Rc::new(Cell::new(0));
    let reg = Reg(Cell::new(0.0));
    let mut pool = StackPool::default();
    let l = live.clone();
    let mut ctx = Context::new(pool.get().unwrap(), move |y| {
        l.set(l.get() + 1);
        let _a = Counted(l.clone());
        let sw = Switch::new(&reg, y, None, 5.0);
        super::platform_mode(|| sw.platform_return(1.0));
        unreachable!("discarded while suspended");
    });
    assert!(matches!(
        ctx.resume(),
        Step::Suspended { interrupted: false }
    ));
    assert_eq!(live.get(), 1);
    pool.put(ctx.discard());
    assert_eq!(
        live.get(),
        0,
        "the suspended local was dropped by the unwind"
    );
    assert_eq!(
        Rc::strong_count(&live),
        1,
        "the closure's captures were dropped"
    );
}

#[test]
fn a_panic_in_a_resumed_context_reaches_the_platform() {
    let reg = Reg(Cell::new(0.0));
    let mut pool = StackPool::default();
    let mut ctx = Context::new(pool.get().unwrap(), |y| {
        let sw = Switch::new(&reg, y, None, 5.0);
        super::platform_mode(|| sw.platform_return(1.0));
        panic!("boom after resume");
    });
    assert!(matches!(
        ctx.resume(),
        Step::Suspended { interrupted: false }
    ));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = ctx.resume();
    }));
    let msg = r.unwrap_err();
    assert_eq!(msg.downcast_ref::<&str>(), Some(&"boom after resume"));
}
