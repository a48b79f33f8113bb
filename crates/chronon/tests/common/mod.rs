//! What the Time Warp test binaries (`time_warp.rs`, `preempt.rs`) share: the reversible LP
//! state both randomized models fold their events into, the commit-order probe, and the runs
//! and comparisons against the sequential executor.

#![allow(dead_code)] // each test binary uses its own part

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use chronon::{CommitCtx, LpId, Model, ModelStats, Report, ReverseCtx, Simulation};

/// Odd, so the state update can be undone.
const MUL: u64 = 0x2545_F491_4F6C_DD1D;

/// The multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
fn inverse(a: u64) -> u64 {
    let mut x = a;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}

/// An LP's state: a hash of its events in order (so a wrong order or a lost event shows) and
/// their count.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub hash: u64,
    pub count: u64,
}

/// An event's payload.
#[derive(Debug)]
pub struct Token {
    pub value: u64,
}

impl Cell {
    /// LP `me`'s initial state.
    pub fn new(me: LpId) -> Self {
        Cell {
            hash: u64::from(me),
            count: 0,
        }
    }

    /// Folds the event `tok` at time `now` into the state.
    pub fn apply(&mut self, tok: &Token, now: f64) {
        self.hash = self
            .hash
            .wrapping_mul(MUL)
            .wrapping_add(tok.value ^ now.to_bits());
        self.count += 1;
    }

    /// Undoes [`Cell::apply`]'s count (the first half of a reverse handler).
    pub fn uncount(&mut self) {
        self.count -= 1;
    }

    /// Undoes [`Cell::apply`]'s hash (the second half of a reverse handler).
    pub fn unhash(&mut self, tok: &Token, ctx: &ReverseCtx) {
        self.hash = self
            .hash
            .wrapping_sub(tok.value ^ ctx.now.to_bits())
            .wrapping_mul(inverse(MUL));
    }

    /// `Model::finish`: folds every LP's final state into one figure (exact in f64: < 2^53 per
    /// term) and counts the events.
    pub fn finish(&self, lp: LpId, stats: &mut ModelStats) {
        stats.add("state_digest", ((self.hash >> 20) ^ u64::from(lp)) as f64);
        stats.add("events", self.count as f64);
    }
}

/// Commit-hook bookkeeping shared with the test: commits, and whether some LP committed out of
/// time order.
#[derive(Debug, Default)]
pub struct Commits {
    pub commits: AtomicU64,
    /// Bits of each LP's last committed time.
    pub last: Vec<AtomicU64>,
    pub out_of_order: AtomicBool,
}

impl Commits {
    /// For `lps` LPs.
    pub fn new(lps: LpId) -> Self {
        Commits {
            last: (0..lps).map(|_| AtomicU64::new(0)).collect(),
            ..Commits::default()
        }
    }

    /// `Model::commit`: counts the commit and checks its LP's time order.
    pub fn record(&self, ctx: &CommitCtx) {
        self.commits.fetch_add(1, SeqCst);
        let prev = self.last[ctx.me as usize].swap(ctx.now.to_bits(), SeqCst);
        if f64::from_bits(prev) > ctx.now {
            self.out_of_order.store(true, SeqCst);
        }
    }

    /// Asserts one commit hook per committed event, in time order per LP.
    pub fn assert_once_in_order(&self, r: &Report, what: &str) {
        assert_eq!(
            self.commits.load(SeqCst),
            r.committed,
            "{what}: commit hooks once each"
        );
        assert!(
            !self.out_of_order.load(SeqCst),
            "{what}: commits in time order per LP"
        );
    }
}

/// The sequential run of `m` (the reference).
pub fn sequential<M: Model + Clone>(m: &M, seed: u64, lps: LpId, end: f64) -> Report {
    Simulation::new(m.clone())
        .lps(lps)
        .end_time(end)
        .seed(seed)
        .run()
        .expect("sequential run")
}

/// Asserts that `tw` commits the sequential history `seq`: fingerprint, committed count, final
/// states and counters; complete; every processed event committed or rolled back.
pub fn assert_same_history(seq: &Report, tw: &Report, what: &str) {
    assert_eq!(tw.fingerprint, seq.fingerprint, "{what}: fingerprint");
    assert_eq!(tw.committed, seq.committed, "{what}: committed");
    assert_eq!(
        tw.model_stats, seq.model_stats,
        "{what}: final states and counters"
    );
    assert!(tw.complete, "{what}: complete");
    assert_eq!(
        tw.processed,
        tw.committed + tw.rolled_back,
        "{what}: every processed event is committed or rolled back"
    );
}

/// An executor figure of the report (0 when absent).
pub fn figure(r: &Report, name: &str) -> f64 {
    r.executor_stats.get(name).copied().unwrap_or(0.0)
}
