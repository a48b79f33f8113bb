//! What a Python handler is given: `ctx` (time, identity, sends, randomness, counters), the
//! global-event context and the statistics of `finish`. Each wraps an engine object that lives
//! only while the handler runs: the wrapper holds its address, cleared when the handler
//! returns, so a `ctx` kept past its handler raises instead of reaching freed memory.

use std::cell::Cell;

use chronon::{Ctx, GlobalCtx, ModelStats};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::model::PyModel;
use crate::values::{codec, PyEvent, PyState};

type EventCtx = Ctx<'static, PyModel>;

thread_local! {
    /// This thread's event context (see [`EventContext::for_thread`]).
    static MINE: std::cell::RefCell<Option<Py<EventContext>>> = const { std::cell::RefCell::new(None) };
}
type GlobalEventCtx = GlobalCtx<'static, PyModel>;

fn gone() -> PyErr {
    PyRuntimeError::new_err(
        "this context belongs to a handler that has returned; use it only inside the handler",
    )
}

fn elsewhere() -> PyErr {
    PyRuntimeError::new_err(
        "this context belongs to a handler running on another thread; use it only inside its handler",
    )
}

thread_local! {
    /// Its address tells this thread from the others, cheaply.
    static TOKEN: u8 = const { 0 };
}

fn this_thread() -> usize {
    TOKEN.with(|t| t as *const u8 as usize)
}

/// The address of an engine object while one handler runs, and the thread it runs on.
struct Scoped<T> {
    ptr: Cell<*mut T>,
    thread: Cell<usize>,
}

// Safety: the Python objects holding a `Scoped` may be reached, and dropped, from any thread
// (a traceback keeps a handler's `ctx` after the run, on the caller's thread), but the address
// is only followed by `with`, on the thread that set it (see there); the cells are read and
// written only under the GIL, which orders every access.
unsafe impl<T> Send for Scoped<T> {}
// Safety: as for `Send` above.
unsafe impl<T> Sync for Scoped<T> {}

impl<T> Scoped<T> {
    fn new(p: *mut T) -> Self {
        Scoped {
            ptr: Cell::new(p),
            thread: Cell::new(this_thread()),
        }
    }

    /// Points at `p`, on this thread.
    fn set(&self, p: *mut T) {
        self.ptr.set(p);
        self.thread.set(this_thread());
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> PyResult<R> {
        let p = self.ptr.get();
        if p.is_null() {
            return Err(gone());
        }
        if self.thread.get() != this_thread() {
            return Err(elsewhere());
        }
        // Safety: the pointer is set from a live `&mut T` (`PyModel`'s handlers) and cleared
        // before that borrow ends; it is followed only on the handler's own thread (checked
        // above), and the handler does not run two of these calls at once (each returns before
        // the next starts), so no two `&mut` overlap.
        Ok(f(unsafe { &mut *p }))
    }

    fn clear(&self) {
        self.ptr.set(std::ptr::null_mut());
    }
}

/// `ctx` of `init`, `on_event`: the current time, this LP, sends, its random stream, counters.
#[pyclass(module = "chronon_pdes")]
pub struct EventContext {
    ctx: Scoped<EventCtx>,
    /// The `Rng` object `rng()` returns (made once: it reads the stream through this context).
    rng: std::sync::OnceLock<Py<Rng>>,
    /// Whether an event to an LP of another process is pickled in this call (see `open`).
    pickled: std::sync::atomic::AtomicBool,
    counters: &'static [&'static str],
}

