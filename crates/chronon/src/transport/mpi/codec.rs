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

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::event::Event;

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

/// Appends an `EVENTS` record.
pub(crate) fn put_events<E: Serialize>(out: &mut Vec<u8>, dst: usize, events: &[Event<E>]) {
    out.push(EVENTS);
    out.extend_from_slice(&(dst as u32).to_le_bytes());
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    for e in events {
        out.extend_from_slice(&e.time.to_bits().to_le_bytes());
        out.extend_from_slice(&e.seq.to_le_bytes());
        out.extend_from_slice(&e.src.to_le_bytes());
        out.extend_from_slice(&e.dst.to_le_bytes());
        out.extend_from_slice(&e.tag.to_le_bytes());
        // Writing into a Vec cannot fail; a payload serde refuses is a model bug.
        bincode::serialize_into(&mut *out, &e.payload)
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

fn take<const N: usize>(b: &mut &[u8]) -> Result<[u8; N], String> {
    let (head, rest) = b
        .split_at_checked(N)
        .ok_or_else(|| "a batch from another rank ends early".to_string())?;
    *b = rest;
    Ok(head.try_into().expect("N bytes"))
}

/// Decodes every record of `batch`, in order, into `f`.
pub(crate) fn decode<E: DeserializeOwned>(
    mut batch: &[u8],
    mut f: impl FnMut(Record<E>),
) -> Result<(), String> {
    let b = &mut batch;
    while !b.is_empty() {
        let [kind] = take::<1>(b)?;
        match kind {
            EVENTS => {
                let dst = u32::from_le_bytes(take(b)?) as usize;
                let n = u32::from_le_bytes(take(b)?) as usize;
                let mut events = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    let time = f64::from_bits(u64::from_le_bytes(take(b)?));
                    let seq = u64::from_le_bytes(take(b)?);
                    let src = u32::from_le_bytes(take(b)?);
                    let edst = u32::from_le_bytes(take(b)?);
                    let tag = u32::from_le_bytes(take(b)?);
                    let payload: E = bincode::deserialize_from(&mut *b)
                        .map_err(|e| format!("an event payload from another rank: {e}"))?;
                    events.push(Event {
                        time,
                        seq,
                        src,
                        dst: edst,
                        tag,
                        payload,
                    });
                }
                f(Record::Events { dst, events });
            }
            CHAN => {
                let from = u32::from_le_bytes(take(b)?) as usize;
                let to = u32::from_le_bytes(take(b)?) as usize;
                let t = f64::from_bits(u64::from_le_bytes(take(b)?));
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
