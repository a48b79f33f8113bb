//! A run with checkpoints: a chain of runs, each ending at a cut, saving, and the next one
//! continuing from what was saved. A worker process of a multi-process run runs only the link
//! of the chain its parent started it for (`SEGMENT_ENV`).

use std::any::Any;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::cuts::{CutsKept, GlobalCut};
use super::dir::{checkpoint_path, create_staging, finalize, remove_stale, staging_path};
use super::globals::CutGlobals;
use super::report::{merge, Done};
use super::{
    CheckpointPlan, Loaded, Manifest, RestoreFrom, RestoredFrom, Saved, LINK_END_ENV,
    LINK_FROM_ENV, LINK_SAVE_ENV, SEGMENT_ENV,
};
use crate::error::{Setting, SimError};
use crate::executor::global::GlobalQueue;
use crate::executor::RunConfig;
use crate::stats::Report;

/// The ranks of a run over MPI as a chain needs them: each rank runs the same chain, rank 0
/// coordinates the files (every rank writes its part into a directory on a file system they
/// share).
pub(crate) trait ChainRanks {
    /// This rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Every rank hands in a word and gets every rank's, in rank order (a barrier).
    fn gather(&self, word: u64) -> Vec<u64>;
}

/// What a run of the builder asked for about checkpoints.
pub(crate) struct ChainSetup {
    /// Over MPI ranks: the ranks (`None`: one process, with its worker processes if any).
    pub ranks: Option<Box<dyn ChainRanks>>,
    /// The model's codec ([`Codec::erase`](super::Codec::erase)d).
    pub codec: Arc<dyn Any + Send + Sync>,
    pub plan: Option<CheckpointPlan>,
    /// Whether the run's last link saves a checkpoint at the end time.
    pub at_end: bool,
    pub restore: Option<RestoreFrom>,
    /// The model's name and configuration, for the manifest (and checked on restore).
    pub model: String,
    pub config: serde_json::Value,
    /// LPs that move between workers at cuts (`balance.rs`); `None`: they stay.
    pub balance: Option<super::BalancePlan>,
    /// The run is one process on threads (no worker processes, no ranks): the cuts it keeps
    /// only to move LPs stay in memory.
    pub in_process: bool,
}

/// What one run of a chain gets through its `RunConfig`.
pub(crate) struct CkptRun {
    pub codec: Arc<dyn Any + Send + Sync>,
    /// The checkpoint it starts from.
    pub start: Option<Loaded>,
    /// The staging directory its parts go to, when it ends at a cut.
    pub save: Option<PathBuf>,
    /// Which run of the chain this is (worker processes are told it).
    pub segment: usize,
    /// The chain runs the model's global events at cuts; the link's executor runs none.
    pub globals_at_cuts: bool,
    /// Errors of parts written in this process.
    pub errors: Mutex<Vec<String>>,
    /// When the first part of this process started writing.
    pub first_part: Mutex<Option<Instant>>,
    /// The LPs' workers in this link, where the chain moved them (`balance.rs`); `None`: the
    /// executor's mapping.
    pub owners: Option<Arc<Vec<u32>>>,
    /// Where `owners` is written for worker processes (`balance::LINK_MAPPING_ENV`).
    pub owners_file: Option<PathBuf>,
    /// Where a link on threads leaves its cut when the chain keeps it in memory
    /// (`memory.rs`); `None`: a cut is saved to `save`.
    pub kept: Option<super::memory::KeptCut>,
}

impl std::fmt::Debug for CkptRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CkptRun(segment {})", self.segment)
    }
}

impl CkptRun {
    /// Notes a part's result.
    pub(crate) fn part_done(&self, result: Result<(), String>) {
        if let Err(e) = result {
            // (A worker process's part runner also hands it to its parent: `PartOut`.)
            self.errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(e);
        }
    }
}

