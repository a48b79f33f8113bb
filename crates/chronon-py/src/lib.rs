//! The native module of chronon's Python package (`chronon_pdes._native`): the whole chronon
//! runner, with the process's Python model registered beside the shipped ones. [`run_here`]
//! runs it in the caller's own process (the package's sequential and threaded runs); `main`
//! is `python -m chronon_pdes` (the `chronon` command, and the child process of `check`,
//! `sweep` and runs with worker processes). The Python side is in `python/chronon_pdes/`.

mod ctx;
mod gil;
mod here;
mod model;
mod serde_values;
mod spec;
mod values;

use std::ffi::OsString;

use pyo3::prelude::*;

pub use model::PyModel;
pub use spec::PySpec;

/// Set by the caller for a sequential run of a Python model (see `main`).
const SEQUENTIAL_ENV: &str = "CHRONON_PY_SEQUENTIAL";
/// Set by the package for its child process: no summary on stdout, where the child's stdout
/// (what the model prints) is forwarded to the caller's.
const NO_SUMMARY_ENV: &str = "CHRONON_PY_NO_SUMMARY";

/// A Python exception as one line: `TypeName: message`.
pub(crate) fn error_line(py: Python<'_>, e: &PyErr) -> String {
    let ty = e
        .get_type(py)
        .qualname()
        .map_or_else(|_| "Exception".to_string(), |n| n.to_string());
    let msg = e.value(py).to_string();
    let msg = msg.lines().next().unwrap_or("").to_string();
    if msg.is_empty() {
        ty
    } else {
        format!("{ty}: {msg}")
    }
}

/// A handler's Python exception ends the run: it is kept for the caller with its traceback
/// (the package re-raises it, `chronon_pdes/_child.py`), then the handler fails like a Rust
/// handler that panics, and the engine stops every worker and reports the LP and time.
pub(crate) fn raise_in_handler(py: Python<'_>, e: PyErr, handler: &str, lp: u32, now: f64) -> ! {
    let line = keep_error(py, &e, handler, lp, now);
    panic!("{handler} raised {line}")
}

/// Keeps a handler's exception for the caller, by LP and time (under Time Warp the run may
/// report another one: a failed event that a rollback undid does not count); returns its line.
pub(crate) fn keep_error(py: Python<'_>, e: &PyErr, handler: &str, lp: u32, now: f64) -> String {
    if let Ok(save) = py
        .import("chronon_pdes._child")
        .and_then(|m| m.getattr("save_error"))
    {
        let _ = save.call1((e.value(py), e.traceback(py), handler, lp, now));
    }
    error_line(py, e)
}

/// The runner with the shipped models and, when `model` is given, the Python model `(object,
/// end)` registered as `name` (cleared again by [`ModelGuard`]).
fn app_with(model: Option<(Py<PyAny>, Option<f64>)>, name: Option<String>) -> chronon_cli::App {
    let app = chronon_cli::App::new("chronon")
        .about("chronon, a parallel discrete-event simulator (Python package)")
        .builtins()
        .engine_tools();
    match model {
        Some(m) => {
            spec::set_model(Some(m));
            app.model::<PySpec>(&name.unwrap_or_else(|| "python".to_string()))
        }
        None => app,
    }
}

/// Clears the process's Python model when a run ends, however it ends.
struct ModelGuard;

impl Drop for ModelGuard {
    fn drop(&mut self) {
        spec::set_model(None);
    }
}

/// Runs the chronon command line `argv` (`argv[0]` the program's name) and returns its exit
/// code. `exe` and `prefix` start this program again (`python -m chronon_pdes`), for worker
/// processes and child runs; `model` is a Python model to register as `name`, with `end` its
/// default end time.
#[pyfunction]
#[pyo3(signature = (argv, exe, prefix, model=None, name=None, end=None))]
fn main(
    py: Python<'_>,
    argv: Vec<String>,
    exe: String,
    prefix: Vec<String>,
    model: Option<Py<PyAny>>,
    name: Option<String>,
    end: Option<f64>,
) -> PyResult<u8> {
    let _ = chronon::set_program(chronon::Program {
        exe: exe.into(),
        prefix: prefix.into_iter().map(OsString::from).collect(),
        args: argv.iter().skip(1).map(OsString::from).collect(),
    });
    let _clear = ModelGuard;
    let mut app = app_with(model.map(|m| (m, end)), name);
    if std::env::var_os(NO_SUMMARY_ENV).is_some() {
        app = app.without_summary();
    }
    // A sequential run of a Python model, as the caller knows (`run` with no executor, no
    // processes, no config file): every handler runs on this thread, which keeps the GIL. The
    // variable is for this process only, not for the processes it starts.
    let sequential = std::env::var_os(SEQUENTIAL_ENV).is_some();
    std::env::remove_var(SEQUENTIAL_ENV);
    if sequential {
        let _holding = gil::hold();
        return Ok(app.run_from(argv));
    }
    // The run's threads take the GIL for each Python call; this thread lets it go meanwhile.
    gil::known_thread();
    Ok(py.detach(|| app.run_from(argv)))
}

/// chronon's native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(here::run_here, m)?)?;
    m.add_class::<here::RunHandle>()?;
    m.add_class::<ctx::EventContext>()?;
    m.add_class::<ctx::GlobalContext>()?;
    m.add_class::<ctx::Stats>()?;
    m.add_class::<ctx::Rng>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
