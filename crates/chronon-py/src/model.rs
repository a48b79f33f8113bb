//! [`PyModel`]: a model written in Python, run by the engine like any other.
//!
//! The Python object has `init(ctx)` and `on_event(state, event, ctx)`, and optionally
//! `lookahead`, `lps`, `topology(lp)`, `reverse(state, event, ctx)`, `finish(lp, state,
//! stats)`, `global_events()`, `on_global(ctx)` and `counters` (python/chronon_pdes/model.py
//! documents them for users). Every call takes the GIL: handlers of parallel threads run one at
//! a time in one process; worker processes (`--procs`) each have their own interpreter.

use std::sync::OnceLock;

use chronon::{Ctx, GlobalCtx, LpId, Model, ModelStats, ReverseCtx, ReverseFn, Time};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::ctx::{EventContext, GlobalContext, Stats};
use crate::values::{codec, PyEvent, PyState};

/// The model's counter names, once per process (the engine asks for `&'static` names).
static COUNTERS: OnceLock<&'static [&'static str]> = OnceLock::new();

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
                COUNTERS
                    .get_or_init(|| {
                        let leaked: Vec<&'static str> = names
                            .into_iter()
                            .map(|n| &*Box::leak(n.into_boxed_str()))
                            .collect();
                        Box::leak(leaked.into_boxed_slice())
                    })
                    .to_owned()
            }
        };
        codec(py);
        Ok(PyModel {
            lps,
            lookahead,
            pickled: chronon::is_worker_process(),
            has_topology: method(b, "topology").map_err(line)?,
            has_reverse: method(b, "reverse").map_err(line)?,
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
    /// (closed when it returns); a Python exception ends the run as a handler failure naming
    /// it. Events to LPs of other processes are pickled in a worker process's `on_event`
    /// (`init`'s never leave the process: see `EventContext::open`).
    fn call_with_ctx<'py>(
        &self,
        py: Python<'py>,
        ctx: &mut Ctx<'_, Self>,
        (name, f): (&str, &Py<PyAny>),
        args: impl FnOnce(Bound<'py, EventContext>) -> PyResult<Bound<'py, PyTuple>>,
    ) -> Bound<'py, PyAny> {
        let (me, now) = (ctx.me(), ctx.now());
        let pickled = self.pickled && name != "init";
        let result = EventContext::for_thread(py, self.counters).and_then(|w| {
            w.borrow().open(ctx as *mut _, pickled);
            let r = args(w.clone()).and_then(|a| f.bind(py).call1(a));
            w.borrow().close();
            r
        });
        result.unwrap_or_else(|e| crate::raise_in_handler(py, e, name, me, now))
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
            let init = ("init", &self.init_fn);
            let state = self.call_with_ctx(py, ctx, init, |c| PyTuple::new(py, [c.into_any()]));
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
        crate::gil::attach(|py| {
            let (me, now) = (ctx.me(), ctx.now());
            let ev = event
                .get(py)
                .unwrap_or_else(|e| crate::raise_in_handler(py, e, "on_event", me, now));
            let st = state.0.bind(py).clone();
            let r = self.call_with_ctx(py, ctx, ("on_event", &self.on_event_fn), |c| {
                PyTuple::new(py, [st, ev, c.into_any()])
            });
            // A handler may return a new state (for states that are numbers or tuples).
            if !r.is_none() {
                state.0 = r.unbind();
            }
        })
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
