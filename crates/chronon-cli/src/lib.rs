//! The chronon runner as a library: [`App`] makes a whole simulation program of a user's
//! models — `run` under every executor and option (threads, `--procs` worker processes, MPI
//! ranks under the `mpi` feature), `--config` TOML files, `--output` reports, progress, Ctrl-C,
//! one-line errors, `check` (the differential suite), `sweep` (studies with confidence
//! intervals) and `report` (plots). A model gives its parameters as one struct implementing
//! [`ModelSpec`]. The `chronon` binary is such an app with the shipped models
//! ([`App::builtins`]) and the engine's benchmarks ([`App::engine_tools`]); see
//! docs/tutorial.md for a first model of one's own.
//!
//! ```no_run
//! # #[derive(Clone, Debug, clap::Args, serde::Serialize, serde::Deserialize)]
//! # struct Ring { #[arg(long, default_value_t = 4)] lps: u32 }
//! # impl chronon_cli::ModelSpec for Ring {
//! #     type Model = chronon_models::Phold;
//! #     fn build(&self) -> Result<Self::Model, String> { Ok(Default::default()) }
//! # }
//! fn main() -> std::process::ExitCode {
//!     chronon_cli::App::new("ring").model::<Ring>("ring").run()
//! }
//! ```

/// Every program on the runner allocates through `PlatformAlloc`, which marks allocation as
/// platform mode, so that ticks under `--preempt` can switch a handler off the CPU between any
/// two instructions of its own code (docs/timewarp.md, "Ticks that preempt"). A program with an
/// allocator of its own builds the runner with the feature `own-allocator`.
#[cfg(not(feature = "own-allocator"))]
#[global_allocator]
static ALLOCATOR: chronon::PlatformAlloc = chronon::PlatformAlloc;

mod app;
mod args;
mod bench;
#[cfg(feature = "models")]
mod builtins;
#[cfg(feature = "models")]
mod calibrate;
mod check;
mod choices;
#[cfg(feature = "models")]
mod experiment;
mod flags;
mod host;
mod lockstep_runtime;
mod mpi;
mod output;
#[cfg(all(feature = "mpi", target_os = "linux"))]
mod rank_fault;
mod registry;
mod report;
mod run;
mod series;
mod sweep;
mod sys;

pub use app::{App, Outcome};
pub use host::{hosted_end, hosted_messages};
pub use registry::{Draw, Flags, ModelSpec, RunnableEvent, RunnableState, SimHook};

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
    /// A clap error (a command line that does not parse) as one bad-input line.
    pub(crate) fn clap(e: &clap::Error) -> Self {
        Failure::bad_input(clap_line(e))
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

/// A clap error as one line, without its "error: ".
pub(crate) fn clap_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let line = one_line(&rendered);
    line.strip_prefix("error: ").unwrap_or(line).to_string()
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