/// Whether this process is a worker process of a multi-process run.
fn in_worker_process() -> bool {
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    return std::env::var_os(crate::shm::ROLE_ENV).is_some();
    #[cfg(not(all(target_os = "linux", not(chronon_loom))))]
    return false;
}

/// The process that coordinates the run: this one, or the parent of a worker process.
fn owner() -> u32 {
    std::env::var(crate::shm::PARENT_ENV)
        .ok()
        .filter(|_| in_worker_process())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(std::process::id)
}

/// Runs `base` as a chain of runs (`run` runs one) that save the planned checkpoints and start
/// from the restored one. `saved_by` names the executor for the manifests. With `globals` (a
/// run across parts whose model has global events) a link also ends where a global event is
/// due, and the chain runs the global events on the cut (`globals.rs`).
pub(crate) fn run_chain(
    base: &RunConfig,
    setup: ChainSetup,
    saved_by: &str,
    globals: Option<&dyn CutGlobals>,
    mut run: impl FnMut(&RunConfig) -> Result<Report, SimError>,
) -> Result<Report, SimError> {
    // Reading checkpoints counts as initialization (the report's `init_s`).
    let reading = Instant::now();
    let start = read_start(&setup, base)?;
    let mut read_s = reading.elapsed().as_secs_f64();
    let start_cut = start.as_ref().map_or(0.0, Loaded::cut);
    let dir = setup.plan.as_ref().map(|p| p.dir.clone());
    let coord = Coord::new(setup.ranks.as_deref());
    let (root, owner) = (coord.root, coord.owner);
    let agree = |ok: bool| coord.agree(ok);
    let cuts = setup
        .plan
        .as_ref()
        .map_or_else(Vec::new, |p| p.cuts(start_cut, base.end));
    let restored = start.as_ref().map(restored_from);
    let origin = restored.as_ref().map(origin_of);
    let base_committed = restored.as_ref().map_or(0, |r| r.committed);
    // The latest commit before the chain's first link (a link that commits nothing reports 0).
    let before = start.as_ref().map_or(0.0, |l| l.manifest.last_time);
    // The global events the chain runs at cuts: none when the model has none.
    let mut queue = match globals {
        Some(g) => Some(g.first(start.as_ref())?).filter(|q| !q.is_empty() || q.ran > 0),
        None => None,
    };
    let at_cuts = queue.is_some();
    let reread =
        |path: PathBuf| Loaded::read(&RestoreFrom { path, reseed: None }, &setup.model, base.lps);

    if in_worker_process() {
        // A worker process runs the link its parent runs, from the same cut, to the same end.
        let var = |name: &str| std::env::var_os(name);
        let k: usize = std::env::var(SEGMENT_ENV)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let end = std::env::var(LINK_END_ENV)
            .ok()
            .and_then(|s| u64::from_str_radix(&s, 16).ok())
            .map(f64::from_bits);
        let Some(end) = end else {
            return Err(SimError::config(Setting::Run, NOT_IN_CHAIN));
        };
        let from = match (k, var(LINK_FROM_ENV)) {
            (0, _) => start,
            (_, Some(p)) => Some(reread(PathBuf::from(p))?),
            _ => return Err(SimError::config(Setting::Run, NOT_IN_CHAIN)),
        };
        let save = var(LINK_SAVE_ENV).map(PathBuf::from);
        let owners = match var(super::LINK_MAPPING_ENV) {
            Some(p) => Some(super::balance::read_map(
                std::path::Path::new(&p),
                base.lps,
            )?),
            None => None,
        };
        let (cfg, _) = link_config(base, &setup, (k, at_cuts), end, from, save);
        return run(&with_owners(cfg, owners, None, false));
    }

    if let (Some(d), true) = (&dir, root) {
        remove_stale(d);
    }
    let mut balancer = match &setup.balance {
        Some(b) => Some(super::balance::Balancer::new(
            b.clone(),
            base.lps,
            base.end,
        )?),
        None => None,
    };
    // Cuts only for moving LPs stay in memory in one process; others go to a directory.
    let with_cuts = at_cuts || (balancer.is_some() && !setup.in_process);
    if with_cuts && root {
        remove_stale(&super::globals::cuts_home());
    }
    // Every rank names the directory after rank 0's chain.
    let n = if with_cuts {
        coord.tell(super::globals::next_chain())
    } else {
        0
    };
    let mut cuts_kept = CutsKept {
        dir: with_cuts.then(|| super::globals::cut_dir(dir.as_deref(), owner, n)),
        root,
        kept: Vec::new(),
    };
    let saver = Saver {
        setup: &setup,
        base,
        saved_by,
        origin: origin.clone(),
        root,
    };
    let mut from = start;
    let mut total: Option<Report> = None;
    let mut saves = Vec::new();
    let mut failed = None;
    let mut next_cut = 0;
    let mut global_cuts = 0u64;
    let mut globals_over = false;
    // The LPs' workers in the next link and the file they are written in (`None`: the
    // executor's mapping).
    let mut owners: super::balance::LinkOwners = (None, None);
    let mut link_from = start_cut;
    // What each link's cut and restart cost beyond its run: the last one's, and the sum.
    let (mut iteration, mut last_cut_s, mut cuts_s) = (Instant::now(), None, 0.0);
    let mut last_wall = 0.0;
    for k in 0.. {
        if k > 0 {
            let c = (iteration.elapsed().as_secs_f64() - last_wall).max(0.0);
            last_cut_s = Some(c);
            cuts_s += c;
        }
        iteration = Instant::now();
        let user_end = cuts.get(next_cut).copied().unwrap_or(base.end);
        let g_end = match &queue {
            Some(q) if !globals_over => next_after(q.next_time(base.end)),
            _ => f64::INFINITY,
        };
        // A global event at `g` is due once every event at or before `g` has run.
        let global_cut = g_end.is_finite() && g_end <= user_end;
        let end = if global_cut { g_end } else { user_end };
        // LPs move at the next multiple of the balancing period before either.
        let b_end = balancer
            .as_ref()
            .map_or(f64::INFINITY, |b| b.next_cut(link_from));
        let balance_cut = b_end < end;
        let global_cut = global_cut && !balance_cut;
        let end = end.min(b_end);
        let saves_user = !global_cut && !balance_cut && (next_cut < cuts.len() || setup.at_end);
        let in_memory = balance_cut && setup.in_process;
        let save = match (&cuts_kept.dir, &dir) {
            _ if in_memory => None,
            (Some(c), _) if global_cut || balance_cut => Some(staging_path(c, end, owner)),
            (_, Some(d)) if saves_user => Some(staging_path(d, end, owner)),
            _ => None,
        };
        let (cfg, _) = link_config(base, &setup, (k, at_cuts), end, from.take(), save);
        let cfg = with_owners(cfg, owners.0.clone(), owners.1.clone(), in_memory);
        let ck = cfg.ckpt.clone().expect("a link of a chain");
        if let Some(s) = &ck.save {
            saver.stage(s, &agree)?;
        }
        let result = run(&cfg);
        let ended = Instant::now();
        let r = result.inspect_err(|_| {
            if let Some(s) = &ck.save {
                let _ = std::fs::remove_dir_all(s);
            }
        })?;
        let complete = r.complete;
        let committed = r.committed;
        last_wall = r.wall_s;
        if let (Some(b), true) = (balancer.as_mut(), complete && cfg.end < base.end) {
            // Before the first cut, one is taken to cost what building the LPs took, three times
            // (save, read back, restore).
            let cut_s = last_cut_s.or(Some(3.0 * r.init_s));
            let remap = b.after_link(&r.lp_costs, super::balance::LinkFigures::of(&r), cut_s);
            // Every rank cuts where rank 0 says (the period may follow its timings).
            b.set_period(f64::from_bits(coord.tell(b.period().to_bits())));
            let dir = cuts_kept.dir.as_deref();
            owners = super::balance::share_owners(&coord, remap, dir, k, base.lps)?;
        }
        let merged = merge(total, r);
        let last_time = merged.last_time.max(before);
        total = Some(merged);
        if let (true, Some(kept)) = (complete, &ck.kept) {
            link_from = cfg.end;
            let manifest = saver.manifest(cfg.end, committed, last_time);
            from = Some(Loaded::from_memory(kept, manifest)?);
            continue;
        }
        let Some(staging) = ck.save.clone() else {
            break;
        };
        if !complete {
            let _ = std::fs::remove_dir_all(&staging);
            break;
        }
        let cut = cfg.end;
        link_from = cut;
        let link = Link {
            ck: &ck,
            cut,
            committed,
            last_time,
            ended,
        };
        if global_cut {
            global_cuts += 1;
            let (Some(g), Some(q)) = (globals, queue.as_mut()) else {
                unreachable!("a global cut needs the global events");
            };
            let reading = Instant::now();
            let (l, ran) = cuts_kept.run_globals(GlobalCut {
                saver: &saver,
                link,
                staging: &staging,
                coord: &coord,
                globals: g,
                queue: q,
                reread: &reread,
            })?;
            read_s += reading.elapsed().as_secs_f64();
            if ran {
                *q = l
                    .globals
                    .clone()
                    .map(GlobalQueue::from_saved)
                    .unwrap_or_default();
            } else {
                globals_over = true;
            }
            from = Some(l);
            continue;
        }
        if balance_cut {
            let reading = Instant::now();
            from = Some(cuts_kept.keep_cut(&saver, link, &staging, &coord, &reread)?);
            read_s += reading.elapsed().as_secs_f64();
            continue;
        }
        next_cut += 1;
        let target = checkpoint_path(dir.as_deref().expect("a plan"), cut);
        if let (Some(g), Some(q), true) = (globals, &queue, root) {
            // The chain holds the global events: they go into the checkpoint as a part.
            g.write_queue(q, &cfg);
        }
        match saver.save(link, &staging, &target, &agree) {
            Ok(saved) => saves.push(saved),
            Err(e) => {
                failed = Some(format!("the checkpoint at {cut} was not saved: {e}"));
                break;
            }
        }
        if cut >= base.end {
            break;
        }
        let reading = Instant::now();
        from = Some(reread(target)?);
        read_s += reading.elapsed().as_secs_f64();
    }
    drop(cuts_kept);
    let mut report = total.expect("a chain runs at least once");
    if let Some(b) = &balancer {
        b.add_to(&mut report);
        // The cuts are part of running a balanced run: its wall time counts them.
        report.wall_s += cuts_s;
        report.executor_stats.insert("balance_cut_s".into(), cuts_s);
    }
    if let Some(q) = &queue {
        q.add_to(&mut report);
        report
            .executor_stats
            .insert("global_cuts".into(), global_cuts as f64);
    }
    let done = Done {
        saves,
        restored,
        failed,
        before,
        read_s,
        base_committed,
    };
    Ok(done.into_report(report, base))
}

