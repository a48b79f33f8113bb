//! A conservative run over the ranks of an `mpirun` ([`Simulation::ranks`]), and the rank-0
//! gather every run over ranks ends with (Time Warp's too): each rank reports a `ChildOut`
//! (`executor/conservative/procs/report.rs`, the same record worker processes send their
//! parent), rank 0 computes `model_stats` in LP order exactly as the multi-process parent does
//! (`procs::coordinate`, asking the owner rank to run `Model::finish` where it reads figures),
//! builds the one report (`procs::gather`), and broadcasts the outcome so that every rank
//! returns the same error (or success).
//!
//! [`Simulation::ranks`]: crate::Simulation::ranks

use std::collections::VecDeque;
use std::time::Instant;

use mpi::topology::SimpleCommunicator;

use super::procs::{
    self, coordinate, decode, encode, first_error, run_part, serve_finish, ChildOut, Parts,
};
use super::{ConservativeConfig, Protocol};
use crate::error::{Setting, SimError};
use crate::event::Event;
use crate::executor::RunConfig;
use crate::model::{Model, ModelStats};
use crate::partition::Mapping;
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::stats::Report;
use crate::transport::mpi::comm::RankComm;
use crate::transport::mpi::net::MpiNet;
use crate::transport::mpi::RankSafe;

/// The ranks of the MPI world as a chain of runs with checkpoints needs them (its own
/// communicator, a duplicate of the world's).
pub(crate) struct WorldRanks(RankComm);

impl WorldRanks {
    pub(crate) fn new() -> Result<Self, SimError> {
        if !crate::transport::mpi::initialized() {
            return Err(SimError::config(Setting::Run, "Simulation::ranks needs MPI: call chronon::mpi::Mpi::init() first (and run under mpirun)"));
        }
        Ok(WorldRanks(RankComm::new(&SimpleCommunicator::world())))
    }
}

impl crate::executor::checkpoint::ChainRanks for WorldRanks {
    fn rank(&self) -> usize {
        self.0.rank()
    }
    fn size(&self) -> usize {
        self.0.size()
    }
    fn gather(&self, word: u64) -> Vec<u64> {
        self.0.all_gather_quiet(&[word])
    }
}

/// Runs `model` with `protocol` over every rank of the MPI world, `cc.threads` workers each.
/// Every rank calls it with the same configuration; rank 0's result carries the report, the
/// others' an empty report with the same completeness (or the same error).
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
) -> Result<Report, SimError>
where
    M::Event: RankSafe,
{
    on_world(
        |comm| {
            let ranks = comm.size();
            procs::check(model, protocol, cc, Setting::Ranks, ranks)?;
            if protocol == Protocol::NullMessage && !cfg.end.is_finite() && ranks > 1 {
                return Err(SimError::config(
                    Setting::Executor,
                    "$executor null-message over several ranks needs a finite end time",
                ));
            }
            Ok(procs::signature(cfg, protocol, cc, ranks))
        },
        |comm| match cfg.queue {
            QueueKind::Heap => {
                rank_run::<M, HeapQueue<Event<M::Event>>>(model, cfg, protocol, cc, comm)
            }
            QueueKind::Ladder => {
                rank_run::<M, LadderQueue<Event<M::Event>>>(model, cfg, protocol, cc, comm)
            }
        },
    )
}

/// The frame of every run over the ranks of the MPI world (the conservative protocols' and
/// Time Warp's): MPI must be initialized; `check` runs on every rank and returns the run's
/// signature (the same configuration gives every rank the same error, which only rank 0's
/// caller prints); every rank must have reached the same run; `body` does this rank's part;
/// then no message is left unmatched when MPI finalizes, and the thread's shared heap goes.
pub(crate) fn on_world<T>(
    check: impl FnOnce(&RankComm) -> Result<String, SimError>,
    body: impl FnOnce(&RankComm) -> Result<T, SimError>,
) -> Result<T, SimError> {
    if !crate::transport::mpi::initialized() {
        return Err(SimError::config(Setting::Run, "Simulation::ranks needs MPI: call chronon::mpi::Mpi::init() first (and run under mpirun)"));
    }
    let comm = RankComm::new(&SimpleCommunicator::world());
    let sig = check(&comm)?;
    same_run_everywhere(&comm, &sig)?;
    let result = body(&comm);
    comm.drain();
    #[cfg(target_os = "linux")]
    crate::shm::release_thread_heap();
    result
}

