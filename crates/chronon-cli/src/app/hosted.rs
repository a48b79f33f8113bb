//! Running the app inside another program's process: a host (the Python package, whose
//! sequential and threaded runs go on in the caller's own interpreter) calls
//! [`App::run_hosted`] with a [`Progress`] it keeps. The run then installs no Ctrl-C handler
//! (the host owns SIGINT and stops the run with [`Progress::request_stop`]), draws no
//! progress (the host reads the same `Progress`), prints no summary, returns its error line
//! instead of printing it, and leaves the host's panic hook in place afterwards (`../host.rs`
//! holds what the run reads of its host).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use chronon::Progress;

use super::App;
use crate::host::{self, Hosting};
use crate::{one_line, short_numbers, EXIT_BAD_INPUT};

/// How a hosted run ended: the exit code the command line would have had, and its error line
/// (without "error: ") when it failed.
#[derive(Debug)]
pub struct Outcome {
    pub code: u8,
    pub error: Option<String>,
}

impl App {
    /// The runs of this app print no summary on stdout (a host that reads the report file and
    /// forwards what the model prints there).
    pub fn without_summary(self) -> App {
        host::without_summary();
        self
    }

    /// Runs the command line `args` (the program's name first) in this process for a host: see
    /// the module's documentation. `progress` is the run's: the host reads its figures and
    /// stops the run with it. One hosted run at a time: a second one while the first goes on
    /// is refused.
    pub fn run_hosted<I, T>(self, args: I, progress: Arc<Progress>) -> Outcome
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let Some(_hosting) = Hosting::begin(progress) else {
            return Outcome {
                code: EXIT_BAD_INPUT,
                error: Some("another run is going on in this process".into()),
            };
        };
        // Model panics are caught by the engine and reported as one line.
        std::panic::set_hook(Box::new(|_| {}));
        if let Err(why) = self.problems() {
            return failed(EXIT_BAD_INPUT, &why);
        }
        let matches = match self.command().try_get_matches_from(args) {
            Ok(m) => m,
            Err(e) => {
                let line = self.clap_error(&e);
                return failed(EXIT_BAD_INPUT, line.as_deref().unwrap_or("bad arguments"));
            }
        };
        match catch_unwind(AssertUnwindSafe(|| self.dispatch(&matches))) {
            Ok(Ok(code)) => Outcome { code, error: None },
            Ok(Err(f)) => failed(f.code, &f.message),
            Err(payload) => {
                let msg = chronon::panic_message(payload.as_ref());
                failed(101, &format!("internal error: {msg}"))
            }
        }
    }
}

fn failed(code: u8, message: &str) -> Outcome {
    Outcome {
        code,
        error: Some(short_numbers(one_line(message))),
    }
}