impl EventContext {
    /// This thread's context object (one per thread, reused by every handler call that does
    /// not keep it: a handler call allocates no context), closed.
    pub(crate) fn for_thread<'py>(
        py: Python<'py>,
        counters: &'static [&'static str],
    ) -> PyResult<Bound<'py, EventContext>> {
        MINE.with(|m| {
            if let Some(c) = &*m.borrow() {
                let b = c.bind(py);
                // The same run's (a later run of another model gets its own).
                let same = std::ptr::eq(b.borrow().counters, counters);
                if same {
                    return Ok(b.clone());
                }
            }
            let c = Bound::new(
                py,
                EventContext {
                    ctx: Scoped::new(std::ptr::null_mut()),
                    rng: std::sync::OnceLock::new(),
                    pickled: std::sync::atomic::AtomicBool::new(false),
                    counters,
                },
            )?;
            *m.borrow_mut() = Some(c.clone().unbind());
            Ok(c)
        })
    }

    /// After a handler call: `c` (this thread's context, closed) is used again by the next
    /// call unless the handler kept it (or its `rng()`) somewhere, in which case the next call
    /// gets a new one and the kept one stays closed: using it raises.
    pub(crate) fn reuse_unless_kept(c: Bound<'_, EventContext>) {
        // Safety: both pointers are of live objects (`c` is a reference held here, the `Rng`
        // is held by the context), and the GIL is held (`c` is bound to it).
        let refs = |p: *mut pyo3::ffi::PyObject| unsafe { pyo3::ffi::Py_REFCNT(p) };
        // The references a context nobody kept has: `MINE`'s, `c`'s, and its `Rng`'s.
        let rng = c.borrow().rng.get().map(|r| refs(r.as_ptr()));
        let expected = 2 + isize::from(rng.is_some());
        let kept = refs(c.as_ptr()) > expected || rng.is_some_and(|n| n > 1);
        if kept {
            MINE.with(|m| *m.borrow_mut() = None);
        }
    }

    /// Points the context at `p` for one handler call; `pickled`: an event this call sends to
    /// an LP of another process is pickled (a worker process's `on_event`; not `init`, whose
    /// events never leave the process: every process initializes every LP and keeps the
    /// initial events of its own LPs only).
    pub(crate) fn open<'a>(&self, p: *mut Ctx<'a, PyModel>, pickled: bool) {
        // Ordering: read and written only on the handler's thread (`Scoped` checks it).
        self.pickled
            .store(pickled, std::sync::atomic::Ordering::Relaxed);
        // The lifetime is erased; `Scoped` keeps the address only while the borrow lives.
        self.ctx.set(p.cast::<EventCtx>());
    }

    pub(crate) fn close(&self) {
        self.ctx.clear();
    }
}

#[pymethods]
impl EventContext {
    /// The current simulated time.
    fn now(&self) -> PyResult<f64> {
        self.ctx.with(|c| c.now())
    }

    /// This LP's number.
    fn me(&self) -> PyResult<u32> {
        self.ctx.with(|c| c.me())
    }

    /// The number of LPs.
    fn lps(&self) -> PyResult<u32> {
        self.ctx.with(|c| c.lps())
    }

    /// Sends `event` (any object; pickled only when `dst` is in another worker process) to LP
    /// `dst`, to arrive at `now() + delay`.
    #[pyo3(signature = (dst, delay, event=None))]
    fn send(
        &self,
        py: Python<'_>,
        dst: u32,
        delay: f64,
        event: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let event = event.unwrap_or_else(|| py.None().into_bound(py));
        // In a worker process, only an event to an LP of another process travels pickled; one
        // to an LP of this process stays the object itself (`PyEvent`'s safety comment).
        // Ordering: see `open`.
        let pickled = self.pickled.load(std::sync::atomic::Ordering::Relaxed);
        if pickled && !self.ctx.with(|c| c.same_process(dst))? {
            let bytes = codec(py).pickle(&event).map_err(|e| {
                let ty = event
                    .get_type()
                    .qualname()
                    .map_or_else(|_| "?".to_string(), |n| n.to_string());
                PyValueError::new_err(format!(
                    "an event of type {ty} cannot be pickled, and events between processes travel pickled: {}",
                    crate::error_line(py, &e)
                ))
            })?;
            self.ctx.with(|c| {
                let payload = PyEvent::pickled(c.alloc_slice(bytes.as_bytes()));
                c.send(dst, delay, payload)
            })
        } else {
            let payload = PyEvent::local(event.unbind());
            self.ctx.with(|c| c.send(dst, delay, payload))
        }
    }