/// Every rank must have reached the same run (same configuration): an all-gather of a hash of
/// its signature. It receives nothing meanwhile ([`RankComm::all_gather_quiet`]): a rank that
/// finished it may already be sending the run's first batches.
fn same_run_everywhere(comm: &RankComm, sig: &str) -> Result<(), SimError> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    sig.hash(&mut h);
    let all = comm.all_gather_quiet(&[h.finish()]);
    match all.iter().position(|&x| x != all[0]) {
        None => Ok(()),
        Some(r) => Err(SimError::config(Setting::Run, format!(
            "rank {r} reached a different run than rank 0 ({sig}): every rank must build the same simulation"
        ))),
    }
}

fn rank_run<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    comm: &RankComm,
) -> Result<Report, SimError>
where
    M::Event: RankSafe,
{
    let start = Instant::now();
    let (rank, ranks, threads) = (comm.rank(), comm.size(), cc.threads);
    let net = MpiNet::<M::Event>::new(comm, threads, protocol == Protocol::NullMessage);
    let base = rank * threads;
    let mut states: Vec<Option<M::State>> = Vec::new();
    let out = run_part::<M, Q, _>(model, cfg, protocol, cc, (rank, ranks), &mut states, &|g| {
        net.endpoint(g - base)
    });
    let out = match (out, net.decode_error()) {
        (_, Some(e)) => ChildOut::failed(SimError::Process(format!("rank {rank}: {e}"))),
        (Ok(o), None) => o,
        // An error reached every rank already (a flag in the round protocols' snapshot, the
        // abort word under null messages) or is one every rank found (configuration).
        (Err(e), None) => ChildOut::failed(on_rank(e, rank)),
    };
    let part = RankPart {
        comm,
        states: &states,
        mapping: &cc.mapping,
        threads,
        start,
    };
    finish_rank_part(model, cfg, part, out, |outs, stats| {
        let mut report = procs::gather(
            cfg,
            protocol,
            cc,
            ranks,
            outs,
            stats,
            start.elapsed().as_secs_f64(),
        )?;
        let st = &mut report.executor_stats;
        st.remove("procs");
        st.remove("procs_total_s");
        Ok(report)
    })
}

/// A rank's finished part of a run, as [`finish_rank_part`] needs it.
pub(crate) struct RankPart<'a, S> {
    pub(crate) comm: &'a RankComm,
    /// The final states of this rank's LPs (`None` for the other ranks' LPs).
    pub(crate) states: &'a [Option<S>],
    /// The run's LP to worker mapping (over `ranks * threads` workers).
    pub(crate) mapping: &'a Mapping,
    /// Worker threads per rank.
    pub(crate) threads: usize,
    /// When this rank started the run.
    pub(crate) start: Instant,
}

/// Ends a rank's part the same way under every executor: adds this rank's transport figures to
/// `out`, then gathers every rank's part on rank 0 ([`finish_on_ranks`]), where `report` builds
/// the report from them; the report gets the rank count and rank 0's total seconds.
pub(crate) fn finish_rank_part<M: Model>(
    model: &M,
    cfg: &RunConfig,
    part: RankPart<'_, M::State>,
    mut out: ChildOut,
    report: impl FnOnce(Vec<ChildOut>, ModelStats) -> Result<Report, SimError>,
) -> Result<Report, SimError> {
    let RankPart {
        comm,
        states,
        mapping,
        threads,
        start,
    } = part;
    add_rank_figures(comm, &mut out);
    let ranks = comm.size();
    let owner = mapping
        .owners(cfg.lps, ranks * threads)
        .map_err(|m| SimError::config(Setting::Mapping, m))?;
    finish_on_ranks(
        model,
        cfg,
        comm,
        out,
        states,
        &owner,
        threads,
        |outs, stats| {
            let mut report = report(outs, stats)?;
            let st = &mut report.executor_stats;
            st.insert("ranks".into(), ranks as f64);
            st.insert("ranks_total_s".into(), start.elapsed().as_secs_f64());
            Ok(report)
        },
    )
}

/// This rank's transport figures, on its first worker's record (so the report has them per
/// rank): batches and bytes sent and received, records posted, collectives and the time spent
/// waiting in them.
pub(crate) fn add_rank_figures(comm: &RankComm, out: &mut ChildOut) {
    use std::sync::atomic::Ordering::SeqCst;
    let s = &comm.stats;
    let sent = s.msgs_sent.load(SeqCst) as f64;
    let figures = [
        ("rank", comm.rank() as f64),
        ("mpi_batches_sent", sent),
        ("mpi_bytes_sent", s.bytes_sent.load(SeqCst) as f64),
        ("mpi_batches_received", s.msgs_received.load(SeqCst) as f64),
        ("mpi_bytes_received", s.bytes_received.load(SeqCst) as f64),
        ("mpi_records_sent", s.records_posted.load(SeqCst) as f64),
        (
            "mpi_records_per_batch",
            if sent > 0.0 {
                s.records_posted.load(SeqCst) as f64 / sent
            } else {
                0.0
            },
        ),
        ("mpi_collectives", s.collectives.load(SeqCst) as f64),
        (
            "mpi_collective_s",
            s.collective_ns.load(SeqCst) as f64 * 1e-9,
        ),
    ];
    for (i, w) in out.workers.iter_mut().enumerate() {
        w.insert("rank".into(), comm.rank() as f64);
        if i == 0 {
            for (k, v) in figures {
                w.insert(k.into(), v);
            }
        }
    }
}

