//! Time Warp across worker processes ([`Simulation::processes`] with `Executor::TimeWarp`,
//! `chronon run --procs P --sync timewarp`): P processes of W threads each; a worker is
//! (process, thread), numbered `p * W + t`, and the LP mapping is over all `P × W` workers. The
//! protocol is the same code as with threads (`worker.rs`, `rollback.rs`, `fossil.rs`), over
//! the shared-memory ring mesh (`transport/shm/`; Time Warp's records: `transport/shm/tw.rs`)
//! with the GVT registers in its header.
//!
//! Launching, gathering and `model_stats` are those of the conservative multi-process runs
//! (`conservative/procs/`: `parent_run`, `child_main`): every child builds the model from the
//! same configuration, initializes every LP (so initial event ids agree), keeps its own
//! workers' LPs and events, runs them, and reports its LPs' committed fingerprint part and
//! count, committed counters, the operations `Model::finish` made per LP, and per-worker
//! figures. Each LP commits in its owner process only, so commit hooks run once.
//!
//! [`Simulation::processes`]: crate::Simulation::processes

use std::sync::Arc;
use std::time::Instant;

use super::gvt::GvtRegisters;
use super::options::{StateSaving, TimeWarpConfig};
use super::report::{insert_preempt, pending_at_end, totals_from_workers, worker_figures};
use super::setup::{build, spawn, Built};
use crate::error::{guard, ConfigError, Setting, SimError};
use crate::executor::conservative::procs::{
    child_main, finish_ops, io_error, parent_run, peak_rss_bytes, ChildOut, ProcsOptions, ABORTED,
};
use crate::executor::RunConfig;
use crate::fingerprint::Fingerprint;
use crate::model::{LpId, Model};
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::shm::{Control, ShmSafe, MAX_WORKERS};
use crate::stats::Report;
use crate::transport::shm::ShmWires;
use crate::tw_msg::TwEvent;

/// A multi-process Time Warp run, as a function pointer (instantiated where `M::Event:
/// ShmSafe` is known, called from `Simulation::run`, which does not know it).
pub(crate) type TwProcsFn<M> =
    fn(&M, &RunConfig, usize, &TimeWarpConfig, &ProcsOptions) -> Result<Report, SimError>;

/// Runs `model` under Time Warp over `procs.procs` processes of `threads` threads (parent), or,
/// in a worker process, does that worker's part and exits.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    procs: &ProcsOptions,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    check(model, threads, opts, procs.procs)?;
    let sig = format!(
        "lps={} end={:x} seed={} queue={} sync=timewarp threads={threads} procs={} payload={} options={opts:?}",
        cfg.lps,
        cfg.end.to_bits(),
        cfg.seed,
        cfg.queue.name(),
        procs.procs,
        if procs.copy { "copy" } else { "zero-copy" },
    );
    match crate::shm::Worker::from_env() {
        Some(Ok(w)) => child_main(model, w, &sig, |w, control, states| match cfg.queue {
            QueueKind::Heap => child_run::<M, HeapQueue<TwEvent<M::Event>>>(
                model, cfg, threads, opts, w, control, states, procs.copy,
            ),
            QueueKind::Ladder => child_run::<M, LadderQueue<TwEvent<M::Event>>>(
                model, cfg, threads, opts, w, control, states, procs.copy,
            ),
        }),
        Some(Err(e)) => {
            // The parent is gone (or the environment is broken): nothing to report to.
            eprintln!("chronon: worker process cannot start: {e}");
            std::process::exit(3)
        }
        None => parent(model, cfg, threads, opts, procs, &sig),
    }
}

/// What a multi-process Time Warp run cannot do, before anything starts.
fn check<M: Model>(
    model: &M,
    threads: usize,
    opts: &TimeWarpConfig,
    procs: usize,
) -> Result<(), SimError> {
    if procs == 0 {
        return Err(ConfigError::new(
            Setting::Processes,
            0,
            "it must be at least 1 worker process",
        )
        .into());
    }
    if threads == 0 {
        return Err(ConfigError::new(Setting::Threads, 0, "it must be at least 1").into());
    }
    let n = procs.saturating_mul(threads);
    if n > MAX_WORKERS {
        return Err(SimError::config(Setting::Processes, format!(
            "$processes {procs} × $threads {threads} is {n} workers; a multi-process run holds at most {MAX_WORKERS}"
        )));
    }
    if opts.check_reverse {
        return Err(SimError::config(
            Setting::CheckReverse,
            "$check_reverse does not run across processes; leave out $processes or $check_reverse",
        ));
    }
    let globals = guard("Model::global_events", None, || model.global_events())?;
    if !globals.is_empty() {
        return Err(SimError::config(Setting::Processes, "this model has global events, which read every LP's state; no process holds every LP's state in a multi-process run, so it cannot run with $processes (run it with $threads)"));
    }
    Ok(())
}

// ---------------------------------------------------------------- parent

