//! Setting up a Time Warp run: checks, LPs and initial events per worker, shared state, threads.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::time::Instant;

use super::global::Globals;
use super::gvt::GvtRegisters;
use super::history::{Extra, Rec, NONE};
use super::lp::{Checkpoint, TwCold, TwLp};
use super::memory::{self, MemoryBound};
use super::on_threads::finish;
use super::optimism::Optimism;
use super::options::{PreemptConfig, Saving, StateSaving, TimeWarpConfig};
use super::report::WorkerResult;
use super::shared::{Shared, StateEq};
use super::worker::Worker;
use crate::error::{Setting, SimError};
use crate::executor::{init_lps_each, run_part_threads, RunConfig};
use crate::model::{LpId, Model, ReverseFn};
use crate::partition::Mapping;
use crate::placement::{touch_queue, touch_vec};
use crate::queue::{with_queue, PendingSet};
use crate::stats::Report;
use crate::transport::tw::WiresBox;
use crate::tw_msg::TwEvent;

/// Runs `model` under Time Warp on `threads` workers.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    check_eq: Option<StateEq<M::State>>,
) -> Result<Report, SimError> {
    with_queue!(
        cfg.queue,
        run_with::<M>(model, cfg, threads, opts, check_eq)
    )
}

pub(super) fn run_with<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    check_eq: Option<StateEq<M::State>>,
) -> Result<Report, SimError> {
    let Built {
        sh,
        parts,
        counters,
        report,
        saving,
    } = build::<M, Q>(model, cfg, threads, opts, check_eq, 0..threads, None)?;
    let results = spawn(&sh, 0, parts, |_| {});
    if let Some(e) = sh.take_error() {
        return Err(e);
    }
    let wall = sh.start.elapsed().as_secs_f64();
    finish(
        model, cfg, opts, sh, results, counters, report, wall, saving,
    )
}

/// A run set up: what its workers share, and the LPs, cold records and pending set of each
/// worker of this process, in worker order.
pub(super) struct Built<'a, M: Model, Q> {
    pub(super) sh: Shared<'a, M>,
    #[allow(clippy::type_complexity)]
    pub(super) parts: Vec<(Vec<TwLp<M::State>>, Vec<TwCold<M::State, M::Event>>, Q)>,
    /// The counters `init` moved.
    pub(super) counters: Vec<i64>,
    pub(super) report: Report,
    pub(super) saving: Saving,
}

/// The state saving a run uses and the reverse handler it keeps, checked against the options.
fn state_saving<M: Model>(
    model: &M,
    opts: &TimeWarpConfig,
    comparable: bool,
) -> Result<(Saving, Option<ReverseFn<M>>), SimError> {
    let undo = crate::error::guard("Model::reverse_handler", None, || model.reverse_handler())?;
    let saving = match opts.state_saving {
        StateSaving::Copy => Saving::Copy,
        StateSaving::Reverse if undo.is_none() => {
            return Err(SimError::config(Setting::StateSaving, "reverse state saving needs a model with a reverse handler (Model::reverse_handler returns None); use copy or auto"))
        }
        StateSaving::Reverse => Saving::Reverse,
        StateSaving::Auto if undo.is_some() => Saving::Reverse,
        StateSaving::Auto => Saving::Copy,
    };
    if saving == Saving::Reverse && opts.save_every.is_some() {
        return Err(SimError::config(Setting::StateSaving, format!(
            "$save_every applies to copy state saving only; this run uses reverse state saving ({}), which saves no states",
            if opts.state_saving == StateSaving::Reverse {
                "asked for"
            } else {
                "chosen automatically because the model has a reverse handler; ask for copy to use $save_every"
            }
        )));
    }
    if opts.check_reverse && (saving != Saving::Reverse || !comparable) {
        return Err(SimError::config(Setting::CheckReverse, "checking reverse handlers needs reverse state saving (a model with a reverse handler) and comparable states"));
    }
    Ok((
        saving,
        if saving == Saving::Reverse {
            undo
        } else {
            None
        },
    ))
}

/// Where each LP runs: its worker and its index among the worker's LPs.
///
/// Block mapping is computed: LP i is worker floor(i * W / n)'s, whose first LP is
/// ceil(w * n / W) (no table of a million owners and indices, 8 MB, at the resident peak).
/// Other mappings keep the tables LP -> (worker, index) and index -> LP.
struct Placement {
    /// Block mapping: worker w's first LP, for w in 0..=W (empty otherwise).
    block_first: Vec<u64>,
    /// Other mappings: LP -> worker, LP -> index at its worker, worker -> its LPs.
    owner: Vec<u32>,
    local: Vec<u32>,
    ids: Vec<Vec<LpId>>,
    /// LPs per worker.
    sizes: Vec<u32>,
    lps: u32,
    threads: usize,
}