    /// This LP's random stream: the only randomness a model may use (it is part of the LP's
    /// state, so every executor draws the same numbers).
    fn rng(slf: &Bound<'_, Self>) -> PyResult<Py<Rng>> {
        let me = slf.borrow();
        me.ctx.with(|_| ())?;
        if let Some(r) = me.rng.get() {
            return Ok(r.clone_ref(slf.py()));
        }
        let r = Py::new(
            slf.py(),
            Rng {
                ctx: slf.clone().unbind(),
            },
        )?;
        let _ = me.rng.set(r.clone_ref(slf.py()));
        Ok(r)
    }

    /// Adds `delta` to the counter `name` (one of the model's `counters`).
    #[pyo3(signature = (name, delta=1))]
    fn count(&self, name: &str, delta: i64) -> PyResult<()> {
        let Some(i) = self.counters.iter().position(|c| *c == name) else {
            return Err(PyValueError::new_err(format!(
                "no counter '{name}': the model's `counters` are {:?}",
                self.counters
            )));
        };
        self.ctx.with(|c| c.count(i, delta))
    }
}

/// An LP's random stream (`ctx.rng()`), valid while its handler runs.
#[pyclass(module = "chronon_pdes")]
pub struct Rng {
    ctx: Py<EventContext>,
}

impl Rng {
    fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut chronon::LpRng) -> R) -> PyResult<R> {
        self.ctx.borrow(py).ctx.with(|c| f(c.rng()))
    }
}

#[pymethods]
impl Rng {
    /// A uniform number in [0, 1).
    fn random(&self, py: Python<'_>) -> PyResult<f64> {
        self.with(py, |r| r.uniform())
    }

    /// A uniform number in [a, b).
    fn uniform(&self, py: Python<'_>, a: f64, b: f64) -> PyResult<f64> {
        self.with(py, |r| r.uniform_range(a, b))
    }

    /// An exponential number of mean `mean`.
    fn exponential(&self, py: Python<'_>, mean: f64) -> PyResult<f64> {
        if !(mean > 0.0 && mean.is_finite()) {
            return Err(PyValueError::new_err(format!(
                "exponential(mean={mean}): the mean must be finite and > 0"
            )));
        }
        self.with(py, |r| r.exponential_mean(mean))
    }

    /// An exponential number of rate `rate` (as `random.expovariate`).
    fn expovariate(&self, py: Python<'_>, rate: f64) -> PyResult<f64> {
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(PyValueError::new_err(format!(
                "expovariate({rate}): the rate must be finite and > 0"
            )));
        }
        self.with(py, |r| r.exponential_rate(rate))
    }

    /// A uniform integer in [0, n).
    fn randrange(&self, py: Python<'_>, n: u64) -> PyResult<u64> {
        if n == 0 {
            return Err(PyValueError::new_err("randrange(0): the range is empty"));
        }
        self.with(py, |r| r.below(n))
    }

    /// A uniform integer in [a, b], both included.
    fn randint(&self, py: Python<'_>, a: i64, b: i64) -> PyResult<i64> {
        if b < a {
            return Err(PyValueError::new_err(format!(
                "randint({a}, {b}): the range is empty"
            )));
        }
        let span = (b as i128 - a as i128 + 1) as u64;
        self.with(py, |r| a.wrapping_add(r.below(span) as i64))
    }

    /// A uniformly chosen element of the sequence `seq`.
    fn choice<'py>(&self, py: Python<'py>, seq: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let n = seq.len()?;
        if n == 0 {
            return Err(PyValueError::new_err("choice() of an empty sequence"));
        }
        let i = self.with(py, |r| r.below(n as u64))?;
        seq.get_item(i as usize)
    }

    /// True with probability `p`.
    fn bernoulli(&self, py: Python<'_>, p: f64) -> PyResult<bool> {
        self.with(py, |r| r.bernoulli(p))
    }
}

/// `ctx` of `on_global`: the time, every LP's state (to read and change), LP events to send,
/// statistics, series and the next global event.
#[pyclass(module = "chronon_pdes")]
pub struct GlobalContext {
    ctx: Scoped<GlobalEventCtx>,
}

