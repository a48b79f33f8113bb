//! `bench`: for any model of any app, `bench model` (`model.rs`; `bench` itself in an app
//! without the engine tools); in the `chronon` binary, the engine's benchmarks whose results go
//! to docs/benchmarks.md, one file each (feature `models`).

#[cfg(feature = "models")]
mod barriers;
pub(crate) mod model;
#[cfg(feature = "models")]
mod phold;
#[cfg(feature = "models")]
mod queue;
#[cfg(feature = "models")]
mod refcount;
#[cfg(feature = "models")]
mod refcount_campus;
#[cfg(feature = "models")]
mod tsc;

#[cfg(feature = "models")]
use clap::{Args, Subcommand};

#[cfg(feature = "models")]
use crate::Failure;

/// `chronon bench`'s command line.
#[cfg(feature = "models")]
#[derive(Debug, Args)]
pub(crate) struct BenchCmd {
    #[command(subcommand)]
    pub which: BenchWhich,
}

/// The benchmarks of `chronon bench`.
#[cfg(feature = "models")]
#[derive(Debug, Subcommand)]
pub(crate) enum BenchWhich {
    /// A model's run under each executor, thread and process count, side by side in one
    /// invocation, fingerprints compared (`bench model MODEL [run options]`).
    Model(model::ModelBench),
    /// PHOLD on the chosen executors against the bare binary-heap loop, side by side in one
    /// run (ratios hold on a noisy machine).
    Phold(phold::PholdBench),
    /// One run of the bare heap PHOLD loop (used by `bench phold`).
    #[command(hide = true)]
    BareLoop(phold::BareArgs),
    /// The average cost of one barrier wait (seed 001 Tables 1 and 2).
    Barriers(barriers::BarrierBench),
    /// One barrier measurement written as JSON (used by `chronon experiment 001-barriers`).
    #[command(hide = true)]
    BarrierOnce(barriers::OnceArgs),
    /// The pending-event sets on adversarial patterns (equal times, rollbacks, more time bands
    /// than rungs) and on the hold model, side by side in one run.
    Queue(queue::QueueBench),
    /// The reference-counting schemes of `chronon::refcount` (seed 001 Tables 3-8): the cost
    /// of a clone + drop on one shared item, and the run time of a model sharing payloads.
    Refcount(refcount::RefcountBench),
    /// One reference-counting measurement written as JSON (used by `chronon experiment
    /// 001-refcount`).
    #[command(hide = true)]
    RefcountOnce(refcount::OnceArgs),
    /// One tick-overhead measurement over N threads written as JSON (used by `chronon
    /// experiment 003-fig5`).
    #[command(hide = true)]
    TicksOnce(crate::experiment::ticks::OnceArgs),
    /// LBTS computations by the GSU or by message exchange, written as JSON (used by `chronon
    /// experiment 000-gsu`).
    #[command(hide = true)]
    LbtsOnce(crate::experiment::gsu::OnceArgs),
}

/// Runs the benchmark `cmd` names.
#[cfg(feature = "models")]
pub(crate) fn run(cmd: BenchCmd, models: &crate::registry::Models) -> Result<u8, Failure> {
    match cmd.which {
        BenchWhich::Model(b) => model::run(b, models),
        BenchWhich::Phold(b) => phold::run(b),
        BenchWhich::BareLoop(a) => phold::bare(a),
        BenchWhich::Barriers(b) => barriers::run(b),
        BenchWhich::BarrierOnce(a) => barriers::once(a),
        BenchWhich::Queue(b) => queue::run(b),
        BenchWhich::Refcount(b) => refcount::run(b),
        BenchWhich::RefcountOnce(a) => refcount::once(a),
        BenchWhich::TicksOnce(a) => crate::experiment::ticks::once(a),
        BenchWhich::LbtsOnce(a) => crate::experiment::gsu::once(a),
    }
}
