//! Multi-process runs of the conservative executors ([`Simulation::processes`], `chronon run
//! --procs P`): P worker processes on one machine, W threads each; a worker is (process,
//! thread), numbered `p * W + t`, and the LP mapping is over all `P × W` workers. The protocols
//! are the same code as with threads (`rounds.rs`, `null_message.rs`), over the shared-memory
//! transport (`transport/shm.rs`).
//!
//! The parent creates the control and net segments and one pipe per child, re-executes this
//! binary P times (`shm::Launcher`: a dead or failed child stops every other one), and gathers
//! one report from what the children write on their pipes. Every child builds the model from
//! the same configuration and reaches the same [`Simulation::run`] (the signature in
//! `CHRONON_PROCS_RUN` is checked), initializes every LP (deterministic, so every process has
//! the same initial events and LP streams; it keeps its own workers' events), runs its
//! workers, and reports: errors, its LPs' fingerprint part and committed count, counters, the
//! operations `Model::finish` made for each of its LPs (replayed by the parent in LP order, so
//! `model_stats` equal the sequential run's bit for bit), and per-worker figures. A child's
//! `Simulation::run` never returns: the process exits once the report is written.
//!
//! [`Simulation::processes`]: crate::Simulation::processes
//! [`Simulation::run`]: crate::Simulation::run

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Instant;

use super::launch::{run_worker, worker_figures, WorkerResult};
use super::lookahead::{crossing_lps, worker_lookaheads};
use super::lp_table::LpTable;
use super::{null_message, zero_links, ConservativeConfig, Protocol, Runtime, Shared, Worker};
use crate::error::{guard, ModelError, SimError};
use crate::event::{Event, EventKey, Keyed};
use crate::executor::global::GlobalQueue;
use crate::executor::links::Links;
use crate::executor::{init_lps, LpSlot, RunConfig};
use crate::fingerprint::Fingerprint;
use crate::gsu::{Published, Snapshot};
use crate::model::{LpId, Model, ModelStats, StatOp};
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::shm::registry::{set_directory, Directory};
use crate::shm::{Control, Launcher, ShmSafe, MAX_WORKERS, ROLE_ENV};
use crate::stats::Report;
use crate::transport::shm::ShmNet;
use crate::transport::wire::{Reader, Writer};
use crate::transport::Endpoint;

/// The run a worker process must find itself in (checked against its own `Simulation`).
const RUN_ENV: &str = "CHRONON_PROCS_RUN";

/// Whether this process is a worker process started by a multi-process run
/// ([`Simulation::processes`](crate::Simulation::processes)). A program may test it early in
/// `main` to skip side effects (printing, writing files) that must happen once; the worker
/// process then builds the same simulation and calls `run`, which does the worker's part and
/// exits the process.
pub fn is_worker_process() -> bool {
    std::env::var_os(ROLE_ENV).is_some()
}

/// How a multi-process run is started.
#[derive(Clone, Debug)]
pub(crate) struct ProcsOptions {
    /// Worker processes (at least 1).
    pub procs: usize,
    /// The command line of each worker process (after the program name); `None`: this
    /// process's own.
    pub args: Option<Vec<OsString>>,
    /// The copy transport (`--payload copy`) instead of zero copy.
    pub copy: bool,
}

/// A multi-process run, as a function pointer (instantiated where `M::Event: ShmSafe` is
/// known, called from `Simulation::run`, which does not know it).
pub(crate) type ProcsFn<M> =
    fn(&M, &RunConfig, Protocol, &ConservativeConfig, &ProcsOptions) -> Result<Report, SimError>;

/// Runs `model` with `protocol` over `opts.procs` processes of `cc.threads` threads (parent),
/// or, in a worker process, does that worker's part and exits.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    opts: &ProcsOptions,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    check(model, protocol, cc, opts.procs)?;
    let sig = format!(
        "{} payload={}",
        signature(cfg, protocol, cc, opts.procs),
        if opts.copy { "copy" } else { "zero-copy" }
    );
    match crate::shm::Worker::from_env() {
        Some(Ok(w)) => child(model, cfg, protocol, cc, w, &sig, opts.copy),
        Some(Err(e)) => {
            // The parent is gone (or the environment is broken): nothing to report to.
            eprintln!("chronon: worker process cannot start: {e}");
            std::process::exit(3)
        }
        None => parent::<M>(model, cfg, protocol, cc, opts, &sig),
    }
}

