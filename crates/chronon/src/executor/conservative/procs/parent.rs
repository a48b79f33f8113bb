//! The parent of a multi-process run: segments and pipes, the launch, the children's reports,
//! `model_stats` in LP order, and the one report.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::Instant;

use super::report::{decode, get_stats, put_stats, ChildOut};
use super::{io_error, ProcsOptions, ABORTED, RUN_ENV};
use crate::error::SimError;
use crate::executor::conservative::launch::protocol_figures;
use crate::executor::conservative::{ConservativeConfig, Protocol};
use crate::executor::RunConfig;
use crate::fingerprint::Fingerprint;
use crate::model::{Model, ModelStats, StatOp};
use crate::shm::registry::Directory;
use crate::shm::{Control, Launcher, ShmSafe};
use crate::stats::Report;
use crate::transport::shm::ShmNet;
use crate::transport::wire::{Reader, Writer};

pub(super) fn parent<M: Model>(
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
    let owner = cc
        .mapping
        .owners(cfg.lps, n)
        .map_err(|m| SimError::config(crate::error::Setting::Mapping, m))?;
    let (outs, stats) = parent_run(model, cfg, opts, cc.threads, &owner, sig, &control, &net)?;
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

/// The parent's part of every multi-process run (conservative or Time Warp): starts the
/// children with the control and net segments, gathers their reports and `model_stats`, and
/// returns the children's outcomes once every child has exited; the first error (earliest
/// (time, LP)) if any child failed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn parent_run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    opts: &ProcsOptions,
    threads: usize,
    owner: &[u32],
    sig: &str,
    control: &Control,
    net: &crate::shm::Segment,
) -> Result<(Vec<ChildOut>, ModelStats), SimError> {
    let procs = opts.procs;
    let dir = Directory::create().map_err(io_error("cannot create the heap directory"))?;
    // Per child: a result pipe (child → parent: its report, then finish replies) and a
    // request pipe (parent → child: finish requests; closing it lets the child exit).
    let mut results_r = Vec::with_capacity(procs);
    let mut results_w = Vec::with_capacity(procs);
    let mut requests_r = Vec::with_capacity(procs);
    let mut requests_w = Vec::with_capacity(procs);
    for _ in 0..procs {
        let (r, w) = pipe().map_err(io_error("cannot create a pipe"))?;
        results_r.push(r);
        results_w.push(w);
        let (r, w) = pipe().map_err(io_error("cannot create a pipe"))?;
        requests_r.push(r);
        requests_w.push(w);
    }
    let args = opts
        .args
        .clone()
        .unwrap_or_else(crate::program::program_args);
    let (launched, gathered) = std::thread::scope(|s| {
        // The coordinator reads every child's report, then completes `model_stats` (asking
        // children to run `Model::finish` where it reads figures), then closes the request
        // pipes so the children exit. It never blocks forever: once every child is gone and
        // our own write ends are closed (`launch` returns), every read ends.
        let coordinator = s.spawn(|| {
            let mut pipes = Pipes {
                readers: results_r,
                requests: requests_w,
            };
            coordinate(model, cfg, owner, threads, &mut pipes)
        });
        let segment = cfg.ckpt.as_ref().map_or(0, |c| c.segment);
        let launched = launch(
            (procs, segment),
            cfg,
            args,
            control,
            net,
            &dir,
            sig,
            results_w,
            requests_r,
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
    if let Some(e) = first_error(&mut outs) {
        return Err(e);
    }
    Ok((outs, stats?))
}

/// Takes every part's error out of `outs` and returns the one that wins: the error of the
/// earliest (time, LP), as with threads (errors without a time, such as configuration errors,
/// rank last; "stopped by another process", which only Time Warp children report, only when
/// nothing better is known).
pub(crate) fn first_error(outs: &mut [ChildOut]) -> Option<SimError> {
    let mut error: Option<SimError> = None;
    for o in outs {
        if let Err(e) = std::mem::replace(&mut o.result, Ok(())) {
            error = Some(match error {
                None => e,
                Some(old) => earlier(old, e),
            });
        }
    }
    error
}

/// How the coordinator reaches the parts of a run: each part's report, then its replies to
/// `Model::finish` requests.
pub(crate) trait Parts {
    /// The next message from part `p`; `None`: it is gone.
    fn read(&mut self, p: usize) -> Option<Vec<u8>>;
    /// A finish request to part `p`; `false`: it is gone.
    fn write(&mut self, p: usize, bytes: &[u8]) -> bool;
    /// No more requests: every part may stop serving.
    fn close(&mut self);
    /// The number of parts.
    fn count(&self) -> usize;
}

/// Worker processes' pipes.
struct Pipes {
    readers: Vec<std::fs::File>,
    requests: Vec<std::fs::File>,
}

impl Parts for Pipes {
    fn read(&mut self, p: usize) -> Option<Vec<u8>> {
        read_msg(&mut self.readers[p])
    }
    fn write(&mut self, p: usize, bytes: &[u8]) -> bool {
        self.requests
            .get_mut(p)
            .is_some_and(|w| write_msg(w, bytes).is_ok())
    }
    fn close(&mut self) {
        self.requests.clear();
    }
    fn count(&self) -> usize {
        self.readers.len()
    }
}

/// Starts the children with the segments and their pipe ends, waits for them all, and closes
/// this process's copies of the children's pipe ends.
#[allow(clippy::too_many_arguments)]
fn launch(
    (procs, segment): (usize, usize),
    cfg: &RunConfig,
    args: Vec<OsString>,
    control: &Control,
    net: &crate::shm::Segment,
    dir: &Directory,
    sig: &str,
    results_w: Vec<std::fs::File>,
    requests_r: Vec<std::fs::File>,
) -> Result<(), crate::shm::LaunchError> {
    let mut launcher = Launcher::new(procs)
        .args(args)
        .segment(control.segment())
        .segment(net)
        .env(RUN_ENV, sig)
        .env(
            crate::executor::checkpoint::SEGMENT_ENV,
            segment.to_string(),
        )
        .interrupt_on(cfg.progress.clone())
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

/// A pipe (read end, write end), both close-on-exec (the launcher passes the child's ends).
fn pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((std::fs::File::from(r), std::fs::File::from(w)))
}

/// Reads one length-prefixed message.
pub(super) fn read_msg(r: &mut impl Read) -> Option<Vec<u8>> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; usize::try_from(u64::from_le_bytes(len)).ok()?];
    r.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// Writes one length-prefixed message.
pub(super) fn write_msg(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
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
pub(crate) fn coordinate<M: Model>(
    model: &M,
    cfg: &RunConfig,
    owner: &[u32],
    threads: usize,
    parts: &mut impl Parts,
) -> Option<(Vec<ChildOut>, Result<ModelStats, SimError>)> {
    let mut outs = Vec::with_capacity(parts.count());
    for p in 0..parts.count() {
        let mut out = decode(&parts.read(p)?)?;
        crate::trace::absorb(std::mem::take(&mut out.trace));
        outs.push(out);
    }
    if outs.iter().any(|o| o.result.is_err()) {
        parts.close();
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
    stats.set_end_time(Some(cfg.stats_end(
        outs.iter().all(|o| !o.stopped),
        outs.iter().map(|o| o.last_time).fold(0.0, f64::max),
    )));
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
                if !parts.write(p, &w.0) {
                    return None;
                }
                let reply = parts.read(p)?;
                let mut r = Reader::new(&reply);
                match r.u64()? {
                    0 => stats = get_stats(&mut r)?,
                    _ => {
                        let e = SimError::Process(r.str()?);
                        parts.close();
                        return Some((outs, Err(e)));
                    }
                }
            }
        }
    }
    parts.close();
    Some((outs, Ok(stats)))
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

pub(crate) fn gather(
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
    let mut peak_rss = 0u64;
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
        peak_rss += o.peak_rss;
        for w in o.workers {
            rounds = rounds.max(w.get("rounds").copied().unwrap_or(0.0));
            report.workers.push(w);
        }
    }
    report.placement = crate::placement::gathered(cfg.pin, procs * cc.threads, &report.workers);
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
    // The worker processes' peak resident sets, summed (the parent's own is the CLI's
    // `peak_rss_bytes`).
    st.insert("workers_peak_rss_bytes".into(), peak_rss as f64);
    let nulls: f64 = report
        .workers
        .iter()
        .filter_map(|w| w.get("null_messages"))
        .sum();
    protocol_figures(&mut report, protocol, rounds, nulls, wall);
    Ok(report)
}