impl Placement {
    fn new(mapping: &Mapping, lps: u32, threads: usize) -> Result<Placement, SimError> {
        if *mapping == Mapping::Block {
            let block_first: Vec<u64> = (0..=threads)
                .map(|w| (w as u64 * u64::from(lps)).div_ceil(threads as u64))
                .collect();
            let sizes = block_first
                .windows(2)
                .map(|f| (f[1] - f[0]) as u32)
                .collect();
            return Ok(Placement {
                block_first,
                owner: Vec::new(),
                local: Vec::new(),
                ids: Vec::new(),
                sizes,
                lps,
                threads,
            });
        }
        let owner = mapping
            .owners(lps, threads)
            .map_err(|m| SimError::config(Setting::Mapping, m))?;
        let mut local = vec![0u32; owner.len()];
        let mut ids: Vec<Vec<LpId>> = vec![Vec::new(); threads];
        for (i, &o) in owner.iter().enumerate() {
            local[i] = ids[o as usize].len() as u32;
            ids[o as usize].push(i as LpId);
        }
        let sizes = ids.iter().map(|v| v.len() as u32).collect();
        Ok(Placement {
            block_first: Vec::new(),
            owner,
            local,
            ids,
            sizes,
            lps,
            threads,
        })
    }

    /// LP `i`'s worker.
    fn owner_of(&self, i: usize) -> u32 {
        if self.owner.is_empty() {
            crate::partition::block_owner(i, self.lps as usize, self.threads)
        } else {
            self.owner[i]
        }
    }
}

/// This process's workers after `init`: their LPs, cold records (copy state saving) and
/// pending sets, and the initial events counted.
struct Initialized<M: Model, Q> {
    lps: Vec<Vec<TwLp<M::State>>>,
    cold: Vec<Vec<TwCold<M::State, M::Event>>>,
    queues: Vec<Q>,
    /// Initial events of the whole run, and of this process's workers.
    initial: u64,
    mine_initial: u64,
    /// LPs of this process's workers.
    mine_lps: u64,
}

/// Runs `init` for every LP (every process initializes every LP the same way, so initial
/// event ids agree) and keeps what belongs to the workers in `mine`: each LP goes into its
/// worker's records as its `init` returns (no table of every LP's slot beside them), its
/// initial events straight into the owner's pending set (no second copy of them).
fn init_workers<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    counters: &mut [i64],
    place: &Placement,
    mine: std::ops::Range<usize>,
    copy: bool,
) -> Result<Initialized<M, Q>, SimError> {
    let (base, here) = (mine.start, mine.len());
    let is_mine = |o: u32| mine.contains(&(o as usize));
    let mut queues: Vec<Q> = (0..here).map(|_| Q::new()).collect();
    // Initial events get ids from an id space no worker uses (worker number `threads`).
    let init_ids = (place.threads as u64) << 48;
    let (mut initial, mut mine_initial, mut mine_lps) = (0u64, 0u64, 0u64);
    let sizes = &place.sizes[mine.clone()];
    let mut lps: Vec<Vec<TwLp<M::State>>> = sizes
        .iter()
        .map(|&s| Vec::with_capacity(s as usize))
        .collect();
    let mut cold: Vec<Vec<TwCold<M::State, M::Event>>> = sizes
        .iter()
        .map(|&s| Vec::with_capacity(if copy { s as usize } else { 0 }))
        .collect();
    init_lps_each(
        model,
        cfg,
        counters,
        |ev| {
            let o = place.owner_of(ev.dst as usize);
            if is_mine(o) {
                queues[o as usize - base].push(TwEvent::plain(ev, init_ids + initial));
                mine_initial += 1;
            }
            initial += 1;
        },
        |i, slot| {
            let o = place.owner_of(i as usize);
            if !is_mine(o) {
                return;
            }
            mine_lps += 1;
            let o = o as usize - base;
            if copy {
                // Events are numbered from the LP's first: a run restored from a checkpoint
                // starts after the events it committed before the cut.
                let n = slot.digest.count();
                cold[o].push(TwCold {
                    committed: n,
                    checkpoints: VecDeque::from([Checkpoint {
                        at: n,
                        state: slot.state.clone(),
                        meta: slot.meta,
                    }]),
                    coast: VecDeque::new(),
                    coast_base: n,
                    arena_base: n,
                });
            }
            lps[o].push(TwLp::new(slot.state, slot.meta, slot.digest, NONE));
        },
    )?;
    Ok(Initialized {
        lps,
        cold,
        queues,
        initial,
        mine_initial,
        mine_lps,
    })
}