/// What a multi-process run cannot do (yet), before anything starts.
fn check<M: Model>(
    model: &M,
    protocol: Protocol,
    cc: &ConservativeConfig,
    procs: usize,
) -> Result<(), SimError> {
    if procs == 0 {
        return Err(SimError::Config(
            "--procs is 0; it must be at least 1 worker process".into(),
        ));
    }
    if cc.threads == 0 {
        return Err(SimError::Config(format!(
            "--sync {} needs at least 1 thread; got 0",
            protocol.name()
        )));
    }
    let n = procs.saturating_mul(cc.threads);
    if n > MAX_WORKERS {
        return Err(SimError::Config(format!(
            "--procs {procs} × --threads {} is {n} workers; a multi-process run holds at most {MAX_WORKERS}",
            cc.threads
        )));
    }
    if cc.runtime != Runtime::Threads {
        return Err(SimError::Config(
            "--runtime work-stealing does not run across processes; leave out --procs or --runtime"
                .into(),
        ));
    }
    if cc.dedicated != 1.0 || cc.shared_sets != 0 {
        return Err(SimError::Config(
            "load balancing (--dedicated, --shared-sets) does not run across processes yet (shared LPs would need their queues in shared memory); leave out --procs or those options".into(),
        ));
    }
    let globals = guard("Model::global_events", None, || model.global_events())?;
    if !globals.is_empty() {
        return Err(SimError::Config(
            "this model has global events, which read every LP's state; no process holds every LP's state in a multi-process run, so it cannot run with --procs (run it with --threads)".into(),
        ));
    }
    Ok(())
}

fn signature(cfg: &RunConfig, protocol: Protocol, cc: &ConservativeConfig, procs: usize) -> String {
    format!(
        "lps={} end={:x} seed={} queue={} sync={} threads={} procs={} mapping={:?}",
        cfg.lps,
        cfg.end.to_bits(),
        cfg.seed,
        cfg.queue.name(),
        protocol.name(),
        cc.threads,
        procs,
        cc.mapping
    )
}

fn io_error(what: &str) -> impl Fn(std::io::Error) -> SimError + '_ {
    move |e| SimError::Process(format!("{what}: {e}"))
}

// ---------------------------------------------------------------- parent

