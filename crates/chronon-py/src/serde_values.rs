//! [`PyState`] and [`PyEvent`] with serde, for checkpoints (and anything else that serializes
//! states and events): a value is written as its pickle (one byte block) and read back by
//! unpickling it. A Python exception on either side (an object pickle refuses, bytes that do
//! not unpickle) is a serde error naming it, never a panic.
//!
//! An event read back is what `init` would have sent in this process: the object itself in a
//! process that runs every LP of its run, its pickled bytes in this thread's shared heap in a
//! worker process of a multi-process run (the engine restores a checkpoint's events where it
//! would run `init`, on the same thread, so they land in the same heap as `init`'s would).

use pyo3::prelude::*;
use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::values::{codec, PyEvent, PyState};

/// Writes `obj`'s pickle as one byte block; an object pickle refuses is an error naming its type
/// and the exception (`what`: the value, for the message).
fn serialize_pickle<S: Serializer>(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    what: &str,
    s: S,
) -> Result<S::Ok, S::Error> {
    match codec(py).pickle(obj) {
        Ok(bytes) => s.serialize_bytes(bytes.as_bytes()),
        Err(e) => {
            let ty = obj
                .get_type()
                .qualname()
                .map_or_else(|_| "?".to_string(), |n| n.to_string());
            Err(S::Error::custom(format!(
                "{what} of type {ty} cannot be pickled: {}",
                crate::error_line(py, &e)
            )))
        }
    }
}

/// The object pickled in `data`, or what went wrong as one line.
fn unpickle_bytes(py: Python<'_>, data: &[u8], what: &str) -> Result<Py<PyAny>, String> {
    codec(py)
        .unpickle(py, data)
        .map(Bound::unbind)
        .map_err(|e| format!("{what} does not unpickle: {}", crate::error_line(py, &e)))
}

impl Serialize for PyState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::gil::attach(|py| serialize_pickle(py, self.0.bind(py), "an LP state", s))
    }
}

impl<'de> Deserialize<'de> for PyState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = d.deserialize_byte_buf(ByteBlock)?;
        crate::gil::attach(|py| unpickle_bytes(py, &bytes, "an LP state"))
            .map(PyState)
            .map_err(D::Error::custom)
    }
}

impl Serialize for PyEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Already pickled (a worker process's event): the bytes as they are.
        if let Some(b) = self.pickled_bytes() {
            return s.serialize_bytes(b);
        }
        crate::gil::attach(|py| match self.get(py) {
            Ok(obj) => serialize_pickle(py, &obj, "an event", s),
            Err(e) => Err(S::Error::custom(crate::error_line(py, &e))),
        })
    }
}

impl<'de> Deserialize<'de> for PyEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = d.deserialize_byte_buf(ByteBlock)?;
        if chronon::is_worker_process() {
            // As `ctx.send` makes them here: the pickle, in this thread's shared heap.
            return chronon::shm::with_thread_heap(|h| h.alloc_slice(&bytes))
                .and_then(|r| r)
                .map(PyEvent::pickled)
                .map_err(|e| {
                    D::Error::custom(format!("an event does not fit in the shared heap: {e}"))
                });
        }
        crate::gil::attach(|py| unpickle_bytes(py, &bytes, "an event"))
            .map(PyEvent::local)
            .map_err(D::Error::custom)
    }
}

/// Reads a byte block (or, from a format that writes bytes as a sequence, that sequence).
struct ByteBlock;

impl<'de> Visitor<'de> for ByteBlock {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a pickled Python object (bytes)")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element()? {
            v.push(b);
        }
        Ok(v)
    }
}
