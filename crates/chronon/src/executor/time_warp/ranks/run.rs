//! A Time Warp run over the ranks of an `mpirun` ([`Simulation::ranks`] with
//! `Executor::TimeWarp`): every rank builds the model, initializes every LP (deterministic, so
//! initial event ids agree), keeps its workers' LPs and events, runs its workers and its driver
//! (`driver.rs`), and reports a `ChildOut` (the record of a worker process, `procs.rs`); rank 0
//! gathers them, computes `model_stats` in LP order and makes the one report
//! (`executor::conservative::ranks::finish_rank_part`, shared with the conservative runs over ranks). Each
//! LP commits in its owner rank only, so commit hooks run once; `init`'s counters are counted by
//! rank 0 only.
//!
//! [`Simulation::ranks`]: crate::Simulation::ranks

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Instant;

use super::super::gvt::GvtRegisters;
use super::super::options::TimeWarpConfig;
use super::super::procs::{gather, part_out};
use super::super::setup::{build, spawn, Built};
use super::driver::{drive, Driver, DriverOut};
use super::pump::Stepped;
use crate::error::{guard, ConfigError, Setting, SimError};
use crate::executor::conservative::procs::{ChildOut, ABORTED};
use crate::executor::conservative::ranks::{finish_rank_part, on_rank, on_world, RankPart};
use crate::executor::RunConfig;
use crate::model::Model;
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::stats::Report;
use crate::transport::mpi::comm::RankComm;
use crate::transport::mpi::{RankLink, RankSafe, RankWires};
use crate::transport::tw::WiresBox;
use crate::tw_msg::TwEvent;

/// A Time Warp run over ranks, as a function pointer (instantiated where `M::Event: RankSafe`
/// is known).
pub(crate) type TwRanksFn<M> =
    fn(&M, &RunConfig, usize, &TimeWarpConfig) -> Result<Report, SimError>;

/// Runs `model` under Time Warp over every rank of the MPI world, `threads` workers each.
/// Every rank calls it with the same configuration; rank 0's result carries the report, the
/// others' an empty report with the same completeness (or the same error).
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
) -> Result<Report, SimError>
where
    M::Event: RankSafe,
{
    on_world(
        |comm| {
            check(model, threads, opts)?;
            Ok(format!(
                "lps={} end={:x} seed={} queue={} sync=timewarp threads={threads} ranks={} options={opts:?}",
                cfg.lps,
                cfg.end.to_bits(),
                cfg.seed,
                cfg.queue.name(),
                comm.size(),
            ))
        },
        |comm| match cfg.queue {
            QueueKind::Heap => {
                rank_run::<M, HeapQueue<TwEvent<M::Event>>>(model, cfg, threads, opts, comm)
            }
            QueueKind::Ladder => {
                rank_run::<M, LadderQueue<TwEvent<M::Event>>>(model, cfg, threads, opts, comm)
            }
        },
    )
}

/// Whether `ok` holds on every rank (a non-blocking all-gather that receives nothing meanwhile:
/// nobody sends before it completes).
fn agree(comm: &RankComm, ok: bool) -> bool {
    comm.all_gather_quiet(&[u64::from(ok)])
        .iter()
        .all(|&x| x == 1)
}

/// What Time Warp over ranks cannot do, refused in one line before anything starts (the same
/// on every rank).
fn check<M: Model>(model: &M, threads: usize, opts: &TimeWarpConfig) -> Result<(), SimError> {
    if threads == 0 {
        return Err(ConfigError::new(Setting::Threads, 0, "it must be at least 1").into());
    }
    if opts.preempt {
        return Err(SimError::config(
            Setting::Preempt,
            "$preempt does not run over MPI ranks; leave out $preempt (or run without mpirun)",
        ));
    }
    if opts.check_reverse {
        return Err(SimError::config(Setting::CheckReverse, "$check_reverse does not run over MPI ranks; leave out $check_reverse (or run without mpirun)"));
    }
    let globals = guard("Model::global_events", None, || model.global_events())?;
    if !globals.is_empty() {
        return Err(SimError::config(Setting::Threads, "this model has global events, which read every LP's state; no rank holds every LP's state, so it cannot run over MPI ranks (run it with $threads)"));
    }
    Ok(())
}

fn rank_run<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    comm: &RankComm,
) -> Result<Report, SimError>
where
    M::Event: RankSafe,
{
    let start = Instant::now();
    let rank = comm.rank();
    let mut states: Vec<Option<M::State>> = Vec::new();
    let (out, d) = part::<M, Q>(model, cfg, threads, opts, comm, &mut states);
    // An error reached every rank already (the driver's `failed` in the reductions, the rank
    // layer's abort) or is one every rank found (configuration).
    let mut out = match out {
        Ok(o) => o,
        Err(e) => ChildOut::failed(on_rank(e, rank)),
    };
    let gvt_rounds = d.as_ref().map_or(0, |d| d.gvt.rounds);
    if let (Some(d), Some(w)) = (&d, out.workers.first_mut()) {
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
    let part = RankPart {
        comm,
        states: &states,
        mapping: &opts.mapping,
        threads,
        start,
    };
    finish_rank_part(model, cfg, part, out, |outs, stats| {
        Ok(gather(model, cfg, threads, opts, outs, stats, gvt_rounds))
    })
}

/// This rank's part: its workers and its driver, until the run ends on every rank.
fn part<'a, M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &'a M,
    cfg: &'a RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    comm: &'a RankComm,
    states: &mut Vec<Option<M::State>>,
) -> (Result<ChildOut, SimError>, Option<DriverOut>)
where
    M::Event: RankSafe,
{
    let (rank, ranks) = (comm.rank(), comm.size());
    let (n, base) = (ranks * threads, rank * threads);
    let mine = base..base + threads;
    let wires = RankWires::new(n, mine.clone());
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
        counters: mut init_counters,
        report,
        saving,
    } = built;
    // The counters `init` moved are counted once, by rank 0.
    if rank != 0 {
        init_counters.iter_mut().for_each(|c| *c = 0);
    }
    let stopped = AtomicUsize::new(0);
    let start = Instant::now();
    // Which thread talks MPI (README.md beside this file): with one worker the worker steps
    // the driver at its looks; with more, a driver thread of its own does.
    let driver = Driver::new(Box::new(RankLink::new(comm, &wires, threads)), threads);
    let mut driver = Some(driver);
    if driver_mode(threads) == DriverMode::Worker {
        sh.driver = driver.take().map(Stepped::new);
    }
    let (results, d) = std::thread::scope(|s| {
        let sh = &sh;
        let d = driver.map(|driver| {
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
        let d = match (d, &sh.driver) {
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
        saving,
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
