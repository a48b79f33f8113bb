//! Executors: the algorithms that run a model. Each lives in its own file; all of them share the
//! LP bookkeeping, initialization and report assembly here, and all of them commit the same
//! history as the sequential executor (`sequential.rs`).

pub(crate) mod checkpoint;
pub(crate) mod conservative;
pub(crate) mod family;
pub(crate) mod global;
pub(crate) mod links;
pub(crate) mod over;
pub(crate) mod part_out;
pub(crate) mod sequential;
pub mod time_warp;

pub use time_warp::{StateSaving, Ticks, TimeWarpConfig, MIN_TICK_US};

pub use conservative::{ConservativeConfig, Runtime, DEFAULT_MAX_NULL_MESSAGES};

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::error::{guard, ModelError, SimError};
use crate::event::Event;
use crate::fingerprint::{Fingerprint, LpDigest};
use crate::model::{Ctx, LpId, LpMeta, LpStates, Model, ModelStats, Time};
use crate::partition::Mapping;
use crate::progress::Progress;
use crate::queue::QueueKind;
use crate::stats::Report;

/// Which executor runs the simulation.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum Executor {
    /// One thread, one pending-event set: the reference every other executor is tested against.
    #[default]
    Sequential,
    /// Time Warp (optimistic): its worker threads and settings (seed 003).
    TimeWarp(TimeWarpConfig),
    /// Conservative, barrier rounds with a global LBTS (seed 001 §2.2.2, YAWNS).
    Window(ConservativeConfig),
    /// Conservative, Chandy-Misra-Bryant null messages between workers (seed 001 §2.2.1).
    NullMessage(ConservativeConfig),
    /// Conservative, lock-steps with SafeTime = max(InClock, GST) (seed 002 Fig. 1).
    Lockstep(ConservativeConfig),
}

impl Executor {
    /// The name used on the command line (`--sync`).
    pub fn name(&self) -> &'static str {
        match self {
            Executor::Sequential => "seq",
            Executor::TimeWarp(_) => "timewarp",
            Executor::Window(_) => "window",
            Executor::NullMessage(_) => "null-message",
            Executor::Lockstep(_) => "lockstep",
        }
    }

    /// The LPs' mapping onto workers; `None` where no worker owns LPs (the sequential
    /// executor, lock-step's work-stealing and active-threads runtimes).
    pub(crate) fn mapping(&self) -> Option<&Mapping> {
        match self {
            Executor::TimeWarp(c) => Some(&c.mapping),
            Executor::Window(c) | Executor::NullMessage(c) => Some(&c.mapping),
            Executor::Lockstep(c) if matches!(c.runtime, Runtime::Threads) => Some(&c.mapping),
            _ => None,
        }
    }

    /// The same executor with its LPs on `owners` (by LP, their worker).
    pub(crate) fn with_owners(&self, owners: &[u32]) -> Executor {
        let mut e = self.clone();
        let m = Mapping::Explicit(owners.to_vec());
        match &mut e {
            Executor::TimeWarp(c) => c.mapping = m,
            Executor::Window(c) | Executor::NullMessage(c) | Executor::Lockstep(c) => c.mapping = m,
            Executor::Sequential => {}
        }
        e
    }

    /// Worker threads used.
    pub fn threads(&self) -> usize {
        match self {
            Executor::Sequential => 1,
            Executor::TimeWarp(c) => c.threads,
            Executor::Window(c) | Executor::NullMessage(c) | Executor::Lockstep(c) => c.threads,
        }
    }
}

/// The validated settings every executor gets.
#[derive(Clone, Debug)]
pub(crate) struct RunConfig {
    pub lps: LpId,
    pub end: Time,
    pub seed: u64,
    pub queue: QueueKind,
    pub progress: Arc<Progress>,
    /// Whether worker threads are pinned to cores.
    pub pin: crate::placement::Pin,
    /// The size classes of the shared heaps the run's threads create (`None`: the default).
    #[cfg(target_os = "linux")]
    pub heap: Option<crate::shm::HeapConfig>,
    /// Checkpoints: where this run starts from and where it saves its parts (one run of a
    /// chain, `checkpoint/chain.rs`); `None`: a run from `Model::init` that saves nothing.
    pub ckpt: Option<Arc<checkpoint::CkptRun>>,
}

impl RunConfig {
    /// Prepares the calling thread to run this run's handlers: the shared heap it creates
    /// gets the run's size classes. Every thread that runs handlers calls it first.
    pub(crate) fn enter_thread(&self) {
        #[cfg(target_os = "linux")]
        crate::shm::set_thread_heap_config(self.heap.clone());
    }

    /// The time `Model::finish` sees as the end time
    /// ([`ModelStats::end_time`](crate::ModelStats::end_time)): the end time of a complete run
    /// (a link of a chain ends at its cut); the latest committed event's time of a run stopped
    /// early or without an end time (infinite: it ends when no event is left).
    pub(crate) fn stats_end(&self, complete: bool, last_time: Time) -> Time {
        self.known_end(complete).unwrap_or(last_time.min(self.end))
    }

