//! Taking the GIL from the engine's threads cheaply.
//!
//! `Python::attach` on a thread Python does not know creates a Python thread state and deletes
//! it again when the GIL is released: a few microseconds on every handler call of a worker
//! thread. [`attach`] first gives the thread a thread state that lives as long as the thread (it
//! is created once, and the GIL released at once, keeping it), so each later call only takes
//! and releases the GIL.

use std::cell::Cell;

use pyo3::prelude::*;

thread_local! {
    static KEPT: Cell<bool> = const { Cell::new(false) };
}

/// `Python::attach(f)`, with this thread's Python thread state kept between calls.
pub(crate) fn attach<F, R>(f: F) -> R
where
    F: for<'py> FnOnce(Python<'py>) -> R,
{
    KEPT.with(|kept| {
        if !kept.get() {
            // Safety: the interpreter runs (this module was imported into it). `Ensure` takes
            // the GIL, creating this thread's state if it has none, with a count of one that no
            // `Release` ever drops, so the state is never deleted; `SaveThread` releases the
            // GIL and keeps the state. A thread that already held the GIL (the interpreter's
            // own, inside `Python::attach`) is never here: see the check below.
            unsafe {
                let _state = pyo3::ffi::PyGILState_Ensure();
                pyo3::ffi::PyEval_SaveThread();
            }
            kept.set(true);
        }
    });
    Python::attach(f)
}

/// Marks this thread as one whose Python state already lives as long as it (the interpreter's
/// main thread, which called into the module holding the GIL).
pub(crate) fn known_thread() {
    KEPT.with(|k| k.set(true));
}
