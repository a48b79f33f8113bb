//! A worker process of a multi-process run: attach the segments, build every LP, run this
//! process's workers over the shared-memory transport, report to the parent, then serve its
//! `Model::finish` requests. `child_main` (the frame: signature check, control segment, report,
//! finish requests) and `finish_ops` serve Time Warp's worker processes too.

use std::time::Instant;

use super::parent::{read_msg, write_msg};
use super::report::{encode, get_stats, put_stats, ChildOut, FinishOps};
use super::{io_error, RUN_ENV};
use crate::error::{guard, Setting, SimError};
use crate::event::{Event, EventKey};
use crate::executor::conservative::launch::{run_worker, worker_figures, WorkerResult};
use crate::executor::conservative::part::{set_up, Part};
use crate::executor::conservative::{ConservativeConfig, Protocol, Shared, Worker};
use crate::executor::{run_part_threads, RunConfig};
use crate::fingerprint::Fingerprint;
use crate::gsu::{Published, Snapshot};
use crate::model::{LpId, Model, ModelStats, Time};
use crate::placement::{mark_workers, touch_queue, Pinner};
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::shm::registry::{set_directory, Directory};
use crate::shm::{Control, ShmSafe};
use crate::transport::shm::ShmNet;
use crate::transport::wire::{Reader, Writer};
use crate::transport::Endpoint;

pub(super) fn child<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    w: crate::shm::Worker,
    sig: &str,
    copy: bool,
) -> !
where
    M::Event: ShmSafe,
{
    child_main(model, w, sig, |w, control, states| match cfg.queue {
        QueueKind::Heap => child_run::<M, HeapQueue<Event<M::Event>>>(
            model, cfg, protocol, cc, w, control, states, copy,
        ),
        QueueKind::Ladder => child_run::<M, LadderQueue<Event<M::Event>>>(
            model, cfg, protocol, cc, w, control, states, copy,
        ),
    })
}

/// A child's part of every multi-process run (conservative or Time Warp): checks that it
/// reached the run its parent started, attaches the control segment, runs `run`, writes its
/// report, answers the parent's `Model::finish` requests on the LP states `run` left, and
/// exits the process.
pub(crate) fn child_main<M: Model>(
    model: &M,
    mut w: crate::shm::Worker,
    sig: &str,
    run: impl FnOnce(
        &mut crate::shm::Worker,
        &Control,
        &mut Vec<Option<M::State>>,
    ) -> Result<ChildOut, SimError>,
) -> ! {
    let (Ok(pipe), Ok(requests)) = (w.fd(2 + w.index), w.fd(2 + w.procs + w.index)) else {
        eprintln!("chronon: worker process {}: no report pipe", w.index);
        std::process::exit(3)
    };
    // Per LP: its final state where this process holds it.
    let mut states: Vec<Option<M::State>> = Vec::new();
    let out = match std::env::var(RUN_ENV) {
        Ok(s) if s == sig => match Control::attach(w.segment(0).unwrap_or_else(|_| exit_no_segment())) {
            Ok(control) => {
                let out = attach_heaps(&mut w).and_then(|()| run(&mut w, &control, &mut states));
                out.unwrap_or_else(|e| {
                    // Nobody may wait for this process at a barrier.
                    control.abort(w.index as u32);
                    ChildOut::failed(e)
                })
            }
            Err(e) => ChildOut::failed(SimError::Process(format!("control segment: {e}"))),
        },
        other => ChildOut::failed(SimError::config(Setting::Run, format!(
            "a worker process reached a different multi-process run ({sig}) than its parent started ({}): every process must build the same simulation before calling run",
            other.unwrap_or_default()
        ))),
    };
    // A failed part leaves events in flight (in rings, in other processes' queues) whose
    // items never come back: its heaps are not checked, and its error (in its report) is the
    // run's, not a leak.
    let failed = out.result.is_err();
    let mut out = out;
    out.trace = crate::trace::take_keys();
    let mut pipe = std::fs::File::from(pipe);
    if write_msg(&mut pipe, &encode(&out)).is_err() {
        std::process::exit(3)
    }
    // Finish requests for this process's LPs whose `finish` reads figures, until the parent
    // closes the pipe.
    let mut requests = std::fs::File::from(requests);
    while let Some(req) = read_msg(&mut requests) {
        let Some(reply) = serve_finish(model, &states, &req) else {
            std::process::exit(3)
        };
        if write_msg(&mut pipe, &reply).is_err() {
            std::process::exit(3)
        }
    }
    drop(states);
    if failed {
        std::process::exit(0)
    }
    check_heaps_at_exit(w.index)
}

