//! Checkpoint and restart: a run saved at simulated time T continues later under any executor,
//! thread, process or rank count and commits the same history as the run never interrupted.
//!
//! **The cut.** A checkpoint at T is taken where every executor already agrees on the state:
//! the end of a run whose end time is T. Every event before T is committed and reflected in
//! the LP states; every later one is pending (in a pending set or in flight), with nothing
//! speculative left. A run with checkpoints is a chain of such runs (`chain.rs`): it runs to
//! the first cut, saves, continues from what it saved to the next cut, and so on to its end.
//!
//! **The files.** A checkpoint is a directory `DIR/t<T>`: `manifest.json` (the header: format,
//! chronon version, model, its configuration, seed, cut, LP count, who saved it, the parts with
//! their sizes and CRC-32s, and a checksum of the manifest itself) and one `part-K.bin` per part
//! of the run that saved it (`part.rs`): a worker thread, or a worker process. Each part writes
//! what it owns: its LPs (state, random stream, send counter, digest) and the pending events
//! addressed to them. The directory is built under a hidden name and renamed into place once
//! every file is on disk (`dir.rs`), so a half-written checkpoint is never taken for one.
//!
//! **Restoring** (`restore.rs`) replaces `Model::init`: every LP gets its saved state and
//! bookkeeping, its pending events go back into the run's pending sets, and the counters and
//! global events continue from the saved ones. The executor maps the LPs as it always does.

mod balance;
mod chain;
mod codec;
mod cuts;
mod dir;
mod globals;
mod link;
mod memory;
pub(crate) mod part;
mod report;
mod restore;
mod saver;
mod split;

pub use balance::{BalancePeriod, AUTO_FIRST, AUTO_MIN};
pub(crate) use balance::{BalancePlan, LINK_MAPPING_ENV};
pub(crate) use chain::{run_chain, ChainRanks, ChainSetup, CkptRun};
pub(crate) use codec::{AnyCodec, Codec};
pub(crate) use globals::{CutGlobals, ModelGlobals};
pub(crate) use part::PartWriter;
pub(crate) use restore::{restore_lps, Loaded};
pub(crate) use split::write_split;

pub use dir::{checkpoint_path, read_manifest};

use std::path::PathBuf;

use crate::model::Time;
pub use crate::stats::{RestoredFrom, Saved};

/// The checkpoint file format this chronon writes and reads.
pub const FORMAT: u32 = 1;

/// When and where a run saves checkpoints.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckpointPlan {
    /// The directory the checkpoints go in (`DIR/t<T>` each).
    pub dir: PathBuf,
    /// Save at every multiple of this simulated time before the end.
    pub every: Option<Time>,
    /// Save at these simulated times.
    pub at: Vec<Time>,
}

impl CheckpointPlan {
    /// The cuts strictly between `start` and `end`, in order.
    pub(crate) fn cuts(&self, start: Time, end: Time) -> Vec<Time> {
        let mut cuts: Vec<Time> = self.at.iter().copied().filter(|t| *t > start).collect();
        if let Some(every) = self.every {
            let mut k = (start / every).floor() + 1.0;
            while k * every < end {
                cuts.push(k * every);
                k += 1.0;
            }
        }
        cuts.retain(|t| *t < end);
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        cuts
    }
}

/// The header of a checkpoint (`manifest.json`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// The file format ([`FORMAT`]).
    pub format: u32,
    /// The chronon version that wrote it.
    pub chronon: String,
    /// The model's name.
    pub model: String,
    /// The model's configuration, as its program wrote it (JSON; `null` when none was given).
    pub config: serde_json::Value,
    /// The seed of the run that saved it.
    pub seed: u64,
    /// The cut: every event before it is committed, every later one pending.
    pub cut: Time,
    /// The end time of the run that saved it (a restored run's default end when it is after
    /// the cut; absent in checkpoints written before chronon recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Time>,
    /// The number of LPs.
    pub lps: u32,
    /// The executor, threads and processes that saved it.
    pub saved_by: String,
    /// Events committed before the cut.
    pub committed: u64,
    /// The time of the latest event committed before the cut (0 when none).
    pub last_time: Time,
    /// The checkpoint the saving run was restored from, if any (`path@cut`, with a reseed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The part files.
    pub parts: Vec<PartEntry>,
    /// CRC-32 of this manifest written with `checksum: 0`.
    pub checksum: u32,
}

/// One part file of a checkpoint.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartEntry {
    /// Its file name in the checkpoint's directory.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The CRC-32 it ends with.
    pub crc32: u32,
    /// LPs it holds.
    pub lps: u64,
    /// Pending events it holds.
    pub events: u64,
}

/// Where a run continues from ([`Simulation::restore`](crate::Simulation::restore)).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RestoreFrom {
    pub path: PathBuf,
    pub reseed: Option<u64>,
}

/// The environment variable that tells a worker process which run of a chain it belongs to.
pub(crate) const SEGMENT_ENV: &str = "CHRONON_CHECKPOINT_SEGMENT";
/// ... and the run's end time (`f64` bits in hex): a chain's cuts depend on its global events.
pub(crate) const LINK_END_ENV: &str = "CHRONON_LINK_END";
/// ... and the cut it starts from (absent: the chain's start).
pub(crate) const LINK_FROM_ENV: &str = "CHRONON_LINK_FROM";
/// ... and the staging directory it saves its parts into (absent: it saves none).
pub(crate) const LINK_SAVE_ENV: &str = "CHRONON_LINK_SAVE";
