//! A rank's driver stepped by its worker, for ranks without a driver thread (one worker per
//! rank: README, "Which thread talks MPI"): the [`Stepped`] driver that `Shared::driver` holds.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::super::shared::{Shared, Stepping};
use super::driver;
use crate::model::Model;

/// The most yields in a row of an idle worker waiting for a GVT computation that does not
/// advance GVT (then it naps, stepping the driver once per nap).
pub(super) const IDLE_YIELDS: u32 = 1024;

/// The least time between two driver steps made by a busy worker (`CHRONON_TW_PUMP_US`
/// overrides it, in microseconds). A step costs a probe, a test of the sends in flight and of
/// the GVT reduction (about a microsecond with MPICH), and a worker looks every 16 events
/// (~1 µs of PHOLD): stepping at every look would cost the worker about half its time, and each
/// step that finds messages handed over sends a batch, so the gap is also the batching time.
/// Measured on std and big PHOLD, 2 ranks (docs/bench-timewarp.md): 5 µs sent ~115 k batches per
/// rank and was the slowest; 10–100 µs were within noise of each other on std; 30 µs sent a
/// third of 10 µs's batches and was as fast on big.
pub(super) const PUMP_GAP: Duration = Duration::from_micros(30);

/// The most driver steps a worker makes per look (while they move something).
const STEPS_PER_LOOK: usize = 4;

/// The driver and when it last stepped.
pub(crate) struct Pumped<'c> {
    pub(super) driver: driver::Driver<'c>,
    last: Instant,
    gap: Duration,
    /// An idle worker's yields since GVT last advanced, and that GVT.
    yields: u32,
    gvt: f64,
}

impl Pumped<'_> {
    /// Up to [`STEPS_PER_LOOK`] driver steps, while they move something.
    fn steps<M: Model>(&mut self, sh: &Shared<'_, M>) {
        self.last = Instant::now();
        // The rank's workers are running (the caller is one of them). A step that moved
        // something (a GVT phase, a batch) is followed by another, a few at most: a GVT
        // computation's phases then pass in one look instead of one look each.
        for _ in 0..STEPS_PER_LOOK {
            if !self.driver.step(sh, false) {
                break;
            }
        }
    }
}

/// The driver behind the lock that lets one thread step it: the rank's worker at its looks,
/// the rank's main thread once the worker stopped.
pub(crate) struct Stepped<'c>(Mutex<Pumped<'c>>);

impl<'c> Stepped<'c> {
    pub(super) fn new(driver: driver::Driver<'c>) -> Self {
        let gap = std::env::var("CHRONON_TW_PUMP_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(PUMP_GAP, Duration::from_micros);
        Stepped(Mutex::new(Pumped {
            driver,
            last: Instant::now(),
            gap,
            yields: 0,
            gvt: 0.0,
        }))
    }

    /// The driver, for the rank's main thread once the worker stopped (a worker's panic
    /// inside a step poisons the lock; its state is used as left: README).
    pub(super) fn lock(&self) -> MutexGuard<'_, Pumped<'c>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One step of the driver's loop (send, receive, GVT), unless the last one was less
    /// than [`PUMP_GAP`] ago or another thread is making one.
    #[inline]
    fn pump<M: Model>(&self, sh: &Shared<'_, M>) {
        let Ok(mut p) = self.0.try_lock() else {
            return;
        };
        let now = Instant::now();
        if now.duration_since(p.last) < p.gap {
            return;
        }
        p.steps(sh);
    }

    /// The worker is idle: steps the driver, then yields (returns `true`) while a GVT
    /// computation is in progress, at most [`IDLE_YIELDS`] times in a row without GVT
    /// advancing; `false`: the caller naps.
    fn idle<M: Model>(&self, sh: &Shared<'_, M>) -> bool {
        let Ok(mut p) = self.0.try_lock() else {
            return false;
        };
        p.steps(sh);
        let g = sh.gvt.gvt();
        if g > p.gvt {
            p.gvt = g;
            p.yields = 0;
        }
        if !p.driver.computing() || p.yields >= IDLE_YIELDS {
            return false;
        }
        p.yields += 1;
        drop(p);
        std::thread::yield_now();
        true
    }
}

impl<M: Model> Stepping<M> for Stepped<'_> {
    #[inline]
    fn step(&self, sh: &Shared<'_, M>) {
        self.pump(sh);
    }

    fn idle(&self, sh: &Shared<'_, M>) -> bool {
        Stepped::idle(self, sh)
    }
}