    /// [`stats_end`](Self::stats_end) where a part knows it without the other parts' latest
    /// event times: the end time of a complete run that has one.
    pub(crate) fn known_end(&self, complete: bool) -> Option<Time> {
        (complete && self.end.is_finite()).then_some(self.end)
    }

    /// The checkpoint this run starts from, if any.
    pub(crate) fn restoring(&self) -> Option<&checkpoint::Loaded> {
        self.ckpt.as_ref().and_then(|c| c.start.as_ref())
    }

    /// Whether this run is a link of a chain that runs the model's global events at cuts
    /// (a run across parts: `checkpoint/globals.rs`); its executor then runs none.
    pub(crate) fn globals_at_cuts(&self) -> bool {
        self.ckpt.as_ref().is_some_and(|c| c.globals_at_cuts)
    }

    /// Whether this run ends at a checkpoint's cut (each part then writes what it owns with
    /// [`part_writer`](Self::part_writer), or a run on threads hands it all to
    /// `checkpoint::write_split`, which keeps it in memory where the chain asks for that).
    pub(crate) fn saving(&self) -> bool {
        self.ckpt
            .as_ref()
            .is_some_and(|c| c.save.is_some() || c.kept.is_some())
    }

    /// A writer for part `k` of the checkpoint this run ends at (`None`: it saves none), with
    /// the counter sums the part adds. Hand its `finish()` to [`part_done`](Self::part_done).
    pub(crate) fn part_writer<M: Model>(
        &self,
        k: usize,
        counters: &[i64],
    ) -> Option<checkpoint::PartWriter<'_, M>> {
        let ck = self.ckpt.as_ref()?;
        let dir = ck.save.as_ref()?;
        ck.first_part
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(std::time::Instant::now);
        let codec = checkpoint::Codec::<M>::of(&*ck.codec);
        Some(checkpoint::PartWriter::create(codec, dir, k, counters))
    }

    /// Notes how writing a part ended.
    pub(crate) fn part_done(&self, result: Result<(), String>) {
        if let Some(ck) = &self.ckpt {
            ck.part_done(result);
        }
    }

    /// Undoes [`enter_thread`](Self::enter_thread) on a thread that outlives the run (the
    /// caller's).
    pub(crate) fn leave_thread() {
        #[cfg(target_os = "linux")]
        crate::shm::set_thread_heap_config(None);
    }
}

/// One LP as executors keep it: the model's state, the engine's per-LP bookkeeping, and the
/// digest of what it committed.
#[derive(Debug)]
pub(crate) struct LpSlot<S> {
    pub state: S,
    pub meta: LpMeta,
    pub digest: LpDigest,
    /// What its handlers cost in this run (not saved: a run measures its own).
    pub cost: crate::lp_cost::LpClock,
}

/// Per LP of `lps` (every LP of a run, in LP order): its id and what it cost.
pub(crate) fn slot_costs<S>(lps: &[LpSlot<S>]) -> Vec<(LpId, crate::lp_cost::LpCost)> {
    lps.iter()
        .enumerate()
        .map(|(i, s)| (i as LpId, s.cost.cost()))
        .collect()
}

/// Runs `model.init` for every LP, in LP order, collecting their first events.
///
/// Returns the LPs and the initial events (in LP order, each LP's in send order).
#[allow(clippy::type_complexity)]
pub(crate) fn init_lps<M: Model>(
    model: &M,
    cfg: &RunConfig,
    counters: &mut [i64],
) -> Result<(Vec<LpSlot<M::State>>, Vec<Event<M::Event>>), SimError> {
    let mut events = Vec::new();
    let lps = init_lps_with(model, cfg, counters, |e| events.push(e))?;
    Ok((lps, events))
}

/// Runs `model.init` for every LP, in LP order, handing each initial event to `emit` as soon as
/// its LP's `init` returns (so that no second copy of millions of initial events is kept).
pub(crate) fn init_lps_with<M: Model>(
    model: &M,
    cfg: &RunConfig,
    counters: &mut [i64],
    emit: impl FnMut(Event<M::Event>),
) -> Result<Vec<LpSlot<M::State>>, SimError> {
    let mut lps = Vec::with_capacity(cfg.lps as usize);
    init_lps_each(model, cfg, counters, emit, |_, slot| lps.push(slot))?;
    Ok(lps)
}