/// The next float after `t` (a link that ends there has run every event at `t`).
fn next_after(t: f64) -> f64 {
    if t.is_finite() {
        t.next_up()
    } else {
        t
    }
}

/// Link `k` of a chain: the run to `end` that starts from `start` (none: from `Model::init`)
/// and saves into `save` (a staging directory) if it is given; `globals_at_cuts`: the chain
/// runs the global events.
pub(super) fn link_config(
    base: &RunConfig,
    setup: &ChainSetup,
    (k, globals_at_cuts): (usize, bool),
    end: f64,
    start: Option<Loaded>,
    save: Option<PathBuf>,
) -> (RunConfig, Arc<CkptRun>) {
    let ck = Arc::new(CkptRun {
        codec: setup.codec.clone(),
        start,
        save,
        segment: k,
        globals_at_cuts,
        errors: Mutex::new(Vec::new()),
        first_part: Mutex::new(None),
        owners: None,
        owners_file: None,
        kept: None,
    });
    let mut cfg = base.clone();
    cfg.end = end;
    cfg.ckpt = Some(ck.clone());
    (cfg, ck)
}

/// A link's `cfg` (made by [`link_config`], so holding the link's only `CkptRun` reference)
/// with its LPs on `owners` (`None`: the executor's mapping), written in `file` for worker
/// processes; `in_memory`: it leaves its cut in memory (`memory.rs`).
fn with_owners(
    mut cfg: RunConfig,
    owners: Option<Arc<Vec<u32>>>,
    file: Option<PathBuf>,
    in_memory: bool,
) -> RunConfig {
    let ck = cfg.ckpt.as_mut().and_then(Arc::get_mut);
    let ck = ck.expect("a link's configuration holds its CkptRun alone");
    ck.owners = owners;
    ck.owners_file = file;
    ck.kept = in_memory.then(|| Mutex::new(None));
    cfg
}

