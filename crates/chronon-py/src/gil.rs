//! Taking the GIL from the engine's threads cheaply.
//!
//! `Python::attach` on a thread Python does not know creates a Python thread state and deletes
//! it again when the GIL is released: a few microseconds on every handler call of a worker
//! thread. [`attach`] first gives the thread a thread state that lives as long as the thread (it
//! is created once, and the GIL released at once, keeping it), so each later call only takes
//! and releases the GIL. A sequential run ([`hold`]) does not release it at all.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;

thread_local! {
    static KEPT: Cell<bool> = const { Cell::new(false) };
    /// This thread holds the GIL for a whole sequential run (see [`hold`]).
    static HOLDER: Cell<bool> = const { Cell::new(false) };
}

/// A sequential run holds the GIL on its thread (see [`hold`]).
static SEQUENTIAL: AtomicBool = AtomicBool::new(false);

/// Python's identifiers of the threads that took a Python state in [`attach`] since
/// [`forget_threads`]: the threads of the run going on, for [`interrupt_threads`].
static THREADS: Mutex<Vec<std::ffi::c_ulong>> = Mutex::new(Vec::new());

/// Starts a new list of the run's threads (the last run's are gone).
pub(crate) fn forget_threads() {
    THREADS.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Raises `KeyboardInterrupt` in every thread of the run going on, at its next Python
/// instruction: a handler that never returns ends, and with it the run.
pub(crate) fn interrupt_threads(_py: Python<'_>) {
    for &id in THREADS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        // Safety: the GIL is held (`_py`); an identifier that names no thread any more is
        // ignored by Python.
        unsafe {
            pyo3::ffi::PyThreadState_SetAsyncExc(
                id as std::ffi::c_long,
                pyo3::ffi::PyExc_KeyboardInterrupt,
            );
        }
    }
}

/// `Python::attach(f)`, with this thread's Python thread state kept between calls.
pub(crate) fn attach<F, R>(f: F) -> R
where
    F: for<'py> FnOnce(Python<'py>) -> R,
{
    // Ordering: set before the run's engine starts and cleared after it ends, on the thread
    // that runs it; the engine's own thread starts and joins order it for its threads.
    if SEQUENTIAL.load(Ordering::Relaxed) && !HOLDER.with(Cell::get) {
        // Another thread would wait for the GIL forever.
        panic!("a handler ran off the thread of a sequential run, which holds the GIL");
    }
    KEPT.with(|kept| {
        if !kept.get() {
            // Safety: the interpreter runs (this module was imported into it). `Ensure` takes
            // the GIL, creating this thread's state if it has none, with a count of one that no
            // `Release` ever drops, so the state is never deleted; `SaveThread` releases the
            // GIL and keeps the state. A thread that already held the GIL (the interpreter's
            // own, inside `Python::attach`) is never here: see the check below.
            unsafe {
                let _state = pyo3::ffi::PyGILState_Ensure();
                let id = pyo3::ffi::PyThread_get_thread_ident();
                THREADS.lock().unwrap_or_else(|e| e.into_inner()).push(id);
                pyo3::ffi::PyEval_SaveThread();
            }
            kept.set(true);
        }
    });
    Python::attach(f)
}

/// While it lives, this thread keeps the GIL for the whole run: a sequential run, whose every
/// handler runs on the calling thread, takes it once instead of once per call (about a tenth
/// of the time of a small handler).
pub(crate) struct Holding(());

pub(crate) fn hold() -> Holding {
    HOLDER.with(|h| h.set(true));
    // Ordering: see `attach`.
    SEQUENTIAL.store(true, Ordering::Relaxed);
    known_thread();
    Holding(())
}

impl Drop for Holding {
    fn drop(&mut self) {
        // Ordering: see `attach`.
        SEQUENTIAL.store(false, Ordering::Relaxed);
        HOLDER.with(|h| h.set(false));
    }
}

/// Marks this thread as one whose Python state already lives as long as it (the interpreter's
/// main thread, which called into the module holding the GIL).
pub(crate) fn known_thread() {
    KEPT.with(|k| k.set(true));
}
