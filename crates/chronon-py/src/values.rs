//! Python values inside the engine: an LP's state ([`PyState`], copied for Time Warp) and an
//! event's payload ([`PyEvent`]: the object itself inside one process, its pickled bytes in a
//! shared heap between processes).

use chronon::shm::{BPtr, Bytes, ShmSafe};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString};

/// The `pickle` and `copy` functions a run uses, looked up once per process.
pub(crate) struct Codec {
    pub dumps: Py<PyAny>,
    pub loads: Py<PyAny>,
    pub deepcopy: Py<PyAny>,
}

impl Codec {
    pub(crate) fn new(py: Python<'_>) -> PyResult<Codec> {
        let pickle = py.import("pickle")?;
        Ok(Codec {
            dumps: pickle.getattr("dumps")?.unbind(),
            loads: pickle.getattr("loads")?.unbind(),
            deepcopy: py.import("copy")?.getattr("deepcopy")?.unbind(),
        })
    }

    /// `obj` as pickled bytes (the highest protocol).
    pub(crate) fn pickle<'py>(&self, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let py = obj.py();
        let bytes = self.dumps.bind(py).call1((obj, -1))?;
        Ok(bytes.cast_into::<PyBytes>()?)
    }

    /// The object pickled in `data`.
    pub(crate) fn unpickle<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
    ) -> PyResult<Bound<'py, PyAny>> {
        self.loads.bind(py).call1((PyBytes::new(py, data),))
    }

    /// An independent copy of `obj`: the object itself when it cannot change (numbers,
    /// strings, `None`), else a pickle round trip (C code, faster than `copy.deepcopy` on
    /// plain data), else `copy.deepcopy` for what pickle refuses.
    pub(crate) fn copy<'py>(&self, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = obj.py();
        if obj.is_none()
            || obj.is_exact_instance_of::<PyInt>()
            || obj.is_exact_instance_of::<PyFloat>()
            || obj.is_exact_instance_of::<PyString>()
            || obj.is_exact_instance_of::<PyBool>()
        {
            return Ok(obj.clone());
        }
        match self.pickle(obj) {
            Ok(b) => self.unpickle(py, b.as_bytes()),
            Err(_) => self.deepcopy.bind(py).call1((obj,)),
        }
    }
}

/// The process's codec (set when the model is built).
pub(crate) static CODEC: std::sync::OnceLock<Codec> = std::sync::OnceLock::new();

pub(crate) fn codec(py: Python<'_>) -> &'static Codec {
    CODEC.get_or_init(|| Codec::new(py).expect("the standard modules pickle and copy import"))
}

/// An LP's state: any Python object. A clone (Time Warp's saved copy) is an independent copy
/// ([`Codec::copy`]); two states are equal when Python's `==` says so (`--check-reverse`).
pub struct PyState(pub(crate) Py<PyAny>);

impl Clone for PyState {
    fn clone(&self) -> Self {
        crate::gil::attach(|py| {
            let copied = codec(py).copy(self.0.bind(py)).unwrap_or_else(|e| {
                panic!("cannot copy an LP state: {}", crate::error_line(py, &e))
            });
            PyState(copied.unbind())
        })
    }
}

impl PartialEq for PyState {
    fn eq(&self, other: &Self) -> bool {
        crate::gil::attach(|py| self.0.bind(py).eq(other.0.bind(py)).unwrap_or(false))
    }
}

impl std::fmt::Debug for PyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::gil::attach(|py| write!(f, "{}", self.0.bind(py)))
    }
}

/// An event's payload: the Python object itself (moved, never copied) when the event stays in
/// its process, or, for an event a worker process of a multi-process run sends to an LP of
/// another process, the object's pickled bytes in this process's shared heap, which the other
/// process reads without a copy (the `BPtr`).
pub struct PyEvent {
    obj: Option<Py<PyAny>>,
    bytes: Option<BPtr<Bytes>>,
}

// Safety: `obj` (a pointer into this process's Python heap) is read only in the process that
// made it. In a worker process of a multi-process run, `EventContext::send` pickles (`obj:
// None`) every event a handler sends to an LP that `Ctx::same_process` says is in another
// process; an event `init` sends is not pickled, and none leaves the process (every process
// initializes every LP and keeps only the initial events of its own LPs, dropping the others);
// and an event never moves to a process other than its destination's (no load balancing
// across processes: refused before such a run starts). An event with `obj` may still pass
// through shared memory (the rings between two threads of one process) but is read only in
// this process. What crosses processes is `bytes`, a `BPtr`, which is `ShmSafe`.
unsafe impl ShmSafe for PyEvent {
    unsafe fn fixup_copy(&mut self) {
        // Safety: forwarded under this function's own contract (a byte copy of a live value).
        unsafe { self.bytes.fixup_copy() }
        // The byte copy shares the original's reference to the object, which the original
        // releases when it is dropped: the copy takes a reference of its own, written over the
        // byte copy without releasing it.
        if let Some(o) = self.obj.as_ref() {
            let own = crate::gil::attach(|py| o.clone_ref(py));
            // Safety: `self.obj` is a byte copy that holds no count of its own; it is
            // overwritten, never dropped.
            unsafe { std::ptr::write(&mut self.obj, Some(own)) };
        }
    }
}

impl PyEvent {
    /// An event that stays in this process.
    pub(crate) fn local(obj: Py<PyAny>) -> PyEvent {
        PyEvent {
            obj: Some(obj),
            bytes: None,
        }
    }

    /// An event pickled into shared memory.
    pub(crate) fn pickled(bytes: BPtr<Bytes>) -> PyEvent {
        PyEvent {
            obj: None,
            bytes: Some(bytes),
        }
    }

    /// The pickled bytes of an event pickled into shared memory.
    pub(crate) fn pickled_bytes(&self) -> Option<&[u8]> {
        self.bytes.as_ref().map(|b| b.as_slice())
    }

    /// The Python object.
    pub(crate) fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match (&self.obj, &self.bytes) {
            (Some(o), _) => Ok(o.bind(py).clone()),
            (None, Some(b)) => codec(py).unpickle(py, b.as_slice()),
            (None, None) => Ok(py.None().into_bound(py)),
        }
    }
}

impl std::fmt::Debug for PyEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.bytes {
            Some(b) => write!(f, "PyEvent({} pickled bytes)", b.len()),
            None => f.write_str("PyEvent(object)"),
        }
    }
}
