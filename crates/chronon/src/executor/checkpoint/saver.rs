//! What a chain writes for its cuts, and how the ranks of a run over MPI agree on it: the
//! manifest of every checkpoint, the staging directory of a link, and the coordinating rank.

use std::time::Instant;

use super::chain::{ChainRanks, ChainSetup, CkptRun};
use super::dir::{create_staging, finalize};
use super::{Manifest, Saved};
use crate::error::{Setting, SimError};
use crate::executor::RunConfig;

/// What a chain writes into every manifest, and whether this process writes them (rank 0).
pub(super) struct Saver<'a> {
    pub(super) setup: &'a ChainSetup,
    pub(super) base: &'a RunConfig,
    pub(super) saved_by: &'a str,
    pub(super) origin: Option<String>,
    pub(super) root: bool,
}

/// A link that ended at its cut and saved its parts.
pub(super) struct Link<'a> {
    pub(super) ck: &'a CkptRun,
    pub(super) cut: f64,
    pub(super) committed: u64,
    pub(super) last_time: f64,
    /// When the link's run returned (the checkpoint's seconds start at its first part, or
    /// here).
    pub(super) ended: Instant,
}

/// Over ranks, rank 0 coordinates a chain, and every rank names the staging directory after it
/// (`owner`); in one process, this process does.
pub(super) struct Coord<'a> {
    ranks: Option<&'a dyn ChainRanks>,
    pub(super) root: bool,
    pub(super) owner: u32,
}

impl<'a> Coord<'a> {
    pub(super) fn new(ranks: Option<&'a dyn ChainRanks>) -> Self {
        let owner = match ranks {
            Some(r) => r.gather(u64::from(std::process::id()))[0] as u32,
            None => super::link::owner(),
        };
        Coord {
            ranks,
            root: ranks.is_none_or(|r| r.rank() == 0),
            owner,
        }
    }

    /// Rank 0's `word` (this process's), which every rank learns.
    pub(super) fn tell(&self, word: u64) -> u64 {
        match self.ranks {
            Some(r) => r.gather(word)[0],
            None => word,
        }
    }

    /// Whether rank 0 (or this process) says yes; every rank learns it.
    pub(super) fn agree(&self, ok: bool) -> bool {
        match self.ranks {
            Some(r) => r.gather(u64::from(ok))[0] == 1,
            None => ok,
        }
    }
}

impl Saver<'_> {
    /// The manifest of the checkpoint at `cut`, before its parts are listed.
    pub(super) fn manifest(&self, cut: f64, committed: u64, last_time: f64) -> Manifest {
        Manifest {
            format: super::FORMAT,
            chronon: env!("CARGO_PKG_VERSION").to_string(),
            model: self.setup.model.clone(),
            config: self.setup.config.clone(),
            seed: self.base.seed,
            cut,
            end: Some(self.base.end),
            lps: self.base.lps,
            saved_by: self.saved_by.to_string(),
            committed,
            last_time,
            origin: self.origin.clone(),
            parts: Vec::new(),
            checksum: 0,
        }
    }

    /// Creates a link's staging directory (rank 0, or this process); every rank learns
    /// whether it could.
    pub(super) fn stage(
        &self,
        staging: &std::path::Path,
        agree: &dyn Fn(bool) -> bool,
    ) -> Result<(), SimError> {
        let made = if self.root {
            create_staging(staging)
        } else {
            Ok(())
        };
        if agree(made.is_ok()) {
            return Ok(());
        }
        let e = made
            .err()
            .unwrap_or_else(|| "rank 0 could not create the checkpoint's directory".into());
        Err(SimError::config(Setting::CheckpointDir, e))
    }

    /// Turns the link's staging directory into the checkpoint at `target` (the manifest
    /// written last, then the rename), or removes it if a part failed; every rank learns
    /// whether rank 0 succeeded (`agree`).
    pub(super) fn save(
        &self,
        link: Link<'_>,
        staging: &std::path::Path,
        target: &std::path::Path,
        agree: &dyn Fn(bool) -> bool,
    ) -> Result<Saved, String> {
        let ck = link.ck;
        let errors = std::mem::take(&mut *ck.errors.lock().unwrap_or_else(|p| p.into_inner()));
        let began = ck
            .first_part
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or(link.ended);
        let manifest = self.manifest(link.cut, link.committed, link.last_time);
        let written = match errors.into_iter().next() {
            Some(e) => {
                let _ = std::fs::remove_dir_all(staging);
                Err(e)
            }
            None if self.root => finalize(staging, target, manifest),
            None => Ok(0),
        };
        let bytes = match (agree(written.is_ok()), written) {
            (true, w) => w,
            (false, Err(e)) => Err(e),
            (false, Ok(_)) => Err("rank 0 could not write it".into()),
        }?;
        Ok(Saved {
            cut: link.cut,
            path: target.display().to_string(),
            bytes,
            seconds: began.elapsed().as_secs_f64(),
        })
    }
}
