//! Time Warp on threads (Jefferson 1985), organised as in seed 003 §2.1–2.2: each worker owns a
//! set of LPs and dispatches the lowest-timestamp event among them (LTF); workers exchange
//! events and anti-messages through per-worker mailboxes (the bottom-half queues, whose `min`
//! register is BH_min); an LP that receives an event in its past, or an anti-message for an
//! event it processed, rolls back (copy state saving with coasting forward, or reverse
//! computation) and cancels what it sent with anti-messages (aggressive cancellation). An
//! asynchronous GVT (`gvt.rs`) lets workers commit and free what is older than GVT, run the
//! commit hooks, and update the fingerprint in commit order. Protocols and proofs: README.md.

mod gvt;
mod lp;
mod memory;
mod optimism;

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

use self::gvt::GvtRegisters;
use self::lp::{Anti, Checkpoint, Done, Msg, Sent, TwCold, TwEvent, TwLp};
use self::memory::MemoryBound;
use self::optimism::{Delta, Optimism};
use super::{finish_report, init_lps_with, LpSlot, RunConfig};
use crate::comm::Mailbox;
use crate::error::{ModelError, SimError};
use crate::event::{Event, EventKey, Keyed};
use crate::model::{CommitCtx, Ctx, LpId, Model, ReverseCtx, Time};
use crate::partition::Mapping;
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::stats::Report;

/// How Time Warp restores an LP's state on rollback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateSaving {
    /// Save a copy of the state every k events and coast forward from it.
    Copy,
    /// Undo events with the model's reverse handler ([`Model::reverse`]).
    Reverse,
    /// Reverse computation when the model has a reverse handler, copies otherwise.
    #[default]
    Auto,
}

impl std::str::FromStr for StateSaving {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "copy" => Ok(StateSaving::Copy),
            "reverse" => Ok(StateSaving::Reverse),
            "auto" => Ok(StateSaving::Auto),
            _ => Err(format!(
                "unknown state saving '{s}' (allowed: copy, reverse, auto)"
            )),
        }
    }
}

/// Settings of the Time Warp executor (see docs/timewarp.md).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TimeWarpOptions {
    /// How states are saved.
    pub state_saving: StateSaving,
    /// Copy state saving: save every `k` events (`None`: chosen from measured costs).
    pub checkpoint: Option<u32>,
    /// Bound on the resident memory of the whole process (docs/timewarp.md, "Memory bound"):
    /// speculation is capped to stay under it, and the run fails with [`SimError::Resource`]
    /// naming a bound that would do when it cannot.
    pub max_memory: Option<u64>,
    /// Optimism window: no event later than GVT + window runs. The window adapts to the
    /// measured rollbacks (docs/timewarp.md, "Optimism control"), starting unbounded (`None`,
    /// the default) or at the given value, which it then never exceeds (a cap).
    pub window: Option<Time>,
    /// Keep [`window`](Self::window) fixed: the controller is off (with `window: None` or
    /// `Some(f64::INFINITY)`, unbounded optimism, which can thrash). Default false.
    pub fixed_window: bool,
    /// LP to worker mapping.
    pub mapping: Mapping,
    /// Events a worker processes between two GVT rounds it starts.
    pub gvt_every: u32,
    /// The most processed, uncommitted events a worker keeps: past it, it runs only events at
    /// or before GVT until fossil collection catches up (`None`: 4 × `gvt_every`). Bounds how
    /// far one worker races ahead while another is descheduled.
    pub max_uncommitted: Option<u64>,
    /// Run every event forward, then backward, and compare the states (set by
    /// [`Simulation::check_reverse`](crate::Simulation::check_reverse)).
    pub(crate) check_reverse: bool,
}

impl Default for TimeWarpOptions {
    fn default() -> Self {
        TimeWarpOptions {
            state_saving: StateSaving::Auto,
            checkpoint: None,
            max_memory: None,
            window: None,
            fixed_window: false,
            mapping: Mapping::Block,
            gvt_every: 1024,
            max_uncommitted: None,
            check_reverse: false,
        }
    }
}

impl TimeWarpOptions {
    /// The default settings.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`state_saving`](Self::state_saving).
    pub fn state_saving(mut self, s: StateSaving) -> Self {
        self.state_saving = s;
        self
    }
    /// Sets [`checkpoint`](Self::checkpoint).
    pub fn checkpoint(mut self, k: Option<u32>) -> Self {
        self.checkpoint = k;
        self
    }
    /// Sets [`max_memory`](Self::max_memory).
    pub fn max_memory(mut self, bytes: Option<u64>) -> Self {
        self.max_memory = bytes;
        self
    }
    /// Sets [`window`](Self::window).
    pub fn window(mut self, w: Option<Time>) -> Self {
        self.window = w;
        self
    }
    /// Sets [`fixed_window`](Self::fixed_window).
    pub fn fixed_window(mut self, fixed: bool) -> Self {
        self.fixed_window = fixed;
        self
    }
    /// Sets [`mapping`](Self::mapping).
    pub fn mapping(mut self, m: Mapping) -> Self {
        self.mapping = m;
        self
    }
    /// Sets [`max_uncommitted`](Self::max_uncommitted).
    pub fn max_uncommitted(mut self, n: Option<u64>) -> Self {
        self.max_uncommitted = n;
        self
    }
    /// Sets [`gvt_every`](Self::gvt_every).
    pub fn gvt_every(mut self, n: u32) -> Self {
        self.gvt_every = n;
        self
    }