/// What the report says of the checkpoint a run was restored from.
fn restored_from(l: &Loaded) -> RestoredFrom {
    RestoredFrom {
        path: l.path.display().to_string(),
        cut: l.cut(),
        saved_by: l.manifest.saved_by.clone(),
        seed: l.manifest.seed,
        committed: l.manifest.committed,
        reseed: l.reseed,
    }
}

/// A checkpoint's origin in the manifests it leads to: `path@cut`, and its reseed.
fn origin_of(r: &RestoredFrom) -> String {
    match r.reseed {
        Some(s) => format!("{}@{} reseeded {s}", r.path, r.cut),
        None => format!("{}@{}", r.path, r.cut),
    }
}

/// The checkpoint a chain starts from, if it restores one; its cut must be before the end.
fn read_start(setup: &ChainSetup, base: &RunConfig) -> Result<Option<Loaded>, SimError> {
    let start = match &setup.restore {
        Some(r) => Some(Loaded::read(r, &setup.model, base.lps)?),
        None => None,
    };
    let start_cut = start.as_ref().map_or(0.0, Loaded::cut);
    if start_cut >= base.end {
        return Err(SimError::config(
            Setting::EndTime,
            format!(
                "the end time {} is not after the checkpoint's cut {start_cut}",
                base.end
            ),
        ));
    }
    Ok(start)
}