/// Rank 0's view of the ranks: its own report and finish replies from a local queue, the
/// others' over MPI.
struct RankParts<'a, M: Model> {
    comm: &'a RankComm,
    model: &'a M,
    states: &'a [Option<M::State>],
    own: VecDeque<Vec<u8>>,
}

impl<M: Model> Parts for RankParts<'_, M> {
    fn read(&mut self, p: usize) -> Option<Vec<u8>> {
        if p == 0 {
            self.own.pop_front()
        } else {
            Some(self.comm.recv_from(p))
        }
    }
    fn write(&mut self, p: usize, bytes: &[u8]) -> bool {
        if p == 0 {
            match serve_finish(self.model, self.states, bytes) {
                Some(reply) => {
                    self.own.push_back(reply);
                    true
                }
                None => false,
            }
        } else {
            self.comm.send_to(p, bytes);
            true
        }
    }
    fn close(&mut self) {
        for p in 1..self.comm.size() {
            self.comm.send_to(p, &[]);
        }
    }
    fn count(&self) -> usize {
        self.comm.size()
    }
}

/// The end of every run over ranks: rank 0 gathers every rank's `out`, computes `model_stats`
/// in LP order (finish requests go to the LP's rank, which serves them from `states`), makes
/// the report with `report` and broadcasts the outcome; every rank returns it (rank 0 with the
/// report, the others with an empty one of the same completeness).
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish_on_ranks<M: Model>(
    model: &M,
    cfg: &RunConfig,
    comm: &RankComm,
    out: ChildOut,
    states: &[Option<M::State>],
    owner: &[u32],
    threads: usize,
    report: impl FnOnce(Vec<ChildOut>, ModelStats) -> Result<Report, SimError>,
) -> Result<Report, SimError> {
    let result = if comm.rank() == 0 {
        let mut parts = RankParts {
            comm,
            model,
            states,
            own: VecDeque::from([encode(&out)]),
        };
        drop(out);
        match coordinate(model, cfg, owner, threads, &mut parts) {
            None => Err(SimError::Process(
                "a rank's report could not be read".into(),
            )),
            Some((mut outs, stats)) => match first_error(&mut outs) {
                Some(e) => Err(e),
                None => stats.and_then(|s| report(outs, s)),
            },
        }
    } else {
        comm.send_to_root(&encode(&out));
        loop {
            let req = comm.recv_from_root();
            if req.is_empty() {
                break;
            }
            let reply = serve_finish(model, states, &req).unwrap_or_else(|| {
                let mut w = crate::transport::wire::Writer::default();
                w.u64(1);
                w.str(&format!(
                    "rank {}: a malformed Model::finish request",
                    comm.rank()
                ));
                w.0
            });
            comm.send_to_root(&reply);
        }
        Err(SimError::Process(String::new()))
    };
    // The outcome, from rank 0 to every rank.
    let outcome = match &result {
        Ok(r) => {
            let mut o = ChildOut::failed(SimError::Process(String::new()));
            o.result = Ok(());
            o.stopped = !r.complete;
            o
        }
        Err(e) => ChildOut::failed(e.clone()),
    };
    let bytes = comm.broadcast(&encode(&outcome));
    if comm.rank() == 0 {
        return result;
    }
    let o = decode(&bytes)
        .ok_or_else(|| SimError::Process("rank 0's outcome could not be read".into()))?;
    o.result?;
    let mut r = Report::new("ranks", threads, cfg.queue.name(), cfg.lps, cfg.end);
    r.complete = !o.stopped;
    Ok(r)
}

/// `e` with the rank it happened on, where it names an LP.
pub(crate) fn on_rank(e: SimError, rank: usize) -> SimError {
    match e {
        SimError::Panic { lp, time, message } => SimError::Panic {
            lp,
            time,
            message: format!("{message} (on rank {rank})"),
        },
        SimError::Model(mut m) => {
            m.message = format!("{} (on rank {rank})", m.message);
            SimError::Model(m)
        }
        other => other,
    }
}
