//! The size check of `Simulation::run`: refused before anything is allocated, with a typed
//! configuration error naming the estimate and the limit.

use chronon::limits::{MemoryLimit, MAX_THREADS};
use chronon::{ConservativeConfig, Ctx, Executor, Model, Simulation, SizeHint, TimeWarpConfig};

/// Each LP sends `start` events to itself at time 1 (the hint says so) and has a big state.
struct Wide {
    start: u64,
    state_bytes: u64,
}

impl Model for Wide {
    type State = ();
    type Event = ();
    fn init(&self, ctx: &mut Ctx<'_, Self>) {
        for _ in 0..self.start {
            ctx.send(ctx.me(), 1.0, ());
        }
    }
    fn on_event(&self, _: &mut (), _: &(), _: &mut Ctx<'_, Self>) {}
    fn size_hint(&self) -> SizeHint {
        SizeHint {
            state_heap_bytes: self.state_bytes,
            ..SizeHint::pending(self.start)
        }
    }
}

fn wide(start: u64, state_bytes: u64) -> Simulation<Wide> {
    Simulation::new(Wide { start, state_bytes })
        .end_time(10.0)
        .memory_limit(MemoryLimit::fixed(1 << 20, "a test limit"))
}

#[test]
fn runs_that_fit_run() {
    let r = wide(2, 0).lps(100).run().expect("fits in 1 MiB");
    assert_eq!(r.committed, 200);
}

#[test]
fn estimates_above_the_limit_are_refused() {
    let e = wide(1_000_000, 0).lps(100).run().unwrap_err();
    assert!(e.is_config(), "{e}");
    let m = e.to_string();
    assert!(m.contains("100 LPs × 1000000 pending events"), "{m}");
    assert!(m.contains("1.0 MiB is available (a test limit)"), "{m}");
    let e = wide(1, 1 << 30).lps(2).run().unwrap_err();
    assert!(e.to_string().contains("per LP"), "{e}");
    let e = wide(u64::MAX, u64::MAX).lps(u32::MAX).run().unwrap_err();
    assert!(e.to_string().contains("16 EiB"), "{e}");
}

#[test]
fn workers_are_bounded_by_the_lps() {
    let window = |t: usize| Executor::Window(ConservativeConfig::new(t));
    // A few idle workers are fine (tests run 4 threads on 1 LP).
    wide(1, 0)
        .lps(1)
        .executor(window(4))
        .run()
        .expect("4 threads");
    let e = wide(1, 0)
        .lps(10)
        .executor(window(100_000))
        .run()
        .unwrap_err();
    assert!(e.is_config() && e.to_string().contains("at most 64"), "{e}");
    let e = wide(1, 0)
        .lps(1_000_000)
        .executor(Executor::TimeWarp(TimeWarpConfig::new(MAX_THREADS + 1)))
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("4096"), "{e}");
    let e = wide(1, 0)
        .lps(8)
        .executor(Executor::Window(
            ConservativeConfig::new(2)
                .dedicated(0.0)
                .shared_sets(usize::MAX),
        ))
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("shared_sets"), "{e}");
}

/// Every LP sends to the next one with a lookahead of `la`.
struct Ring {
    la: f64,
}

impl Model for Ring {
    type State = ();
    type Event = ();
    fn init(&self, ctx: &mut Ctx<'_, Self>) {
        ctx.send(ctx.me(), self.la, ());
    }
    fn on_event(&self, _: &mut (), _: &(), ctx: &mut Ctx<'_, Self>) {
        let next = (ctx.me() + 1) % ctx.lps();
        ctx.send(next, self.la, ());
    }
    fn lookahead(&self) -> f64 {
        self.la
    }
}

#[test]
fn null_messages_cap_the_lookahead() {
    let run = |la: f64, cap: Option<u64>| {
        let mut c = ConservativeConfig::new(2);
        if let Some(cap) = cap {
            c = c.max_null_messages(cap);
        }
        Simulation::new(Ring { la })
            .lps(4)
            .end_time(10.0)
            .executor(Executor::NullMessage(c))
            .run()
    };
    let e = run(1e-12, None).unwrap_err();
    assert!(e.is_config(), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("lookahead 1e-12") && m.contains("cap is 10000000000"),
        "{m}"
    );
    assert_eq!(chronon::DEFAULT_MAX_NULL_MESSAGES, 10_000_000_000);
    // A cap of 10 refuses lookahead 0.5 over [0, 10) (20 null messages) but not 1 (10).
    assert!(run(0.5, Some(10)).unwrap_err().is_config());
    let seq = Simulation::new(Ring { la: 1.0 })
        .lps(4)
        .end_time(10.0)
        .run()
        .unwrap();
    let r = run(1.0, Some(10)).expect("within the cap");
    assert_eq!(r.fingerprint, seq.fingerprint);
}