/// What a chain writes into every manifest, and whether this process writes them (rank 0).
pub(super) struct Saver<'a> {
    pub(super) setup: &'a ChainSetup,
    pub(super) base: &'a RunConfig,
    saved_by: &'a str,
    origin: Option<String>,
    root: bool,
}

/// A link that ended at its cut and saved its parts.
pub(super) struct Link<'a> {
    pub(super) ck: &'a CkptRun,
    pub(super) cut: f64,
    committed: u64,
    last_time: f64,
    /// When the link's run returned (the checkpoint's seconds start at its first part, or
    /// here).
    ended: Instant,
}

/// Over ranks, rank 0 coordinates a chain, and every rank names the staging directory after it
/// (`owner`); in one process, this process does.
pub(super) struct Coord<'a> {
    ranks: Option<&'a dyn ChainRanks>,
    pub(super) root: bool,
    pub(super) owner: u32,
}

impl<'a> Coord<'a> {
    fn new(ranks: Option<&'a dyn ChainRanks>) -> Self {
        let owner = match ranks {
            Some(r) => r.gather(u64::from(std::process::id()))[0] as u32,
            None => owner(),
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

/// A worker process started for a link its chain does not have.
const NOT_IN_CHAIN: &str =
    "a worker process was started for a run of a checkpoint chain its simulation does not have";

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
    fn stage(
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