/// The memory bound of this process (memory.rs), calibrated after `init`: what the process
/// holds now, less the dynamic bytes the workers will count (initial events, initial
/// checkpoints), is the fixed footprint. A bound below what the run needs to start is refused
/// with the bound that would do.
fn memory_bound<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    opts: &TimeWarpConfig,
    lps: u32,
    init: &Initialized<M, Q>,
    copy: bool,
    lp_bytes: f64,
    record_size: u64,
) -> Result<MemoryBound, SimError> {
    let ev_size = std::mem::size_of::<TwEvent<M::Event>>() as u64;
    let cp_size = std::mem::size_of::<Checkpoint<M::State>>() as u64;
    let dynamic0 = init.mine_initial * ev_size + if copy { init.mine_lps * cp_size } else { 0 };
    let fixed = match memory::resident_bytes() {
        Some(rss) => rss.saturating_sub(dynamic0),
        // Without /proc: the LP records and a few MiB for the program itself.
        None => lp_bytes as u64 + (8 << 20),
    };
    let default_cap = opts
        .max_uncommitted
        .unwrap_or(4 * u64::from(opts.gvt_every))
        .max(1);
    // The bound covers this process and its workers.
    let mem = MemoryBound::new(opts.max_memory, init.queues.len(), default_cap, fixed);
    if let Some(bound) = opts.max_memory {
        // Once the run starts a pending set counts at what the bound charges for it (its
        // initial events are in `dynamic0` at their bytes).
        let charged: f64 = init.queues.iter().map(memory::pending_bytes).sum();
        let projected = (fixed + dynamic0 - init.mine_initial * ev_size) as f64 + charged;
        let least = mem
            .minimum_for(projected, 2.0 * record_size as f64)
            .max(memory::peak_resident_bytes().unwrap_or(0) as f64);
        if least > bound as f64 {
            return Err(SimError::Resource(format!(
                "Time Warp needs at least {} bytes ({} resident after init: {lps} LPs, {} initial events) to run, above --max-memory {bound}; try --max-memory {} or more",
                least as u64,
                fixed + dynamic0,
                init.initial,
                memory::mib(least)
            )));
        }
    }
    Ok(mem)
}

/// Limits no setting passes: at most `u16::MAX` model counters (`counters`), and a memory bound
/// that holds at least what the process holds now plus the `lps` LP records (`lp_bytes`; the
/// bound covers the process: memory.rs).
fn check_limits(
    opts: &TimeWarpConfig,
    lps: u32,
    counters: usize,
    lp_bytes: f64,
) -> Result<(), SimError> {
    if counters > usize::from(u16::MAX) {
        return Err(SimError::config(
            Setting::Model,
            format!(
                "Time Warp supports at most {} model counters; the model declares {counters}",
                u16::MAX,
            ),
        ));
    }
    if let Some(bound) = opts.max_memory {
        let least = (memory::resident_bytes().unwrap_or(0) as f64 + lp_bytes) / memory::TARGET;
        if least > bound as f64 {
            return Err(SimError::Resource(format!(
                "Time Warp needs at least {} bytes for the process and {lps} LPs before any event, above --max-memory {bound}; try --max-memory {} or more",
                least as u64,
                memory::mib(least)
            )));
        }
    }
    Ok(())
}

