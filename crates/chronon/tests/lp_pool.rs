//! The per-LP memory of the lock-step runtimes at LP granularity (work-stealing and
//! active-threads): each LP's send buffer and inbox keep their capacity, so once warm a
//! lock-step allocates nothing per event. Counted with a counting global allocator over a ring
//! of LPs that each pass one event on every lock-step: the allocations of a run to time 2T less
//! those of a run to time T, per extra event.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use chronon::{ConservativeConfig, Ctx, Executor, Model, QueueKind, Runtime, Simulation};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// Safety: every call is forwarded to the system allocator unchanged; the counter has no
// effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Ordering: a count read after the run's threads are joined, which orders it.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // Safety: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Safety: `ptr` came from `System.alloc` with this layout (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        // Ordering: as in `alloc`.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // Safety: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// `lps` LPs in a ring, each passing its one event to the next LP one time unit later.
struct Ring {
    lps: u32,
}

impl Model for Ring {
    type State = u64;
    type Event = u64;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
        ctx.send(ctx.me(), 0.5, 0);
        0
    }

    fn on_event(&self, n: &mut u64, hops: &u64, ctx: &mut Ctx<'_, Self>) {
        *n += 1;
        ctx.send((ctx.me() + 1) % self.lps, 1.0, hops + 1);
    }

    fn lookahead(&self) -> f64 {
        1.0
    }
}

/// Allocations and committed events of one run to `end`.
fn run(rt: Runtime, end: f64) -> (u64, u64) {
    let m = Ring { lps: 64 };
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = Simulation::new(m)
        .lps(64)
        .end_time(end)
        .queue(QueueKind::Heap)
        .executor(Executor::Lockstep(ConservativeConfig::new(2).runtime(rt)))
        .run()
        .unwrap();
    (ALLOCS.load(Ordering::Relaxed) - before, r.committed)
}

#[test]
fn a_warm_lock_step_allocates_nothing_per_event() {
    for rt in [
        Runtime::WorkStealing { threshold: 8 },
        Runtime::ActiveThreads { threshold: 8 },
    ] {
        let (a1, e1) = run(rt, 200.0);
        let (a2, e2) = run(rt, 400.0);
        assert!(e2 > e1 + 10_000, "{} {e1} {e2}", rt.name());
        let per_event = (a2 as f64 - a1 as f64) / (e2 - e1) as f64;
        eprintln!("{}: {per_event:.4} allocations per extra event", rt.name());
        assert!(per_event < 0.01, "{}: {per_event} per event", rt.name());
    }
}
