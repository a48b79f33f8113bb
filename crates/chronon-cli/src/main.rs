//! `chronon`: run models, benchmark the engine.

mod args;
mod bench;
mod bench_barriers;
mod bench_phold;
mod bench_queue;
mod bench_refcount;
mod calibrate;
mod check;
mod choices;
mod experiment;
mod flags;
mod lockstep_runtime;
mod models;
mod mpi;
mod output;
#[cfg(all(feature = "mpi", target_os = "linux"))]
mod rank_fault;
mod report;
mod run;
mod series;
mod sweep;
mod sys;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;

/// Exit code for bad input (flags, config, or a model breaking the engine's rules).
pub(crate) const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a run stopped by Ctrl-C (its report is still written).
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// An error that ends the program with a given exit code and a one-line message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub(crate) fn bad_input(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_BAD_INPUT,
            message: message.into(),
        }
    }
    pub(crate) fn runtime(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<chronon::SimError> for Failure {
    fn from(e: chronon::SimError) -> Self {
        use chronon::SimError;
        let code = match e {
            SimError::Config(_) | SimError::Model(_) => EXIT_BAD_INPUT,
            _ => 1,
        };
        Failure {
            code,
            message: flags::render(&e),
        }
    }
}

fn main() -> ExitCode {
    // Under mpirun each rank becomes a waiting parent and the child that runs (rank_fault/
    // README.md); first, while this process has one thread.
    #[cfg(all(feature = "mpi", target_os = "linux"))]
    rank_fault::supervise();
    // Model panics are caught by the engine and reported as one line; keep the default hook
    // from printing a second, multi-line message.
    std::panic::set_hook(Box::new(|_| {}));
    let cli = match args::parse() {
        Ok(cli) => cli,
        Err(e) => return args::clap_exit(e),
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| match cli.command {
        args::Command::Run(cmd) => models::run(cmd),
        args::Command::Bench(cmd) => bench::run(cmd),
        args::Command::Check(cmd) => check::run(cmd),
        args::Command::Experiment(cmd) => experiment::run(cmd),
        args::Command::Report(cmd) => report::run(cmd),
        args::Command::Sweep(cmd) => sweep::run(cmd),
        args::Command::Calibrate(cmd) => calibrate::run(cmd),
    }));
    match outcome {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(f)) => {
            // Under mpirun every rank has the same error; rank 0 says it.
            if !mpi::quiet() {
                eprintln!("error: {}", short_numbers(one_line(&f.message)));
            }
            ExitCode::from(f.code)
        }
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            eprintln!("error: internal error: {}", short_numbers(one_line(&msg)));
            ExitCode::from(101)
        }
    }
}

/// The first line of a message, trimmed.
pub(crate) fn one_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// `s` with every run of more than 20 digits (no integer chronon takes is longer) cut to its
/// first 20 and a count, so that a huge number in the input does not make a huge error line.
pub(crate) fn short_numbers(s: &str) -> String {
    const KEEP: usize = 20;
    let mut out = String::with_capacity(s.len().min(256));
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.len() > KEEP {
            out.push_str(&digits[..KEEP]);
            out.push_str(&format!("...({} digits)", digits.len()));
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_numbers_cuts_only_huge_numbers() {
        let huge = "9".repeat(200);
        assert_eq!(
            super::short_numbers(&format!("value '{huge}' for --lps, max 4294967295")),
            format!(
                "value '{}...(200 digits)' for --lps, max 4294967295",
                "9".repeat(20)
            )
        );
        assert_eq!(
            super::short_numbers("t = 18446744073709551615"),
            "t = 18446744073709551615"
        );
    }
}
