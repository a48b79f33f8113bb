//! Taking the GIL from the engine's threads cheaply.
//!
//! `Python::attach` on a thread Python does not know creates a Python thread state and deletes
//! it again when the GIL is released: a few microseconds on every handler call of a worker
//! thread. [`attach`] first gives the thread a thread state that lives as long as the thread (it
//! is created once, and the GIL released at once, keeping it), so each later call only takes
//! and releases the GIL. A sequential run ([`hold`]) does not release it at all.

use std::cell::Cell;

use pyo3::prelude::*;

thread_local! {
    static KEPT: Cell<bool> = const { Cell::new(false) };
}

/// The thread that holds the GIL for a whole sequential run (see [`hold`]).
static HOLDER: std::sync::OnceLock<std::thread::ThreadId> = std::sync::OnceLock::new();

/// `Python::attach(f)`, with this thread's Python thread state kept between calls.
pub(crate) fn attach<F, R>(f: F) -> R
where
    F: for<'py> FnOnce(Python<'py>) -> R,
{
    if let Some(holder) = HOLDER.get() {
        // Another thread would wait for the GIL forever.
        assert_eq!(
            *holder,
            std::thread::current().id(),
            "a handler ran off the thread of a sequential run, which holds the GIL"
        );
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
                pyo3::ffi::PyEval_SaveThread();
            }
            kept.set(true);
        }
    });
    Python::attach(f)
}

/// This thread keeps the GIL for the whole run: a sequential run, whose every handler runs on
/// the calling thread, takes it once instead of once per call (about a tenth of the time of a
/// small handler).
pub(crate) fn hold() {
    let _ = HOLDER.set(std::thread::current().id());
    known_thread();
}

/// Marks this thread as one whose Python state already lives as long as it (the interpreter's
/// main thread, which called into the module holding the GIL).
pub(crate) fn known_thread() {
    KEPT.with(|k| k.set(true));
}
