//! Time Warp's records between ranks. The driver posts one record per destination rank per
//! pump: `epoch` (u64: the colour, README "GVT across ranks"), `count` (u32), then `count`
//! messages, each a kind byte and little-endian fields:
//!
//! - event (0): the entry's key (time bits, seq, src: the stack head for a stacked event), dst,
//!   id, stack length (u32) and its keys, then the payload in bincode (self-delimiting);
//! - anti-message (1): dst, key, id.
//!
//! One MPI message (a batch of the rank layer) holds one or more records, from this rank's
//! driver only, in the order it posted them. The fields are written and read with the rank
//! transport's one field codec (`transport/mpi/codec.rs`).

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::codec::{put_key, put_payload, Reader};
use crate::event::EventKey;
use crate::tw_msg::{Anti, Msg, TwEvent};

const EVENT: u8 = 0;
const ANTI: u8 = 1;

/// Starts a record of colour `epoch`; returns where its count goes (see [`end_record`]).
pub(crate) fn begin_record(out: &mut Vec<u8>, epoch: u64) -> usize {
    out.extend_from_slice(&epoch.to_le_bytes());
    let at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    at
}

/// Writes the record's message count at `at`.
pub(crate) fn end_record(out: &mut [u8], at: usize, count: u32) {
    out[at..at + 4].copy_from_slice(&count.to_le_bytes());
}

/// Appends one message; a payload that serde refuses is an error (and `out` is left as it
/// was).
pub(crate) fn put<P: Serialize>(out: &mut Vec<u8>, m: &Msg<P>) -> Result<(), String> {
    let at = out.len();
    match m {
        Msg::Event(e, stack) => {
            out.push(EVENT);
            put_key(out, e.head());
            out.extend_from_slice(&e.dst.to_le_bytes());
            out.extend_from_slice(&e.id.to_le_bytes());
            let stack: &[EventKey] = stack.as_deref().map_or(&[], |v| v);
            out.extend_from_slice(&(stack.len() as u32).to_le_bytes());
            for &k in stack {
                put_key(out, k);
            }
            if let Err(err) = put_payload(out, &e.payload) {
                out.truncate(at);
                return Err(format!(
                    "an event payload for LP {} at time {} does not serialize: {err}",
                    e.dst, e.time
                ));
            }
        }
        Msg::Anti(a) => {
            out.push(ANTI);
            out.extend_from_slice(&a.dst.to_le_bytes());
            put_key(out, a.key);
            out.extend_from_slice(&a.id.to_le_bytes());
        }
    }
    Ok(())
}

/// Decodes every record of a batch: `on_record(epoch, messages)` per record, in order.
pub(crate) fn decode<P: DeserializeOwned>(
    b: &[u8],
    mut on_record: impl FnMut(u64, &mut dyn Iterator<Item = Result<Msg<P>, String>>),
) -> Result<(), String> {
    let mut b = Reader::new(b, "a Time Warp batch");
    while !b.is_empty() {
        let epoch = b.u64()?;
        let count = b.u32()?;
        let mut failed = None;
        {
            let mut left = count;
            let mut it = std::iter::from_fn(|| {
                if left == 0 || failed.is_some() {
                    return None;
                }
                left -= 1;
                let m = one(&mut b);
                if let Err(e) = &m {
                    failed = Some(e.clone());
                }
                Some(m)
            });
            on_record(epoch, &mut it);
            // Whatever the handler left unread is read (and dropped) so the next record lines
            // up.
            for m in it.by_ref() {
                m?;
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok(())
}

fn one<P: DeserializeOwned>(b: &mut Reader<'_>) -> Result<Msg<P>, String> {
    match b.u8()? {
        EVENT => {
            let k = b.key()?;
            let dst = b.u32()?;
            let id = b.u64()?;
            let n = b.u32()? as usize;
            let stack = if n == 0 {
                None
            } else {
                let mut v = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    v.push(b.key()?);
                }
                Some(Box::new(v))
            };
            let ev = TwEvent {
                time: k.time,
                seq: k.seq,
                id,
                src: k.src,
                dst,
                payload: b.payload()?,
            };
            Ok(Msg::Event(ev, stack))
        }
        ANTI => {
            let dst = b.u32()?;
            let key = b.key()?;
            let id = b.u64()?;
            Ok(Msg::Anti(Anti { dst, key, id }))
        }
        k => Err(format!(
            "a Time Warp batch from another rank has an unknown record kind {k}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tw_msg::STACKED;

    #[test]
    fn messages_round_trip_with_stacks_and_antis() {
        let k = |time, seq, src| EventKey { time, seq, src };
        let ev = |key: EventKey, dst, id, payload| TwEvent {
            time: key.time,
            seq: key.seq,
            id,
            src: key.src,
            dst,
            payload,
        };
        let msgs = [
            Msg::Event(
                ev(k(2.5, 1, 1), 9, 42 | STACKED, (1u64, String::from("x"))),
                Some(Box::new(vec![k(2.5, 1, 1), k(2.5, 7, 3)])),
            ),
            Msg::Anti(Anti {
                dst: 4,
                key: k(1.0, 2, 3),
                id: 43,
            }),
            Msg::Event(ev(k(3.0, 0, 0), 1, 44, (2u64, String::new())), None),
        ];
        let mut out = Vec::new();
        for (epoch, part) in [(3u64, &msgs[..2]), (4, &msgs[2..])] {
            let at = begin_record(&mut out, epoch);
            for m in part {
                put(&mut out, m).unwrap();
            }
            end_record(&mut out, at, part.len() as u32);
        }
        let mut got = Vec::new();
        decode::<(u64, String)>(&out, |epoch, it| {
            for m in it {
                got.push((epoch, m.unwrap()));
            }
        })
        .unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(format!("{:?}", got[0].1), format!("{:?}", msgs[0]));
        assert_eq!(format!("{:?}", got[1].1), format!("{:?}", msgs[1]));
        assert_eq!(format!("{:?}", got[2].1), format!("{:?}", msgs[2]));
        assert_eq!([got[0].0, got[1].0, got[2].0], [3, 3, 4]);
        assert!(decode::<(u64, String)>(&out[..out.len() - 1], |_, it| for _ in it {}).is_err());
    }
}
