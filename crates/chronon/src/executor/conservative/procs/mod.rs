//! Multi-process runs of the conservative executors ([`Simulation::processes`], `chronon run
//! --procs P`): P worker processes on one machine, W threads each; a worker is (process,
//! thread), numbered `p * W + t`, and the LP mapping is over all `P × W` workers. The protocols
//! are the same code as with threads (`rounds.rs`, `null_message.rs`), over the shared-memory
//! transport (`transport/shm/`).
//!
//! The parent creates the control and net segments and one pipe per child, re-executes this
//! binary P times (`shm::Launcher`: a dead or failed child stops every other one), and gathers
//! one report from what the children write on their pipes. Every child builds the model from
//! the same configuration and reaches the same [`Simulation::run`] (the signature in
//! `CHRONON_PROCS_RUN` is checked), initializes every LP (deterministic, so every process has
//! the same initial events and LP streams; it keeps its own workers' events), runs its
//! workers, and reports: errors, its LPs' fingerprint part and committed count, counters, the
//! operations `Model::finish` made for each of its LPs (replayed by the parent in LP order, so
//! `model_stats` equal the sequential run's bit for bit; where `finish` reads the figures, the
//! parent asks the LP's process to run it on the figures so far), and per-worker figures. A
//! child's `Simulation::run` never returns: the process exits once it is done.
//!
//! Launching, gathering and `model_stats` are shared with Time Warp across processes
//! (`time_warp/procs.rs`): `parent_run` (the parent's part), `child_main` (a child's frame
//! around its run) and `finish_ops`.
//!
//! Files: `parent.rs` (segments, pipes, launch, `model_stats` in LP order, the report),
//! `child.rs` (a worker process), `report.rs` (what a child reports, encoded with
//! `transport::wire`).
//!
//! [`Simulation::processes`]: crate::Simulation::processes
//! [`Simulation::run`]: crate::Simulation::run

mod child;
mod parent;
mod report;

#[cfg_attr(not(feature = "mpi"), allow(unused_imports))]
pub(crate) use child::{child_main, finish_ops, peak_rss_bytes, run_part, serve_finish};
#[cfg_attr(not(feature = "mpi"), allow(unused_imports))]
pub(crate) use parent::{coordinate, first_error, gather, parent_run, Parts};
#[cfg_attr(not(feature = "mpi"), allow(unused_imports))]
pub(crate) use report::{decode, encode, ChildOut};

use std::ffi::OsString;

use super::{ConservativeConfig, Protocol, Runtime};
use crate::error::{guard, ConfigError, Setting, SimError};
use crate::executor::RunConfig;
use crate::model::Model;
use crate::shm::{ShmSafe, MAX_WORKERS, ROLE_ENV};
use crate::stats::Report;

/// The run a worker process must find itself in (checked against its own `Simulation`).
pub(crate) const RUN_ENV: &str = "CHRONON_PROCS_RUN";

/// Whether this process is a worker process started by a multi-process run
/// ([`Simulation::processes`](crate::Simulation::processes)). A program may test it early in
/// `main` to skip side effects (printing, writing files) that must happen once; the worker
/// process then builds the same simulation and calls `run`, which does the worker's part and
/// exits the process.
pub fn is_worker_process() -> bool {
    std::env::var_os(ROLE_ENV).is_some()
}

/// How a multi-process run is started.
#[derive(Clone, Debug)]
pub(crate) struct ProcsOptions {
    /// Worker processes (at least 1).
    pub procs: usize,
    /// The command line of each worker process (after the program name); `None`: this
    /// process's own.
    pub args: Option<Vec<OsString>>,
    /// The copy transport (`--payload copy`) instead of zero copy.
    pub copy: bool,
}

/// A multi-process run, as a function pointer (instantiated where `M::Event: ShmSafe` is
/// known, called from `Simulation::run`, which does not know it).
pub(crate) type ProcsFn<M> =
    fn(&M, &RunConfig, Protocol, &ConservativeConfig, &ProcsOptions) -> Result<Report, SimError>;

/// Runs `model` with `protocol` over `opts.procs` processes of `cc.threads` threads (parent),
/// or, in a worker process, does that worker's part and exits.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    opts: &ProcsOptions,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    check(model, protocol, cc, Setting::Processes, opts.procs)?;
    let sig = format!(
        "{} payload={}",
        signature(cfg, protocol, cc, opts.procs),
        if opts.copy { "copy" } else { "zero-copy" }
    );
    match crate::shm::Worker::from_env() {
        Some(Ok(w)) => child::child(model, cfg, protocol, cc, w, &sig, opts.copy),
        Some(Err(e)) => {
            // The parent is gone (or the environment is broken): nothing to report to.
            eprintln!("chronon: worker process cannot start: {e}");
            std::process::exit(3)
        }
        None => parent::parent::<M>(model, cfg, protocol, cc, opts, &sig),
    }
}

/// What a run across `procs` worker processes (`across`: [`Setting::Processes`]) or MPI ranks
/// ([`Setting::Ranks`]) cannot do (yet), before anything starts.
pub(crate) fn check<M: Model>(
    model: &M,
    protocol: Protocol,
    cc: &ConservativeConfig,
    across: Setting,
    procs: usize,
) -> Result<(), SimError> {
    if procs == 0 {
        return Err(ConfigError::new(
            Setting::Processes,
            0,
            "it must be at least 1 worker process",
        )
        .into());
    }
    if cc.threads == 0 {
        return Err(ConfigError::new(Setting::Threads, 0, "it must be at least 1").into());
    }
    let n = procs.saturating_mul(cc.threads);
    if n > MAX_WORKERS {
        return Err(SimError::config(Setting::Processes, format!(
            "$processes {procs} × $threads {} is {n} workers; a multi-process run holds at most {MAX_WORKERS}",
            cc.threads
        )));
    }
    let (count, what) = match across {
        Setting::Ranks => ("$ranks", "MPI ranks"),
        _ => ("$processes", "processes"),
    };
    if cc.runtime != Runtime::Threads {
        return Err(SimError::config(
            Setting::Runtime,
            format!(
                "$runtime work-stealing does not run across {what}; leave out {count} or $runtime"
            ),
        ));
    }
    cc.check_barrier(protocol, Some(across))?;
    if cc.dedicated != 1.0 || cc.shared_sets != 0 {
        return Err(SimError::config(Setting::Dedicated, format!("load balancing ($dedicated, $shared_sets) does not run across {what} yet (shared LPs would need their queues in shared memory); leave out {count} or those options")));
    }
    let globals = guard("Model::global_events", None, || model.global_events())?;
    if !globals.is_empty() {
        return Err(SimError::config(across, format!("this model has global events, which read every LP's state; no process holds every LP's state in a run across {what}, so it cannot run with {count} (run it with $threads)")));
    }
    Ok(())
}

pub(crate) fn signature(
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    procs: usize,
) -> String {
    format!(
        "lps={} end={:x} seed={} queue={} sync={} threads={} procs={} mapping={:?}",
        cfg.lps,
        cfg.end.to_bits(),
        cfg.seed,
        cfg.queue.name(),
        protocol.name(),
        cc.threads,
        procs,
        cc.mapping
    )
}

pub(crate) fn io_error(what: &str) -> impl Fn(std::io::Error) -> SimError + '_ {
    move |e| SimError::Process(format!("{what}: {e}"))
}

/// The error a Time Warp child reports when another process stopped the run (conservative
/// children report a stop as an incomplete run instead).
pub(crate) const ABORTED: &str = "another worker process stopped the run";
