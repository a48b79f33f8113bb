//! The links of a chain: the configuration each runs under, where each ends, and the link a
//! worker process runs (the one its parent runs, from the same cut, to the same end).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::chain::{ChainSetup, CkptRun};
use super::{Loaded, LINK_END_ENV, LINK_FROM_ENV, LINK_SAVE_ENV, SEGMENT_ENV};
use crate::error::{Setting, SimError};
use crate::executor::RunConfig;
use crate::stats::Report;

/// A worker process started for a link its chain does not have.
const NOT_IN_CHAIN: &str =
    "a worker process was started for a run of a checkpoint chain its simulation does not have";

/// Whether this process is a worker process of a multi-process run.
pub(super) fn in_worker_process() -> bool {
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    return std::env::var_os(crate::shm::ROLE_ENV).is_some();
    #[cfg(not(all(target_os = "linux", not(chronon_loom))))]
    return false;
}

/// The process that coordinates the run: this one, or the parent of a worker process.
pub(super) fn owner() -> u32 {
    std::env::var(crate::shm::PARENT_ENV)
        .ok()
        .filter(|_| in_worker_process())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(std::process::id)
}

/// In a worker process: runs the link its parent runs (`SEGMENT_ENV` and the other link
/// variables say which), from `start` (the chain's) or the cut the parent names.
pub(super) fn worker_link(
    base: &RunConfig,
    setup: &ChainSetup,
    at_cuts: bool,
    start: Option<Loaded>,
    reread: &dyn Fn(PathBuf) -> Result<Loaded, SimError>,
    run: &mut dyn FnMut(&RunConfig) -> Result<Report, SimError>,
) -> Result<Report, SimError> {
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
    let (cfg, _) = link_config(base, setup, (k, at_cuts), end, from, save);
    run(&with_owners(cfg, owners, None, false))
}

/// Where the next link of a chain ends, and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct LinkEnd {
    pub end: f64,
    /// At a global event's cut (the chain runs the global events there).
    pub global_cut: bool,
    /// At a balancing cut (LPs may move there).
    pub balance_cut: bool,
    /// At a checkpoint the user asked for (or the end time, with a checkpoint there).
    pub saves_user: bool,
}

impl LinkEnd {
    /// The next link's end: the user's next cut (`user`, `None`: the end time `end`, which
    /// saves a checkpoint if `at_end`), the next global event (`global`, its time) and the
    /// next balancing cut (`balance`), whichever comes first.
    pub(super) fn next(
        user: Option<f64>,
        (end, at_end): (f64, bool),
        global: Option<f64>,
        balance: Option<f64>,
    ) -> LinkEnd {
        let user_end = user.unwrap_or(end);
        // A global event at `g` is due once every event at or before `g` has run.
        let g_end = global.map_or(f64::INFINITY, next_after);
        let global_cut = g_end.is_finite() && g_end <= user_end;
        let first = if global_cut { g_end } else { user_end };
        // LPs move at the next multiple of the balancing period before either.
        let b_end = balance.unwrap_or(f64::INFINITY);
        let balance_cut = b_end < first;
        LinkEnd {
            end: first.min(b_end),
            global_cut: global_cut && !balance_cut,
            balance_cut,
            saves_user: !global_cut && !balance_cut && (user.is_some() || at_end),
        }
    }
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
pub(super) fn with_owners(
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

#[cfg(test)]
mod tests {
    use super::LinkEnd;

    #[test]
    fn a_link_ends_at_the_first_of_the_cuts_and_says_which() {
        let user = LinkEnd::next(Some(4.0), (10.0, false), Some(5.0), Some(6.0));
        assert_eq!((user.end, user.saves_user), (4.0, true));
        assert!(!user.global_cut && !user.balance_cut);
        // A global event at 3: the link ends just after it, having run every event at 3.
        let g = LinkEnd::next(Some(4.0), (10.0, false), Some(3.0), Some(6.0));
        assert_eq!(g.end, 3.0f64.next_up());
        assert!(g.global_cut && !g.saves_user && !g.balance_cut);
        // A balancing cut before both.
        let b = LinkEnd::next(Some(4.0), (10.0, false), Some(3.0), Some(2.0));
        assert_eq!(b.end, 2.0);
        assert!(b.balance_cut && !b.global_cut && !b.saves_user);
        // Nothing before the end: a checkpoint there only if asked for.
        let e = LinkEnd::next(None, (10.0, true), None, None);
        assert_eq!((e.end, e.saves_user), (10.0, true));
        assert!(!LinkEnd::next(None, (10.0, false), None, None).saves_user);
    }
}
