//! `chronon bench`: benchmarks whose results go to docs/benchmarks.md.

use clap::{Args, Subcommand};

use crate::Failure;

#[derive(Debug, Args)]
pub(crate) struct BenchCmd {
    #[command(subcommand)]
    pub which: BenchWhich,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchWhich {
    /// A model's run under each executor, thread and process count, side by side in one
    /// invocation, fingerprints compared (`bench model MODEL [run options]`).
    Model(crate::bench_model::ModelBench),
    /// PHOLD on the chosen executors against the bare binary-heap loop, side by side in one
    /// run (ratios hold on a noisy machine).
    Phold(PholdBench),
    /// One run of the bare heap PHOLD loop (used by `bench phold`).
    #[command(hide = true)]
    BareLoop(crate::bench_phold::BareArgs),
    /// The average cost of one barrier wait (seed 001 Tables 1 and 2).
    Barriers(BarrierBench),
    /// One barrier measurement written as JSON (used by `chronon experiment 001-barriers`).
    #[command(hide = true)]
    BarrierOnce(crate::bench_barriers::OnceArgs),
    /// The pending-event sets on adversarial patterns (equal times, rollbacks, more time bands
    /// than rungs) and on the hold model, side by side in one run.
    Queue(QueueBench),
    /// The reference-counting schemes of `chronon::refcount` (seed 001 Tables 3-8): the cost
    /// of a clone + drop on one shared item, and the run time of a model sharing payloads.
    Refcount(RefcountBench),
    /// One reference-counting measurement written as JSON (used by `chronon experiment
    /// 001-refcount`).
    #[command(hide = true)]
    RefcountOnce(crate::bench_refcount::OnceArgs),
    /// One tick-overhead measurement over N threads written as JSON (used by `chronon
    /// experiment 003-fig5`).
    #[command(hide = true)]
    TicksOnce(crate::experiment::ticks::OnceArgs),
    /// LBTS computations by the GSU or by message exchange, written as JSON (used by `chronon
    /// experiment 000-gsu`).
    #[command(hide = true)]
    LbtsOnce(crate::experiment::gsu::OnceArgs),
}

#[derive(Debug, Args)]
pub(crate) struct RefcountBench {
    /// Thread counts (rows).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub threads: Vec<usize>,
    /// Clone + drop pairs per thread in Tables 3 and 4.
    #[arg(long, default_value_t = 2_000_000)]
    pub ops: u64,
    /// LPs of the relay model (Tables 5-8).
    #[arg(long, default_value_t = 1024)]
    pub lps: u32,
    /// End time of the relay model.
    #[arg(long, default_value_t = 1000.0)]
    pub end: f64,
    /// Packets each LP of the relay model keeps.
    #[arg(long, default_value_t = 4)]
    pub keep: usize,
    /// Repetitions of each measurement, interleaved (the fastest is kept).
    #[arg(long, default_value_t = 2)]
    pub reps: u32,
}

/// Reads the time-stamp counter (x86_64), or `None` elsewhere.
pub(crate) fn tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // Safety: `rdtsc` has no preconditions on x86_64 (it only reads a counter).
        #[allow(unused_unsafe)]
        let t = unsafe { core::arch::x86_64::_rdtsc() };
        Some(t)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[derive(Debug, Args)]
pub(crate) struct QueueBench {
    /// Patterns: hold, equal, rollback, bands.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "hold,equal,rollback,bands"
    )]
    pub patterns: Vec<String>,
    /// Pending-event sets (the first is the reference of the ratio column).
    #[arg(long, value_delimiter = ',', default_value = "heap,ladder")]
    pub queues: Vec<String>,
    /// Events pending during the hold steps.
    #[arg(long, default_value_t = 100_000)]
    pub pending: usize,
    /// Hold steps (pop one, push one) after the initial pushes.
    #[arg(long, default_value_t = 1_000_000)]
    pub steps: usize,
    /// Repetitions of each measurement, interleaved (the fastest is kept).
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
}

#[derive(Debug, Args)]
pub(crate) struct BarrierBench {
    /// Thread counts (rows).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
    pub threads: Vec<usize>,
    /// Fan-ins of the tree barrier (Table 1's columns).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub m: Vec<usize>,
    /// The tree's fan-in in Table 2.
    #[arg(long, default_value_t = 4)]
    pub fan_in: usize,
    /// Waits per thread per measurement.
    #[arg(long, default_value_t = 100_000)]
    pub waits: u64,
}

#[derive(Debug, Args)]
pub(crate) struct PholdBench {
    /// Configurations: std (1024 LPs, end 1000), big (16384 LPs, end 100), huge (65536 LPs,
    /// 100 start events, end 10), work (1024 LPs, end 20, --work-us 10).
    #[arg(long, value_delimiter = ',', default_value = "std,big,huge")]
    pub configs: Vec<String>,
    /// Executors (`--sync` values), each run at every thread count that it accepts.
    #[arg(long, value_delimiter = ',', default_value = "seq")]
    pub sync: Vec<String>,
    /// Thread counts.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub threads: Vec<usize>,
    /// Worker process counts for window, lockstep and null-message (each also at every thread
    /// count, as `--procs P --threads W`); none by default.
    #[arg(long, value_delimiter = ',')]
    pub procs: Vec<usize>,
    /// Pending-event sets for the sequential executor.
    #[arg(long, value_delimiter = ',', default_value = "heap,ladder")]
    pub queues: Vec<String>,
    /// Skip the bare heap loop (it takes minutes on `huge`).
    #[arg(long)]
    pub no_bare: bool,
    /// Repetitions of each measurement (the fastest is kept).
    #[arg(long, default_value_t = 1)]
    pub reps: u32,
}

pub(crate) fn run(cmd: BenchCmd, app: &crate::App) -> Result<u8, Failure> {
    match cmd.which {
        BenchWhich::Model(b) => crate::bench_model::run(b, app),
        BenchWhich::Phold(b) => crate::bench_phold::run(b),
        BenchWhich::BareLoop(a) => crate::bench_phold::bare(a),
        BenchWhich::Barriers(b) => crate::bench_barriers::run(b),
        BenchWhich::BarrierOnce(a) => crate::bench_barriers::once(a),
        BenchWhich::Queue(b) => crate::bench_queue::run(b),
        BenchWhich::Refcount(b) => crate::bench_refcount::run(b),
        BenchWhich::RefcountOnce(a) => crate::bench_refcount::once(a),
        BenchWhich::TicksOnce(a) => crate::experiment::ticks::once(a),
        BenchWhich::LbtsOnce(a) => crate::experiment::gsu::once(a),
    }
}
