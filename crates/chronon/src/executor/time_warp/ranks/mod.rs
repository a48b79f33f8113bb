//! Time Warp over MPI ranks (`mpirun -n R chronon run … --sync timewarp --threads W`): R ranks
//! of W worker threads each; a worker is (rank, thread), numbered `r * W + t`, and the LP
//! mapping, event ids and GVT report slots are over all `R × W` workers. Inside a rank the
//! workers reach each other as with threads (mailboxes, zero copy); a flush to a worker of
//! another rank hands the batch to the rank's `outgoing` mailbox, which only the rank's
//! **driver** thread empties (`driver.rs`): it serializes the messages into one record per
//! destination rank (`codec.rs`), tagged with its GVT colour, and hands them to the rank layer
//! (`transport::mpi::comm`); it decodes what arrives into the workers' mailboxes, and runs GVT
//! across ranks (`dgvt.rs`: Mattern's algorithm over reductions, with the in-rank round of
//! `gvt.rs` as its local round). The worker loop is the unchanged Time Warp worker.
//! Protocol and proof sketch: README.md beside `dgvt.rs` ("GVT across ranks", "Across ranks").

pub(super) mod codec;
pub(super) mod driver;
pub(crate) mod run;

use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::lp::Msg;
use super::shared::Shared;
use crate::comm::{Batch, Mailbox};
use crate::model::Model;
use crate::transport::mpi::RankSafe;

/// What the transport keeps for a rank: which workers are its own, and the batches workers
/// handed over for other ranks.
pub(crate) struct RankWires<P> {
    mine: Range<usize>,
    /// Batches for workers of other ranks, emptied by the driver only. Its register is a
    /// lower bound on what waits there.
    outgoing: Mailbox<Msg<P>>,
}

impl<P> RankWires<P> {
    pub(crate) fn new(mine: Range<usize>) -> Self {
        RankWires {
            mine,
            outgoing: Mailbox::new(),
        }
    }

    /// Whether worker `w` runs in this rank.
    #[inline(always)]
    pub(crate) fn is_local(&self, w: usize) -> bool {
        self.mine.contains(&w)
    }

    /// Hands a batch for a worker of another rank to the driver.
    #[inline]
    pub(crate) fn hand_over(&self, b: Batch<Msg<P>>) {
        self.outgoing.push_batch_node(b);
    }

    /// The driver takes what workers handed over.
    pub(crate) fn take_outgoing(&self, f: impl FnMut(Batch<Msg<P>>)) {
        self.outgoing.take_batches(f);
    }
}

/// A rank's driver as its worker reaches it when the rank has no driver thread (one worker
/// per rank: README, "Which thread talks MPI"). `Shared::pump` holds it as a trait object, so
/// that the worker loop needs neither the model's `RankSafe` bound nor anything of MPI.
pub(super) trait Pump<M: Model>: Sync {
    /// One step of the driver's loop (send, receive, GVT), unless the last one was less
    /// than [`PUMP_GAP`] ago or another thread is making one.
    fn pump(&self, sh: &Shared<'_, M>);
    /// The worker is idle: steps the driver, then yields (returns `true`) while a GVT
    /// computation is in progress, at most [`IDLE_YIELDS`] times in a row without GVT
    /// advancing; `false`: the caller naps.
    fn idle(&self, sh: &Shared<'_, M>) -> bool;
}

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

/// The driver and when it last stepped, behind the lock that lets one thread step it.
pub(super) struct Pumped<'c, M: Model> {
    pub(super) driver: driver::Driver<'c, M>,
    last: Instant,
    gap: Duration,
    /// An idle worker's yields since GVT last advanced, and that GVT.
    yields: u32,
    gvt: f64,
}

impl<M: Model> Pumped<'_, M>
where
    M::Event: RankSafe,
{
    /// Up to [`STEPS_PER_LOOK`] driver steps, while they move something.
    fn steps(&mut self, sh: &Shared<'_, M>) {
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

impl<'c, M: Model> Pumped<'c, M> {
    pub(super) fn new(driver: driver::Driver<'c, M>) -> Mutex<Self> {
        let gap = std::env::var("CHRONON_TW_PUMP_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(PUMP_GAP, Duration::from_micros);
        Mutex::new(Pumped {
            driver,
            last: Instant::now(),
            gap,
            yields: 0,
            gvt: 0.0,
        })
    }
}

impl<M: Model> Pump<M> for Mutex<Pumped<'_, M>>
where
    M::Event: RankSafe,
{
    #[inline]
    fn pump(&self, sh: &Shared<'_, M>) {
        let Ok(mut p) = self.try_lock() else {
            return;
        };
        let now = Instant::now();
        if now.duration_since(p.last) < p.gap {
            return;
        }
        p.steps(sh);
    }

    fn idle(&self, sh: &Shared<'_, M>) -> bool {
        let Ok(mut p) = self.try_lock() else {
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