fn parent<M: Model>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    popts: &ProcsOptions,
    sig: &str,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    let procs = popts.procs;
    let n = procs * threads;
    let start = Instant::now();
    let control = Control::create(n).map_err(io_error("cannot create the control segment"))?;
    let header = GvtRegisters::shared_bytes(n);
    let seg =
        ShmWires::<M::Event>::create(n, header).map_err(io_error("cannot create the rings"))?;
    // Safety: the registers are the mesh's header, at the start of the fresh segment,
    // page-aligned, `shared_bytes` long, and no process has attached yet.
    unsafe { GvtRegisters::init_shared(seg.base(), n) };
    let net = Arc::new(seg);
    let owner = opts
        .mapping
        .owners(cfg.lps, n)
        .map_err(|m| SimError::config(Setting::Mapping, m))?;
    let (outs, stats) = parent_run(model, cfg, popts, threads, &owner, sig, &control, &net)?;
    // Safety: `create` initialized the GVT registers at the start of the segment for `n`
    // workers; the Arc keeps it mapped; every child has exited.
    let gvt = unsafe { GvtRegisters::attach_shared(net.base(), n, net.clone()) };
    let mut report = gather(model, cfg, threads, opts, outs, stats, gvt.rounds());
    let es = &mut report.executor_stats;
    es.insert("procs".into(), procs as f64);
    es.insert("procs_total_s".into(), start.elapsed().as_secs_f64());
    Ok(report)
}

/// The one report of a run across parts (processes, or MPI ranks) from the parts' outputs:
/// fingerprint parts added, counts summed, per-worker figures concatenated, `stats` (computed
/// in LP order by the caller) as `model_stats`.
#[allow(clippy::too_many_arguments)]
pub(super) fn gather<M: Model>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    outs: Vec<ChildOut>,
    stats: crate::model::ModelStats,
    gvt_rounds: u64,
) -> Report {
    let n = outs.len() * threads;
    let mut report = Report::new("timewarp", threads, cfg.queue.name(), cfg.lps, cfg.end);
    let mut fingerprint = 0u64;
    let mut wall = 0f64;
    let mut peak_rss = 0u64;
    for o in outs {
        fingerprint = fingerprint.wrapping_add(o.fingerprint);
        report.committed += o.committed;
        report.processed += o.processed;
        report.pending_at_end += o.pending;
        report.complete &= !o.stopped;
        report.last_time = report.last_time.max(o.last_time);
        report.init_s = report.init_s.max(o.init_s);
        wall = wall.max(o.wall_s);
        peak_rss += o.peak_rss;
        report.workers.extend(o.workers);
    }
    report.placement = crate::placement::gathered(cfg.pin, n, &report.workers);
    let sum = |k: &str| -> f64 { report.workers.iter().filter_map(|w| w.get(k)).sum() };
    report.rolled_back = sum("rolled_back") as u64;
    let mut es = std::collections::BTreeMap::new();
    es.insert(
        "efficiency".into(),
        report.committed as f64 / report.processed.max(1) as f64,
    );
    for k in [
        "primary_rollbacks",
        "secondary_rollbacks",
        "anti_messages",
        "coasted_events",
        "checkpoints",
    ] {
        es.insert(k.to_string(), sum(k));
    }
    totals_from_workers(&mut es, &report.workers, report.rolled_back);
    es.insert("gvt_rounds".into(), gvt_rounds as f64);
    let reverse = match opts.state_saving {
        StateSaving::Copy => false,
        StateSaving::Reverse => true,
        StateSaving::Auto => model.reverse_handler().is_some(),
    };
    es.insert("reverse_computation".into(), f64::from(u8::from(reverse)));
    es.insert("workers_total".into(), n as f64);
    // The worker processes' (ranks') peak resident sets, summed (the parent's own is the
    // CLI's `peak_rss_bytes`).
    es.insert("workers_peak_rss_bytes".into(), peak_rss as f64);
    report.executor_stats.extend(es);
    report.fingerprint = Fingerprint(fingerprint);
    cfg.progress.set_now(report.last_time);
    report.model_stats = stats;
    report.set_wall(wall);
    report
}

// ---------------------------------------------------------------- child