impl GlobalContext {
    pub(crate) fn wrap<'a>(p: *mut GlobalCtx<'a, PyModel>) -> GlobalContext {
        GlobalContext {
            ctx: Scoped::new(p.cast::<GlobalEventCtx>()),
        }
    }

    pub(crate) fn close(&self) {
        self.ctx.clear();
    }
}

#[pymethods]
impl GlobalContext {
    /// The time of this global event.
    fn now(&self) -> PyResult<f64> {
        self.ctx.with(|c| c.now())
    }

    /// The number of LPs.
    fn lps(&self) -> PyResult<u32> {
        self.ctx.with(|c| c.lps())
    }

    /// LP `lp`'s state, to read (to change it, use `state_mut` or `set_state`).
    fn state(&self, py: Python<'_>, lp: u32) -> PyResult<Py<PyAny>> {
        self.ctx.with(|c| {
            check_lp(c.lps(), "state", lp)?;
            Ok(c.state(lp).0.clone_ref(py))
        })?
    }

    /// LP `lp`'s state, to change in place: every LP event after `now()` sees the change,
    /// under every executor (Time Warp keeps it as the LP's state from here on).
    fn state_mut(&self, py: Python<'_>, lp: u32) -> PyResult<Py<PyAny>> {
        self.ctx.with(|c| {
            check_lp(c.lps(), "state_mut", lp)?;
            Ok(c.state_mut(lp).0.clone_ref(py))
        })?
    }

    /// Replaces LP `lp`'s state with `value` (any object but None).
    fn set_state(&self, lp: u32, value: Bound<'_, PyAny>) -> PyResult<()> {
        if value.is_none() {
            return Err(PyValueError::new_err(format!(
                "set_state({lp}, None): a state is any object but None"
            )));
        }
        self.ctx.with(|c| {
            check_lp(c.lps(), "set_state", lp)?;
            *c.state_mut(lp) = PyState(value.unbind());
            Ok(())
        })?
    }

    /// Sends `event` (any object) to LP `dst`, to arrive `delay` after `now()`: finite and
    /// > 0. A bad destination or delay ends the run with one line once the handler returns.
    fn send(&self, dst: u32, delay: f64, event: Bound<'_, PyAny>) -> PyResult<()> {
        self.ctx
            .with(|c| c.send(dst, delay, PyEvent::local(event.unbind())))
    }

    /// Adds `value` to the statistic `name` of the report's `model_stats`.
    fn add(&self, name: &str, value: f64) -> PyResult<()> {
        self.ctx.with(|c| c.stats().add(name, value))?;
        Ok(())
    }

    /// Sets the statistic `name` of the report's `model_stats`.
    fn set(&self, name: &str, value: f64) -> PyResult<()> {
        self.ctx.with(|c| c.stats().set(name, value))?;
        Ok(())
    }

    /// Appends the point (now, `value`) to the series `name` of the report's `model_series`.
    fn record(&self, name: &str, value: f64) -> PyResult<()> {
        self.ctx.with(|c| c.record(name, value))?;
        Ok(())
    }

    /// Schedules the next global event `delay` after this one.
    fn schedule(&self, delay: f64) -> PyResult<()> {
        if !(delay > 0.0 && delay.is_finite()) {
            return Err(PyValueError::new_err(format!(
                "schedule({delay}): the delay must be finite and > 0"
            )));
        }
        self.ctx.with(|c| c.schedule(delay))?;
        Ok(())
    }
}

/// The statistics `finish` adds to (the report's `model_stats`): sums, values, minima, maxima
/// over every LP, the same under every executor.
#[pyclass(module = "chronon_pdes")]
pub struct Stats {
    stats: Scoped<ModelStats>,
}

impl Stats {
    pub(crate) fn wrap(p: *mut ModelStats) -> Stats {
        Stats {
            stats: Scoped::new(p),
        }
    }

    pub(crate) fn close(&self) {
        self.stats.clear();
    }
}

