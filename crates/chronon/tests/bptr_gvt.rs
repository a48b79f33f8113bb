//! Heap reuse under Time Warp is deferred past GVT (seed 000 §3.3): a handler allocates an
//! item and drops it at once, event after event. Sequentially the heap hands the same few
//! items out again at once; under Time Warp, from the first GVT round on, an item dropped at
//! time t is reused only once GVT has passed t (`fossil` reports every GVT to the thread's
//! heap), so between two GVT rounds every allocation is a different item. (Without the
//! `set_thread_gvt` call in `fossil` this run allocates 1 item 20 000 times.)
#![cfg(all(target_os = "linux", not(chronon_loom)))]

use chronon::{Ctx, Executor, LpId, Model, ModelStats, Simulation, TimeWarpConfig};

struct Recycler;

impl Model for Recycler {
    /// The address of every item this LP allocated.
    type State = Vec<usize>;
    type Event = u32;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Vec<usize> {
        ctx.send(ctx.me(), 1.0, 0);
        Vec::new()
    }

    fn on_event(&self, st: &mut Vec<usize>, _ev: &u32, ctx: &mut Ctx<'_, Self>) {
        let item = ctx.alloc_shared([7u64; 8]);
        st.push(&*item as *const [u64; 8] as usize);
        drop(item);
        ctx.send(ctx.me(), 1.0, 0);
    }

    fn lookahead(&self) -> f64 {
        1.0
    }

    fn finish(&self, _lp: LpId, st: &Vec<usize>, stats: &mut ModelStats) {
        let mut a = st.clone();
        a.sort_unstable();
        a.dedup();
        stats.add("allocations", st.len() as f64);
        stats.add("distinct", a.len() as f64);
    }
}

fn run(ex: Executor) -> (f64, f64, chronon::Report) {
    let r = Simulation::new(Recycler)
        .lps(1)
        .end_time(20000.5)
        .executor(ex)
        .run()
        .unwrap();
    let g = |k: &str| r.model_stats.get(k).unwrap();
    (g("allocations"), g("distinct"), r)
}

#[test]
fn an_item_freed_at_t_is_reused_only_after_gvt_passes_t() {
    let (n, seq_distinct, _) = run(Executor::Sequential);
    assert_eq!(n, 20000.0);
    assert!(seq_distinct <= 2.0, "sequential: {seq_distinct} items");
    let (n, tw_distinct, r) = run(Executor::TimeWarp(TimeWarpConfig::new(1)));
    assert_eq!(n, 20000.0);
    let rounds = r.executor_stats.get("gvt_rounds").copied().unwrap_or(0.0);
    // Between two GVT rounds no freed item comes back, so some interval's allocations (at
    // least n / (rounds + 1) of them; half that for slack) are all different items.
    assert!(rounds >= 2.0, "{rounds} GVT rounds");
    assert!(
        tw_distinct > seq_distinct.max(2.0) && tw_distinct >= n / (2.0 * (rounds + 1.0)),
        "Time Warp: {tw_distinct} items for {n} allocations ({rounds} GVT rounds)"
    );
}