    fn validate(&self) -> Result<(), SimError> {
        if self.checkpoint == Some(0) {
            return Err(SimError::Config(
                "checkpoint interval is 0; it must be at least 1 event".into(),
            ));
        }
        if self.max_memory == Some(0) {
            return Err(SimError::Config(
                "max memory is 0 bytes; it must be at least 1".into(),
            ));
        }
        if let Some(w) = self.window {
            if w.is_nan() || w < 0.0 {
                return Err(SimError::Config(format!(
                    "optimism window {w} is not allowed; it must be >= 0"
                )));
            }
        }
        if self.gvt_every == 0 {
            return Err(SimError::Config(
                "GVT interval is 0 events; it must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Hashes event ids (unique `u64`s, no adversary) with one multiplication.
#[derive(Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
        }
    }
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Asks the CPU to start loading the first (at most two) cache lines of `*r`: a hint that
/// hides the cache miss of a record the worker will touch soon. No effect on results.
#[inline(always)]
fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (r as *const T).cast::<i8>();
        for line in 0..std::mem::size_of::<T>().div_ceil(64).min(2) {
            // Safety: a prefetch never faults and has no architectural effect; the address is
            // inside `*r` (`line * 64 < size_of::<T>()`), so `add` stays in bounds.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(line * 64)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// How many LPs ahead fossil collection prefetches the records it will visit.
const FOSSIL_PREFETCH: usize = 4;

/// Compares two states (for `--check-reverse`).
pub(crate) type StateEq<S> = fn(&S, &S) -> bool;

/// Copy state saving's largest automatic checkpoint interval.
const AUTO_K_MAX: u32 = 32;
/// How many events run between two looks at the progress figures and the stop flag.
const POLL_EVERY: u64 = 1 << 13;
/// How many events run between two updates of the memory figures.
const MEMORY_EVERY: u64 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Saving {
    Copy,
    Reverse,
}

/// What every worker shares.
struct Shared<'a, M: Model> {
    model: &'a M,
    n: LpId,
    end: Time,
    lookahead: Time,
    saving: Saving,
    fixed_k: Option<u32>,
    /// The optimism window and its controller.
    optimism: Optimism,
    /// The memory bound and its speculation cap (memory.rs).
    mem: MemoryBound,
    /// `size_of` a processed-event record.
    record_size: u64,
    gvt_every: u64,
    check_eq: Option<StateEq<M::State>>,
    /// LP -> (worker, index among the worker's LPs); empty for block mapping, which is
    /// computed (no table lookups, a cache miss each with millions of LPs).
    owner: Vec<u32>,
    local: Vec<u32>,
    /// Block mapping: the first LP of every worker (and `lps` at the end).
    block_first: Vec<u64>,
    boxes: Vec<Mailbox<Msg<M::Event>>>,
    gvt: GvtRegisters,
    abort: AtomicBool,
    error: Mutex<Option<SimError>>,
    /// Per worker: dynamic bytes counted, the history part of them, history records held.
    bytes: Vec<AtomicU64>,
    history: Vec<AtomicU64>,
    records: Vec<AtomicU64>,
    peak: AtomicU64,
    series: Mutex<Vec<(f64, f64)>>,
    start: Instant,
    progress: &'a crate::progress::Progress,
    /// The model's declared topology: a send along an undeclared link, or below its link's
    /// lookahead, is a model error here as under every executor.
    links: crate::executor::links::Links,
}

impl<M: Model> Shared<'_, M> {
    fn fail(&self, e: SimError) {
        if let Ok(mut slot) = self.error.lock() {
            if slot.is_none() {
                *slot = Some(e);
            }
        }
        self.abort.store(true, Ordering::SeqCst);
    }

    /// The worker that owns LP `lp`.
    #[inline(always)]
    fn owner_of(&self, lp: LpId) -> usize {
        if self.block_first.is_empty() {
            self.owner[lp as usize] as usize
        } else {
            // Block mapping puts LP i on worker floor(i * W / n), that is, on the last worker
            // whose first LP is <= i. A few comparisons beat a 64-bit division.
            let w = self.block_first.len() - 1;
            if w <= 8 {
                let lp = u64::from(lp);
                self.block_first[1..w]
                    .iter()
                    .take_while(|&&f| f <= lp)
                    .count()
            } else {
                (u64::from(lp) * w as u64 / u64::from(self.n)) as usize
            }
        }
    }

    /// LP `lp`'s index among its worker's LPs.
    #[inline(always)]
    fn local_of(&self, lp: LpId) -> usize {
        if self.block_first.is_empty() {
            self.local[lp as usize] as usize
        } else {
            (u64::from(lp) - self.block_first[self.owner_of(lp)]) as usize
        }
    }

    fn total_bytes(&self) -> u64 {
        sum_figures(&self.bytes)
    }

    /// The workers' memory figures added up.
    fn totals(&self) -> memory::Totals {
        memory::Totals {
            dynamic: sum_figures(&self.bytes),
            history: sum_figures(&self.history),
            records: sum_figures(&self.records),
        }
    }
}

/// One per-worker memory figure summed over the workers.
fn sum_figures(v: &[AtomicU64]) -> u64 {
    // Ordering: each figure is a self-contained estimate; a stale one only delays the cap.
    v.iter().map(|b| b.load(Ordering::Relaxed)).sum()
}

/// What a worker hands back: its LPs, committed counter totals, figures, and whether it saw
/// the run complete.
type WorkerResult<M, Q> = (
    Vec<TwLp<<M as Model>::State, <M as Model>::Event>>,
    Vec<TwCold<<M as Model>::State>>,
    Vec<i64>,
    Stats,
    bool,
    (Q, HashSet<u64, BuildHasherDefault<IdHasher>>),
);

/// Per-worker counters, reported in `workers`.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    processed: u64,
    committed: u64,
    rolled_back: u64,
    primary: u64,
    secondary: u64,
    antis: u64,
    coasted: u64,
    checkpoints: u64,
    reports: u64,
    peak_bytes: u64,
    /// Copy state saving: the checkpoint interval in use at the end.
    checkpoint_interval: u64,
    /// The latest time of an event this worker committed.
    last_committed: Time,
}

/// Counts behind the memory estimate.
#[derive(Clone, Copy, Debug, Default)]
struct Census {
    done: u64,
    /// Sum of the capacities of the LPs' `done` deques (records).
    done_cap: u64,
    sent: u64,
    counts: u64,
    checkpoints: u64,
}

struct Worker<'s, 'a, M: Model, Q> {
    w: usize,
    sh: &'s Shared<'a, M>,
    lps: Vec<TwLp<M::State, M::Event>>,
    /// The cold halves of `lps`, at the same indices.
    cold: Vec<TwCold<M::State>>,
    queue: Q,
    cancelled: HashSet<u64, BuildHasherDefault<IdHasher>>,
    outbox: Vec<Vec<Msg<M::Event>>>,
    out_dirty: Vec<usize>,
    local_antis: Vec<Anti>,
    dirty: Vec<u32>,
    next_id: u64,
    send_min: f64,
    reported: u64,
    gvt: f64,
    counters: Vec<i64>,
    scratch: Vec<i64>,
    coast_scratch: Vec<i64>,
    out: Vec<Event<M::Event>>,
    coast_out: Vec<Event<M::Event>>,
    err: Option<ModelError>,
    current: (LpId, Time),
    k: u32,
    census: Census,
    stats: Stats,
    // Measurements for the automatic checkpoint interval (nanoseconds, sampled).
    save_ns: f64,
    event_ns: f64,
    rollbacks_at_tune: u64,
    processed_at_tune: u64,
    // For the optimism controller: the figures handed in at the last GVT report, the latest
    // timestamp processed since, and whether the window stopped this worker since.
    handed_in: Stats,
    horizon: Time,
    window_blocked: bool,
}

/// Runs `model` under Time Warp on `threads` workers.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpOptions,
    check_eq: Option<StateEq<M::State>>,
) -> Result<Report, SimError> {
    match cfg.queue {
        QueueKind::Heap => {
            run_with::<M, HeapQueue<TwEvent<M::Event>>>(model, cfg, threads, opts, check_eq)
        }
        QueueKind::Ladder => {
            run_with::<M, LadderQueue<TwEvent<M::Event>>>(model, cfg, threads, opts, check_eq)
        }
    }
}

