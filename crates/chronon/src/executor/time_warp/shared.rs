//! What every Time Warp worker shares (the model, the LP mapping, mailboxes, GVT registers,
//! memory figures, the first error), and small helpers used across the executor.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use super::global::Globals;
use super::gvt::GvtRegisters;
use super::memory::{self, MemoryBound};
use super::optimism::Optimism;
use super::options::{PreemptConfig, Saving};
use crate::error::SimError;
use crate::executor::RunConfig;
use crate::model::{LpId, Model, ReverseFn, Time};
use crate::transport::tw::WiresBox;

/// Compares two states (for `--check-reverse`).
pub(crate) type StateEq<S> = fn(&S, &S) -> bool;

/// How many events run between two looks at the progress figures and the stop flag.
pub(super) const POLL_EVERY: u64 = 1 << 13;
/// How many events run between two updates of the memory figures.
pub(super) const MEMORY_EVERY: u64 = 16;

/// What every worker shares.
pub(super) struct Shared<'a, M: Model> {
    /// The run's settings (for [`RunConfig::enter_thread`] in every worker thread).
    pub(super) run: RunConfig,
    pub(super) model: &'a M,
    pub(super) n: LpId,
    pub(super) end: Time,
    pub(super) lookahead: Time,
    pub(super) saving: Saving,
    /// The model's reverse handler under reverse state saving; `None` under copy saving.
    pub(super) undo: Option<ReverseFn<M>>,
    /// Which events commit as they run (safe.rs).
    pub(super) safe: super::safe::SafeRule,
    pub(super) fixed_k: Option<u32>,
    /// The optimism window and its controller.
    pub(super) optimism: Optimism,
    /// The memory bound and its speculation cap (memory.rs).
    pub(super) mem: MemoryBound,
    /// `size_of` a processed-event record.
    pub(super) record_size: u64,
    pub(super) gvt_every: u64,
    pub(super) check_eq: Option<StateEq<M::State>>,
    /// LP -> (worker, index among the worker's LPs); empty for block mapping, which is
    /// computed (no table lookups, a cache miss each with millions of LPs).
    pub(super) owner: Vec<u32>,
    pub(super) local: Vec<u32>,
    /// Index -> LP, per worker (the inverse of `local`); empty for block mapping.
    pub(super) ids: Vec<Vec<LpId>>,
    /// Block mapping: the first LP of every worker (and `lps` at the end).
    pub(super) block_first: Vec<u64>,
    pub(super) workers: usize,
    /// How workers reach each other (`transport/tw.rs`).
    pub(super) wires: WiresBox<'a, M::Event>,
    pub(super) gvt: GvtRegisters,
    /// The model's global events and the phase that runs them (global.rs).
    pub(super) globals: Globals<M::State, M::Event>,
    pub(super) abort: AtomicBool,
    pub(super) error: Mutex<Option<SimError>>,
    /// Per worker: dynamic bytes counted, the history part of them, history records held.
    pub(super) bytes: Vec<AtomicU64>,
    pub(super) history: Vec<AtomicU64>,
    pub(super) records: Vec<AtomicU64>,
    pub(super) peak: AtomicU64,
    pub(super) series: Mutex<Vec<(f64, f64)>>,
    pub(super) start: Instant,
    pub(super) progress: &'a crate::progress::Progress,
    /// The model's declared topology: a send along an undeclared link, or below its link's
    /// lookahead, is a model error here as under every executor.
    pub(super) links: crate::executor::links::Links,
    /// Preemptive Time Warp's settings (`None`: off).
    pub(super) preempt: Option<PreemptConfig>,
    /// Per worker: the flag its ticks raise (crate::preempt::ticks).
    pub(super) tick_flags: Vec<crate::preempt::ticks::Flag>,
    /// Where each worker runs (pinned or not), and its first touch of its LPs' memory.
    pub(super) pinner: crate::placement::Pinner,
    /// Protocol code the part runs beside its workers that its lone worker steps at its looks
    /// ([`Shared::step_driver`]): over MPI ranks with one worker each, the rank's driver
    /// (`ranks/pump.rs`; the transport between ranks is behind its `RankNet`).
    pub(super) driver: Option<&'a dyn Stepping<M>>,
}

/// Protocol code a part runs beside its workers, stepped by a lone worker at its looks (over
/// MPI ranks with one worker per rank: the rank's driver, `ranks/pump.rs`).
pub(super) trait Stepping<M: Model>: Sync {
    /// A step, unless the last one was made a moment ago or another thread is making one.
    fn step(&self, sh: &Shared<'_, M>);

    /// The worker is idle: a step; `true` while the worker should yield rather than nap.
    fn idle(&self, sh: &Shared<'_, M>) -> bool;
}

impl<M: Model> Shared<'_, M> {
    pub(super) fn fail(&self, e: SimError) {
        if let Ok(mut slot) = self.error.lock() {
            if slot.is_none() {
                *slot = Some(e);
            }
        }
        self.abort.store(true, Ordering::SeqCst);
        self.wires.abort_others();
    }

    /// The first error recorded, taken out (once every worker has stopped).
    pub(super) fn take_error(&self) -> Option<SimError> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }

