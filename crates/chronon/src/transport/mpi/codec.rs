//! The records of a batch between ranks. A batch (one MPI message) is a sequence of records:
//!
//! - `EVENTS`: kind byte 0, destination worker (u32), count (u32), then per event its key and
//!   header (time bits, seq, src, dst, tag; little endian) and its payload in bincode
//!   (self-delimiting);
//! - `CHAN`: kind byte 1, from worker (u32), to worker (u32), time bits (u64): a null message
//!   (the channel clock `from → to` raised to the time).
//!
//! Records of one sender thread keep their order inside the batch, and batches of one rank
//! keep theirs (MPI's non-overtaking rule): a channel raise is always decoded after every
//! event sent before it on that channel.
//!
//! The field codec under these records ([`put_key`], [`put_payload`], [`Reader`]) is the one
//! every record between ranks is written with, Time Warp's too (`tw_codec.rs` lays out its own
//! records with it): integers little endian, times as their bits, payloads in bincode
//! (self-delimiting).

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::event::{Event, EventKey, Keyed};

const EVENTS: u8 = 0;
const CHAN: u8 = 1;

/// One decoded record.
#[derive(Debug)]
pub(crate) enum Record<E> {
    /// Events for worker `dst`.
    Events { dst: usize, events: Vec<Event<E>> },
    /// A null message: nothing below `t` will come from worker `from` to worker `to`.
    Chan { from: usize, to: usize, t: f64 },
}

/// Appends an event key: time bits, seq, src.
pub(crate) fn put_key(out: &mut Vec<u8>, k: EventKey) {
    out.extend_from_slice(&k.time.to_bits().to_le_bytes());
    out.extend_from_slice(&k.seq.to_le_bytes());
    out.extend_from_slice(&k.src.to_le_bytes());
}

/// Appends a payload in bincode; on an error `out` is left as it was.
pub(crate) fn put_payload<P: Serialize>(out: &mut Vec<u8>, p: &P) -> Result<(), bincode::Error> {
    let at = out.len();
    bincode::serialize_into(&mut *out, p).inspect_err(|_| out.truncate(at))
}

/// Reads the fields of a batch from another rank, front to back; every read of a batch that
/// ends early is an error naming `what` (the kind of batch).
pub(crate) struct Reader<'b> {
    bytes: &'b [u8],
    what: &'static str,
}

impl<'b> Reader<'b> {
    pub(crate) fn new(bytes: &'b [u8], what: &'static str) -> Self {
        Reader { bytes, what }
    }

    /// Whether every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let (head, rest) = self
            .bytes
            .split_at_checked(N)
            .ok_or_else(|| format!("{} from another rank ends early", self.what))?;
        self.bytes = rest;
        Ok(head.try_into().expect("N bytes"))
    }

    pub(crate) fn u8(&mut self) -> Result<u8, String> {
        self.take::<1>().map(|[b]| b)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, String> {
        self.take::<4>().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, String> {
        self.take::<8>().map(u64::from_le_bytes)
    }

    pub(crate) fn f64(&mut self) -> Result<f64, String> {
        self.u64().map(f64::from_bits)
    }

    /// An event key written by [`put_key`].
    pub(crate) fn key(&mut self) -> Result<EventKey, String> {
        Ok(EventKey {
            time: self.f64()?,
            seq: self.u64()?,
            src: self.u32()?,
        })
    }

    /// A payload written by [`put_payload`].
    pub(crate) fn payload<P: DeserializeOwned>(&mut self) -> Result<P, String> {
        // The payload's shared-heap items go to this thread's receive heap
        // (`shm::local::Receiving`), not to the heap its handlers allocate in.
        #[cfg(target_os = "linux")]
        let _into = crate::shm::local::Receiving::enter();
        bincode::deserialize_from(&mut self.bytes)
            .map_err(|e| format!("an event payload from another rank does not decode: {e}"))
    }
}

/// Appends an `EVENTS` record.
pub(crate) fn put_events<E: Serialize>(out: &mut Vec<u8>, dst: usize, events: &[Event<E>]) {
    out.push(EVENTS);
    out.extend_from_slice(&(dst as u32).to_le_bytes());
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    for e in events {
        put_key(out, e.key());
        out.extend_from_slice(&e.dst.to_le_bytes());
        out.extend_from_slice(&e.tag.to_le_bytes());
        // Writing into a Vec cannot fail; a payload serde refuses is a model bug.
        put_payload(out, &e.payload)
            .unwrap_or_else(|err| panic!("an event payload does not serialize: {err}"));
    }
}

/// Appends a `CHAN` record.
pub(crate) fn put_chan(out: &mut Vec<u8>, from: usize, to: usize, t: f64) {
    out.push(CHAN);
    out.extend_from_slice(&(from as u32).to_le_bytes());
    out.extend_from_slice(&(to as u32).to_le_bytes());
    out.extend_from_slice(&t.to_bits().to_le_bytes());
}

/// Decodes every record of `batch`, in order, into `f`.
pub(crate) fn decode<E: DeserializeOwned>(
    batch: &[u8],
    mut f: impl FnMut(Record<E>),
) -> Result<(), String> {
    let mut b = Reader::new(batch, "a batch");
    while !b.is_empty() {
        match b.u8()? {
            EVENTS => {
                let dst = b.u32()? as usize;
                let n = b.u32()? as usize;
                let mut events = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    let k = b.key()?;
                    let edst = b.u32()?;
                    let tag = b.u32()?;
                    events.push(Event {
                        time: k.time,
                        seq: k.seq,
                        src: k.src,
                        dst: edst,
                        tag,
                        payload: b.payload()?,
                    });
                }
                f(Record::Events { dst, events });
            }
            CHAN => {
                let from = b.u32()? as usize;
                let to = b.u32()? as usize;
                let t = b.f64()?;
                f(Record::Chan { from, to, t });
            }
            k => {
                return Err(format!(
                    "unknown record kind {k} in a batch from another rank"
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_in_order() {
        let ev = |t: f64, p: Vec<u8>| Event {
            time: t,
            seq: 3,
            src: 1,
            dst: 2,
            tag: 0,
            payload: p,
        };
        let mut out = Vec::new();
        put_events(&mut out, 5, &[ev(1.5, vec![1, 2]), ev(2.0, vec![])]);
        put_chan(&mut out, 1, 5, 7.25);
        let mut got = Vec::new();
        decode::<Vec<u8>>(&out, |r| got.push(r)).unwrap();
        match &got[..] {
            [Record::Events { dst: 5, events }, Record::Chan { from: 1, to: 5, t }] => {
                assert_eq!(events.len(), 2);
                assert_eq!(events[0].payload, vec![1, 2]);
                assert_eq!(events[1].time, 2.0);
                assert_eq!(*t, 7.25);
            }
            other => panic!("{other:?}"),
        }
        assert!(decode::<Vec<u8>>(&out[..out.len() - 1], |_| {}).is_err());
    }
}