fn parent<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    opts: &ProcsOptions,
    sig: &str,
) -> Result<Report, SimError>
where
    M::Event: ShmSafe,
{
    let procs = opts.procs;
    let n = procs * cc.threads;
    let start = Instant::now();
    let control = Control::create(n).map_err(io_error("cannot create the control segment"))?;
    let net = ShmNet::create::<M::Event>(n).map_err(io_error("cannot create the rings"))?;
    let dir = Directory::create().map_err(io_error("cannot create the heap directory"))?;
    // Per child: a result pipe (child → parent: its report, then finish replies) and a
    // request pipe (parent → child: finish requests; closing it lets the child exit).
    let mut results_r = Vec::with_capacity(procs);
    let mut results_w = Vec::with_capacity(procs);
    let mut requests_r = Vec::with_capacity(procs);
    let mut requests_w = Vec::with_capacity(procs);
    for _ in 0..procs {
        let (r, w) = std::io::pipe().map_err(io_error("cannot create a pipe"))?;
        results_r.push(r);
        results_w.push(w);
        let (r, w) = std::io::pipe().map_err(io_error("cannot create a pipe"))?;
        requests_r.push(r);
        requests_w.push(w);
    }
    let owner = cc.mapping.owners(cfg.lps, n).map_err(SimError::Config)?;
    let args = opts
        .args
        .clone()
        .unwrap_or_else(|| std::env::args_os().skip(1).collect());
    let (launched, gathered) = std::thread::scope(|s| {
        // The coordinator reads every child's report, then completes `model_stats` (asking
        // children to run `Model::finish` where it reads figures), then closes the request
        // pipes so the children exit. It never blocks forever: once every child is gone and
        // our own write ends are closed (`launch` returns), every read ends.
        let coordinator = s.spawn(|| {
            let mut readers = results_r;
            let mut requests = requests_w;
            coordinate(model, cfg, &owner, cc.threads, &mut readers, &mut requests)
        });
        let launched = launch(
            procs, args, &control, &net, &dir, sig, results_w, requests_r,
        );
        (launched, coordinator.join().unwrap_or(None))
    });
    if let Err(e) = launched {
        return Err(SimError::Process(e.to_string()));
    }
    let Some((mut outs, stats)) = gathered else {
        return Err(SimError::Process(
            "a worker process exited without a readable report".into(),
        ));
    };
    // The error of the earliest (time, LP) wins, as with threads; "stopped by another
    // process" only when nothing better is known.
    let mut error: Option<SimError> = None;
    for o in &mut outs {
        if let Err(e) = std::mem::replace(&mut o.result, Ok(())) {
            error = Some(match error {
                None => e,
                Some(old) => earlier(old, e),
            });
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    let stats = stats?;
    gather(
        cfg,
        protocol,
        cc,
        procs,
        outs,
        stats,
        start.elapsed().as_secs_f64(),
    )
}

/// Starts the children with the segments and their pipe ends, waits for them all, and closes
/// this process's copies of the children's pipe ends.
#[allow(clippy::too_many_arguments)]
fn launch(
    procs: usize,
    args: Vec<OsString>,
    control: &Control,
    net: &crate::shm::Segment,
    dir: &Directory,
    sig: &str,
    results_w: Vec<std::io::PipeWriter>,
    requests_r: Vec<std::io::PipeReader>,
) -> Result<(), crate::shm::LaunchError> {
    let mut launcher = Launcher::new(procs)
        .args(args)
        .segment(control.segment())
        .segment(net)
        .env(RUN_ENV, sig)
        .quiet();
    for w in &results_w {
        launcher = launcher.fd(w.as_fd());
    }
    for r in &requests_r {
        launcher = launcher.fd(r.as_fd());
    }
    // Descriptor 2 + 2P: where every process announces its heap segments.
    launcher = launcher.segment(dir.segment());
    launcher.run()
}

/// Reads one length-prefixed message.
fn read_msg(r: &mut impl Read) -> Option<Vec<u8>> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; usize::try_from(u64::from_le_bytes(len)).ok()?];
    r.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// Writes one length-prefixed message.
fn write_msg(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(&(bytes.len() as u64).to_le_bytes())?;
    w.write_all(bytes)?;
    w.flush()
}

/// The parent's side once the children run: their reports, then `model_stats` as
/// `finish_report` computes them: the counters, then `Model::finish` for every LP in LP order,
/// replayed from the operations the LP's process recorded or, for an LP whose `finish` reads
/// figures, run by that process on the figures so far (one request per such LP). `None`: a
/// child's report could not be read (it died; the launcher says which).
#[allow(clippy::type_complexity)]
fn coordinate<M: Model>(
    model: &M,
    cfg: &RunConfig,
    owner: &[u32],
    threads: usize,
    readers: &mut [std::io::PipeReader],
    requests: &mut Vec<std::io::PipeWriter>,
) -> Option<(Vec<ChildOut>, Result<ModelStats, SimError>)> {
    let mut outs = Vec::with_capacity(readers.len());
    for r in readers.iter_mut() {
        outs.push(decode(&read_msg(r)?)?);
    }
    if outs.iter().any(|o| o.result.is_err()) {
        requests.clear();
        return Some((outs, Ok(ModelStats::default())));
    }
    let names = model.counter_names();
    let mut counters = vec![0i64; names.len()];
    let mut per_lp: Vec<Option<Vec<StatOp>>> = vec![Some(Vec::new()); cfg.lps as usize];
    for o in &mut outs {
        for (c, x) in counters.iter_mut().zip(&o.counters) {
            *c += x;
        }
        for (lp, ops) in std::mem::take(&mut o.finish) {
            per_lp[lp as usize] = ops;
        }
    }
    let mut stats = ModelStats::default();
    for (name, value) in names.iter().zip(&counters) {
        stats.set(name, *value as f64);
    }
    for (lp, ops) in per_lp.iter().enumerate() {
        match ops {
            Some(ops) => stats.replay(ops),
            None => {
                let p = owner[lp] as usize / threads;
                let mut w = Writer::default();
                w.u64(lp as u64);
                put_stats(&mut w, &stats);
                if write_msg(&mut requests[p], &w.0).is_err() {
                    return None;
                }
                let reply = read_msg(&mut readers[p])?;
                let mut r = Reader::new(&reply);
                match r.u64()? {
                    0 => stats = get_stats(&mut r)?,
                    _ => {
                        let e = SimError::Process(r.str()?);
                        requests.clear();
                        return Some((outs, Err(e)));
                    }
                }
            }
        }
    }
    requests.clear();
    Some((outs, Ok(stats)))
}

fn put_stats(w: &mut Writer, stats: &ModelStats) {
    let all: Vec<(&str, f64)> = stats.iter().collect();
    w.u64(all.len() as u64);
    for (k, v) in all {
        w.str(k);
        w.f64(v);
    }
}

fn get_stats(r: &mut Reader<'_>) -> Option<ModelStats> {
    let mut stats = ModelStats::default();
    for _ in 0..r.u64()? {
        let k = r.str()?;
        stats.set(&k, r.f64()?);
    }
    Some(stats)
}

fn rank(e: &SimError) -> (f64, u32, u8) {
    match e {
        SimError::Model(m) => (m.time, m.lp, 0),
        SimError::Panic { lp, time, .. } => (*time, *lp, 0),
        SimError::Process(m) if m == ABORTED => (f64::INFINITY, u32::MAX, 2),
        _ => (f64::INFINITY, u32::MAX, 1),
    }
}

fn earlier(a: SimError, b: SimError) -> SimError {
    let (ra, rb) = (rank(&a), rank(&b));
    let key = |r: (f64, u32, u8)| (r.2, r.0, r.1);
    if key(rb).partial_cmp(&key(ra)) == Some(std::cmp::Ordering::Less) {
        b
    } else {
        a
    }
}

/// The error a child reports when another process stopped the run.
const ABORTED: &str = "another worker process stopped the run";

fn gather(
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    procs: usize,
    outs: Vec<ChildOut>,
    stats: ModelStats,
    total_s: f64,
) -> Result<Report, SimError> {
    let mut report = Report::new(
        protocol.name(),
        cc.threads,
        cfg.queue.name(),
        cfg.lps,
        cfg.end,
    );
    let mut fingerprint = 0u64;
    let (mut pending, mut in_transit, mut tmc_left) = (0u64, 0u64, 0i64);
    let mut rounds = 0f64;
    let mut wall = 0f64;
    for o in outs {
        fingerprint = fingerprint.wrapping_add(o.fingerprint);
        report.committed += o.committed;
        report.processed += o.processed;
        pending += o.pending;
        in_transit += o.in_transit;
        tmc_left += o.tmc_left;
        report.complete &= !o.stopped;
        report.last_time = report.last_time.max(o.last_time);
        report.init_s = report.init_s.max(o.init_s);
        wall = wall.max(o.wall_s);
        for w in o.workers {
            rounds = rounds.max(w.get("rounds").copied().unwrap_or(0.0));
            report.workers.push(w);
        }
    }
    if tmc_left != 0 {
        return Err(SimError::Process(format!(
            "internal error: {tmc_left} messages counted in transit after every worker drained its rings"
        )));
    }
    report.fingerprint = Fingerprint(fingerprint);
    cfg.progress.set_now(report.last_time);
    report.model_stats = stats;
    report.set_wall(wall);
    report.pending_at_end = pending + in_transit;
    let st = &mut report.executor_stats;
    st.insert("procs".into(), procs as f64);
    st.insert("workers_total".into(), (procs * cc.threads) as f64);
    st.insert("in_transit_at_end".into(), in_transit as f64);
    st.insert("procs_total_s".into(), total_s);
    if protocol == Protocol::NullMessage {
        let nulls: f64 = report
            .workers
            .iter()
            .filter_map(|w| w.get("null_messages"))
            .sum();
        st.insert("null_messages".into(), nulls);
    } else {
        st.insert("rounds".into(), rounds);
        if rounds > 0.0 {
            st.insert("round_us".into(), wall * 1e6 / rounds);
            st.insert("events_per_round".into(), report.processed as f64 / rounds);
        }
    }
    Ok(report)
}

// ---------------------------------------------------------------- child

/// What a child reports.
#[derive(Debug)]
struct ChildOut {
    result: Result<(), SimError>,
    fingerprint: u64,
    committed: u64,
    processed: u64,
    pending: u64,
    in_transit: u64,
    tmc_left: i64,
    stopped: bool,
    last_time: f64,
    init_s: f64,
    wall_s: f64,
    counters: Vec<i64>,
    /// Per LP of this process: the operations its `finish` made, or `None` where `finish`
    /// read figures (the parent then asks this process to run it on the figures so far).
    finish: Vec<(LpId, Option<Vec<StatOp>>)>,
    workers: Vec<std::collections::BTreeMap<String, f64>>,
}

impl ChildOut {
    fn failed(e: SimError) -> Self {
        ChildOut {
            result: Err(e),
            fingerprint: 0,
            committed: 0,
            processed: 0,
            pending: 0,
            in_transit: 0,
            tmc_left: 0,
            stopped: true,
            last_time: 0.0,
            init_s: 0.0,
            wall_s: 0.0,
            counters: Vec::new(),
            finish: Vec::new(),
            workers: Vec::new(),
        }
    }
}

fn child<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    mut w: crate::shm::Worker,
    sig: &str,
    copy: bool,
) -> !
where
    M::Event: ShmSafe,
{
    let (Ok(pipe), Ok(requests)) = (w.fd(2 + w.index), w.fd(2 + w.procs + w.index)) else {
        eprintln!("chronon: worker process {}: no report pipe", w.index);
        std::process::exit(3)
    };
    let mut states: Vec<LpSlot<M::State>> = Vec::new();
    let out = match std::env::var(RUN_ENV) {
        Ok(s) if s == sig => match Control::attach(w.segment(0).unwrap_or_else(|_| exit_no_segment())) {
            Ok(control) => {
                let out = match cfg.queue {
                    QueueKind::Heap => child_run::<M, HeapQueue<Event<M::Event>>>(
                        model, cfg, protocol, cc, &mut w, &control, &mut states, copy,
                    ),
                    QueueKind::Ladder => child_run::<M, LadderQueue<Event<M::Event>>>(
                        model, cfg, protocol, cc, &mut w, &control, &mut states, copy,
                    ),
                };
                out.unwrap_or_else(|e| {
                    // Nobody may wait for this process at a barrier.
                    control.abort(w.index as u32);
                    ChildOut::failed(e)
                })
            }
            Err(e) => ChildOut::failed(SimError::Process(format!("control segment: {e}"))),
        },
        other => ChildOut::failed(SimError::Config(format!(
            "a worker process reached a different multi-process run ({sig}) than its parent started ({}): every process must build the same simulation before calling run",
            other.unwrap_or_default()
        ))),
    };
    let mut pipe = std::fs::File::from(pipe);
    if write_msg(&mut pipe, &encode(&out)).is_err() {
        std::process::exit(3)
    }
    // Finish requests for this process's LPs whose `finish` reads figures, until the parent
    // closes the pipe.
    let mut requests = std::fs::File::from(requests);
    while let Some(req) = read_msg(&mut requests) {
        let mut r = Reader::new(&req);
        let reply = match (r.u64(), get_stats(&mut r)) {
            (Some(lp), Some(mut stats)) if (lp as usize) < states.len() => {
                let lp = lp as LpId;
                let s = &states[lp as usize];
                let mut w = Writer::default();
                match guard("Model::finish", Some(lp), || {
                    model.finish(lp, &s.state, &mut stats)
                }) {
                    Ok(()) => {
                        w.u64(0);
                        put_stats(&mut w, &stats);
                    }
                    Err(e) => {
                        w.u64(1);
                        w.str(&e.to_string());
                    }
                }
                w.0
            }
            _ => std::process::exit(3),
        };
        if write_msg(&mut pipe, &reply).is_err() {
            std::process::exit(3)
        }
    }
    drop(states);
    check_heaps_at_exit(w.index)
}