    /// Whoever published GVT `g` (the last reporter of a round; over MPI ranks, the rank's
    /// driver) keeps the round's figures and adjusts the optimism window and the memory cap.
    pub(super) fn after_round(&self, g: Time) {
        let wall = self.start.elapsed().as_secs_f64();
        self.optimism.adjust(g, wall);
        if let Ok(mut s) = self.series.lock() {
            if s.last().is_none_or(|&(t, _)| wall - t >= 1e-3) || g >= self.end {
                s.push((wall, g.min(self.end)));
            }
        }
        if self.mem.bounded() && g < self.end {
            if let Some(m) = self.mem.adjust(self.totals(), wall, self.record_size) {
                self.fail(SimError::Resource(m));
            }
        }
    }

    /// Over MPI ranks without a driver thread: a step of the rank's driver, made by a worker
    /// at its looks (`Worker::drain`; ranks/README.md, "Which thread talks MPI"). Otherwise
    /// nothing.
    #[inline(always)]
    pub(super) fn step_driver(&self) {
        if let Some(d) = self.driver {
            d.step(self);
        }
    }

    /// An idle worker's wait (after its backoff): a nap of `d` (ticks.rs, `nap`). Over MPI
    /// ranks without a driver thread, the rank's driver steps first, and while a GVT
    /// computation is in progress the worker yields instead of sleeping, a bounded number of
    /// times (ranks/README.md, "Which thread talks MPI").
    pub(super) fn idle_wait(&self, d: std::time::Duration) {
        if let Some(d) = self.driver {
            if d.idle(self) {
                return;
            }
        }
        crate::preempt::ticks::nap(d);
    }

    /// The worker that owns LP `lp`.
    #[inline(always)]
    pub(super) fn owner_of(&self, lp: LpId) -> usize {
        if self.block_first.is_empty() {
            self.owner[lp as usize] as usize
        } else {
            // Block mapping puts LP i on worker floor(i * W / n), that is, on the last worker
            // whose first LP is <= i. A few comparisons beat a 64-bit division.
            let w = self.block_first.len() - 1;
            if w <= 8 {
                let lp = u64::from(lp);
                self.block_first[1..w]
                    .iter()
                    .take_while(|&&f| f <= lp)
                    .count()
            } else {
                (u64::from(lp) * w as u64 / u64::from(self.n)) as usize
            }
        }
    }

    /// The LP at index `li` among worker `w`'s LPs (LPs are indexed in LP order).
    #[inline]
    pub(super) fn lp_id(&self, w: usize, li: usize) -> LpId {
        if self.block_first.is_empty() {
            self.ids[w][li]
        } else {
            (self.block_first[w] + li as u64) as LpId
        }
    }

    /// LP `lp`'s index among its worker's LPs.
    #[inline(always)]
    pub(super) fn local_of(&self, lp: LpId) -> usize {
        if self.block_first.is_empty() {
            self.local[lp as usize] as usize
        } else {
            (u64::from(lp) - self.block_first[self.owner_of(lp)]) as usize
        }
    }

    pub(super) fn total_bytes(&self) -> u64 {
        sum_figures(&self.bytes)
    }

    /// The workers' memory figures added up.
    pub(super) fn totals(&self) -> memory::Totals {
        memory::Totals {
            dynamic: sum_figures(&self.bytes),
            history: sum_figures(&self.history),
            records: sum_figures(&self.records),
        }
    }
}

/// One per-worker memory figure summed over the workers.
pub(super) fn sum_figures(v: &[AtomicU64]) -> u64 {
    // Ordering: each figure is a self-contained estimate; a stale one only delays the cap.
    v.iter().map(|b| b.load(Ordering::Relaxed)).sum()
}

/// Which LPs a worker owns. Under block mapping they are `first .. first + count`, so that
/// finding an LP's index or owner costs a subtraction; `count` is 0 under a mapping table.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mine {
    w: usize,
    first: u64,
    count: u64,
}

impl Mine {
    pub(super) fn new<M: Model>(w: usize, sh: &Shared<'_, M>) -> Self {
        let (first, count) = match sh.block_first.get(w..=w + 1) {
            Some(&[a, b]) => (a, b - a),
            _ => (0, 0),
        };
        Mine { w, first, count }
    }

    /// The index among the worker's LPs of LP `lp`, which the worker owns.
    #[inline(always)]
    pub(super) fn index<M: Model>(self, sh: &Shared<'_, M>, lp: LpId) -> usize {
        debug_assert!(self.owns(sh, lp), "LP {lp} is not worker {}'s", self.w);
        if self.count > 0 {
            (u64::from(lp) - self.first) as usize
        } else {
            sh.local_of(lp)
        }
    }

    /// Whether the worker owns LP `lp`.
    #[inline(always)]
    pub(super) fn owns<M: Model>(self, sh: &Shared<'_, M>, lp: LpId) -> bool {
        if self.count > 0 {
            u64::from(lp).wrapping_sub(self.first) < self.count
        } else {
            sh.owner_of(lp) == self.w
        }
    }
}
