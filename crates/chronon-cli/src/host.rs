//! Running the app inside another program's process: a host (the Python package, whose
//! sequential and threaded runs go on in the caller's own interpreter) calls
//! [`App::run_hosted`] with a [`Progress`] it keeps. The run then installs no Ctrl-C handler
//! (the host owns SIGINT and stops the run with [`Progress::request_stop`]), draws no
//! progress (the host reads the same `Progress`), prints no summary, returns its error line
//! instead of printing it, and leaves the host's panic hook in place afterwards.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chronon::Progress;

use crate::app::App;
use crate::{one_line, short_numbers, EXIT_BAD_INPUT};

/// The progress of the hosted run going on in this process, if any.
static HOSTED: Mutex<Option<Arc<Progress>>> = Mutex::new(None);

/// Set by [`App::without_summary`]: a run prints no summary on stdout.
static NO_SUMMARY: AtomicBool = AtomicBool::new(false);

/// The end time of the hosted run going on (its bits; NaN until the run knows it).
static END: AtomicU64 = AtomicU64::new(f64::NAN.to_bits());

/// The end time of the hosted run going on in this process, once the run has started (a host
/// draws its progress against it).
pub fn hosted_end() -> Option<f64> {
    let end = f64::from_bits(END.load(Ordering::SeqCst));
    (!end.is_nan()).then_some(end)
}

/// Sets the end time [`hosted_end`] shows.
pub(crate) fn set_end(end: f64) {
    if progress().is_some() {
        END.store(end.to_bits(), Ordering::SeqCst);
    }
}

/// What a hosted run has to say while it goes on (a stall warning), for its host to show.
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The lines the hosted run going on printed since the last call (a host shows them where its
/// user reads: a notebook's cell).
pub fn hosted_messages() -> Vec<String> {
    std::mem::take(&mut *MESSAGES.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Keeps `line` for the host of the run going on; false when the run is not hosted.
pub(crate) fn say(line: &str) -> bool {
    if progress().is_none() {
        return false;
    }
    MESSAGES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(line.to_string());
    true
}

/// The host's `Progress` while a hosted run goes on (None for a run from the command line).
pub(crate) fn progress() -> Option<Arc<Progress>> {
    HOSTED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether a run prints its summary on stdout.
pub(crate) fn summary() -> bool {
    progress().is_none() && !NO_SUMMARY.load(Ordering::SeqCst)
}

/// How a hosted run ended: the exit code the command line would have had, and its error line
/// (without "error: ") when it failed.
#[derive(Debug)]
pub struct Outcome {
    pub code: u8,
    pub error: Option<String>,
}

/// A panic hook, as `std::panic::take_hook` returns it.
type PanicHook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Clears the hosted run and puts the host's panic hook back, however the run ends.
struct Hosting {
    hook: Option<PanicHook>,
}

impl Drop for Hosting {
    fn drop(&mut self) {
        *HOSTED.lock().unwrap_or_else(|e| e.into_inner()) = None;
        END.store(f64::NAN.to_bits(), Ordering::SeqCst);
        if let Some(hook) = self.hook.take() {
            if !std::thread::panicking() {
                std::panic::set_hook(hook);
            }
        }
    }
}

impl App {
    /// The runs of this app print no summary on stdout (a host that reads the report file and
    /// forwards what the model prints there).
    pub fn without_summary(self) -> App {
        NO_SUMMARY.store(true, Ordering::SeqCst);
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
        {
            let mut hosted = HOSTED.lock().unwrap_or_else(|e| e.into_inner());
            if hosted.is_some() {
                return Outcome {
                    code: EXIT_BAD_INPUT,
                    error: Some("another run is going on in this process".into()),
                };
            }
            *hosted = Some(progress);
        }
        let _hosting = Hosting {
            hook: Some(std::panic::take_hook()),
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
