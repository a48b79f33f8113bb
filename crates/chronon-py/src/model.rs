//! [`PyModel`]: a model written in Python, run by the engine like any other.
//!
//! The Python object has `init(ctx)` and `on_event(state, event, ctx)`, and optionally
//! `lookahead`, `lps`, `topology(lp)`, `reverse(state, event, ctx)`, `finish(lp, state,
//! stats)`, `global_events()`, `on_global(ctx)` and `counters` (python/chronon_pdes/model.py
//! documents them for users). Every call takes the GIL: handlers of parallel threads run one at
//! a time in one process; worker processes (`--procs`) each have their own interpreter.

use std::sync::Mutex;

use chronon::{Ctx, GlobalCtx, LpId, Model, ModelStats, ReverseCtx, ReverseFn, Time};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::ctx::{EventContext, GlobalContext, Stats};
use crate::values::{codec, PyEvent, PyState};

/// Every list of counter names a model of this process had (the engine asks for `&'static`
/// names): each distinct list is leaked once, however many runs use it.
static COUNTERS: Mutex<Vec<&'static [&'static str]>> = Mutex::new(Vec::new());

/// The `&'static` copy of the counter names `names`.
fn counter_names(names: Vec<String>) -> &'static [&'static str] {
    let mut known = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = known.iter().find(|k| k.iter().eq(names.iter())) {
        return k;
    }
    let leaked: Vec<&'static str> = names
        .into_iter()
        .map(|n| &*Box::leak(n.into_boxed_str()))
        .collect();
    let list: &'static [&'static str] = Box::leak(leaked.into_boxed_slice());
    known.push(list);
    list
}

/// What the Python object offers, read once when the model is built.
pub struct PyModel {
    obj: Py<PyAny>,
    /// `obj.init` and `obj.on_event`, looked up once.
    init_fn: Py<PyAny>,
    on_event_fn: Py<PyAny>,
    lps: LpId,
    lookahead: Time,
    /// Events travel pickled (a worker process of a multi-process run).
    pickled: bool,
    has_topology: bool,
    has_reverse: bool,
    /// An exception in `on_event` fails its event (deferred under Time Warp until the event
    /// commits) rather than ending the run at once: without `reverse` (a rollback restores a
    /// saved copy), or with a `reverse` that says it undoes a failed event
    /// (`reverse_undoes_failed_events = True`).
    defer_errors: bool,
    has_finish: bool,
    has_global: bool,
    counters: &'static [&'static str],
}

/// An attribute that is a value or a method returning one (`lookahead = 1.0` or `def
/// lookahead(self): ...`).
fn value_of<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !obj.hasattr(name)? {
        return Ok(None);
    }
    let v = obj.getattr(name)?;
    if v.is_callable() {
        Ok(Some(v.call0()?))
    } else {
        Ok(Some(v))
    }
}

/// Whether `new`, which `on_event` returned, may replace the state `old`: an object of the
/// state's kind (its type, a subclass or superclass of it, or a number for a number), not
/// something else returned by mistake (`return True`), which would fail one event later with
/// an unrelated message.
fn new_state(old: &Bound<'_, PyAny>, new: &Bound<'_, PyAny>) -> PyResult<()> {
    use pyo3::types::{PyBool, PyFloat, PyInt};
    let number = |v: &Bound<'_, PyAny>| {
        (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>())
            && !v.is_instance_of::<PyBool>()
    };
    let (old_t, new_t) = (old.get_type(), new.get_type());
    if new.is_instance(&old_t)? || old.is_instance(&new_t)? || (number(old) && number(new)) {
        return Ok(());
    }
    let name = |t: &Bound<'_, pyo3::types::PyType>| {
        t.qualname()
            .map_or_else(|_| "?".to_string(), |n| n.to_string())
    };
    let shown: String = new.repr().map_or_else(|_| "?".into(), |r| r.to_string());
    let shown: String = shown.chars().take(60).collect();
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "on_event returned {shown} ({}) while the state is a {}: return None after changing the state in place, or a new state of its kind",
        name(&new_t),
        name(&old_t)
    )))
}

fn method(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    Ok(obj.hasattr(name)? && obj.getattr(name)?.is_callable())
}