/// Every item of this process's shared heaps must come back once every process has dropped
/// its events and states (the last ones drop theirs as the parent closes the request pipes):
/// wait a little for them, then exit, with code 4 and one line if some never came back.
fn check_heaps_at_exit(p: usize) -> ! {
    let deadline = Instant::now() + std::time::Duration::from_secs(3);
    let mut left = crate::shm::local::outstanding_items();
    while left != 0 && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
        left = crate::shm::local::outstanding_items();
    }
    if left != 0 {
        eprintln!(
            "chronon: worker process {p}: {left} shared-heap items were never freed (a BPtr leaked)"
        );
        std::process::exit(4)
    }
    std::process::exit(0)
}

fn exit_no_segment() -> ! {
    eprintln!("chronon: worker process: no control segment");
    std::process::exit(3)
}

#[allow(clippy::too_many_arguments)]
fn child_run<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    w: &mut crate::shm::Worker,
    control: &Control,
    states: &mut Vec<LpSlot<M::State>>,
    copy: bool,
) -> Result<ChildOut, SimError>
where
    M::Event: ShmSafe,
{
    let (p, procs, threads) = (w.index, w.procs, cc.threads);
    let n = procs * threads;
    let seg = w
        .segment(1)
        .map_err(io_error("worker process: the rings segment"))?;
    let net = ShmNet::attach::<M::Event>(seg, control.clone(), n, p as u32, copy)
        .map_err(io_error("worker process: the rings segment"))?;
    // Shared heaps: this process's thread heaps take owner numbers from its share and
    // announce their segments in the run's directory, where other processes find them.
    crate::shm::local::set_worker_process(p, procs);
    let dir = w
        .segment(2 + 2 * procs)
        .map_err(io_error("worker process: the heap directory"))?;
    // Safety: the parent made descriptor 2 + 2P with `Directory::create`.
    let dir = unsafe { Directory::attach(dir) }
        .map_err(io_error("worker process: the heap directory"))?;
    if set_directory(dir).is_err() {
        return Err(SimError::Process(
            "worker process: a heap directory was already set".into(),
        ));
    }
    let owner = cc.mapping.owners(cfg.lps, n).map_err(SimError::Config)?;
    let links = Links::new(model, cfg.lps)?;
    let (worker_la, link_la) = worker_lookaheads(&links, &owner, n);
    if protocol == Protocol::NullMessage {
        zero_links::check_links(&links, &owner, &link_la, n)?;
        null_message::check_budget(&link_la, n, cfg.end, cc.max_null_messages)?;
    }
    let crossing = if protocol == Protocol::Lockstep {
        crossing_lps(&links, &owner, n)
    } else {
        Vec::new()
    };
    let globals = GlobalQueue::new(model)?;
    let init_start = Instant::now();
    // Every process initializes every LP (the same states, streams and initial events in
    // each) and keeps the initial events of its own workers; the counters `init` moved are
    // counted once, by process 0.
    let mut init_counters = vec![0i64; model.counter_names().len()];
    let (slots, initial) = init_lps(model, cfg, &mut init_counters)?;
    if p != 0 {
        init_counters.iter_mut().for_each(|c| *c = 0);
    }
    let base = p * threads;
    let mut queues: Vec<Q> = (0..threads).map(|_| Q::new()).collect();
    for ev in initial {
        let o = owner[ev.dst as usize] as usize;
        if o / threads == p {
            queues[o - base].push(ev);
        }
    }
    let first: Vec<EventKey> = queues
        .iter_mut()
        .map(|q| q.peek().map_or(Published::IDLE.moe, |e| e.key()))
        .collect();
    let init_s = init_start.elapsed().as_secs_f64();
    let shared = Shared {
        model,
        cfg,
        lps: LpTable::new(slots),
        owner,
        links,
        workers: n,
        worker_la,
        link_la,
        crossing,
        globals: Mutex::new(globals),
        error: Mutex::new(None),
        global_next: AtomicU64::new(f64::INFINITY.to_bits()),
        balance: None,
    };
    let start = Instant::now();
    let results: Vec<(WorkerResult, usize, i64)> = std::thread::scope(|s| {
        let handles: Vec<_> = queues
            .into_iter()
            .enumerate()
            .map(|(k, q)| {
                let (shared, net, first) = (&shared, &net, first[k]);
                s.spawn(move || {
                    let mut ep = net.endpoint::<M::Event>(base + k);
                    // G0 across processes: every worker's first event is published before
                    // any worker runs (the start barrier).
                    ep.publish(&Published {
                        moe: first,
                        ..Published::IDLE
                    });
                    let started = ep.barrier();
                    let mut worker = Worker::new(shared, q, ep);
                    let mut r = if started {
                        run_worker(&mut worker, protocol)
                    } else {
                        WorkerResult {
                            stats: Default::default(),
                            counters: vec![0; shared.model.counter_names().len()],
                            pending: worker.queue.len(),
                            last_time: 0.0,
                            stopped: true,
                            extra: Vec::new(),
                        }
                    };
                    // Every worker stopped sending; then each drains what is left for it
                    // (events at or after the end), and once all have, the TMC registers
                    // must all be back to 0 (G2).
                    let (mut left, mut tmc) = (0, 0);
                    if started && worker.ep.barrier() {
                        left = worker.ep.drain_at_end();
                        if worker.ep.barrier() {
                            if base + k == 0 {
                                let mut snap = Snapshot::default();
                                worker.ep.snapshot(&mut snap);
                                tmc = snap.in_transit();
                            }
                        } else {
                            r.stopped = true;
                        }
                    } else {
                        r.stopped = true;
                    }
                    (r, left, tmc)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("a worker thread panicked outside a model handler")
            })
            .collect()
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(e) = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    if results.iter().any(|r| r.0.stopped) && control.aborted().is_some() {
        return Err(SimError::Process(ABORTED.into()));
    }
    *states = shared.lps.into_vec();
    let lps = &*states;
    let mine = |lp: usize| shared.owner[lp] as usize / threads == p;
    let fingerprint = Fingerprint::from_digests(
        lps.iter()
            .enumerate()
            .filter(|(i, _)| mine(*i))
            .map(|(i, s)| (i as LpId, &s.digest)),
    )
    .0;
    let committed = lps
        .iter()
        .enumerate()
        .filter(|(i, _)| mine(*i))
        .map(|(_, s)| s.digest.count())
        .sum();
    let mut finish = Vec::new();
    for (i, s) in lps.iter().enumerate().filter(|(i, _)| mine(*i)) {
        let lp = i as LpId;
        let mut st = ModelStats::recording();
        let ran = guard("Model::finish", Some(lp), || {
            model.finish(lp, &s.state, &mut st)
        });
        // A `finish` that read figures saw only its own: its operations (or its panic) mean
        // nothing, and the parent will have it run on the real figures.
        match (st.take_log(), ran) {
            (Ok(ops), Ok(())) => finish.push((lp, Some(ops))),
            (Err(()), _) => finish.push((lp, None)),
            (Ok(_), Err(e)) => return Err(e),
        }
    }
    let mut counters = init_counters;
    for (r, _, _) in &results {
        for (c, x) in counters.iter_mut().zip(&r.counters) {
            *c += x;
        }
    }
    Ok(ChildOut {
        result: Ok(()),
        fingerprint,
        committed,
        processed: results.iter().map(|r| r.0.stats.events).sum(),
        pending: results.iter().map(|r| r.0.pending as u64).sum(),
        in_transit: results.iter().map(|r| r.1 as u64).sum(),
        tmc_left: results.iter().map(|r| r.2).sum(),
        stopped: results.iter().any(|r| r.0.stopped),
        last_time: results.iter().map(|r| r.0.last_time).fold(0.0, f64::max),
        init_s,
        wall_s,
        counters,
        finish,
        workers: results
            .iter()
            .map(|r| worker_figures(protocol, &r.0, wall_s))
            .collect(),
    })
}

// ---------------------------------------------------------------- encoding

fn encode(o: &ChildOut) -> Vec<u8> {
    let mut w = Writer::default();
    match &o.result {
        Ok(()) => w.u64(0),
        Err(e) => {
            let (kind, lp, time, msg) = match e {
                SimError::Config(m) => (1, 0, 0.0, m.clone()),
                SimError::Model(m) => (2, m.lp, m.time, m.message.clone()),
                SimError::Panic { lp, time, message } => (3, *lp, *time, message.clone()),
                SimError::Process(m) => (4, 0, 0.0, m.clone()),
                other => (4, 0, 0.0, other.to_string()),
            };
            w.u64(kind);
            w.u64(u64::from(lp));
            w.f64(time);
            w.str(&msg);
        }
    }
    w.u64(o.fingerprint);
    w.u64(o.committed);
    w.u64(o.processed);
    w.u64(o.pending);
    w.u64(o.in_transit);
    w.u64(o.tmc_left as u64);
    w.u64(u64::from(o.stopped));
    w.f64(o.last_time);
    w.f64(o.init_s);
    w.f64(o.wall_s);
    w.u64(o.counters.len() as u64);
    o.counters.iter().for_each(|c| w.u64(*c as u64));
    w.u64(o.finish.len() as u64);
    for (lp, ops) in &o.finish {
        w.u64(u64::from(*lp));
        match ops {
            None => w.u64(u64::MAX),
            Some(ops) => {
                w.u64(ops.len() as u64);
                for (add, name, value) in ops {
                    w.u64(u64::from(*add));
                    w.str(name);
                    w.f64(*value);
                }
            }
        }
    }
    w.u64(o.workers.len() as u64);
    for m in &o.workers {
        w.u64(m.len() as u64);
        for (k, v) in m {
            w.str(k);
            w.f64(*v);
        }
    }
    w.0
}

fn decode(b: &[u8]) -> Option<ChildOut> {
    let mut r = Reader::new(b);
    let result = match r.u64()? {
        0 => Ok(()),
        kind => {
            let lp = u32::try_from(r.u64()?).ok()?;
            let time = r.f64()?;
            let message = r.str()?;
            Err(match kind {
                1 => SimError::Config(message),
                2 => SimError::Model(ModelError { lp, time, message }),
                3 => SimError::Panic { lp, time, message },
                _ => SimError::Process(message),
            })
        }
    };
    let mut o = ChildOut::failed(SimError::Process(String::new()));
    o.result = result;
    o.fingerprint = r.u64()?;
    o.committed = r.u64()?;
    o.processed = r.u64()?;
    o.pending = r.u64()?;
    o.in_transit = r.u64()?;
    o.tmc_left = r.u64()? as i64;
    o.stopped = r.u64()? != 0;
    o.last_time = r.f64()?;
    o.init_s = r.f64()?;
    o.wall_s = r.f64()?;
    let n = r.u64()?;
    o.counters = (0..n)
        .map(|_| r.u64().map(|v| v as i64))
        .collect::<Option<_>>()?;
    let n = r.u64()?;
    for _ in 0..n {
        let lp = u32::try_from(r.u64()?).ok()?;
        let ops = match r.u64()? {
            u64::MAX => None,
            k => Some(
                (0..k)
                    .map(|_| Some((r.u64()? != 0, r.str()?, r.f64()?)))
                    .collect::<Option<Vec<_>>>()?,
            ),
        };
        o.finish.push((lp, ops));
    }
    let n = r.u64()?;
    for _ in 0..n {
        let k = r.u64()?;
        let m = (0..k)
            .map(|_| Some((r.str()?, r.f64()?)))
            .collect::<Option<_>>()?;
        o.workers.push(m);
    }
    Some(o)
}