/// [`init_lps_with`] handing each LP to `keep` (with its id) as soon as its `init` returns,
/// after its initial events: an executor that keeps LPs in records of its own builds them
/// without a table of every LP's slot beside them (with a million LPs, tens of MB at the
/// resident peak).
pub(crate) fn init_lps_each<M: Model>(
    model: &M,
    cfg: &RunConfig,
    counters: &mut [i64],
    mut emit: impl FnMut(Event<M::Event>),
    mut keep: impl FnMut(LpId, LpSlot<M::State>),
) -> Result<(), SimError> {
    if let (Some(from), Some(ck)) = (cfg.restoring(), &cfg.ckpt) {
        let codec = checkpoint::Codec::<M>::of(&*ck.codec);
        return checkpoint::restore_lps(codec, from, counters, emit, keep);
    }
    let mut events = Vec::new();
    let mut error: Option<ModelError> = None;
    let mut current = 0;
    let result = catch_unwind(AssertUnwindSafe(|| {
        for lp in 0..cfg.lps {
            current = lp;
            // A stop request during a long initialization ends it (Simulation::run reports
            // the run as incomplete); polled every 4096 LPs.
            if lp % 4096 == 4095 && cfg.progress.stop_requested() {
                return Err(SimError::StoppedInInit);
            }
            let mut meta = LpMeta::new(cfg.seed, lp);
            let state = {
                let mut ctx = Ctx::new(
                    0.0,
                    lp,
                    cfg.lps,
                    0.0,
                    &mut meta,
                    &mut events,
                    counters,
                    &mut error,
                );
                model.init(&mut ctx)
            };
            if let Some(e) = error.take() {
                return Err(SimError::Model(e));
            }
            events.drain(..).for_each(&mut emit);
            keep(
                lp,
                LpSlot {
                    state,
                    meta,
                    digest: LpDigest::default(),
                    cost: Default::default(),
                },
            );
        }
        Ok(())
    }));
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(payload) => Err(SimError::from_panic(current, 0.0, payload.as_ref())),
    }
}

/// Runs the threads of a part (the whole run on threads, or one worker process or MPI rank),
/// for every protocol over every transport: worker `base + k` gets `items[k]`, and on its own
/// thread takes the run's heap classes, is pinned by `pinner`, moves its items into memory it
/// touches first (`touch`, when the placement asks for it), and runs `body(worker, items)`.
/// Returns what each returned, in worker order (a panic is re-raised here).
pub(crate) fn run_part_threads<T: Send, R: Send>(
    cfg: &RunConfig,
    pinner: &crate::placement::Pinner,
    base: usize,
    items: Vec<T>,
    touch: impl Fn(T) -> T + Sync,
    body: impl Fn(usize, T) -> R + Sync,
) -> Vec<R> {
    let (touch, body) = (&touch, &body);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(k, x)| {
                s.spawn(move || {
                    cfg.enter_thread();
                    pinner.pin(base + k);
                    body(base + k, pinner.touch(x, touch))
                })
            })
            .collect();
        join_all(handles)
    })
}

/// Joins every worker thread of a scope, in order, and returns their results. Workers run model
/// code under `catch_unwind` and record failures in their run's shared error slot, so a worker
/// thread that panics anyway is an engine bug: it is propagated as a panic here.
pub(crate) fn join_all<'scope, T>(
    handles: impl IntoIterator<Item = std::thread::ScopedJoinHandle<'scope, T>>,
) -> Vec<T> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .expect("a worker thread panicked outside a model handler")
        })
        .collect()
}

/// Fills the report's fingerprint and model statistics from the final LPs (in LP order);
/// `Model::finish` sees `end` as the end time ([`RunConfig::stats_end`]).
pub(crate) fn finish_report<M: Model>(
    model: &M,
    lps: &[LpSlot<M::State>],
    counters: &[i64],
    end: Time,
    report: &mut Report,
) -> Result<(), SimError> {
    let (fingerprint, committed, stats) = lp_totals(model, lps, counters, end)?;
    report.fingerprint = fingerprint;
    report.committed = committed;
    report.model_stats = stats;
    report.lp_costs = lps.iter().map(|s| s.cost.cost()).collect();
    Ok(())
}

/// The fingerprint, committed count and model statistics of the final LPs (in LP order);
/// `Model::finish` sees `end` as the end time ([`RunConfig::stats_end`]).
pub(crate) fn lp_totals<M: Model>(
    model: &M,
    lps: &[LpSlot<M::State>],
    counters: &[i64],
    end: Time,
) -> Result<(Fingerprint, u64, ModelStats), SimError> {
    let fingerprint =
        Fingerprint::from_digests(lps.iter().enumerate().map(|(i, s)| (i as LpId, &s.digest)));
    let committed = lps.iter().map(|s| s.digest.count()).sum();
    let mut stats = ModelStats::default();
    stats.set_end_time(Some(end));
    for (name, value) in model.counter_names().iter().zip(counters) {
        stats.set(name, *value as f64);
    }
    for (i, s) in lps.iter().enumerate() {
        let lp = i as LpId;
        guard("Model::finish", Some(lp), || {
            model.finish(lp, &s.state, &mut stats)
        })?;
    }
    Ok((fingerprint, committed, stats))
}

impl<S> LpStates<S> for Vec<LpSlot<S>> {
    fn state(&self, lp: LpId) -> &S {
        &self[lp as usize].state
    }
    fn state_mut(&mut self, lp: LpId) -> &mut S {
        &mut self[lp as usize].state
    }
}