impl PyModel {
    /// The model of the Python object `obj`; a one-line reason when it is not one.
    pub fn new(py: Python<'_>, obj: Py<PyAny>) -> Result<PyModel, String> {
        let b = obj.bind(py);
        let line = |e: PyErr| crate::error_line(py, &e);
        for required in ["init", "on_event"] {
            if !method(b, required).map_err(line)? {
                return Err(format!(
                    "the model has no method {required}(): a Python model needs init(ctx) and on_event(state, event, ctx)"
                ));
            }
        }
        let lps = match value_of(b, "lps").map_err(line)? {
            None => return Err("the model has no `lps` (its number of LPs)".into()),
            Some(v) => v
                .extract::<u32>()
                .map_err(|_| format!("the model's lps is {v}; it must be a whole number >= 1"))?,
        };
        if lps == 0 {
            return Err("the model's lps is 0; it must be at least 1".into());
        }
        let lookahead = match value_of(b, "lookahead").map_err(line)? {
            None => 0.0,
            Some(v) => v
                .extract::<f64>()
                .map_err(|_| format!("the model's lookahead is {v}; it must be a number"))?,
        };
        let counters: &'static [&'static str] = match value_of(b, "counters").map_err(line)? {
            None => &[],
            Some(v) => {
                let names: Vec<String> = v.extract().map_err(|_| {
                    format!("the model's counters is {v}; it must be a list of names")
                })?;
                counter_names(names)
            }
        };
        codec(py);
        let has_reverse = method(b, "reverse").map_err(line)?;
        Ok(PyModel {
            lps,
            lookahead,
            pickled: chronon::is_worker_process(),
            has_topology: method(b, "topology").map_err(line)?,
            has_reverse,
            defer_errors: !has_reverse
                || value_of(b, "reverse_undoes_failed_events")
                    .map_err(line)?
                    .is_some_and(|v| v.is_truthy().unwrap_or(false)),
            has_finish: method(b, "finish").map_err(line)?,
            has_global: method(b, "on_global").map_err(line)?,
            counters,
            init_fn: b.getattr("init").map_err(line)?.unbind(),
            on_event_fn: b.getattr("on_event").map_err(line)?.unbind(),
            obj,
        })
    }

    /// The Python model object.
    pub fn object(&self) -> &Py<PyAny> {
        &self.obj
    }

    /// Calls `f(*args)` (`init` or `on_event`) with this thread's event context over `ctx`
    /// (closed when it returns); `pickled`: events to LPs of other processes are pickled (a
    /// worker process's `on_event`; `init`'s never leave the process: see
    /// `EventContext::open`).
    fn call_with_ctx<'py>(
        &self,
        py: Python<'py>,
        ctx: &mut Ctx<'_, Self>,
        (f, pickled): (&Py<PyAny>, bool),
        args: impl FnOnce(Bound<'py, EventContext>) -> PyResult<Bound<'py, PyTuple>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        EventContext::for_thread(py, self.counters).and_then(|w| {
            w.borrow().open(ctx as *mut _, pickled);
            let r = args(w.clone()).and_then(|a| f.bind(py).call1(a));
            w.borrow().close();
            EventContext::reuse_unless_kept(w);
            r
        })
    }

    /// `on_event` raised `e`: the event fails (see `defer_errors`) with the exception kept for
    /// the caller; a `BaseException` that is not an `Exception` (KeyboardInterrupt,
    /// SystemExit) and a model whose `reverse` cannot undo a failed event end the run at once.
    fn event_failed(&self, py: Python<'_>, e: PyErr, ctx: &mut Ctx<'_, Self>) {
        let (me, now) = (ctx.me(), ctx.now());
        let ordinary = e.is_instance_of::<pyo3::exceptions::PyException>(py);
        if !(self.defer_errors && ordinary) {
            crate::raise_in_handler(py, e, "on_event", me, now);
        }
        let line = crate::keep_error(py, &e, "on_event", me, now);
        ctx.fail(format!("on_event raised {line}"));
    }

    /// `reverse` for the engine: undoes one event.
    fn undo(&self, state: &mut PyState, event: &PyEvent, rctx: &ReverseCtx) {
        crate::gil::attach(|py| {
            let r = event.get(py).and_then(|ev| {
                let ctx = (rctx.me, rctx.now);
                self.obj
                    .bind(py)
                    .call_method1("reverse", (state.0.bind(py), ev, ctx))
            });
            match r {
                Ok(v) if !v.is_none() => state.0 = v.unbind(),
                Ok(_) => {}
                Err(e) => crate::raise_in_handler(py, e, "reverse", rctx.me, rctx.now),
            }
        })
    }
}

