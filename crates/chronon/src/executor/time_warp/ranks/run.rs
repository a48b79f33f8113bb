//! Time Warp over the ranks of an `mpirun` ([`Simulation::ranks`] with `Executor::TimeWarp`),
//! the family's part for the part runner (`crate::run::ranks`): every rank builds the model,
//! initializes every LP (deterministic, so initial event ids agree), keeps its workers' LPs and
//! events, runs its workers and its driver (`driver.rs`), and returns a `PartOut` (the record
//! of a worker process); rank 0 gathers them, computes `model_stats` in LP order and has the
//! family make the one report (`parts.rs`). Each LP commits in its owner rank only, so commit
//! hooks run once; `init`'s counters are counted by rank 0 only.
//!
//! [`Simulation::ranks`]: crate::Simulation::ranks

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Instant;

use super::super::gvt::GvtRegisters;
use super::super::options::TimeWarpConfig;
use super::super::parts::{part_out, TimeWarp};
use super::super::setup::{build, spawn, Built};
use super::super::shared::Stepping;
use super::driver::{drive, Driver, DriverOut};
use super::pump::Stepped;
use crate::error::SimError;
use crate::executor::over::mpi::OverRanks;
use crate::executor::part_out::{PartOut, ABORTED};
use crate::executor::RunConfig;
use crate::model::Model;
use crate::queue::{with_queue, PendingSet};
use crate::transport::mpi::comm::RankComm;
use crate::transport::mpi::{RankLink, RankSafe, RankWires};
use crate::transport::tw::WiresBox;
use crate::tw_msg::TwEvent;

impl<M: Model> OverRanks<M> for TimeWarp<'_>
where
    M::Event: RankSafe,
{
    fn run_part(
        &self,
        model: &M,
        cfg: &RunConfig,
        comm: &RankComm,
        states: &mut Vec<Option<M::State>>,
    ) -> Result<PartOut, SimError> {
        let (threads, opts) = (self.threads, self.opts);
        let (out, d) = with_queue!(
            cfg.queue,
            part::<M>(model, cfg, threads, opts, comm, states)
        );
        // An error reached every rank already (the driver's `failed` in the reductions, the
        // rank layer's abort) or is one every rank found (configuration).
        let mut out = out?;
        if let Some(d) = &d {
            out.figures.insert("gvt_rounds".into(), d.gvt.rounds as f64);
            if let Some(w) = out.workers.first_mut() {
                let g = &d.gvt;
                for (k, v) in [
                    ("gvt_rank_rounds", g.rounds as f64),
                    ("gvt_reductions", g.reductions as f64),
                    ("gvt_local_rounds", g.local_rounds as f64),
                    ("gvt_reduce_s", g.reduce_time.as_secs_f64()),
                    ("tw_records_sent", d.records_sent as f64),
                    ("tw_msgs_sent", d.msgs_sent as f64),
                    ("tw_msgs_received", d.msgs_received as f64),
                    // 1: a driver thread talked MPI; 0: the worker did (`driver_mode`).
                    (
                        "tw_driver_thread",
                        f64::from(u8::from(driver_mode(threads) == DriverMode::Thread)),
                    ),
                ] {
                    w.insert(k.into(), v);
                }
            }
        }
        Ok(out)
    }
}

/// Whether `ok` holds on every rank (a non-blocking all-gather that receives nothing meanwhile:
/// nobody sends before it completes).
fn agree(comm: &RankComm, ok: bool) -> bool {
    comm.all_gather_quiet(&[u64::from(ok)])
        .iter()
        .all(|&x| x == 1)
}

