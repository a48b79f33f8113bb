//! The native module of chronon's Python package (`chronon_pdes._native`): the whole chronon
//! runner, started by `python -m chronon_pdes` (and so by every `run`, `check` and `sweep` of
//! the package, which runs it as a child process), with the process's Python model registered
//! beside the shipped ones. The Python side is in `python/chronon_pdes/`.

mod ctx;
mod gil;
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

/// A handler's Python exception ends the run: it is kept for the caller (the package re-raises
/// it, `chronon_pdes/_child.py`), then the handler fails like a Rust handler that panics, and
/// the engine stops every worker and reports the LP and time.
pub(crate) fn raise_in_handler(py: Python<'_>, e: PyErr, handler: &str, lp: u32, now: f64) -> ! {
    let line = error_line(py, &e);
    if let Ok(save) = py
        .import("chronon_pdes._child")
        .and_then(|m| m.getattr("save_error"))
    {
        let _ = save.call1((e.value(py), handler, lp, now));
    }
    panic!("{handler} raised {line}")
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
    let mut app = chronon_cli::App::new("chronon")
        .about("chronon, a parallel discrete-event simulator (Python package)")
        .builtins()
        .engine_tools();
    if let Some(obj) = model {
        let name = name.unwrap_or_else(|| "python".to_string());
        let _ = spec::MODEL.set((obj, end));
        app = app.model::<PySpec>(&name);
    }
    // A sequential run of a Python model, as the caller knows (`run` with no executor, no
    // processes, no config file): every handler runs on this thread, which keeps the GIL. The
    // variable is for this process only, not for the processes it starts.
    let sequential = std::env::var_os(SEQUENTIAL_ENV).is_some();
    std::env::remove_var(SEQUENTIAL_ENV);
    if sequential {
        gil::hold();
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
    m.add_class::<ctx::EventContext>()?;
    m.add_class::<ctx::GlobalContext>()?;
    m.add_class::<ctx::Stats>()?;
    m.add_class::<ctx::Rng>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
