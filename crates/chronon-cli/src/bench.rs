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
    /// The sequential executor against the bare binary-heap PHOLD loop, in one run.
    Seq(SeqBench),
}

#[derive(Debug, Args)]
pub(crate) struct SeqBench {
    /// Configurations to run: std, big, huge (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "std,big,huge")]
    configs: Vec<String>,
    /// Repetitions of each measurement (the best is kept).
    #[arg(long, default_value_t = 1)]
    reps: u32,
}

pub(crate) fn run(cmd: BenchCmd) -> Result<u8, Failure> {
    match cmd.which {
        BenchWhich::Seq(b) => crate::bench_seq::run(b.configs, b.reps),
    }
}
