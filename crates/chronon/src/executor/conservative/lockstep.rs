//! The lock-step protocol of seed 002 §2.1, Fig. 1: SafeTime = max(InClock, GST).
//!
//! GST (the smallest timestamp in the system, messages in transit included) comes from a
//! global reduction through the GSU. InClock is per worker: the earliest time at which anything
//! can still arrive on one of its input links. Where the seed takes the last timestamp received
//! on each link (its links deliver in timestamp order), we derive the link clocks from the GSU
//! snapshot: worker `v` will never again execute an event before `LB[v]`, where `LB` is the
//! least fixed point of `LB[v] = min(MOE[v], MOM[v], min over links u->v of LB[u] + la(u,v))`
//! (a shortest-path closure over the worker graph), so nothing reaches `w` over link `v->w`
//! before `LB[v] + la(v,w)`. A worker executes its events with time below InClock; the
//! event with the globally smallest key (at GST) always runs, which is the `max(.., GST)`.
//!
//! Zero lookahead between workers: an event at time `t` may then cause, at once, events at `t`
//! on another worker whose keys are *smaller* than events already pending there; the sequential
//! executor interleaves them by pop order, not by key. Only events of *crossing* LPs (a
//! zero-lookahead path to another worker) can do that; such an event runs outside GST only
//! while its time is below the [`frontier`] — no other worker holds or can create anything at
//! that time — lowered by this lock-step's own sends (`Worker::run_lockstep`; proof sketch in
//! README.md, rule 4). Positive lookahead between workers has no such restriction.

use crate::gsu::Snapshot;

/// The earliest time at which a worker other than `me` holds an event (pending or in transit)
/// in this round's snapshot.
pub(super) fn frontier(snap: &Snapshot, me: usize) -> f64 {
    snap.workers
        .iter()
        .enumerate()
        .filter(|&(v, _)| v != me)
        .map(|(_, v)| v.published.moe.time.min(v.mom))
        .fold(f64::INFINITY, f64::min)
}

/// Scratch space for the closure.
#[derive(Debug, Default)]
pub(super) struct Closure {
    lb: Vec<f64>,
    done: Vec<bool>,
}

impl Closure {
    /// InClock of worker `me`: `link_la[v * w + x]` is the lookahead from worker `v` to `x`.
    pub(super) fn in_clock(&mut self, snap: &Snapshot, link_la: &[f64], me: usize) -> f64 {
        let w = snap.workers.len();
        self.lb.clear();
        self.lb
            .extend(snap.workers.iter().map(|v| v.published.moe.time.min(v.mom)));
        self.done.clear();
        self.done.resize(w, false);
        // Dijkstra over at most W workers (lookaheads are >= 0).
        for _ in 0..w {
            let mut best = usize::MAX;
            for v in 0..w {
                if !self.done[v] && (best == usize::MAX || self.lb[v] < self.lb[best]) {
                    best = v;
                }
            }
            if best == usize::MAX || !self.lb[best].is_finite() {
                break;
            }
            self.done[best] = true;
            for x in 0..w {
                let t = self.lb[best] + link_la[best * w + x];
                if t < self.lb[x] {
                    self.lb[x] = t;
                }
            }
        }
        (0..w)
            .filter(|&v| v != me)
            .map(|v| self.lb[v] + link_la[v * w + me])
            .fold(f64::INFINITY, f64::min)
    }
}
