//! Runs in the caller's own process (`chronon_pdes.run` without worker processes): the runner
//! is hosted ([`chronon_cli::App::run_hosted`]), so it installs no Ctrl-C handler of its own
//! and the caller stops it through the run's [`RunHandle`] (the package's SIGINT handler calls
//! `stop()`), reads its progress there, and gets its error line back.
//!
//! A sequential run of a Python model runs on the calling thread, which keeps the GIL (a
//! handler's `print`, `breakpoint()` and exceptions are the caller's own). Any other run goes
//! on a thread of its own while the calling thread waits with the GIL released, looking at
//! Python's signals every 50 ms, so that Ctrl-C runs the package's handler.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use chronon::Progress;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::{app_with, gil, ModelGuard};

/// One in-process run's progress and stop flag, shared by the caller and the run.
#[pyclass(frozen, module = "chronon_pdes")]
pub struct RunHandle {
    progress: Arc<Progress>,
}

#[pymethods]
impl RunHandle {
    #[new]
    fn new() -> Self {
        RunHandle {
            progress: Arc::new(Progress::new()),
        }
    }

    /// The simulated time reached so far.
    fn now(&self) -> f64 {
        self.progress.now()
    }

    /// Events processed so far.
    fn events(&self) -> u64 {
        self.progress.events()
    }

    /// The run's end time, once the run has started (None before).
    #[staticmethod]
    fn end() -> Option<f64> {
        chronon_cli::hosted_end()
    }

    /// The lines the run printed since the last call (a stall warning), for the caller's
    /// stderr.
    #[staticmethod]
    fn messages() -> Vec<String> {
        chronon_cli::hosted_messages()
    }

    /// Asks the run to stop: it ends at its next look at the flag, with an incomplete report.
    fn stop(&self) {
        self.progress.request_stop();
    }

    /// Raises `KeyboardInterrupt` in the run's threads (a second Ctrl-C, for a handler that
    /// never returns).
    fn interrupt(&self, py: Python<'_>) {
        gil::interrupt_threads(py);
    }

    /// Whether a stop was asked for.
    fn stopped(&self) -> bool {
        self.progress.stop_requested()
    }
}

/// Runs the chronon command line `argv` (`argv[0]` the program's name) in this process and
/// returns `(exit code, error line or None)`; `model` is a Python model registered as `name`
/// with `end` its default end time; `sequential`: run on this thread, keeping the GIL (a
/// sequential run of a Python model).
#[pyfunction]
#[pyo3(signature = (argv, handle, model=None, name=None, end=None, sequential=false))]
pub(crate) fn run_here(
    py: Python<'_>,
    argv: Vec<String>,
    handle: &Bound<'_, RunHandle>,
    model: Option<Py<PyAny>>,
    name: Option<String>,
    end: Option<f64>,
    sequential: bool,
) -> PyResult<(u8, Option<String>)> {
    let progress = handle.get().progress.clone();
    let model = model.map(|m| (m, end));
    let outcome = if sequential {
        let _holding = gil::hold();
        let _clear = ModelGuard;
        let app = app_with(model, name);
        catch_unwind(AssertUnwindSafe(|| app.run_hosted(argv, progress)))
            .map_err(|p| chronon::panic_message(p.as_ref()))
    } else {
        gil::known_thread();
        gil::forget_threads();
        on_a_thread(py, handle, argv, model, name, progress)
    };
    match outcome {
        Ok(o) => Ok((o.code, o.error)),
        Err(why) => Err(PyRuntimeError::new_err(format!(
            "chronon failed inside (a bug; please report it): {why}"
        ))),
    }
}

/// The run on a thread of its own while this thread waits with the GIL released and lets
/// Python's signal handlers run every 50 ms (the package's SIGINT handler stops the run).
fn on_a_thread(
    py: Python<'_>,
    handle: &Bound<'_, RunHandle>,
    argv: Vec<String>,
    model: Option<(Py<PyAny>, Option<f64>)>,
    name: Option<String>,
    progress: Arc<Progress>,
) -> Result<chronon_cli::Outcome, String> {
    let waiter = std::thread::current();
    let run = std::thread::Builder::new()
        .name("chronon-run".into())
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let _clear = ModelGuard;
                app_with(model, name).run_hosted(argv, progress)
            }));
            waiter.unpark();
            outcome.map_err(|p| chronon::panic_message(p.as_ref()))
        })
        .map_err(|e| format!("cannot start the run's thread: {e}"))?;
    while !run.is_finished() {
        py.detach(|| std::thread::park_timeout(Duration::from_millis(50)));
        // An exception from a signal handler (the caller's own SIGINT handler, when the
        // package could not install its one) stops the run too.
        if py.check_signals().is_err() {
            handle.get().stop();
        }
    }
    py.detach(|| run.join())
        .map_err(|p| chronon::panic_message(p.as_ref()))
        .and_then(|r| r)
}