/// This rank's part: its workers and its driver, until the run ends on every rank.
fn part<'a, M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &'a M,
    cfg: &'a RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    comm: &'a RankComm,
    states: &mut Vec<Option<M::State>>,
) -> (Result<PartOut, SimError>, Option<DriverOut>)
where
    M::Event: RankSafe,
{
    let (rank, ranks) = (comm.rank(), comm.size());
    let (n, base) = (ranks * threads, rank * threads);
    let mine = base..base + threads;
    let wires = RankWires::new(n, mine.clone());
    // Which thread talks MPI (README.md beside this file): with one worker the worker steps
    // the driver at its looks; with more, a driver thread of its own does.
    let driver = Driver::new(Box::new(RankLink::new(comm, &wires, threads)), threads);
    let (mut driver, stepped) = match driver_mode(threads) {
        DriverMode::Worker => (None, Some(Stepped::new(driver))),
        DriverMode::Thread => (Some(driver), None),
    };
    let net = (
        Box::new(&wires) as WiresBox<M::Event>,
        GvtRegisters::ranked(n, threads),
    );
    let built = build::<M, Q>(model, cfg, n, opts, None, mine, Some(net));
    // Every rank learns whether every rank could set up its part before any driver starts
    // reducing (an error found by some ranks only, such as a memory bound, would otherwise
    // leave the others in a reduction nobody joins).
    let all_ok = agree(comm, built.is_ok());
    let built = match (built, all_ok) {
        (Err(e), _) => return (Err(e), None),
        (Ok(_), false) => return (Err(SimError::Process(ABORTED.into())), None),
        (Ok(b), true) => b,
    };
    let Built {
        mut sh,
        parts,
        counters: init_counters,
        report,
        saving,
    } = built;
    let stopped = AtomicUsize::new(0);
    let start = Instant::now();
    sh.driver = stepped.as_ref().map(|s| s as &dyn Stepping<M>);
    let (results, d) = std::thread::scope(|s| {
        let sh = &sh;
        let d = driver.take().map(|driver| {
            s.spawn(|| {
                catch_unwind(AssertUnwindSafe(|| drive(sh, driver, &stopped))).map_err(|p| {
                    // The driver failed (a payload that does not serialize, say): this
                    // rank's workers stop at their loop tops, the other ranks at once.
                    sh.fail(SimError::from_panic(0, 0.0, p.as_ref()));
                    comm.abort();
                })
            })
        });
        let results = spawn(sh, base, parts, |_| {
            stopped.fetch_add(1, SeqCst);
        });
        let d = match (d, &stepped) {
            (Some(d), _) => d.join().ok().and_then(Result::ok),
            // The worker stopped: this thread finishes the driver's loop (GVT to its end on
            // every rank, or the failure told to every rank), then the end-of-run exchange.
            (None, Some(p)) => {
                let mut p = p.lock();
                catch_unwind(AssertUnwindSafe(|| p.driver.run(sh, &stopped)))
                    .map_err(|e| {
                        sh.fail(SimError::from_panic(0, 0.0, e.as_ref()));
                        comm.abort();
                    })
                    .ok()
            }
            (None, None) => None,
        };
        (results, d)
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(e) = sh.take_error() {
        return (Err(e), d);
    }
    if !d.as_ref().is_some_and(|d| d.complete) || results.iter().any(|r| !r.4) {
        return (Err(SimError::Process(ABORTED.into())), d);
    }
    let out = part_out(
        model,
        cfg,
        &sh,
        results,
        init_counters,
        0,
        base,
        (report.init_s, wall_s),
        states,
        (opts, saving),
    );
    (out, d)
}

/// Which thread of a rank makes the MPI calls and runs GVT across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DriverMode {
    /// A driver thread beside the workers.
    Thread,
    /// The rank's worker, at its looks (one worker per rank).
    Worker,
}

/// The mode for a rank of `threads` workers: the worker itself with one (a second busy thread
/// per rank would share its core: with 2 ranks on 2 cores, 4 threads), a driver thread with
/// more (one of several workers stepping the driver would leave its events waiting).
pub(crate) fn driver_mode(threads: usize) -> DriverMode {
    if threads == 1 {
        DriverMode::Worker
    } else {
        DriverMode::Thread
    }
}