/// Checks a run of `threads` workers and sets up the workers in `mine` (all of them with
/// threads; a process's own with `--procs`, where `net` brings the transport between
/// processes and the shared GVT registers).
pub(super) fn build<'a, M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &'a M,
    cfg: &'a RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    check_eq: Option<StateEq<M::State>>,
    mine: std::ops::Range<usize>,
    net: Option<(WiresBox<'a, M::Event>, GvtRegisters)>,
) -> Result<Built<'a, M, Q>, SimError> {
    opts.validate()?;
    let globals = crate::executor::global::GlobalQueue::for_run(model, cfg)?;
    let links = crate::executor::links::Links::new(model, cfg.lps)?;
    if threads >= 1 << 15 {
        return Err(SimError::config(
            Setting::Threads,
            format!("Time Warp runs at most 32767 threads; got {threads}"),
        ));
    }
    let (saving, undo) = state_saving(model, opts, check_eq.is_some())?;
    let place = Placement::new(&opts.mapping, cfg.lps, threads)?;
    let here = mine.len();
    crate::partition::set_this_part(
        (here != threads)
            .then(|| crate::partition::part_bits(cfg.lps, |lp| place.owner_of(lp), mine.clone())),
    );

    let init_start = Instant::now();
    let mut counters = vec![0i64; model.counter_names().len()];
    // Copy state saving only keeps a cold record per LP (reverse state saving reads none).
    let copy = saving == Saving::Copy;
    let cold_size = if copy {
        std::mem::size_of::<TwCold<M::State, M::Event>>()
    } else {
        0
    };
    let lp_bytes = (std::mem::size_of::<TwLp<M::State>>() + cold_size) as f64 * f64::from(cfg.lps);
    check_limits(opts, cfg.lps, counters.len(), lp_bytes)?;
    let first_part = mine.start == 0;
    let init = init_workers::<M, Q>(model, cfg, &mut counters, &place, mine, copy)?;
    // Every part runs every LP's `init`; the counters it moved are counted once, by the part
    // with worker 0.
    if !first_part {
        counters.iter_mut().for_each(|c| *c = 0);
    }
    // A record in the arena and one send in the extras log.
    let record_size =
        (std::mem::size_of::<Option<Rec<M::Event>>>() + std::mem::size_of::<Extra>()) as u64;
    let mem = memory_bound(opts, cfg.lps, &init, copy, lp_bytes, record_size)?;
    let mut report = Report::new("timewarp", here, cfg.queue.name(), cfg.lps, cfg.end);
    report.init_s = init_start.elapsed().as_secs_f64();
    let safe =
        super::safe::SafeRule::choose(opts, saving, threads, net.is_some(), model.lookahead());
    let (wires, gvt) = match net {
        Some(net) => net,
        None => (
            crate::transport::tw::threads::<M::Event>(threads),
            GvtRegisters::new(threads),
        ),
    };

    // The machine is read before the run's clock starts.
    let pinner = crate::placement::Pinner::new(cfg.pin, threads);
    let sh = Shared {
        run: cfg.clone(),
        links,
        model,
        n: cfg.lps,
        end: cfg.end,
        lookahead: model.lookahead(),
        saving,
        undo,
        safe,
        fixed_k: opts.save_every,
        optimism: Optimism::new(
            opts.window,
            !opts.fixed_window,
            model.lookahead(),
            here,
            cfg.end,
        ),
        mem,
        record_size,
        gvt_every: u64::from(opts.gvt_every),
        check_eq: if opts.check_reverse { check_eq } else { None },
        block_first: place.block_first,
        owner: place.owner,
        local: place.local,
        ids: place.ids,
        workers: threads,
        wires,
        gvt,
        globals: Globals::new(globals, cfg.end, threads),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        bytes: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        history: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        records: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        peak: AtomicU64::new(0),
        series: Mutex::new(Vec::new()),
        start: Instant::now(),
        progress: &cfg.progress,
        preempt: opts.preempt.then_some(PreemptConfig {
            max_suspended: opts.max_suspended,
            ticks: opts.ticks,
        }),
        tick_flags: (0..threads).map(|_| Default::default()).collect(),
        pinner,
        driver: None,
    };
    Ok(Built {
        sh,
        parts: init
            .lps
            .into_iter()
            .zip(init.cold)
            .zip(init.queues)
            .map(|((l, c), q)| (l, c, q))
            .collect(),
        counters,
        report,
        saving,
    })
}

/// Runs one thread per worker of this part (numbered from `base`: threads, a process or a
/// rank) until the run ends, through the part launcher every protocol shares
/// (`executor::run_part_threads`); `after(w)` runs in worker `w`'s thread once its loop has
/// ended (the end-of-run barrier across processes).
#[allow(clippy::type_complexity)]
pub(super) fn spawn<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    sh: &Shared<'_, M>,
    base: usize,
    parts: Vec<(Vec<TwLp<M::State>>, Vec<TwCold<M::State, M::Event>>, Q)>,
    after: impl Fn(usize) + Sync,
) -> Vec<WorkerResult<M, Q>> {
    let ncounters = sh.model.counter_names().len();
    // The worker's LP records, cold records and pending set move into memory its thread
    // touches first (its history arena is its own from the start).
    let touch = |(l, c, q)| (touch_vec(l), touch_vec(c), touch_queue(q));
    run_part_threads(
        &sh.run,
        &sh.pinner,
        base,
        parts,
        touch,
        |w, (lps, cold, queue)| {
            let mut worker = Worker::new(w, sh, lps, cold, queue, ncounters);
            let mut outcome = catch_unwind(AssertUnwindSafe(|| worker.run_loop()));
            // Suspended contexts are dropped; their events are pending again and their LPs'
            // states are restored (copy state saving coasts forward: a failure or panic there is
            // the run's error if it had none).
            let released = catch_unwind(AssertUnwindSafe(|| worker.release_contexts()));
            if matches!(outcome, Ok(Ok(_))) {
                match released {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => outcome = Ok(Err(e)),
                    Err(p) => outcome = Err(p),
                }
            }
            worker.stats.preempt = worker.preempt.stats;
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
            after(w);
            worker.stats.checkpoint_interval = u64::from(worker.interval.k());
            worker.committed_digests();
            if let Some((user, sys)) = crate::cpu::thread_times() {
                worker.stats.cpu_user = user;
                worker.stats.cpu_sys = sys;
            }
            (
                (worker.lps, worker.clocks),
                worker.cold,
                worker.counters,
                worker.stats,
                complete,
                (worker.queue, worker.cancelled),
            )
        },
    )
}