/// Answers one `Model::finish` request (an LP of this part and the figures so far): runs
/// `finish` for that LP on them and returns the figures after it, or its error. `None`: the
/// request is malformed or names an LP this part does not hold.
pub(crate) fn serve_finish<M: Model>(
    model: &M,
    states: &[Option<M::State>],
    req: &[u8],
) -> Option<Vec<u8>> {
    let mut r = Reader::new(req);
    let (lp, mut stats) = (r.u64()?, get_stats(&mut r)?);
    let state = states.get(usize::try_from(lp).ok()?)?.as_ref()?;
    let lp = lp as LpId;
    let mut w = Writer::default();
    match guard("Model::finish", Some(lp), || {
        model.finish(lp, state, &mut stats)
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
    Some(w.0)
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

/// Shared heaps: this process's thread heaps take owner numbers from its share and announce
/// their segments in the run's directory (descriptor 2 + 2P), where other processes find them.
fn attach_heaps(w: &mut crate::shm::Worker) -> Result<(), SimError> {
    let (p, procs) = (w.index, w.procs);
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
    Ok(())
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
    states: &mut Vec<Option<M::State>>,
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
    run_part::<M, Q, _>(model, cfg, protocol, cc, (p, procs), states, &|g| {
        net.endpoint::<M::Event>(g)
    })
}

/// One part of a run across parts (a worker process of `--procs`, or a rank of an MPI run):
/// `part = (p, parts)`; its workers are `p * W + t`. Builds every LP (deterministic: the same
/// states, streams and initial events in every part), keeps its own workers' initial events,
/// runs its workers (each over the endpoint `endpoint(its number)` makes, inside its thread;
/// each publishes its first key and passes a start barrier before any runs: G0 across parts,
/// so a transport's registers need no seeding), passes the end barriers (drain, TMC check), and returns its
/// report; `states` gets its own LPs' final states (for `Model::finish` requests).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_part<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    part: (usize, usize),
    states: &mut Vec<Option<M::State>>,
    endpoint: &(dyn Fn(usize) -> X + Sync),
) -> Result<ChildOut, SimError> {
    let (p, threads) = (part.0, cc.threads);
    let base = p * threads;
    let Part {
        shared,
        queues,
        first,
        init_counters,
        init_s,
    } = set_up::<M, Q>(
        model,
        cfg,
        protocol,
        cc,
        part.1 * threads,
        base..base + threads,
    )?;
    let pinner = Pinner::new(cfg.pin, part.1 * threads);
    let start = Instant::now();
    let results = run_part_threads(cfg, &pinner, base, queues, touch_queue, |me, q| {
        part_worker(&shared, q, endpoint(me), first[me - base], protocol)
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    // Stopped by another process (its error, or a stop request under null messages): this
    // process's figures cover what it committed; the parent returns the other's error if it
    // has one, else an incomplete report.
    let all = shared.lps.into_vec();
    let lps = &all;
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
    let finish = finish_ops(
        model,
        cfg.known_end(!results.iter().any(|r| r.0.stopped)),
        lps.iter()
            .enumerate()
            .filter(|(i, _)| mine(*i))
            .map(|(i, s)| (i as LpId, &s.state)),
    )?;
    let mut counters = init_counters;
    for (r, _, _) in &results {
        for (c, x) in counters.iter_mut().zip(&r.counters) {
            *c += x;
        }
    }
    let stopped = results.iter().any(|r| r.0.stopped);
    if let Some(mut part) = cfg.part_writer::<M>(p, &counters).filter(|_| !stopped) {
        for (i, s) in all.iter().enumerate().filter(|(i, _)| mine(*i)) {
            part.lp(i as LpId, s);
        }
        for e in shared
            .leftover
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            part.event(e);
        }
        cfg.part_done(part.finish());
    }
    *states = all
        .into_iter()
        .enumerate()
        .map(|(i, s)| mine(i).then_some(s.state))
        .collect();
    let mut workers: Vec<_> = results
        .iter()
        .map(|r| worker_figures(protocol, &r.0, wall_s))
        .collect();
    mark_workers(&pinner.placement(), &mut workers);
    Ok(ChildOut {
        result: Ok(()),
        fingerprint,
        committed,
        processed: results.iter().map(|r| r.0.stats.events).sum(),
        pending: results.iter().map(|r| r.0.pending as u64).sum(),
        in_transit: results.iter().map(|r| r.1 as u64).sum(),
        tmc_left: results.iter().map(|r| r.2).sum(),
        stopped,
        last_time: results.iter().map(|r| r.0.last_time).fold(0.0, f64::max),
        init_s,
        wall_s,
        peak_rss: peak_rss_bytes(),
        counters,
        finish,
        workers,
        trace: Vec::new(),
    })
}

/// One worker of a part, on its own thread: publishes its first key and passes the start
/// barrier (G0 across parts: every worker's first event is published before any worker runs,
/// so a transport's registers need no seeding), runs the protocol, then the end: a barrier
/// (nobody sends any more), the drain of what is left for it (events at or after the end,
/// kept when the run ends at a checkpoint's cut), another barrier, and worker 0's snapshot,
/// whose TMC total must be 0 (G2). Returns its result, what it drained and that TMC total.
fn part_worker<M: Model, Q: PendingSet<Event<M::Event>>, X: Endpoint<M::Event>>(
    shared: &Shared<'_, M>,
    q: Q,
    mut ep: X,
    first: EventKey,
    protocol: Protocol,
) -> (WorkerResult, usize, i64) {
    ep.publish(&Published {
        moe: first,
        ..Published::IDLE
    });
    let started = ep.barrier();
    let me = ep.me();
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
    let (mut left, mut tmc) = (0, 0);
    if started && worker.ep.barrier() {
        let mut kept = Vec::new();
        let keep = shared.cfg.saving() && !r.stopped;
        left = worker.ep.receive(
            &mut kept,
            |kept, e| {
                if keep {
                    kept.push(e)
                }
            },
            |_| Published::IDLE,
        );
        shared
            .leftover
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&mut kept);
        if worker.ep.barrier() {
            if me == 0 {
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
    worker.ep.figures(&mut r.extra);
    (r, left, tmc)
}

/// Runs `Model::finish` for each LP of this process, recording its operations (`None` where
/// it read figures: the parent has it run on the real figures later). `end`: the end time
/// `finish` sees ([`RunConfig::known_end`]); `None` where only the parent knows it (a run
/// stopped early or without an end time: the latest event of every process), and the parent
/// has every LP's `finish` run on its figures.
pub(crate) fn finish_ops<'s, M: Model>(
    model: &M,
    end: Option<Time>,
    lps: impl Iterator<Item = (LpId, &'s M::State)>,
) -> Result<FinishOps, SimError>
where
    M::State: 's,
{
    let mut finish = Vec::new();
    let Some(end) = end else {
        return Ok(lps.map(|(lp, _)| (lp, None)).collect());
    };
    for (lp, state) in lps {
        let mut st = ModelStats::recording();
        st.set_end_time(Some(end));
        let ran = guard("Model::finish", Some(lp), || {
            model.finish(lp, state, &mut st)
        });
        // A `finish` that read figures saw only its own: its operations (or its panic) mean
        // nothing, and the parent will have it run on the real figures.
        match (st.take_log(), ran) {
            (Ok(ops), Ok(())) => finish.push((lp, Some(ops))),
            (Err(()), _) => finish.push((lp, None)),
            (Ok(_), Err(e)) => return Err(e),
        }
    }
    Ok(finish)
}

/// This process's peak resident set (VmHWM in /proc/self/status), bytes; 0 where unknown.
pub(crate) fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}