fn run_with<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpOptions,
    check_eq: Option<StateEq<M::State>>,
) -> Result<Report, SimError> {
    opts.validate()?;
    if threads == 0 {
        return Err(SimError::Config(
            "Time Warp needs at least 1 thread; got 0".into(),
        ));
    }
    if !crate::error::guard("Model::global_events", None, || model.global_events())?.is_empty() {
        return Err(SimError::Config(
            "the model schedules global events, which --sync timewarp does not run yet; use seq, window, null-message or lockstep".into(),
        ));
    }
    let links = crate::executor::links::Links::new(model, cfg.lps)?;
    if threads >= 1 << 15 {
        return Err(SimError::Config(format!(
            "Time Warp runs at most 32767 threads; got {threads}"
        )));
    }
    let saving = match opts.state_saving {
        StateSaving::Copy => Saving::Copy,
        StateSaving::Reverse if !model.has_reverse() => {
            return Err(SimError::Config(
                "reverse state saving needs a model with a reverse handler (has_reverse() is false); use copy or auto".into(),
            ))
        }
        StateSaving::Reverse => Saving::Reverse,
        StateSaving::Auto if model.has_reverse() => Saving::Reverse,
        StateSaving::Auto => Saving::Copy,
    };
    if saving == Saving::Reverse && opts.checkpoint.is_some() {
        return Err(SimError::Config(format!(
            "a checkpoint interval applies to copy state saving only; this run uses reverse state saving ({}), which saves no states",
            if opts.state_saving == StateSaving::Reverse {
                "asked for"
            } else {
                "chosen automatically because the model has a reverse handler; ask for copy to use checkpoints"
            }
        )));
    }
    if opts.check_reverse && (saving != Saving::Reverse || check_eq.is_none()) {
        return Err(SimError::Config(
            "checking reverse handlers needs reverse state saving (a model with has_reverse() true) and comparable states".into(),
        ));
    }
    let owner = opts
        .mapping
        .owners(cfg.lps, threads)
        .map_err(SimError::Config)?;
    let mut local = vec![0u32; cfg.lps as usize];
    let mut sizes = vec![0u32; threads];
    for (i, &o) in owner.iter().enumerate() {
        local[i] = sizes[o as usize];
        sizes[o as usize] += 1;
    }

    let block = opts.mapping == Mapping::Block;
    let init_start = Instant::now();
    let mut counters = vec![0i64; model.counter_names().len()];
    // The memory bound covers the process (memory.rs). Refuse at once a bound that cannot
    // even hold what the process holds now plus the LP records.
    let lp_bytes = (std::mem::size_of::<TwLp<M::State, M::Event>>()
        + std::mem::size_of::<TwCold<M::State>>()
        + std::mem::size_of::<LpSlot<M::State>>()) as f64
        * f64::from(cfg.lps);
    if let Some(bound) = opts.max_memory {
        let least = (memory::resident_bytes().unwrap_or(0) as f64 + lp_bytes) / memory::TARGET;
        if least > bound as f64 {
            return Err(SimError::Resource(format!(
                "Time Warp needs at least {} bytes for the process and {} LPs before any event, above --max-memory {bound}; try --max-memory {} or more",
                least as u64,
                cfg.lps,
                memory::mib(least)
            )));
        }
    }
    // Initial events go straight into the owners' pending sets (no second copy of them).
    let mut queues: Vec<Q> = (0..threads).map(|_| Q::new()).collect();
    // Initial events get ids from an id space no worker uses (worker number `threads`).
    let init_ids = (threads as u64) << 48;
    let mut initial = 0u64;
    let slots = init_lps_with(model, cfg, &mut counters, |ev| {
        let o = owner[ev.dst as usize] as usize;
        queues[o].push(TwEvent {
            ev,
            id: init_ids + initial,
            stack: None,
        });
        initial += 1;
    })?;
    let mut per_worker: Vec<Vec<TwLp<M::State, M::Event>>> = sizes
        .iter()
        .map(|&s| Vec::with_capacity(s as usize))
        .collect();
    let mut per_worker_cold: Vec<Vec<TwCold<M::State>>> = sizes
        .iter()
        .map(|&s| Vec::with_capacity(s as usize))
        .collect();
    for (i, slot) in slots.into_iter().enumerate() {
        let checkpoints = match saving {
            Saving::Copy => VecDeque::from([Checkpoint {
                at: 0,
                state: slot.state.clone(),
                meta: slot.meta,
            }]),
            Saving::Reverse => VecDeque::new(),
        };
        per_worker_cold[owner[i] as usize].push(TwCold {
            committed: 0,
            digest: slot.digest,
            sent: VecDeque::new(),
            counts: VecDeque::new(),
            checkpoints,
        });
        per_worker[owner[i] as usize].push(TwLp {
            id: i as LpId,
            state: slot.state,
            meta: slot.meta,
            done: VecDeque::new(),
            base: 0,
            dirty: false,
            last_key: EventKey {
                time: 0.0,
                seq: 0,
                src: 0,
            },
            last_plain: true,
        });
    }
    // Calibration: what the process holds now, less the dynamic bytes the workers will count
    // (initial events, initial checkpoints), is the fixed footprint (memory.rs).
    let ev_size = std::mem::size_of::<TwEvent<M::Event>>() as u64;
    let cp_size = std::mem::size_of::<Checkpoint<M::State>>() as u64;
    let record_size = std::mem::size_of::<Done<M::Event>>() as u64;
    let dynamic0 = initial * ev_size
        + if saving == Saving::Copy {
            u64::from(cfg.lps) * cp_size
        } else {
            0
        };
    let fixed = match memory::resident_bytes() {
        Some(rss) => rss.saturating_sub(dynamic0),
        // Without /proc: the LP records and a few MiB for the program itself.
        None => lp_bytes as u64 + (8 << 20),
    };
    let default_cap = opts
        .max_uncommitted
        .unwrap_or(4 * u64::from(opts.gvt_every))
        .max(1);
    let mem = MemoryBound::new(opts.max_memory, threads, default_cap, fixed);
    if let Some(bound) = opts.max_memory {
        // The pending set counts at QUEUE_SLACK times its events once the run starts.
        let projected = fixed + dynamic0 + (memory::QUEUE_SLACK - 1) * initial * ev_size;
        let least = mem
            .minimum_for(projected as f64, 2.0 * record_size as f64)
            .max(memory::peak_resident_bytes().unwrap_or(0) as f64);
        if least > bound as f64 {
            return Err(SimError::Resource(format!(
                "Time Warp needs at least {} bytes ({} resident after init: {} LPs, {initial} initial events) to run, above --max-memory {bound}; try --max-memory {} or more",
                least as u64,
                fixed + dynamic0,
                cfg.lps,
                memory::mib(least)
            )));
        }
    }
    let mut report = Report::new("timewarp", threads, cfg.queue.name(), cfg.lps, cfg.end);
    report.init_s = init_start.elapsed().as_secs_f64();

    let sh = Shared {
        links,
        model,
        n: cfg.lps,
        end: cfg.end,
        lookahead: model.lookahead(),
        saving,
        fixed_k: opts.checkpoint,
        optimism: Optimism::new(
            opts.window,
            !opts.fixed_window,
            model.lookahead(),
            threads,
            cfg.end,
        ),
        mem,
        record_size,
        gvt_every: u64::from(opts.gvt_every),
        check_eq: if opts.check_reverse { check_eq } else { None },
        block_first: if block {
            (0..=threads)
                .map(|w| (w as u64 * u64::from(cfg.lps)).div_ceil(threads as u64))
                .collect()
        } else {
            Vec::new()
        },
        owner: if block { Vec::new() } else { owner },
        local: if block { Vec::new() } else { local },
        boxes: (0..threads).map(|_| Mailbox::new()).collect(),
        gvt: GvtRegisters::new(threads),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        bytes: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        history: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        records: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        peak: AtomicU64::new(0),
        series: Mutex::new(Vec::new()),
        start: Instant::now(),
        progress: &cfg.progress,
    };
    let ncounters = counters.len();
    let results: Vec<WorkerResult<M, Q>> = std::thread::scope(|s| {
        let handles: Vec<_> = per_worker
            .into_iter()
            .zip(per_worker_cold)
            .zip(queues)
            .enumerate()
            .map(|(w, ((lps, cold), queue))| {
                let sh = &sh;
                s.spawn(move || {
                    let mut worker = Worker::new(w, sh, lps, cold, queue, ncounters);
                    let outcome = catch_unwind(AssertUnwindSafe(|| worker.run_loop()));
                    let complete = match outcome {
                        Ok(Ok(complete)) => complete,
                        Ok(Err(e)) => {
                            sh.fail(e);
                            false
                        }
                        Err(payload) => {
                            sh.fail(SimError::from_panic(
                                worker.current.0,
                                worker.current.1,
                                payload.as_ref(),
                            ));
                            false
                        }
                    };
                    worker.stats.checkpoint_interval = u64::from(worker.k);
                    (
                        worker.lps,
                        worker.cold,
                        worker.counters,
                        worker.stats,
                        complete,
                        (worker.queue, worker.cancelled),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panics are caught"))
            .collect()
    });
    if let Some(e) = sh.error.lock().ok().and_then(|mut e| e.take()) {
        return Err(e);
    }
    let wall = sh.start.elapsed().as_secs_f64();

    // Reassemble the LPs in LP order for the report.
    let mut complete = true;
    // In LP order as they come (block mapping: no second table of LPs at the end, which with
    // millions of LPs would raise the peak footprint); scattered through a table otherwise.
    let mut in_order: Vec<LpSlot<M::State>> = Vec::with_capacity(cfg.lps as usize);
    let mut all: Vec<Option<LpSlot<M::State>>> = Vec::new();
    let mut stats = Vec::new();
    let mut pending = 0;
    for (w, (lps, cold, c, st, done, (queue, cancelled))) in results.into_iter().enumerate() {
        complete &= done;
        pending += pending_at_end(queue, cancelled, &sh.boxes[w]);
        for (a, b) in counters.iter_mut().zip(&c) {
            *a += b;
        }
        for (lp, cold) in lps.into_iter().zip(cold) {
            let slot = LpSlot {
                state: lp.state,
                meta: lp.meta,
                digest: cold.digest,
            };
            if all.is_empty() && lp.id as usize == in_order.len() {
                in_order.push(slot);
                continue;
            }
            if all.is_empty() {
                all = (0..cfg.lps).map(|_| None).collect();
                for (i, s) in in_order.drain(..).enumerate() {
                    all[i] = Some(s);
                }
            }
            all[lp.id as usize] = Some(slot);
        }
        stats.push(st);
    }
    let lps: Vec<LpSlot<M::State>> = if all.is_empty() {
        in_order
    } else {
        all.into_iter()
            .map(|s| s.expect("every LP returns"))
            .collect()
    };
    finish_report(model, &lps, &counters, &mut report)?;
    let sum = |f: fn(&Stats) -> u64| stats.iter().map(f).sum::<u64>();
    report.processed = sum(|s| s.processed);
    report.rolled_back = sum(|s| s.rolled_back);
    report.complete = complete;
    report.last_time = stats.iter().map(|s| s.last_committed).fold(0.0, f64::max);
    report.pending_at_end = pending;
    report.set_wall(wall);
    let es = &mut report.executor_stats;
    let processed = report.processed.max(1) as f64;
    es.insert("efficiency".into(), report.committed as f64 / processed);
    es.insert("primary_rollbacks".into(), sum(|s| s.primary) as f64);
    es.insert("secondary_rollbacks".into(), sum(|s| s.secondary) as f64);
    es.insert("anti_messages".into(), sum(|s| s.antis) as f64);
    es.insert("coasted_events".into(), sum(|s| s.coasted) as f64);
    es.insert("checkpoints".into(), sum(|s| s.checkpoints) as f64);
    es.insert("gvt_rounds".into(), sh.gvt.rounds() as f64);
    es.insert(
        "peak_tracked_bytes".into(),
        sh.peak.load(Ordering::SeqCst) as f64,
    );
    es.insert(
        "reverse_computation".into(),
        f64::from(u8::from(saving == Saving::Reverse)),
    );
    if let Some(m) = opts.max_memory {
        es.insert("max_memory".into(), m as f64);
        let ms = sh.mem.summary();
        es.insert("memory_fixed_bytes".into(), ms.fixed as f64);
        es.insert("memory_correction_bytes".into(), ms.correction as f64);
        es.insert("memory_peak_estimate".into(), ms.peak_estimate as f64);
        es.insert("memory_cap_min".into(), ms.min_cap as f64);
        es.insert("memory_capped_rounds".into(), ms.capped_rounds as f64);
        es.insert("memory_rss_samples".into(), ms.rss_samples as f64);
    }
    let window = sh.optimism.summary();
    window.insert_into(es);
    report.workers = stats
        .iter()
        .map(|s| {
            let mut m = std::collections::BTreeMap::new();
            m.insert("processed".into(), s.processed as f64);
            m.insert("committed".into(), s.committed as f64);
            m.insert("rolled_back".into(), s.rolled_back as f64);
            m.insert("primary_rollbacks".into(), s.primary as f64);
            m.insert("secondary_rollbacks".into(), s.secondary as f64);
            m.insert("anti_messages".into(), s.antis as f64);
            m.insert("coasted_events".into(), s.coasted as f64);
            m.insert("checkpoints".into(), s.checkpoints as f64);
            m.insert("gvt_reports".into(), s.reports as f64);
            if saving == Saving::Copy {
                m.insert("checkpoint_interval".into(), s.checkpoint_interval as f64);
            }
            m.insert("peak_tracked_bytes".into(), s.peak_bytes as f64);
            m.insert(
                "efficiency".into(),
                s.committed as f64 / s.processed.max(1) as f64,
            );
            m
        })
        .collect();
    report.gvt_series = sh.series.into_inner().unwrap_or_default();
    report.window_series = window.series;
    Ok(report)
}

/// The events a worker leaves scheduled and uncommitted once every worker has stopped: its
/// pending set and its mailbox, less the positives that an anti-message cancels. On a
/// complete run none of them was processed (nothing at or after the end runs), so an
/// anti-message can only cancel a positive here, never roll anything back.
fn pending_at_end<P, Q: PendingSet<TwEvent<P>>>(
    mut queue: Q,
    mut cancelled: HashSet<u64, BuildHasherDefault<IdHasher>>,
    mailbox: &Mailbox<Msg<P>>,
) -> u64 {
    let mut ids = Vec::new();
    mailbox.take(|m| match m {
        Msg::Event(e) => ids.push(e.id),
        Msg::Anti(a) => {
            cancelled.insert(a.id);
        }
    });
    while let Some(e) = queue.pop() {
        ids.push(e.id);
    }
    ids.iter().filter(|id| !cancelled.remove(id)).count() as u64
}

impl<'s, 'a, M: Model, Q: PendingSet<TwEvent<M::Event>>> Worker<'s, 'a, M, Q> {
    fn new(
        w: usize,
        sh: &'s Shared<'a, M>,
        lps: Vec<TwLp<M::State, M::Event>>,
        cold: Vec<TwCold<M::State>>,
        queue: Q,
        ncounters: usize,
    ) -> Self {
        let workers = sh.boxes.len();
        let census = Census {
            checkpoints: cold.iter().map(|l| l.checkpoints.len() as u64).sum(),
            ..Census::default()
        };
        Worker {
            w,
            sh,
            lps,
            cold,
            queue,
            cancelled: HashSet::default(),
            outbox: (0..workers).map(|_| Vec::new()).collect(),
            out_dirty: Vec::new(),
            local_antis: Vec::new(),
            dirty: Vec::new(),
            next_id: (w as u64) << 48,
            send_min: f64::INFINITY,
            reported: 0,
            gvt: 0.0,
            counters: vec![0; ncounters],
            scratch: vec![0; ncounters],
            coast_scratch: vec![0; ncounters],
            out: Vec::with_capacity(16),
            coast_out: Vec::with_capacity(16),
            err: None,
            current: (0, 0.0),
            k: sh.fixed_k.unwrap_or(8),
            census,
            stats: Stats::default(),
            save_ns: 0.0,
            event_ns: 0.0,
            rollbacks_at_tune: 0,
            processed_at_tune: 0,
            handed_in: Stats::default(),
            horizon: 0.0,
            window_blocked: false,
        }
    }

    /// The worker's loop. Returns whether the run completed (GVT reached the end time) rather
    /// than stopping on request; errors abort every worker.
    fn run_loop(&mut self) -> Result<bool, SimError> {
        let sh = self.sh;
        let backoff = Backoff::new();
        let mut since_gvt = 0u64;
        let mut reported_progress = 0u64;
        loop {
            if sh.abort.load(Ordering::SeqCst) {
                return Ok(false);
            }
            self.drain()?;
            if let Some(r) = sh.gvt.active_round() {
                if r > self.reported {
                    // Drain after seeing the round (README, rule R1), then report.
                    self.drain()?;
                    self.report_gvt(r);
                }
            }
            let g = sh.gvt.gvt();
            if g > self.gvt {
                self.fossil(g)?;
                sh.progress.set_now(g.min(sh.end));
            }
            if self.gvt >= sh.end {
                sh.progress
                    .add_events(self.stats.processed - reported_progress);
                return Ok(true);
            }
            match self.next_event() {
                Some(ev) => {
                    backoff.reset();
                    self.process(ev)?;
                    since_gvt += 1;
                    // Under a memory cap, rounds start twice per cap's worth of events, so that
                    // fossil collection keeps up with a small cap.
                    let every = if sh.mem.bounded() {
                        sh.gvt_every.min(sh.mem.cap() / 2).max(1)
                    } else {
                        sh.gvt_every
                    };
                    if since_gvt >= every {
                        since_gvt = 0;
                        sh.gvt.try_start();
                    }
                    let p = self.stats.processed;
                    // Without a bound the figures are only for the report: GVT reports update them.
                    if p % MEMORY_EVERY == 0 && sh.mem.bounded() {
                        self.update_memory();
                    }
                    if p - reported_progress >= POLL_EVERY {
                        sh.progress.add_events(p - reported_progress);
                        reported_progress = p;
                        if sh.progress.stop_requested() {
                            return Ok(false);
                        }
                    }
                }
                None => {
                    if sh.progress.stop_requested() {
                        sh.progress
                            .add_events(self.stats.processed - reported_progress);
                        return Ok(false);
                    }
                    self.update_memory();
                    sh.gvt.try_start();
                    if backoff.is_completed() {
                        std::thread::sleep(Duration::from_micros(50));
                    } else {
                        backoff.snooze();
                    }
                }
            }
        }
    }

    /// Takes the mailbox (the bottom-half queue) into the pending set, applies anti-messages,
    /// and sends what that caused.
    fn drain(&mut self) -> Result<(), SimError> {
        let sh = self.sh;
        let mb = &sh.boxes[self.w];
        if !mb.is_empty() {
            let mut result = Ok(());
            mb.take(|m| match m {
                Msg::Event(e) => self.accept(e),
                Msg::Anti(a) => {
                    if let Err(e) = self.annihilate(a) {
                        result = Err(e);
                    }
                }
            });
            result?;
        }
        self.settle()?;
        self.flush();
        Ok(())
    }

    /// A positive event for one of this worker's LPs: annihilated if its anti-message came
    /// first, otherwise pending.
    #[inline]
    fn accept(&mut self, e: TwEvent<M::Event>) {
        if !self.cancelled.is_empty() && self.cancelled.remove(&e.id) {
            return;
        }
        self.queue.push(e);
    }

    /// Applies the local anti-messages that rollbacks produced (they may roll back more).
    fn settle(&mut self) -> Result<(), SimError> {
        while let Some(a) = self.local_antis.pop() {
            self.annihilate(a)?;
        }
        Ok(())
    }

    /// An anti-message for LP `a.dst`: rolls back past its event if processed (secondary
    /// rollback), otherwise remembers it so that the event is dropped where it is met.
    fn annihilate(&mut self, a: Anti) -> Result<(), SimError> {
        let li = self.sh.local_of(a.dst);
        let lp = &self.lps[li];
        let mut found = None;
        for (i, d) in lp.done.iter().enumerate().rev() {
            if d.ev.ev.time < a.key.time {
                break;
            }
            if d.ev.id == a.id {
                found = Some(i);
                break;
            }
        }
        match found {
            Some(i) => {
                let at = lp.base + i as u64;
                debug_assert!(
                    at >= self.cold[li].committed,
                    "an anti-message for a committed event"
                );
                self.stats.secondary += 1;
                self.rollback(li, at, Some(a.id))
            }
            None => {
                self.cancelled.insert(a.id);
                Ok(())
            }
        }
    }

    /// Undoes LP `li`'s events numbered `at` and later: sends anti-messages for what they sent,
    /// restores state and bookkeeping, and puts the events back (except `annihilate`).
    fn rollback(&mut self, li: usize, at: u64, annihilate: Option<u64>) -> Result<(), SimError> {
        let sh = self.sh;
        let lp = &mut self.lps[li];
        let cold = &mut self.cold[li];
        let me = lp.id;
        while lp.next_index() > at {
            let d = lp.done.pop_back().expect("a record above `at`");
            // The log holds sends 1.. of the record, last on top; send k carried the send
            // counter `meta.seq + k`.
            for k in (0..d.sent).rev() {
                let s = if k == 0 {
                    d.first_sent
                } else {
                    cold.sent.pop_back().expect("a send record")
                };
                let anti = Anti {
                    dst: s.dst,
                    key: EventKey {
                        time: s.time,
                        seq: d.meta.seq + u64::from(k),
                        src: me,
                    },
                    id: s.id,
                };
                let o = sh.owner_of(s.dst);
                if o == self.w {
                    self.local_antis.push(anti);
                } else {
                    if self.outbox[o].is_empty() {
                        self.out_dirty.push(o);
                    }
                    self.outbox[o].push(Msg::Anti(anti));
                }
                self.stats.antis += 1;
            }
            for _ in 1..d.counts {
                cold.counts.pop_back();
            }
            self.census.done -= 1;
            self.census.sent -= u64::from(d.sent.saturating_sub(1));
            self.census.counts -= u64::from(d.counts.saturating_sub(1));
            if sh.saving == Saving::Reverse {
                self.current = (me, d.ev.ev.time);
                let rctx = ReverseCtx {
                    me,
                    now: d.ev.ev.time,
                };
                sh.model.reverse(&mut lp.state, &d.ev.ev.payload, &rctx);
            }
            lp.meta = d.meta;
            self.stats.rolled_back += 1;
            if Some(d.ev.id) != annihilate {
                self.queue.push(d.ev);
            }
        }
        match lp.done.back() {
            Some(d) => {
                lp.last_key = d.ev.ev.key();
                lp.last_plain = d.ev.stack.is_none();
            }
            None => {
                // Only committed events (or none) precede: nothing new sorts before them.
                lp.last_key.time = 0.0;
                lp.last_key.src = 0;
                lp.last_key.seq = 0;
                lp.last_plain = true;
            }
        }
        if sh.saving == Saving::Copy {
            while cold.checkpoints.back().is_some_and(|c| c.at > at) {
                cold.checkpoints.pop_back();
                self.census.checkpoints -= 1;
            }
            let c = cold
                .checkpoints
                .back()
                .expect("a checkpoint at or below the commit point");
            lp.state = c.state.clone();
            lp.meta = c.meta;
            for idx in c.at..at {
                let d = &lp.done[(idx - lp.base) as usize];
                let now = d.ev.ev.time;
                self.current = (me, now);
                {
                    let mut ctx = Ctx::new(
                        now,
                        me,
                        sh.n,
                        sh.lookahead,
                        &mut lp.meta,
                        &mut self.coast_out,
                        &mut self.coast_scratch,
                        &mut self.err,
                    );
                    sh.model.on_event(&mut lp.state, &d.ev.ev.payload, &mut ctx);
                }
                // What a coasted event sends and counts was recorded when it first ran.
                self.coast_out.clear();
                self.coast_scratch.iter_mut().for_each(|c| *c = 0);
                self.err = None;
                self.stats.coasted += 1;
            }
        }
        Ok(())
    }

    /// The next event to run, if one may run now (before the end time, inside the optimism
    /// window, under the uncommitted-event cap).
    fn next_event(&mut self) -> Option<TwEvent<M::Event>> {
        loop {
            let head = self.queue.peek()?;
            if !self.cancelled.is_empty() && self.cancelled.contains(&head.id) {
                let id = head.id;
                self.cancelled.remove(&id);
                self.queue.pop();
                continue;
            }
            let t = head.ev.time;
            if t >= self.sh.end {
                return None;
            }
            let st = &self.stats;
            let uncommitted = st.processed - st.committed - st.rolled_back;
            // `max_uncommitted` without a memory bound, at most that under one.
            let cap = self.sh.mem.cap();
            let limit = if uncommitted >= cap {
                self.gvt
            } else {
                let limit = self.gvt + self.sh.optimism.window();
                self.window_blocked |= t > limit;
                limit
            };
            if t > limit {
                return None;
            }
            let ev = self.queue.pop();
            // The next event's LP record is most likely a cache miss (LPs are touched in
            // timestamp order, all over the table): start loading it while this one runs.
            if let Some(next) = self.queue.peek() {
                if let Some(lp) = self.lps.get(self.sh.local_of(next.ev.dst)) {
                    prefetch(lp);
                }
            }
            return ev;
        }
    }

    /// Runs one event: rolls its LP back first if the event is in the LP's past (primary
    /// rollback), saves state as configured, and records what it did.
    fn process(&mut self, ev: TwEvent<M::Event>) -> Result<(), SimError> {
        let sh = self.sh;
        let li = sh.local_of(ev.ev.dst);
        {
            let lp = &self.lps[li];
            // The LP keeps its last key by its state, so the common check does not touch the
            // history (a cache miss per event otherwise).
            let straggler = if lp.last_plain && ev.stack.is_none() {
                ev.ev.key() < lp.last_key
            } else {
                lp.done
                    .back()
                    .is_some_and(|last| ev.order(&last.ev) == std::cmp::Ordering::Less)
            };
            if straggler {
                let j = lp
                    .done
                    .partition_point(|d| d.ev.order(&ev) != std::cmp::Ordering::Greater);
                let at = lp.base + j as u64;
                self.stats.primary += 1;
                self.rollback(li, at, None)?;
                self.settle()?;
                if !self.cancelled.is_empty() && self.cancelled.remove(&ev.id) {
                    // The rollback's anti-messages cancelled this very event.
                    self.flush();
                    return Ok(());
                }
            }
        }
        let now = ev.ev.time;
        let me = ev.ev.dst;
        self.horizon = self.horizon.max(now);
        let lp = &mut self.lps[li];
        if sh.saving == Saving::Copy {
            let cold = &mut self.cold[li];
            let last = cold.checkpoints.back().map_or(0, |c| c.at);
            if lp.next_index() - last >= u64::from(self.k) {
                let sample = self.stats.checkpoints % 128 == 0;
                let t0 = sample.then(Instant::now);
                cold.checkpoints.push_back(Checkpoint {
                    at: lp.next_index(),
                    state: lp.state.clone(),
                    meta: lp.meta,
                });
                if let Some(t0) = t0 {
                    self.save_ns = t0.elapsed().as_nanos() as f64;
                }
                self.stats.checkpoints += 1;
                self.census.checkpoints += 1;
            }
        }
        let meta = lp.meta;
        self.current = (me, now);
        let before = sh.check_eq.map(|_| lp.state.clone());
        let sample =
            sh.fixed_k.is_none() && sh.saving == Saving::Copy && self.stats.processed % 128 == 0;
        let t0 = sample.then(Instant::now);
        {
            let mut ctx = Ctx::new(
                now,
                me,
                sh.n,
                sh.lookahead,
                &mut lp.meta,
                &mut self.out,
                &mut self.scratch,
                &mut self.err,
            );
            sh.model.on_event(&mut lp.state, &ev.ev.payload, &mut ctx);
        }
        if sh.links.declared && self.err.is_none() {
            // Deferred like every model error: reported only if this event commits.
            if let Err(e) = sh.links.check(me, now, &self.out) {
                self.err = Some(e);
            }
        }
        if let Some(t0) = t0 {
            self.event_ns = t0.elapsed().as_nanos() as f64;
        }
        if let (Some(eq), Some(before)) = (sh.check_eq, before) {
            let mut undone = lp.state.clone();
            let rctx = ReverseCtx { me, now };
            sh.model.reverse(&mut undone, &ev.ev.payload, &rctx);
            if !eq(&undone, &before) {
                return Err(SimError::Model(ModelError {
                    lp: me,
                    time: now,
                    message: "the reverse handler did not restore the state the event started from (checked by --check-reverse)".into(),
                }));
            }
        }
        let error = self.err.take().map(Box::new);
        let mut counts = 0u32;
        let mut first_count = (0u32, 0i64);
        for (i, c) in self.scratch.iter_mut().enumerate() {
            if *c != 0 {
                if counts == 0 {
                    first_count = (i as u32, *c);
                } else {
                    self.cold[li].counts.push_back((i as u32, *c));
                }
                *c = 0;
                counts += 1;
            }
        }
        let mut first_sent = Sent {
            dst: 0,
            time: 0.0,
            id: 0,
        };
        let mut sent = 0u32;
        if error.is_some() {
            // A failed handler's sends never leave; the error is reported if the event commits.
            self.out.clear();
        }
        for e in self.out.drain(..) {
            let id = self.next_id;
            self.next_id += 1;
            let key = e.key();
            let dst = e.dst;
            let tw = TwEvent {
                stack: ev.child_stack(key),
                ev: e,
                id,
            };
            debug_assert_eq!(
                key.seq,
                meta.seq + u64::from(sent),
                "sends are numbered from meta.seq"
            );
            if sent == 0 {
                first_sent = Sent {
                    dst,
                    time: key.time,
                    id,
                };
            } else {
                self.cold[li].sent.push_back(Sent {
                    dst,
                    time: key.time,
                    id,
                });
            }
            sent += 1;
            let o = sh.owner_of(dst);
            if o == self.w {
                self.queue.push(tw);
            } else {
                if self.outbox[o].is_empty() {
                    self.out_dirty.push(o);
                }
                self.outbox[o].push(Msg::Event(tw));
            }
        }
        lp.last_key = ev.ev.key();
        lp.last_plain = ev.stack.is_none();
        let cap0 = lp.done.capacity();
        if cap0 == 0 {
            // An LP's first record: room for one only (many LPs hold one record at a time).
            lp.done.reserve_exact(1);
        }
        lp.done.push_back(Done {
            ev,
            meta,
            sent,
            counts,
            error,
            first_sent,
            first_count,
        });
        self.census.done_cap += (lp.done.capacity() - cap0) as u64;
        if !lp.dirty {
            lp.dirty = true;
            self.dirty.push(li as u32);
        }
        self.census.done += 1;
        self.census.sent += u64::from(sent.saturating_sub(1));
        self.census.counts += u64::from(counts.saturating_sub(1));
        self.stats.processed += 1;
        self.flush();
        Ok(())
    }

    /// Pushes the outboxes into the other workers' mailboxes. A push made while a GVT round is
    /// in progress and before this worker reported in it lowers `send_min` (README, rule R2).
    fn flush(&mut self) {
        if self.out_dirty.is_empty() {
            return;
        }
        let mut min = f64::INFINITY;
        for o in self.out_dirty.drain(..) {
            let batch = std::mem::take(&mut self.outbox[o]);
            for m in &batch {
                min = min.min(m.key().time);
            }
            self.sh.boxes[o].push_batch(batch);
        }
        if let Some(r) = self.sh.gvt.active_round() {
            if r > self.reported {
                self.send_min = self.send_min.min(min);
            }
        }
    }

    /// Reports this worker's local minimum in GVT round `r` (the mailbox was just drained).
    fn report_gvt(&mut self, r: u64) {
        let sh = self.sh;
        let pending = self.queue.peek().map_or(f64::INFINITY, |e| e.ev.time);
        let local_min = pending.min(self.send_min);
        self.update_memory();
        self.stats.reports += 1;
        if sh.optimism.adaptive() {
            self.hand_in();
        }
        if let Some(g) = sh.gvt.report(self.w, r, local_min) {
            // The last reporter keeps the round's figures and adjusts the optimism window.
            let wall = sh.start.elapsed().as_secs_f64();
            sh.optimism.adjust(g, wall);
            if let Ok(mut s) = sh.series.lock() {
                if s.last().is_none_or(|&(t, _)| wall - t >= 1e-3) || g >= sh.end {
                    s.push((wall, g.min(sh.end)));
                }
            }
            if sh.mem.bounded() && g < sh.end {
                if let Some(m) = sh.mem.adjust(sh.totals(), wall, sh.record_size) {
                    sh.fail(SimError::Resource(m));
                }
            }
        }
        self.reported = r;
        self.send_min = f64::INFINITY;
    }

    /// Hands the optimism controller what this worker did since its last GVT report.
    fn hand_in(&mut self) {
        let (now, then) = (&self.stats, &self.handed_in);
        self.sh.optimism.record(&Delta {
            processed: now.processed - then.processed,
            rolled_back: now.rolled_back - then.rolled_back,
            rollbacks: now.primary + now.secondary - then.primary - then.secondary,
            committed: now.committed - then.committed,
            horizon: self.horizon,
            blocked: self.window_blocked,
        });
        self.handed_in = self.stats;
        self.horizon = 0.0;
        self.window_blocked = false;
    }

    /// Publishes this worker's memory estimate (the figures the memory bound's cap is computed
    /// from at each GVT round, and the peak for the report).
    fn update_memory(&mut self) {
        let sh = self.sh;
        let c = self.census;
        // Records at the capacity of their deques (what is allocated); the logs and
        // checkpoints at twice their length (deque growth); cancelled ids at their table's
        // capacity (an id and a control byte each).
        let history = c.done_cap * sh.record_size
            + 2 * c.sent * std::mem::size_of::<Sent>() as u64
            + 2 * c.counts * std::mem::size_of::<(u32, i64)>() as u64
            + 2 * c.checkpoints * std::mem::size_of::<Checkpoint<M::State>>() as u64;
        let bytes = history
            + memory::QUEUE_SLACK
                * self.queue.len() as u64
                * std::mem::size_of::<TwEvent<M::Event>>() as u64
            + self.cancelled.capacity() as u64 * 9;
        self.stats.peak_bytes = self.stats.peak_bytes.max(bytes);
        // Ordering: self-contained figures (see `Shared::total_bytes`).
        sh.bytes[self.w].store(bytes, Ordering::Relaxed);
        sh.history[self.w].store(history, Ordering::Relaxed);
        sh.records[self.w].store(c.done, Ordering::Relaxed);
        let total = sh.total_bytes();
        // Ordering: a monotone statistic. Read first: writing the shared line only when the
        // peak grows keeps it from bouncing between cores.
        if total > sh.peak.load(Ordering::Relaxed) {
            sh.peak.fetch_max(total, Ordering::Relaxed);
        }
    }

    /// Commits every processed event older than the new GVT `g` (commit hooks, digests,
    /// counters, deferred model errors) and frees what no rollback can need any more.
    fn fossil(&mut self, g: f64) -> Result<(), SimError> {
        let sh = self.sh;
        self.gvt = g;
        let mut i = 0;
        while i < self.dirty.len() {
            // The LP visited next is `dirty[i + 1]` if this one stays dirty, otherwise the last
            // one (moved here by `swap_remove`): prefetch a few ahead on both paths.
            // Records first, then (half as far ahead, their records being loaded by now) the
            // oldest processed event in each one's history.
            let n = self.dirty.len();
            let half = FOSSIL_PREFETCH / 2;
            for ahead in [i + FOSSIL_PREFETCH, n.wrapping_sub(FOSSIL_PREFETCH)] {
                if ahead > i && ahead < n {
                    let lj = self.dirty[ahead] as usize;
                    prefetch(&self.cold[lj]);
                    prefetch(&self.lps[lj]);
                }
            }
            for ahead in [i + half, n.wrapping_sub(half)] {
                if ahead > i && ahead < n {
                    if let Some(d) = self.lps[self.dirty[ahead] as usize].done.front() {
                        prefetch(d);
                    }
                }
            }
            let li = self.dirty[i] as usize;
            let lp = &mut self.lps[li];
            let cold = &mut self.cold[li];
            let me = lp.id;
            // Counter deltas of the first uncommitted record start at this offset.
            let mut coff: usize = lp
                .done
                .iter()
                .take((cold.committed - lp.base) as usize)
                .map(|d| d.counts.saturating_sub(1) as usize)
                .sum();
            while cold.committed < lp.next_index() {
                let d = &lp.done[(cold.committed - lp.base) as usize];
                let now = d.ev.ev.time;
                if now >= g {
                    break;
                }
                if let Some(e) = &d.error {
                    return Err(SimError::Model((**e).clone()));
                }
                self.current = (me, now);
                sh.model.commit(&d.ev.ev.payload, &CommitCtx { me, now });
                cold.digest.commit(&d.ev.ev.key());
                if d.counts > 0 {
                    let (idx, delta) = d.first_count;
                    self.counters[idx as usize] += delta;
                }
                for _ in 1..d.counts {
                    let (idx, delta) = cold.counts[coff];
                    self.counters[idx as usize] += delta;
                    coff += 1;
                }
                cold.committed += 1;
                self.stats.committed += 1;
                self.stats.last_committed = self.stats.last_committed.max(now);
            }
            // Free what lies before the last restart point at or below the commit point.
            let keep_from = match sh.saving {
                Saving::Reverse => cold.committed,
                Saving::Copy => {
                    while cold.checkpoints.len() > 1 && cold.checkpoints[1].at <= cold.committed {
                        cold.checkpoints.pop_front();
                        self.census.checkpoints -= 1;
                    }
                    cold.checkpoints[0].at
                }
            };
            while lp.base < keep_from {
                let d = lp
                    .done
                    .pop_front()
                    .expect("a record below the commit point");
                for _ in 1..d.sent {
                    cold.sent.pop_front();
                }
                for _ in 1..d.counts {
                    cold.counts.pop_front();
                }
                self.census.done -= 1;
                self.census.sent -= u64::from(d.sent.saturating_sub(1));
                self.census.counts -= u64::from(d.counts.saturating_sub(1));
                lp.base += 1;
            }
            if sh.mem.bounded() {
                // Under a memory bound an LP gives back what its history no longer uses
                // (with a million LPs, empty deques of capacity 4 alone are ~0.5 GB).
                let cap = lp.done.capacity();
                if lp.done.is_empty() {
                    lp.done = VecDeque::new();
                } else if cap > 64 && cap > 4 * lp.done.len() {
                    lp.done.shrink_to(2 * lp.done.len());
                }
                self.census.done_cap -= (cap - lp.done.capacity()) as u64;
            }
            if cold.committed == lp.next_index() {
                lp.dirty = false;
                self.dirty.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.tune_checkpoints();
        Ok(())
    }

    /// Automatic checkpoint interval: minimizes `save / k + rollbacks * (k - 1) / 2 * event`
    /// per processed event, i.e. `k = sqrt(2 save / (rollback rate * event))`.
    fn tune_checkpoints(&mut self) {
        if self.sh.fixed_k.is_some() || self.sh.saving != Saving::Copy {
            return;
        }
        let processed = self.stats.processed - self.processed_at_tune;
        if processed < 1024 {
            return;
        }
        let rollbacks = self.stats.primary + self.stats.secondary - self.rollbacks_at_tune;
        self.processed_at_tune = self.stats.processed;
        self.rollbacks_at_tune = self.stats.primary + self.stats.secondary;
        let rate = rollbacks as f64 / processed as f64;
        let k = if rate <= 0.0 || self.event_ns <= 0.0 {
            f64::from(AUTO_K_MAX)
        } else {
            (2.0 * self.save_ns.max(1.0) / (rate * self.event_ns)).sqrt()
        };
        self.k = (k.round() as u32).clamp(1, AUTO_K_MAX);
    }
}
