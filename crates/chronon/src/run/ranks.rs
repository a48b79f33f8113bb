//! Runs over the ranks of an `mpirun` ([`Simulation::ranks`]), for every protocol family:
//! every rank checks the run and must have reached the same one, runs the family's part
//! ([`OverRanks::run_part`]), and reports a `PartOut` (the record a worker process sends its
//! parent); rank 0 computes `model_stats` in LP order exactly as the multi-process parent does
//! (`coordinate.rs`, asking the owner rank to run `Model::finish` where it reads figures), has
//! the family build the one report, and broadcasts the outcome so that every rank returns the
//! same error (or success).
//!
//! [`Simulation::ranks`]: crate::Simulation::ranks
//! [`OverRanks::run_part`]: crate::executor::family::OverRanks::run_part

use std::collections::VecDeque;
use std::time::Instant;

use mpi::topology::SimpleCommunicator;

use super::coordinate::{coordinate, first_error, serve_finish, Parts};
use crate::error::{Setting, SimError};
use crate::executor::over::mpi::OverRanks;
use crate::executor::part_out::{decode, encode, PartOut};
use crate::executor::{Executor, RunConfig};
use crate::model::{Model, ModelStats};
use crate::stats::Report;
use crate::transport::mpi::comm::RankComm;
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

/// A run over MPI ranks, as a function pointer (instantiated where `M::Event: RankSafe` is
/// known).
pub(crate) type RanksFn<M> = fn(&M, &RunConfig, &Executor) -> Result<Report, SimError>;

/// Runs `model` with `executor` over every rank of the MPI world (see [`run`]).
pub(crate) fn run_executor<M: Model>(
    model: &M,
    cfg: &RunConfig,
    executor: &Executor,
) -> Result<Report, SimError>
where
    M::Event: RankSafe,
{
    match super::Families::of(executor, Setting::Ranks)? {
        super::Families::Conservative(f) => run(model, cfg, &f),
        super::Families::TimeWarp(f) => run(model, cfg, &f),
    }
}

/// Runs `model` with `family` over every rank of the MPI world. Every rank calls it with the
/// same configuration; rank 0's result carries the report, the others' an empty report with
/// the same completeness (or the same error).
fn run<M: Model, F: OverRanks<M>>(
    model: &M,
    cfg: &RunConfig,
    family: &F,
) -> Result<Report, SimError>
where
    M::Event: RankSafe,
{
    on_world(
        |comm| super::checks::across_parts(model, cfg, family, Setting::Ranks, comm.size()),
        |comm| {
            let start = Instant::now();
            let (rank, threads) = (comm.rank(), family.threads());
            let mut states: Vec<Option<M::State>> = Vec::new();
            let mut out = family
                .run_part(model, cfg, comm, &mut states)
                .unwrap_or_else(|e| PartOut::failed(on_rank(e, rank)));
            add_rank_figures(comm, &mut out);
            let ranks = comm.size();
            let owner = family
                .mapping()
                .owners(cfg.lps, ranks * threads)
                .map_err(|m| SimError::config(Setting::Mapping, m))?;
            finish_on_ranks(
                model,
                cfg,
                comm,
                out,
                &states,
                &owner,
                threads,
                |outs, stats| {
                    let peak_rss: u64 = outs.iter().map(|o| o.peak_rss).sum();
                    let mut report = family.report(model, cfg, outs, stats)?;
                    let st = &mut report.executor_stats;
                    st.insert("ranks".into(), ranks as f64);
                    st.insert("ranks_total_s".into(), start.elapsed().as_secs_f64());
                    super::transport_figures(&mut report, cfg.pin, ranks * threads, peak_rss);
                    Ok(report)
                },
            )
        },
    )
}

/// The frame of every run over the ranks of the MPI world (the conservative protocols' and
/// Time Warp's): MPI must be initialized; `check` runs on every rank and returns the run's
/// signature (the same configuration gives every rank the same error, which only rank 0's
/// caller prints); every rank must have reached the same run; `body` does this rank's part;
/// then no message is left unmatched when MPI finalizes, and the thread's shared heap goes.
fn on_world<T>(
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

/// This rank's transport figures, on its first worker's record (so the report has them per
/// rank): batches and bytes sent and received, records posted, collectives and the time spent
/// waiting in them.
fn add_rank_figures(comm: &RankComm, out: &mut PartOut) {
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
fn finish_on_ranks<M: Model>(
    model: &M,
    cfg: &RunConfig,
    comm: &RankComm,
    out: PartOut,
    states: &[Option<M::State>],
    owner: &[u32],
    threads: usize,
    report: impl FnOnce(Vec<PartOut>, ModelStats) -> Result<Report, SimError>,
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
                None => {
                    crate::run::coordinate::note_part_errors(cfg, &mut outs);
                    stats.and_then(|s| report(outs, s))
                }
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
            let mut o = PartOut::ok();
            o.stopped = !r.complete;
            o
        }
        Err(e) => PartOut::failed(e.clone()),
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
