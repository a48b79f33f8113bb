//! One part of a checkpoint: the LPs a worker (or a worker process) owned at the cut and the
//! pending events addressed to them, in one file written by that part alone.
//!
//! Layout (little endian): the magic `CHRNPART`, the format version (u32), the part's number
//! (u32), its counter sums (u32 count, i64 each), then tagged records — `1` an LP (id, random
//! stream, send counter, digest hash and count, the state's length and bytes), `2` a pending
//! event (time bits, send counter, sender, destination, the payload's length and bytes), `3` the
//! global events (length and bincode) — and `0`, the LP and event counts (u64 each) and a CRC-32
//! of every byte before it. A file whose CRC does not match is never read further.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::codec::Codec;
use super::FORMAT;
use crate::event::Event;
use crate::executor::global::SavedGlobals;
use crate::executor::LpSlot;
use crate::fingerprint::LpDigest;
use crate::model::{LpId, LpMeta, Model};

const MAGIC: &[u8; 8] = b"CHRNPART";
const TAG_END: u8 = 0;
const TAG_LP: u8 = 1;
const TAG_EVENT: u8 = 2;
const TAG_GLOBALS: u8 = 3;

/// The file name of part `k`.
pub(crate) fn file_name(k: usize) -> String {
    format!("part-{k}.bin")
}

/// Writes one part file. Errors are kept, not returned: the first one stops the writing and is
/// reported by [`finish`](Self::finish), so that an executor's end needs no error path of its
/// own for a checkpoint that cannot be written.
pub(crate) struct PartWriter<'a, M: Model> {
    codec: &'a Codec<M>,
    path: PathBuf,
    out: Option<BufWriter<File>>,
    crc: crc32fast::Hasher,
    scratch: Vec<u8>,
    lps: u64,
    events: u64,
    error: Option<String>,
}

impl<'a, M: Model> PartWriter<'a, M> {
    /// Starts part `k` in the staging directory `dir`, with the counter sums it adds.
    pub(crate) fn create(codec: &'a Codec<M>, dir: &Path, k: usize, counters: &[i64]) -> Self {
        let path = dir.join(file_name(k));
        let (out, error) = match File::create(&path) {
            Ok(f) => (Some(BufWriter::with_capacity(1 << 20, f)), None),
            Err(e) => (None, Some(format!("{}: {e}", path.display()))),
        };
        let mut w = PartWriter {
            codec,
            path,
            out,
            crc: crc32fast::Hasher::new(),
            scratch: Vec::new(),
            lps: 0,
            events: 0,
            error,
        };
        w.put(MAGIC);
        w.put(&FORMAT.to_le_bytes());
        w.put(&(k as u32).to_le_bytes());
        w.put(&(counters.len() as u32).to_le_bytes());
        for c in counters {
            w.put(&c.to_le_bytes());
        }
        w
    }

    fn put(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Some(out) = &mut self.out {
            if let Err(e) = out.write_all(bytes) {
                self.error = Some(format!("{}: {e}", self.path.display()));
                return;
            }
        }
        self.crc.update(bytes);
    }

    /// Adds an LP.
    pub(crate) fn lp(&mut self, lp: LpId, slot: &LpSlot<M::State>) {
        self.lp_parts(lp, &slot.state, &slot.meta, &slot.digest);
    }

    /// Adds an LP given by its parts.
    pub(crate) fn lp_parts(
        &mut self,
        lp: LpId,
        state: &M::State,
        meta: &LpMeta,
        digest: &LpDigest,
    ) {
        if self.error.is_some() {
            return;
        }
        self.scratch.clear();
        if let Err(e) = (self.codec.state_to)(state, &mut self.scratch) {
            self.error = Some(format!("the state of LP {lp} does not serialize: {e}"));
            return;
        }
        let mut head = [0u8; 1 + 4 + 8 * 4 + 4];
        head[0] = TAG_LP;
        head[1..5].copy_from_slice(&lp.to_le_bytes());
        head[5..13].copy_from_slice(&meta.rng.raw().to_le_bytes());
        head[13..21].copy_from_slice(&meta.seq.to_le_bytes());
        let (hash, count) = digest.raw();
        head[21..29].copy_from_slice(&hash.to_le_bytes());
        head[29..37].copy_from_slice(&count.to_le_bytes());
        head[37..41].copy_from_slice(&(self.scratch.len() as u32).to_le_bytes());
        self.put_record(&head);
        self.lps += 1;
    }