#[allow(clippy::too_many_arguments)]
fn child_run<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    w: &mut crate::shm::Worker,
    control: &Control,
    states: &mut Vec<Option<M::State>>,
    copy: bool,
) -> Result<ChildOut, SimError>
where
    M::Event: ShmSafe,
{
    let (p, procs) = (w.index, w.procs);
    let (n, base) = (procs * threads, p * threads);
    let seg = w
        .segment(1)
        .map_err(io_error("worker process: the rings segment"))?;
    let header = GvtRegisters::shared_bytes(n);
    let mut wires = ShmWires::<M::Event>::attach(
        seg,
        header,
        control.clone(),
        n,
        p as u32,
        base,
        threads,
        copy,
    )
    .map_err(io_error("worker process: the rings segment"))?;
    // Safety: the parent initialized the registers in the mesh's header for `n` workers
    // before starting this process; `keep` keeps the segment mapped.
    let gvt = unsafe { GvtRegisters::attach_shared(wires.header(), n, wires.keep()) };
    wires.keep_at_end = cfg.saving();
    let Built {
        sh,
        parts,
        counters: mut init_counters,
        report,
        saving,
    } = build::<M, Q>(
        model,
        cfg,
        n,
        opts,
        None,
        base..base + threads,
        Some((Box::new(wires), gvt)),
    )?;
    // The counters `init` moved are counted once, by process 0.
    if p != 0 {
        init_counters.iter_mut().for_each(|c| *c = 0);
    }
    let start = Instant::now();
    let results = spawn(&sh, base, parts, |w| {
        // Every worker of every process stops sending before anyone takes its leftovers.
        let _ = sh.wires.end_barrier(w);
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(e) = sh.take_error() {
        return Err(e);
    }
    if results.iter().any(|r| !r.4) && control.aborted().is_some() {
        return Err(SimError::Process(ABORTED.into()));
    }
    let pending = sh.wires.unsent();
    let mut out = part_out(
        model,
        cfg,
        &sh,
        results,
        init_counters,
        pending,
        base,
        (report.init_s, wall_s),
        states,
        saving,
    )?;
    // The transport's own figure, per worker (as under the conservative protocols).
    for (k, figures) in out.workers.iter_mut().enumerate() {
        figures.insert(
            "ring_full_retries".into(),
            sh.wires.full_retries(base + k) as f64,
        );
    }
    Ok(out)
}

/// A part's (process's, rank's) output once its workers stopped: its LPs' fingerprint part and
/// committed count, committed counters (with `counters`, what `init` moved and the part
/// counts), pending events (`pending` plus each worker's leftovers), per-worker figures, the
/// operations `Model::finish` made per LP; `states` gets its LPs' final states.
#[allow(clippy::too_many_arguments)]
pub(super) fn part_out<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    sh: &super::shared::Shared<'_, M>,
    results: Vec<super::report::WorkerResult<M, Q>>,
    counters: Vec<i64>,
    mut pending: u64,
    base: usize,
    (init_s, wall_s): (f64, f64),
    states: &mut Vec<Option<M::State>>,
    saving: super::options::Saving,
) -> Result<ChildOut, SimError> {
    let mut counters = counters;
    let mut complete = true;
    let mut workers = Vec::with_capacity(results.len());
    let mut last_time = 0f64;
    let (mut processed, mut committed) = (0u64, 0u64);
    let mut fingerprint = 0u64;
    let mut mine = Vec::new();
    *states = (0..cfg.lps).map(|_| None).collect();
    // A run that ends at a checkpoint's cut: this part's LPs' bookkeeping and pending events
    // (every such event has its own key in its entry: see `report::pending_at_end`).
    let to_part = cfg.saving() && results.iter().all(|r| r.4);
    let mut metas = Vec::new();
    let mut left = Vec::new();
    for (k, (lps, cold, c, st, done, (queue, cancelled))) in results.into_iter().enumerate() {
        drop(cold);
        complete &= done;
        pending += pending_at_end(queue, cancelled, &*sh.wires, base + k, |e| {
            if to_part {
                debug_assert!(!e.stacked(), "an event pending at a cut is not stacked");
                left.push(crate::event::Event::new(e.head(), e.dst, e.payload));
            }
        });
        for (a, b) in counters.iter_mut().zip(&c) {
            *a += b;
        }
        processed += st.processed;
        last_time = last_time.max(st.last_committed);
        let mut figures = worker_figures(&st, saving);
        if let Some(p) = sh.preempt {
            insert_preempt(&mut figures, &st.preempt, p.ticks.is_some());
        }
        workers.push(figures);
        let first = mine.len();
        mine.extend((0..lps.len()).map(|li| sh.lp_id(base + k, li)));
        let ids = &mine[first..];
        fingerprint = fingerprint.wrapping_add(
            Fingerprint::from_digests(ids.iter().zip(&lps).map(|(&id, l)| (id, &l.digest))).0,
        );
        committed += lps.iter().map(|l| l.digest.count()).sum::<u64>();
        for (&id, l) in ids.iter().zip(lps) {
            if to_part {
                metas.push((id, l.meta, l.digest));
            }
            states[id as usize] = Some(l.state);
        }
    }
    // Part `base` (this process's first worker): its LPs, their events and its counters.
    if let Some(mut part) = cfg.part_writer::<M>(base, &counters).filter(|_| to_part) {
        for (id, meta, digest) in &metas {
            let state = states[*id as usize].as_ref().expect("this process's LP");
            part.lp_parts(*id, state, meta, digest);
        }
        for e in &left {
            part.event(e);
        }
        cfg.part_done(part.finish());
    }
    crate::placement::mark_workers(&sh.pinner.placement(), &mut workers);
    let finish = finish_ops(
        model,
        cfg.known_end(complete),
        mine.iter().map(|&lp| {
            (
                lp as LpId,
                states[lp as usize].as_ref().expect("this process's LP"),
            )
        }),
    )?;
    Ok(ChildOut {
        result: Ok(()),
        fingerprint,
        committed,
        processed,
        pending,
        in_transit: 0,
        tmc_left: 0,
        stopped: !complete,
        last_time,
        init_s,
        wall_s,
        peak_rss: peak_rss_bytes(),
        counters,
        finish,
        workers,
        trace: Vec::new(),
    })
}