#[pymethods]
impl Stats {
    /// Adds `value` to the statistic `name` (a sum over LPs).
    fn add(&self, name: &str, value: f64) -> PyResult<()> {
        self.stats.with(|c| c.add(name, value))?;
        Ok(())
    }

    /// Sets the statistic `name`.
    fn set(&self, name: &str, value: f64) -> PyResult<()> {
        self.stats.with(|c| c.set(name, value))?;
        Ok(())
    }

    /// Keeps the smallest value given for `name`.
    fn min(&self, name: &str, value: f64) -> PyResult<()> {
        self.stats.with(|c| c.min(name, value))?;
        Ok(())
    }

    /// Keeps the largest value given for `name`.
    fn max(&self, name: &str, value: f64) -> PyResult<()> {
        self.stats.with(|c| c.max(name, value))?;
        Ok(())
    }

    /// The time the run ended (in `finish`: the end time, or the cut of a run that ends at a
    /// checkpoint; for a run without an end time or stopped early, its latest committed
    /// event's time). A time-weighted mean kept by hand closes there.
    #[getter]
    fn end_time(&self) -> PyResult<Option<f64>> {
        self.stats.with(|c| c.end_time())
    }

    /// Merges the LP's `chronon_pdes.Tally` (or any object with `n`, `sum`, `sum_sq`, `min`,
    /// `max`) into the statistic `name`: the report gets its parts summed over LPs and the
    /// derived `name.mean` and `name.sd`.
    fn tally(&self, name: &str, tally: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = PyTally {
            n: tally.getattr("n")?.extract()?,
            sum: tally.getattr("sum")?.extract()?,
            sum_sq: tally.getattr("sum_sq")?.extract()?,
            min: tally.getattr("min")?.extract()?,
            max: tally.getattr("max")?.extract()?,
        };
        self.stats.with(|c| c.tally(name, &t))
    }

    /// Merges the LP's `chronon_pdes.TimeAverage` (or any object with `start`, `since`,
    /// `value`, `area`) into the statistic `name`, closed at `end_time` (the current value
    /// counts up to the end of the run): the report gets `name.area`, `name.time` and the
    /// derived `name.mean`.
    fn time_average(&self, name: &str, average: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = PyTimeAverage {
            start: average.getattr("start")?.extract()?,
            since: average.getattr("since")?.extract()?,
            value: average.getattr("value")?.extract()?,
            area: average.getattr("area")?.extract()?,
        };
        if t.since < t.start {
            return Err(PyValueError::new_err(format!(
                "time_average({name:?}): its last change ({}) is before its start ({})",
                t.since, t.start
            )));
        }
        self.stats.with(|c| c.time_average(name, &t))
    }
}

/// A Python tally's figures, read from its attributes.
struct PyTally {
    n: u64,
    sum: f64,
    sum_sq: f64,
    min: f64,
    max: f64,
}

impl chronon::measure::TallyFigures for PyTally {
    fn n(&self) -> u64 {
        self.n
    }
    fn sum(&self) -> f64 {
        self.sum
    }
    fn sum_sq(&self) -> f64 {
        self.sum_sq
    }
    fn min_max(&self) -> Option<(f64, f64)> {
        Some((self.min, self.max))
    }
}

/// A Python time average's figures, read from its attributes: `area` up to `since`, `value`
/// held since then.
struct PyTimeAverage {
    start: f64,
    since: f64,
    value: f64,
    area: f64,
}

impl chronon::measure::TimeAverageFigures for PyTimeAverage {
    fn area_and_time(&self, end: Option<f64>) -> (f64, f64) {
        match end {
            Some(end) if end > self.since => (
                self.area + self.value * (end - self.since),
                end - self.start,
            ),
            _ => (self.area, self.since - self.start),
        }
    }
}

/// An LP number `what` was asked with, checked against the run's `lps`.
fn check_lp(lps: u32, what: &str, lp: u32) -> PyResult<()> {
    if lp >= lps {
        return Err(PyValueError::new_err(format!(
            "{what}({lp}): there are {lps} LPs"
        )));
    }
    Ok(())
}
