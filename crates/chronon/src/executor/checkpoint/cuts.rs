//! The cuts of global events in a chain across parts (`globals.rs`): a link that ended just
//! after a global event's time saves its cut, the coordinating process runs the global events
//! on it and saves the cut they leave, and every rank reads that back for the next link.

use std::path::PathBuf;

use super::dir::{create_staging, finalize, staging_path};
use super::globals::CutGlobals;
use super::link::link_config;
use super::saver::{Coord, Link, Saver};
use super::Loaded;
use crate::error::{Setting, SimError};
use crate::executor::global::GlobalQueue;

/// What a link that ended at a global event's cut hands to [`CutsKept::run_globals`].
pub(super) struct GlobalCut<'a, 's> {
    pub(super) saver: &'a Saver<'s>,
    pub(super) link: Link<'a>,
    pub(super) staging: &'a std::path::Path,
    pub(super) coord: &'a Coord<'a>,
    pub(super) globals: &'a dyn CutGlobals,
    pub(super) queue: &'a mut GlobalQueue,
    pub(super) reread: &'a dyn Fn(PathBuf) -> Result<Loaded, SimError>,
}

/// The cuts a chain keeps for its global events (in the checkpoints' directory, or a
/// directory of its own): the coordinating process removes them once the next link has read
/// them, and every one left when the chain ends (also on an error).
pub(super) struct CutsKept {
    pub(super) dir: Option<PathBuf>,
    pub(super) root: bool,
    pub(super) kept: Vec<PathBuf>,
}

/// How the coordinating process tells every rank how the global events at a cut went.
const CUT_NONE: u64 = 0;
const CUT_RAN: u64 = 1;
const CUT_FAILED: u64 = 2;

impl CutsKept {
    /// The cuts of a chain that keeps some in files (`with_cuts`; else none): in a directory
    /// of its own, inside `plan_dir` (the checkpoints') if there is one, named after rank 0's
    /// chain; stale ones of killed runs are removed first.
    pub(super) fn open(
        coord: &Coord<'_>,
        with_cuts: bool,
        plan_dir: Option<&std::path::Path>,
    ) -> CutsKept {
        if with_cuts && coord.root {
            super::dir::remove_stale(&super::globals::cuts_home());
        }
        // Every rank names the directory after rank 0's chain.
        let n = if with_cuts {
            coord.tell(super::globals::next_chain())
        } else {
            0
        };
        CutsKept {
            dir: with_cuts.then(|| super::globals::cut_dir(plan_dir, coord.owner, n)),
            root: coord.root,
            kept: Vec::new(),
        }
    }

    /// At a link's end at a global event's cut: saves the cut, runs the global events on it in
    /// the coordinating process, saves the cut they leave, and returns it (read back by every
    /// rank) for the next link, and whether they ran (then `queue` is the cut's): when no LP
    /// event is pending they never run (as in every executor), and the chain's next link is
    /// its last.
    pub(super) fn run_globals(&mut self, c: GlobalCut<'_, '_>) -> Result<(Loaded, bool), SimError> {
        let dir = self.dir.clone().expect("global cuts have a directory");
        let owner = c.coord.owner;
        let cut = c.link.cut;
        let after = hidden_path(&dir, cut, "globals");
        let loaded = self.keep_cut(c.saver, c.link, c.staging, c.coord, c.reread)?;
        let mut error = None;
        let word = if self.root {
            let staging = staging_path(&dir, cut, owner);
            match c
                .saver
                .run_globals(c.globals, c.queue, &loaded, &staging, &after)
            {
                Ok(true) => CUT_RAN,
                Ok(false) => CUT_NONE,
                Err(e) => {
                    error = Some(e);
                    CUT_FAILED
                }
            }
        } else {
            0
        };
        match c.coord.tell(word) {
            CUT_RAN => {
                self.kept.push(after.clone());
                let l = (c.reread)(after)?;
                // The queue goes on from what the cut holds after them.
                *c.queue = l
                    .globals
                    .clone()
                    .map(GlobalQueue::from_saved)
                    .unwrap_or_default();
                Ok((l, true))
            }
            CUT_NONE => Ok((loaded, false)),
            _ => Err(error.unwrap_or_else(|| {
                SimError::config(
                    Setting::Run,
                    format!("the global events at the cut {cut} failed on rank 0"),
                )
            })),
        }
    }

    /// At a link's end at a cut the chain keeps for itself (global events, LPs that move):
    /// saves the cut from `staging`, and returns it read back, for the next link.
    pub(super) fn keep_cut(
        &mut self,
        saver: &Saver<'_>,
        link: Link<'_>,
        staging: &std::path::Path,
        coord: &Coord<'_>,
        reread: &dyn Fn(PathBuf) -> Result<Loaded, SimError>,
    ) -> Result<Loaded, SimError> {
        let dir = self.dir.clone().expect("kept cuts have a directory");
        let cut = link.cut;
        let at = hidden_path(&dir, cut, "link");
        let unsaved = |e: String| {
            SimError::config(Setting::Run, format!("the cut at {cut} was not saved: {e}"))
        };
        saver
            .save(link, staging, &at, &|ok| coord.agree(ok))
            .map_err(unsaved)?;
        self.drop_kept();
        self.kept.push(at.clone());
        reread(at)
    }

    /// Removes the cuts kept so far (every part has read them: the link they started ended).
    fn drop_kept(&mut self) {
        for d in self.kept.drain(..) {
            if self.root {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
}

impl Drop for CutsKept {
    fn drop(&mut self) {
        self.drop_kept();
        if let (true, Some(d)) = (self.root, &self.dir) {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// The name of a cut a chain keeps for its global events in its own directory.
fn hidden_path(dir: &std::path::Path, cut: f64, what: &str) -> PathBuf {
    dir.join(format!("t{cut}-{what}"))
}

impl Saver<'_> {
    /// In the coordinating process, at the cut `at`: runs the global events due on it and
    /// saves the cut they leave at `after` (built in `staging`). `false`: none was due (no LP
    /// event is pending), nothing was saved.
    fn run_globals(
        &self,
        globals: &dyn CutGlobals,
        queue: &mut GlobalQueue,
        at: &Loaded,
        staging: &std::path::Path,
        after: &std::path::Path,
    ) -> Result<bool, SimError> {
        let failed = |e: String| {
            let _ = std::fs::remove_dir_all(staging);
            SimError::config(
                Setting::Run,
                format!(
                    "the cut after the global events at {} was not saved: {e}",
                    at.cut()
                ),
            )
        };
        create_staging(staging).map_err(failed)?;
        let (cfg, ck) = link_config(
            self.base,
            self.setup,
            (0, true),
            self.base.end,
            None,
            Some(staging.to_path_buf()),
        );
        let ran = globals.run_at(queue, at, &cfg).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(staging);
        })?;
        if !ran {
            let _ = std::fs::remove_dir_all(staging);
            return Ok(false);
        }
        let errors = std::mem::take(&mut *ck.errors.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(e) = errors.into_iter().next() {
            return Err(failed(e));
        }
        let m = &at.manifest;
        finalize(
            staging,
            after,
            self.manifest(m.cut, m.committed, m.last_time),
        )
        .map_err(failed)?;
        Ok(true)
    }
}