impl Model for PyModel {
    type State = PyState;
    type Event = PyEvent;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> PyState {
        crate::gil::attach(|py| {
            let (me, now) = (ctx.me(), ctx.now());
            let state = self
                .call_with_ctx(py, ctx, (&self.init_fn, false), |c| {
                    PyTuple::new(py, [c.into_any()])
                })
                .unwrap_or_else(|e| crate::raise_in_handler(py, e, "init", me, now));
            if state.is_none() {
                let e = pyo3::exceptions::PyTypeError::new_err(
                    "init() returned None: it must return the LP's state (any object but None)",
                );
                crate::raise_in_handler(py, e, "init", me, now);
            }
            PyState(state.unbind())
        })
    }

    fn on_event(&self, state: &mut PyState, event: &PyEvent, ctx: &mut Ctx<'_, Self>) {
        // The interpreter is platform code to the engine: its locks and thread state (frames
        // on this C stack) must never be switched off the CPU, so a Python handler runs whole
        // (its calls into `ctx` return to platform mode and check nothing).
        chronon::platform_mode(|| self.on_event_py(state, event, ctx))
    }

    fn lookahead(&self) -> Time {
        self.lookahead
    }

    fn lp_count(&self) -> Option<LpId> {
        Some(self.lps)
    }

    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        self.has_reverse.then_some(Self::undo as ReverseFn<Self>)
    }

    fn counter_names(&self) -> &'static [&'static str] {
        self.counters
    }

    fn finish(&self, lp: LpId, state: &PyState, stats: &mut ModelStats) {
        if !self.has_finish {
            return;
        }
        crate::gil::attach(|py| {
            let r = Bound::new(py, Stats::wrap(stats as *mut _)).and_then(|s| {
                let r = self
                    .obj
                    .bind(py)
                    .call_method1("finish", (lp, state.0.bind(py), s.clone()));
                s.borrow().close();
                r
            });
            if let Err(e) = r {
                panic!("{}", crate::error_line(py, &e));
            }
        })
    }

    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, Time)>> {
        if !self.has_topology {
            return None;
        }
        crate::gil::attach(|py| {
            let r = self.obj.bind(py).call_method1("topology", (lp,));
            match r.and_then(|v| {
                if v.is_none() {
                    Ok(None)
                } else {
                    v.extract::<Vec<(LpId, Time)>>().map(Some)
                }
            }) {
                Ok(links) => links,
                Err(e) => panic!(
                    "topology({lp}) must return a list of (lp, lookahead) pairs or None: {}",
                    crate::error_line(py, &e)
                ),
            }
        })
    }

    fn global_events(&self) -> Vec<Time> {
        if !self.has_global {
            return Vec::new();
        }
        crate::gil::attach(|py| {
            match value_of(self.obj.bind(py), "global_events")
                .and_then(|v| v.map_or(Ok(Vec::new()), |v| v.extract::<Vec<Time>>()))
            {
                Ok(t) => t,
                Err(e) => panic!(
                    "global_events must be a list of times: {}",
                    crate::error_line(py, &e)
                ),
            }
        })
    }

    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        crate::gil::attach(|py| {
            let now = ctx.now();
            let r = Bound::new(py, GlobalContext::wrap(ctx as *mut _)).and_then(|g| {
                let r = self.obj.bind(py).call_method1("on_global", (g.clone(),));
                g.borrow().close();
                r
            });
            if let Err(e) = r {
                crate::raise_in_handler(py, e, "on_global", chronon::event::ENGINE_SENDER, now);
            }
        })
    }
}

impl PyModel {
    /// `on_event` under the GIL.
    fn on_event_py(&self, state: &mut PyState, event: &PyEvent, ctx: &mut Ctx<'_, Self>) {
        crate::gil::attach(|py| {
            let (me, now) = (ctx.me(), ctx.now());
            let ev = event
                .get(py)
                .unwrap_or_else(|e| crate::raise_in_handler(py, e, "on_event", me, now));
            let st = state.0.bind(py).clone();
            let old = st.clone();
            let r = self.call_with_ctx(py, ctx, (&self.on_event_fn, self.pickled), |c| {
                PyTuple::new(py, [st, ev, c.into_any()])
            });
            // A handler may return a new state (for states that are numbers or tuples).
            let checked = r.and_then(|r| match r.is_none() {
                true => Ok(r),
                false => new_state(&old, &r).map(|()| r),
            });
            match checked {
                Ok(r) if !r.is_none() => state.0 = r.unbind(),
                Ok(_) => {}
                Err(e) => self.event_failed(py, e, ctx),
            }
        })
    }
}
