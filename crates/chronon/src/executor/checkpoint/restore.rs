//! Loading a checkpoint and building a run's LPs from it instead of `Model::init`.

use std::path::Path;

use super::codec::Codec;
use super::part::{self, ReadPart};
use super::{Manifest, RestoreFrom};
use crate::error::{Setting, SimError};
use crate::event::Event;
use crate::executor::global::SavedGlobals;
use crate::executor::LpSlot;
use crate::fingerprint::LpDigest;
use crate::model::{LpId, LpMeta, Model};
use crate::rng::{mix64, LpRng};

/// A checkpoint read and checked, ready to build LPs from.
pub(crate) struct Loaded {
    pub manifest: Manifest,
    pub path: std::path::PathBuf,
    pub reseed: Option<u64>,
    parts: Vec<ReadPart>,
    /// Per LP: (part, offset of its record).
    lps: Vec<(u32, usize)>,
    /// Every pending event: (destination, part, offset), in destination order.
    events: Vec<(LpId, u32, usize)>,
    pub counters: Vec<i64>,
    pub globals: Option<SavedGlobals>,
    /// A cut held in memory (`memory.rs`) rather than read from parts: its LPs and events,
    /// taken by the one run that restores it.
    held: std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Loaded({})", self.path.display())
    }
}

impl Loaded {
    /// Reads the checkpoint `from` for a run of `lps` LPs of the model called `model`.
    pub(crate) fn read(from: &RestoreFrom, model: &str, lps: LpId) -> Result<Self, SimError> {
        let bad = |p: String| SimError::config(Setting::Restore, p);
        let path = &from.path;
        let manifest = super::read_manifest(path)?;
        if manifest.model != model {
            return Err(bad(format!(
                "{} is a checkpoint of the model {}, not {model}",
                path.display(),
                manifest.model
            )));
        }
        if manifest.lps != lps {
            return Err(bad(format!(
                "{} holds {} LPs; this run has {lps}",
                path.display(),
                manifest.lps
            )));
        }
        let mut parts = Vec::with_capacity(manifest.parts.len());
        for entry in &manifest.parts {
            let p = part::read(&path.join(&entry.file)).map_err(bad)?;
            let n = p.bytes.len();
            if n as u64 != entry.bytes || part::u32_at(&p.bytes, n - 4) != entry.crc32 {
                return Err(bad(format!(
                    "{} is not the part its manifest names (size or checksum differ)",
                    path.join(&entry.file).display()
                )));
            }
            parts.push(p);
        }
        index(manifest, path, from.reseed, parts)
    }

    /// The cut.
    pub(crate) fn cut(&self) -> f64 {
        self.manifest.cut
    }

    /// A cut held in memory (`memory.rs`).
    pub(super) fn held(
        manifest: Manifest,
        counters: Vec<i64>,
        globals: Option<SavedGlobals>,
        values: Box<dyn std::any::Any + Send>,
    ) -> Loaded {
        Loaded {
            path: format!("(the cut at {} held in memory)", manifest.cut).into(),
            manifest,
            reseed: None,
            parts: Vec::new(),
            lps: Vec::new(),
            events: Vec::new(),
            counters,
            globals,
            held: std::sync::Mutex::new(Some(values)),
        }
    }
}

fn index(
    manifest: Manifest,
    path: &Path,
    reseed: Option<u64>,
    mut parts: Vec<ReadPart>,
) -> Result<Loaded, SimError> {
    let bad = |p: String| SimError::config(Setting::Restore, p);
    const NONE: (u32, usize) = (u32::MAX, 0);
    let mut lps = vec![NONE; manifest.lps as usize];
    let mut events = Vec::new();
    let mut counters: Vec<i64> = Vec::new();
    let mut globals = None;
    for (k, p) in parts.iter_mut().enumerate() {
        for &(lp, at) in &p.lps {
            match lps.get_mut(lp as usize) {
                Some(slot) if *slot == NONE => *slot = (k as u32, at),
                _ => {
                    return Err(bad(format!(
                        "{}: LP {lp} is held twice or out of range",
                        path.display()
                    )))
                }
            }
        }
        events.extend(p.events.iter().map(|&(dst, at)| (dst, k as u32, at)));
        if counters.len() < p.counters.len() {
            counters.resize(p.counters.len(), 0);
        }
        for (c, x) in counters.iter_mut().zip(&p.counters) {
            *c += x;
        }
        if let Some(g) = p.globals.take() {
            globals = Some(g);
        }
    }
    if let Some(lp) = lps.iter().position(|s| *s == NONE) {
        return Err(bad(format!("{}: no part holds LP {lp}", path.display())));
    }
    if let Some(&(dst, ..)) = events.iter().find(|e| e.0 >= manifest.lps) {
        return Err(bad(format!(
            "{}: an event is addressed to LP {dst}, which does not exist",
            path.display()
        )));
    }
    // Stable: each destination's events stay in the order their part wrote them (the pending
    // sets order them by key in any case).
    events.sort_by_key(|e| e.0);
    Ok(Loaded {
        manifest,
        path: path.to_path_buf(),
        reseed,
        parts,
        lps,
        events,
        counters,
        globals,
        held: std::sync::Mutex::new(None),
    })
}

/// Builds every LP from the checkpoint `from`, in LP order: its saved state and bookkeeping to
/// `keep`, its pending events to `emit` first; adds the saved counter sums to `counters`.
pub(crate) fn restore_lps<M: Model>(
    codec: &Codec<M>,
    from: &Loaded,
    counters: &mut [i64],
    mut emit: impl FnMut(Event<M::Event>),
    mut keep: impl FnMut(LpId, LpSlot<M::State>),
) -> Result<(), SimError> {
    let bad = |p: String| SimError::config(Setting::Restore, p);
    let shown = from.path.display();
    if from.counters.len() != counters.len() {
        return Err(bad(format!(
            "{shown} holds {} model counters; this model has {} (a checkpoint of another version of the model?)",
            from.counters.len(),
            counters.len()
        )));
    }
    for (c, x) in counters.iter_mut().zip(&from.counters) {
        *c += x;
    }
    let held = from.held.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(values) = held {
        return super::memory::restore::<M>(values, emit, keep);
    }
    let cut_mix = mix64(from.cut().to_bits());
    let mut next = 0;
    for (lp, &(k, at)) in from.lps.iter().enumerate() {
        let lp = lp as LpId;
        while let Some(&(dst, k, at)) = from.events.get(next) {
            if dst != lp {
                break;
            }
            next += 1;
            let (time, seq, src, dst, bytes) =
                part::event_record(&from.parts[k as usize].bytes, at);
            let payload = (codec.event_from)(bytes).map_err(|e| {
                bad(format!(
                    "{shown}: an event to LP {dst} does not deserialize ({e}): a checkpoint of another version of the model?"
                ))
            })?;
            emit(Event {
                time,
                seq,
                src,
                dst,
                tag: 0,
                payload,
            });
        }
        let (rng, seq, hash, count, bytes) = part::lp_record(&from.parts[k as usize].bytes, at);
        let state = (codec.state_from)(bytes).map_err(|e| {
            bad(format!(
                "{shown}: the state of LP {lp} does not deserialize ({e}): a checkpoint of another version of the model?"
            ))
        })?;
        let rng = match from.reseed {
            Some(s) => LpRng::for_lp(s ^ cut_mix, lp),
            None => LpRng::from_raw(rng),
        };
        keep(
            lp,
            LpSlot {
                state,
                meta: LpMeta { rng, seq },
                digest: LpDigest::from_raw(hash, count),
                cost: Default::default(),
            },
        );
    }
    Ok(())
}
