//! Runs across worker processes on one machine ([`Simulation::processes`], `chronon run
//! --procs P`), for every protocol family: P worker processes of W threads each; a worker is
//! (process, thread), numbered `p * W + t`, and the LP mapping is over all `P × W` workers.
//! The protocols are the same code as with threads, over the shared-memory transport
//! (`transport/shm/`).
//!
//! The parent creates the control segment and the family's net segment, one pipe pair per
//! child and the shared heaps' directory, re-executes this binary P times (`shm::Launcher`: a
//! dead or failed child stops every other one), and gathers one report from what the children
//! write on their pipes (`crate::run::coordinate`). Every child builds the model from the same
//! configuration and reaches the same [`Simulation::run`] (the signature in
//! `CHRONON_PROCS_RUN` is checked), runs the family's part
//! ([`OverProcs::run_part`](crate::executor::family::OverProcs::run_part)), reports, serves
//! its `Model::finish` requests and exits: a child's `Simulation::run` never returns.
//!
//! Files: `parent.rs` (pipes, launch, the coordinator's thread), `child.rs` (a worker
//! process's frame).
//!
//! [`Simulation::processes`]: crate::Simulation::processes
//! [`Simulation::run`]: crate::Simulation::run

mod child;
mod parent;

use std::ffi::OsString;
use std::time::Instant;

use crate::error::{io_error, Setting, SimError};
use crate::executor::over::shm::OverProcs;
use crate::executor::{Executor, RunConfig};
use crate::model::Model;
use crate::shm::{Control, ShmSafe, ROLE_ENV};
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

/// A run across worker processes, as a function pointer (instantiated where `M::Event:
/// ShmSafe` is known, called from `Simulation::run`, which does not know it).
pub(crate) type ProcsFn<M> =
    fn(&M, &RunConfig, &Executor, &ProcsOptions) -> Result<Report, SimError>;

/// Runs `model` with `executor` over `opts.procs` processes (parent), or, in a worker process,
/// does that worker's part and exits.
pub(crate) fn run_executor<M: Model>(
    model: &M,
    cfg: &RunConfig,
    executor: &Executor,
    opts: &ProcsOptions,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    match super::Families::of(executor, Setting::Processes)? {
        super::Families::Conservative(f) => run(model, cfg, &f, opts),
        super::Families::TimeWarp(f) => run(model, cfg, &f, opts),
    }
}

/// Runs `model` with `family` over `opts.procs` processes (parent), or, in a worker process,
/// does that worker's part and exits.
fn run<M: Model, F: OverProcs<M>>(
    model: &M,
    cfg: &RunConfig,
    family: &F,
    opts: &ProcsOptions,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    let sig = super::checks::across_parts(model, cfg, family, Setting::Processes, opts.procs)?;
    let sig = format!(
        "{sig} payload={}",
        if opts.copy { "copy" } else { "zero-copy" }
    );
    match crate::shm::Worker::from_env() {
        Some(Ok(w)) => child::child_main(model, w, &sig, |w, control, states| {
            family.run_part(model, cfg, w, control, states, opts.copy)
        }),
        Some(Err(e)) => {
            // The parent is gone (or the environment is broken): nothing to report to.
            eprintln!("chronon: worker process cannot start: {e}");
            std::process::exit(3)
        }
        None => parent(model, cfg, family, opts, &sig),
    }
}

/// The parent: the segments, the children, and the one report with the transport's figures.
fn parent<M: Model, F: OverProcs<M>>(
    model: &M,
    cfg: &RunConfig,
    family: &F,
    opts: &ProcsOptions,
    sig: &str,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    let (procs, threads) = (opts.procs, family.threads());
    let n = procs * threads;
    let start = Instant::now();
    let control = Control::create(n).map_err(io_error("cannot create the control segment"))?;
    let net = family
        .create_net(n)
        .map_err(io_error("cannot create the rings"))?;
    let owner = family
        .mapping()
        .owners(cfg.lps, n)
        .map_err(|m| SimError::config(Setting::Mapping, m))?;
    let (outs, stats) = parent::parent_run(model, cfg, opts, threads, &owner, sig, &control, &net)?;
    let peak_rss: u64 = outs.iter().map(|o| o.peak_rss).sum();
    let mut report = family.report(model, cfg, outs, stats)?;
    let st = &mut report.executor_stats;
    st.insert("procs".into(), procs as f64);
    st.insert("procs_total_s".into(), start.elapsed().as_secs_f64());
    super::transport_figures(&mut report, cfg.pin, n, peak_rss);
    Ok(report)
}
