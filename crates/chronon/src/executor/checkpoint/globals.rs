//! Global events across parts, run at a cut: a run across worker processes or MPI ranks whose
//! model has global events is a chain (`chain.rs`) that ends a link where a global event is
//! due, runs the global events on the whole cut in one process, and continues from the cut
//! they leave.
//!
//! **Why a cut.** A global event at `g` runs after every LP event at or before `g` and before
//! any later one, with every LP stopped (`executor/global.rs`). A link whose end time is the
//! next float after `g` stops exactly there: every event at or before `g` is committed and
//! every later one is pending, with nothing speculative left — the checkpoint's cut, which
//! every executor reaches over every transport. The cut holds every LP's state, random stream,
//! digest and pending events, so the handler runs on the exact states of the sequential run,
//! in one place, with the same `GlobalCtx` as on threads; the events it sends get their keys
//! from the one queue. The next link restores the changed cut as any restored run does.
//!
//! **Where it runs.** In the process that coordinates the chain (the parent of the worker
//! processes; rank 0), which writes the changed cut for every part to read.

use std::path::Path;

use super::codec::Codec;
use super::restore::{restore_lps, Loaded};
use crate::error::SimError;
use crate::executor::global::GlobalQueue;
use crate::executor::RunConfig;
use crate::model::{Model, Time};

/// The global events of a run whose chain runs them at cuts; made where the model's type is
/// known.
pub(crate) trait CutGlobals {
    /// The queue the chain starts with: the restored checkpoint's, or the model's first global
    /// events.
    fn first(&self, start: Option<&Loaded>) -> Result<GlobalQueue, SimError>;

    /// At the cut `from`: runs the global events due before its earliest pending LP event
    /// (none when no LP event is pending: a global event never outlives the LP events), and
    /// writes the cut they leave as the parts of `cfg`'s checkpoint (the queue in its first
    /// part). Returns whether any ran (`false`: nothing was written).
    fn run_at(
        &self,
        queue: &mut GlobalQueue,
        from: &Loaded,
        cfg: &RunConfig,
    ) -> Result<bool, SimError>;

    /// Writes `queue` as a part of its own into the checkpoint `cfg` saves (the chain, not
    /// the link's parts, holds the global events).
    fn write_queue(&self, queue: &GlobalQueue, cfg: &RunConfig);
}

/// The number of the part that holds only the global events (after every worker's part).
const QUEUE_PART: usize = 1 << 20;

/// [`CutGlobals`] of model `M`.
pub(crate) struct ModelGlobals<'m, M: Model> {
    pub model: &'m M,
    /// The worker threads a part of the run has (the cut is written by as many threads).
    pub threads: usize,
}

impl<M: Model> CutGlobals for ModelGlobals<'_, M> {
    fn first(&self, start: Option<&Loaded>) -> Result<GlobalQueue, SimError> {
        match start {
            Some(l) => Ok(l
                .globals
                .clone()
                .map(GlobalQueue::from_saved)
                .unwrap_or_default()),
            None => GlobalQueue::new(self.model),
        }
    }

    fn run_at(
        &self,
        queue: &mut GlobalQueue,
        from: &Loaded,
        cfg: &RunConfig,
    ) -> Result<bool, SimError> {
        let ck = cfg
            .ckpt
            .as_ref()
            .expect("a cut is written by a link of a chain");
        let codec = Codec::<M>::of(&*ck.codec);
        let mut counters = vec![0i64; self.model.counter_names().len()];
        let mut events = Vec::new();
        let mut lps = Vec::with_capacity(cfg.lps as usize);
        restore_lps(
            codec,
            from,
            &mut counters,
            |e| events.push(e),
            |_, s| lps.push(s),
        )?;
        let before = events.iter().map(|e| e.time).fold(Time::INFINITY, f64::min);
        if events.is_empty() || !(queue.next_time(cfg.end) < before) {
            return Ok(false);
        }
        queue.run_before(self.model, cfg.lps, &mut lps, before, cfg.end, &mut events)?;
        super::write_split::<M>(
            cfg,
            (0, self.threads.max(1)),
            lps,
            events,
            &counters,
            Some(queue),
        );
        Ok(true)
    }

    fn write_queue(&self, queue: &GlobalQueue, cfg: &RunConfig) {
        let zeros = vec![0i64; self.model.counter_names().len()];
        if let Some(mut part) = cfg.part_writer::<M>(QUEUE_PART, &zeros) {
            part.globals(&queue.saved());
            cfg.part_done(part.finish());
        }
    }
}

/// Chains that ran global events at cuts in this process so far (names their directories).
static CHAINS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A number for the next such chain of this process.
pub(crate) fn next_chain() -> u64 {
    // Ordering: Relaxed — only the number's uniqueness matters.
    CHAINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The environment variable that names where chains keep the cuts of their global events
/// (over MPI ranks on several machines: a directory every rank sees).
pub(crate) const CUT_DIR_ENV: &str = "CHRONON_CUT_DIR";

/// Where chains keep the cuts of their global events when the run saves no checkpoints:
/// `CHRONON_CUT_DIR` (`/dev/shm` keeps them in memory: faster, docs/conservative.md), else the
/// system's temporary directory.
pub(crate) fn cuts_home() -> std::path::PathBuf {
    match std::env::var_os(CUT_DIR_ENV) {
        Some(d) => d.into(),
        None => std::env::temp_dir(),
    }
}

/// How the name of a directory of kept cuts begins (after a dot inside a checkpoint directory).
pub(crate) const CUTS_PREFIX: &str = "chronon-cuts-";

/// The directory in which chain `n` of process `owner` keeps the cuts of its global events:
/// one of its own in the checkpoints' directory `dir` (over ranks on several machines, a file
/// system they share) or in [`cuts_home`].
pub(crate) fn cut_dir(dir: Option<&Path>, owner: u32, n: u64) -> std::path::PathBuf {
    let name = format!(".{CUTS_PREFIX}{owner}-{n}");
    match dir {
        Some(d) => d.join(name),
        None => cuts_home().join(&name[1..]),
    }
}
