//! What a hosted run (the app run inside another program's process, `App::run_hosted`) shares
//! with the runner: the host's [`Progress`] (no Ctrl-C handler, no progress drawn: the host
//! reads and stops the run through it), the end time and the lines the host shows, and whether
//! a run prints its summary. [`Hosting`] holds a hosted run's place and gives it back, with the
//! host's panic hook, however the run ends.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chronon::Progress;

/// The progress of the hosted run going on in this process, if any.
static HOSTED: Mutex<Option<Arc<Progress>>> = Mutex::new(None);

/// Set by `App::without_summary`: a run prints no summary on stdout.
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

/// Runs print no summary on stdout from now on.
pub(crate) fn without_summary() {
    NO_SUMMARY.store(true, Ordering::SeqCst);
}

/// Whether a run prints its summary on stdout.
pub(crate) fn summary() -> bool {
    progress().is_none() && !NO_SUMMARY.load(Ordering::SeqCst)
}

/// A panic hook, as `std::panic::take_hook` returns it.
type PanicHook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Clears the hosted run and puts the host's panic hook back, however the run ends.
pub(crate) struct Hosting {
    hook: Option<PanicHook>,
}

impl Hosting {
    /// Makes `progress` the hosted run's, keeping the host's panic hook to put back; None while
    /// another hosted run goes on in this process.
    pub(crate) fn begin(progress: Arc<Progress>) -> Option<Hosting> {
        let mut hosted = HOSTED.lock().unwrap_or_else(|e| e.into_inner());
        if hosted.is_some() {
            return None;
        }
        *hosted = Some(progress);
        Some(Hosting {
            hook: Some(std::panic::take_hook()),
        })
    }
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