    /// Adds a pending event.
    pub(crate) fn event(&mut self, ev: &Event<M::Event>) {
        if self.error.is_some() {
            return;
        }
        self.scratch.clear();
        if let Err(e) = (self.codec.event_to)(&ev.payload, &mut self.scratch) {
            let (dst, time) = (ev.dst, ev.time);
            self.error = Some(format!(
                "an event to LP {dst} at {time} does not serialize: {e}"
            ));
            return;
        }
        let mut head = [0u8; 1 + 8 + 8 + 4 + 4 + 4];
        head[0] = TAG_EVENT;
        head[1..9].copy_from_slice(&ev.time.to_bits().to_le_bytes());
        head[9..17].copy_from_slice(&ev.seq.to_le_bytes());
        head[17..21].copy_from_slice(&ev.src.to_le_bytes());
        head[21..25].copy_from_slice(&ev.dst.to_le_bytes());
        head[25..29].copy_from_slice(&(self.scratch.len() as u32).to_le_bytes());
        self.put_record(&head);
        self.events += 1;
    }

    /// Writes a record: `head`, then the body serialized into `scratch`.
    fn put_record(&mut self, head: &[u8]) {
        self.put(head);
        let body = std::mem::take(&mut self.scratch);
        self.put(&body);
        self.scratch = body;
    }

    /// Adds the run's global events (one part of a run carries them).
    pub(crate) fn globals(&mut self, g: &SavedGlobals) {
        let bytes = match bincode::serialize(g) {
            Ok(b) => b,
            Err(e) => {
                self.error = Some(format!("the global events do not serialize: {e}"));
                return;
            }
        };
        self.put(&[TAG_GLOBALS]);
        self.put(&(bytes.len() as u64).to_le_bytes());
        self.put(&bytes);
    }

