//! A run with checkpoints: a chain of runs, each ending at a cut, saving, and the next one
//! continuing from what was saved. A worker process of a multi-process run runs only the link
//! of the chain its parent started it for (`SEGMENT_ENV`).

use std::any::Any;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::cuts::{CutsKept, GlobalCut};
use super::dir::{checkpoint_path, remove_stale, staging_path};
use super::globals::CutGlobals;
use super::link::{in_worker_process, link_config, with_owners, worker_link, LinkEnd};
use super::report::{merge, Done};
use super::saver::{Coord, Link, Saver};
use super::{CheckpointPlan, Loaded, RestoreFrom, RestoredFrom};
use crate::error::{Setting, SimError};
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

/// What each link's cut and restart cost beyond its run: the last one's, and the sum.
#[derive(Default)]
struct CutClock {
    /// When the current link started (none yet: `None`), and its run's own wall time.
    started: Option<Instant>,
    last_wall: f64,
    last_cut_s: Option<f64>,
    cuts_s: f64,
}

impl CutClock {
    /// A link starts: the time since the last one started, beyond its run, was its cut's.
    fn link_starts(&mut self) {
        if let Some(t) = self.started {
            let c = (t.elapsed().as_secs_f64() - self.last_wall).max(0.0);
            self.last_cut_s = Some(c);
            self.cuts_s += c;
        }
        self.started = Some(Instant::now());
    }

    /// The link's run took `wall_s`.
    fn link_ran(&mut self, wall_s: f64) {
        self.last_wall = wall_s;
    }
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
        return worker_link(base, &setup, at_cuts, start, &reread, &mut run);
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
    let mut cuts_kept = CutsKept::open(&coord, with_cuts, dir.as_deref());
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
    let mut clock = CutClock::default();
    // What groups of LPs cost, link by link.
    let mut heat = crate::lp_cost::LpHeat::new(base.lps);
    for k in 0.. {
        clock.link_starts();
        let LinkEnd {
            end,
            global_cut,
            balance_cut,
            saves_user,
        } = LinkEnd::next(
            cuts.get(next_cut).copied(),
            (base.end, setup.at_end),
            queue
                .as_ref()
                .filter(|_| !globals_over)
                .map(|q| q.next_time(base.end)),
            balancer.as_ref().map(|b| b.next_cut(link_from)),
        );
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
        clock.link_ran(r.wall_s);
        heat.add(link_from, cfg.end, &r.lp_costs);
        // The next link, if any, starts at this one's end.
        link_from = cfg.end;
        if let (Some(b), true) = (balancer.as_mut(), complete && cfg.end < base.end) {
            // Before the first cut, one is taken to cost what building the LPs took, three times
            // (save, read back, restore).
            let cut_s = clock.last_cut_s.unwrap_or(3.0 * r.init_s);
            let dir = cuts_kept.dir.as_deref();
            owners = b.after_chain_link(&r, cut_s, (&coord, dir, k))?;
        }
        let merged = merge(total, r);
        let last_time = merged.last_time.max(before);
        total = Some(merged);
        if let (true, Some(kept)) = (complete, &ck.kept) {
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
            globals_over = !ran;
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
    if heat.stretches.len() > 1 {
        report.lp_heat = Some(heat);
    }
    if let Some(b) = &balancer {
        b.add_to(&mut report, clock.cuts_s);
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