    /// Ends the file (counts and CRC) and syncs it to disk; the first error on the way, if any.
    pub(crate) fn finish(mut self) -> Result<(), String> {
        self.put(&[TAG_END]);
        self.put(&self.lps.to_le_bytes());
        self.put(&self.events.to_le_bytes());
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let crc = self.crc.clone().finalize();
        let out = self.out.take().expect("no error: the file is open");
        let done = (|| {
            let mut out = out;
            out.write_all(&crc.to_le_bytes())?;
            let f = out.into_inner().map_err(|e| e.into_error())?;
            if super::dir::durable(&self.path) {
                f.sync_all()?;
            }
            Ok::<(), std::io::Error>(())
        })();
        done.map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// What a part file's end says: its size, CRC and counts.
pub(crate) struct Trailer {
    pub bytes: u64,
    pub crc32: u32,
    pub lps: u64,
    pub events: u64,
}

/// Reads the trailer of part file `path` (its last 21 bytes: end tag, counts, CRC).
pub(crate) fn trailer(path: &Path) -> Result<Trailer, String> {
    use std::io::{Read, Seek, SeekFrom};
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f = File::open(path).map_err(err)?;
    let bytes = f.metadata().map_err(err)?.len();
    let mut t = [0u8; 21];
    if bytes < 41 {
        return Err(format!("{} is truncated", path.display()));
    }
    f.seek(SeekFrom::End(-21)).map_err(err)?;
    f.read_exact(&mut t).map_err(err)?;
    if t[0] != TAG_END {
        return Err(format!("{} is malformed", path.display()));
    }
    Ok(Trailer {
        bytes,
        crc32: u32_at(&t, 17),
        lps: u64_at(&t, 1),
        events: u64_at(&t, 9),
    })
}

/// What one part file holds, checked and indexed (the bytes are decoded when the LPs are
/// built).
pub(crate) struct ReadPart {
    pub bytes: Vec<u8>,
    pub counters: Vec<i64>,
    pub globals: Option<SavedGlobals>,
    /// Offsets of LP records (after the tag) and event records (after the tag), with the
    /// event's destination.
    pub lps: Vec<(LpId, usize)>,
    pub events: Vec<(LpId, usize)>,
}

/// Reads part file `path`: its magic, format, CRC and records. `Err`: one line saying what is
/// wrong with it.
pub(crate) fn read(path: &Path) -> Result<ReadPart, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |what: &str| format!("{} {what}", path.display());
    if bytes.len() < 8 + 4 + 4 + 4 + 1 + 16 + 4 || &bytes[..8] != MAGIC {
        return Err(bad("is not a chronon checkpoint part (or is truncated)"));
    }
    let n = bytes.len();
    let stored = u32::from_le_bytes(bytes[n - 4..].try_into().expect("4 bytes"));
    if crc32fast::hash(&bytes[..n - 4]) != stored {
        return Err(bad(
            "fails its checksum: the file is truncated or corrupted",
        ));
    }
    let format = u32_at(&bytes, 8);
    if format != FORMAT {
        return Err(bad(&format!(
            "has checkpoint format {format}; this chronon reads format {FORMAT}"
        )));
    }
    let ncounters = u32_at(&bytes, 16) as usize;
    let mut at = 20;
    let mut counters = Vec::with_capacity(ncounters);
    for _ in 0..ncounters {
        counters.push(u64_at(&bytes, at) as i64);
        at += 8;
    }
    let mut part = ReadPart {
        bytes: Vec::new(),
        counters,
        globals: None,
        lps: Vec::new(),
        events: Vec::new(),
    };
    let body_end = n - 4 - 16;
    // The checksum holds, so the records are as written; the bounds checks below guard only
    // against a writer bug.
    let malformed = || bad("is malformed");
    loop {
        if at >= body_end {
            return Err(malformed());
        }
        let tag = bytes[at];
        at += 1;
        match tag {
            TAG_END => break,
            TAG_LP => {
                if at + 40 > body_end {
                    return Err(malformed());
                }
                part.lps.push((u32_at(&bytes, at), at));
                at += 40 + u32_at(&bytes, at + 36) as usize;
            }
            TAG_EVENT => {
                if at + 28 > body_end {
                    return Err(malformed());
                }
                part.events.push((u32_at(&bytes, at + 20), at));
                at += 28 + u32_at(&bytes, at + 24) as usize;
            }
            TAG_GLOBALS => {
                let len = u64_at(&bytes, at) as usize;
                let g = bytes.get(at + 8..at + 8 + len).ok_or_else(malformed)?;
                part.globals = Some(bincode::deserialize(g).map_err(|_| malformed())?);
                at += 8 + len;
            }
            _ => return Err(malformed()),
        }
    }
    if at != body_end
        || u64_at(&bytes, at) != part.lps.len() as u64
        || u64_at(&bytes, at + 8) != part.events.len() as u64
    {
        return Err(malformed());
    }
    part.bytes = bytes;
    Ok(part)
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// An LP record at `at` (after its tag): (rng, seq, digest hash, digest count, state bytes).
pub(crate) fn lp_record(b: &[u8], at: usize) -> (u64, u64, u64, u64, &[u8]) {
    let len = u32_at(b, at + 36) as usize;
    (
        u64_at(b, at + 4),
        u64_at(b, at + 12),
        u64_at(b, at + 20),
        u64_at(b, at + 28),
        &b[at + 40..at + 40 + len],
    )
}

/// An event record at `at` (after its tag): (time, seq, src, dst, payload bytes).
pub(crate) fn event_record(b: &[u8], at: usize) -> (f64, u64, LpId, LpId, &[u8]) {
    let len = u32_at(b, at + 24) as usize;
    (
        f64::from_bits(u64_at(b, at)),
        u64_at(b, at + 8),
        u32_at(b, at + 16),
        u32_at(b, at + 20),
        &b[at + 28..at + 28 + len],
    )
}
