//! A rank's driver thread: the only thread of the rank that sends to or delivers from other
//! ranks, and the one that runs GVT across ranks (`dgvt.rs`). Its loop:
//!
//! 1. **pump** (rule D2): take every batch workers handed over, serialize each message into the
//!    record of its destination rank (one record per destination rank per pump, tagged with
//!    the current colour: `Dgvt::on_send` with the record's earliest time), post the records;
//! 2. **receive**: the rank layer's probe-and-receive; each record's messages go into their
//!    workers' mailboxes, and only then is the record counted (`Dgvt::on_receive`, rule D1);
//! 3. **GVT**: `Dgvt::poll`, with the rank's in-rank round (`GvtRegisters::ranked`) as its
//!    local round; a computation begins when a worker asked (`try_start` every `gvt_every`
//!    events, or while it has nothing it may run), when the last one's outcome says a worker
//!    of *some* rank asked during it (`Outcome::wanted`: then every rank begins at once, in
//!    step), or when the last one ended more than [`PACE`] ago. A completed computation
//!    publishes GVT to the rank's workers (the same value on every rank).
//!
//! It ends when GVT reaches the end time on every rank (the same reduction result everywhere),
//! or when a rank failed (its contribution says so, and the rank layer's abort message goes
//! out at once). Then it waits for the rank's workers to stop, and (complete runs) exchanges
//! sent/received totals until every message is delivered, so each is counted once in
//! `pending_at_end`.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use super::super::dgvt::{Dgvt, DgvtStats, LocalRound, Reduce, SUMS};
#[cfg(all(target_os = "linux", not(chronon_loom)))]
use super::super::fossil::FreedAt;
use super::super::shared::Shared;
use crate::error::SimError;
use crate::event::Keyed;
use crate::model::Model;
use crate::transport::mpi::comm::{Backoff, PendingGather, RankComm};
use crate::transport::mpi::tw_codec as codec;
use crate::transport::mpi::RankSafe;
use crate::tw_msg::Msg;

/// A rank begins a GVT computation at least this often, asked or not (so that GVT moves while
/// workers are idle, e.g. waiting for it at the end).
const PACE: Duration = Duration::from_millis(1);

/// The capacity a delivered batch for one worker starts with.
const BATCH_HINT: usize = 32;

/// What the driver hands back.
#[derive(Debug, Default)]
pub(crate) struct DriverOut {
    pub(crate) gvt: DgvtStats,
    /// Whether GVT reached the end time (rather than a rank failing).
    pub(crate) complete: bool,
    /// Records sent and received (messages of other ranks), and their messages.
    pub(crate) records_sent: u64,
    pub(crate) msgs_sent: u64,
    pub(crate) msgs_received: u64,
}

/// The in-rank round as `Dgvt`'s local round.
struct Local<'s, 'a, M: Model> {
    sh: &'s Shared<'a, M>,
    round: u64,
}

impl<M: Model> LocalRound for Local<'_, '_, M> {
    fn start(&mut self) {
        // Only the driver starts rounds over ranks, one after the other: none is in progress.
        if let Some(r) = self.sh.gvt.start_local() {
            self.round = r;
        }
    }
    fn result(&mut self) -> Option<f64> {
        if self.sh.abort.load(SeqCst) {
            // Workers stop reporting once the rank aborts; the contribution says failed.
            return Some(self.sh.gvt.gvt());
        }
        self.sh.gvt.local_result(self.round)
    }
}

/// The reduction over the rank layer's non-blocking all-gather: each rank gathers every
/// rank's `[transit, failed, wanted, min bits]` and reduces them itself (the same result
/// everywhere).
struct Gather<'c> {
    comm: &'c RankComm,
    pending: Option<PendingGather>,
}

impl Reduce for Gather<'_> {
    fn start(&mut self, sums: [i64; SUMS], min: f64) {
        self.pending = Some(self.comm.start_all_gather(&[
            sums[0] as u64,
            sums[1] as u64,
            sums[2] as u64,
            min.to_bits(),
        ]));
    }

    fn test(&mut self) -> Option<([i64; SUMS], f64)> {
        let g = self.pending.as_mut()?;
        let all = self.comm.test_all_gather(g)?;
        self.pending = None;
        let (mut sums, mut min) = ([0i64; SUMS], f64::INFINITY);
        for c in all.chunks_exact(SUMS + 1) {
            for (s, v) in sums.iter_mut().zip(c) {
                *s = s.wrapping_add(*v as i64);
            }
            min = min.min(f64::from_bits(c[SUMS]));
        }
        Some((sums, min))
    }
}

/// Runs rank `comm.rank()`'s driver on a thread of its own until the run is over; `stopped`
/// counts the rank's workers whose loop ended.
pub(crate) fn drive<M: Model>(
    sh: &Shared<'_, M>,
    comm: &RankComm,
    threads: usize,
    stopped: &AtomicUsize,
) -> DriverOut
where
    M::Event: RankSafe,
{
    // Payloads from other ranks are decoded on this thread, into its receive heap: the run's
    // size classes, so that every payload a handler can allocate also arrives.
    sh.run.enter_thread();
    let mut d = Driver::new(sh, comm, threads);
    d.run(sh, stopped)
}

/// The rank's driver: its state between two steps. A step is one pass of the loop in the
/// module documentation; the driver thread ([`drive`]) makes them in a loop, a rank without a
/// driver thread lets its worker make them (`Shared::pump`, README "Which thread talks MPI").
pub(crate) struct Driver<'c, M: Model> {
    comm: &'c RankComm,
    threads: usize,
    dgvt: Dgvt,
    gather: Gather<'c>,
    /// The local round in progress (its number).
    round: u64,
    /// Per destination rank: the record being written, its message count, earliest time.
    bufs: Vec<Vec<u8>>,
    counts: Vec<u32>,
    mins: Vec<f64>,
    out: DriverOut,
    /// Scratch: decoded messages per destination worker.
    per_worker: Vec<Vec<Msg<M::Event>>>,
    /// When the last GVT computation ended.
    last: Instant,
    /// This rank's failure was told to every rank.
    marked: bool,
    /// The last computation's outcome said some rank's workers asked for GVT: every rank
    /// begins the next one at once (they all saw the same outcome), so the ranks'
    /// computations stay in step instead of one rank waiting in a reduction until another's
    /// pace comes.
    again: bool,
    /// GVT reached the end time or the run failed: no more computations; what is left is
    /// sending and delivering until the rank's workers stopped, then [`finish`](Self::finish).
    pub(crate) done: bool,
}

impl<'c, M: Model> Driver<'c, M>
where
    M::Event: RankSafe,
{
    pub(crate) fn new(sh: &Shared<'_, M>, comm: &'c RankComm, threads: usize) -> Self {
        Driver {
            comm,
            threads,
            dgvt: Dgvt::new(),
            gather: Gather {
                comm,
                pending: None,
            },
            round: 0,
            bufs: (0..comm.size()).map(|_| Vec::new()).collect(),
            counts: vec![0; comm.size()],
            mins: vec![f64::INFINITY; comm.size()],
            out: DriverOut::default(),
            per_worker: (0..sh.workers).map(|_| Vec::new()).collect(),
            last: Instant::now(),
            marked: false,
            again: false,
            done: false,
        }
    }

    /// Whether a GVT computation is in progress.
    pub(crate) fn computing(&self) -> bool {
        self.dgvt.busy()
    }

    /// Steps until the run is over and `stopped` says every worker of the rank stopped, backing
    /// off while nothing moves; then [`finish`](Self::finish).
    pub(crate) fn run(&mut self, sh: &Shared<'_, M>, stopped: &AtomicUsize) -> DriverOut {
        let mut backoff = Backoff::default();
        loop {
            let all_stopped = stopped.load(SeqCst) == self.threads;
            if self.done && all_stopped {
                break;
            }
            if self.step(sh, all_stopped) {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
        self.finish(sh)
    }

    /// One pass of the driver's loop: send, receive, and (until the run is over) one step of
    /// the GVT computation. `all_stopped`: every worker of the rank stopped. Returns whether
    /// anything moved.
    pub(crate) fn step(&mut self, sh: &Shared<'_, M>, all_stopped: bool) -> bool {
        let mut busy = self.pump(sh);
        busy |= self.receive(sh);
        if self.done {
            return busy;
        }
        let comm = self.comm;
        if comm.aborted().is_some() || all_stopped {
            // Another rank stopped the run, or every worker of this rank stopped before GVT
            // reached the end (a stop request): the local rounds can no longer complete, so
            // this rank stops the run too rather than wait for them.
            sh.abort.store(true, SeqCst);
        }
        if sh.abort.load(SeqCst) && !self.marked {
            // This rank failed (or learned that another did): say so in the next reduction,
            // and tell every rank at once.
            self.marked = true;
            self.dgvt.fail();
            comm.abort();
        }
        let wanted = sh.gvt.take_wanted();
        if wanted {
            self.dgvt.want();
        }
        let begin = wanted || self.again || self.last.elapsed() >= PACE || self.marked;
        let was = (self.dgvt.step_of(), self.dgvt.stats().rounds);
        let mut local = Local {
            sh,
            round: self.round,
        };
        let out = self.dgvt.poll(&mut self.gather, &mut local, begin);
        self.round = local.round;
        // A computation moved (or one ended and the next began at once).
        busy |= (self.dgvt.step_of(), self.dgvt.stats().rounds) != was;
        if self.dgvt.busy() {
            self.again = false;
        }
        if let Some(o) = out {
            self.last = Instant::now();
            self.again = o.wanted > 0;
            if o.failed > 0 {
                sh.abort.store(true, SeqCst);
                self.done = true;
            } else {
                sh.gvt.publish(o.gvt);
                // The items this thread decoded are reused once GVT passes the time they were
                // freed at, as every worker's (`fossil.rs`). Without a driver thread the worker
                // steps here, and its fossil collection reports the same GVT.
                #[cfg(all(target_os = "linux", not(chronon_loom)))]
                crate::shm::set_thread_gvt(o.gvt);
                sh.after_round(o.gvt);
                if o.gvt >= sh.end {
                    self.out.complete = true;
                    self.done = true;
                }
            }
        }
        busy
    }

    /// Once every worker of the rank stopped: sends what is left, and (complete runs)
    /// exchanges totals until every message is delivered, so each is counted once in
    /// `pending_at_end`.
    pub(crate) fn finish(&mut self, sh: &Shared<'_, M>) -> DriverOut {
        self.pump(sh);
        if self.out.complete {
            self.settle(sh);
        }
        self.out.gvt = self.dgvt.stats();
        std::mem::take(&mut self.out)
    }
    /// The rank of the worker that owns LP `lp`.
    fn rank_of(&self, sh: &Shared<'_, M>, lp: u32) -> usize {
        sh.owner_of(lp) / self.threads
    }

    /// Sends what workers handed over (rule D2). Returns whether there was anything.
    fn pump(&mut self, sh: &Shared<'_, M>) -> bool {
        let Some(net) = sh.wires.ranks() else {
            return false;
        };
        let mut any = false;
        net.take_outgoing(|mut b| {
            any = true;
            b.drain_into(&mut |m: Msg<M::Event>| {
                let dst = match &m {
                    Msg::Event(e, _) => e.dst,
                    Msg::Anti(a) => a.dst,
                };
                let r = self.rank_of(sh, dst);
                if self.counts[r] == 0 {
                    self.bufs[r].clear();
                    codec::begin_record(&mut self.bufs[r], 0);
                }
                let at = m.key().time;
                match codec::put(&mut self.bufs[r], &m) {
                    Ok(()) => {
                        self.counts[r] += 1;
                        self.mins[r] = self.mins[r].min(at);
                    }
                    // The run ends on every rank (the driver's next contribution says failed).
                    Err(e) => sh.fail(SimError::Process(e)),
                }
                // The record holds the payload's bytes now; a shared-heap item the message
                // held is freed here, at the message's time. Left to this thread's clock
                // (`+inf`: the driver runs no handler) the item would wait for the end of the
                // run, and a sender's heap would fill with items nothing refers to. No rollback
                // needs it: the handler that sent the message runs again from scratch.
                #[cfg(all(target_os = "linux", not(chronon_loom)))]
                let _at = FreedAt::new(at);
                drop(m);
            });
            net.give_back(b);
        });
        if !any {
            return false;
        }
        for r in 0..self.bufs.len() {
            let n = std::mem::take(&mut self.counts[r]);
            if n == 0 {
                continue;
            }
            let epoch = self
                .dgvt
                .on_send(std::mem::replace(&mut self.mins[r], f64::INFINITY));
            let buf = &mut self.bufs[r];
            buf[..8].copy_from_slice(&epoch.to_le_bytes());
            codec::end_record(buf, 8, n);
            self.comm.post(r, |out| out.extend_from_slice(buf));
            self.out.records_sent += 1;
            self.out.msgs_sent += u64::from(n);
        }
        self.comm.flush();
        true
    }

    /// Delivers what arrived from other ranks. Returns whether anything did.
    fn receive(&mut self, sh: &Shared<'_, M>) -> bool {
        let comm = self.comm;
        comm.progress(&mut |_, b| self.deliver(sh, b)) > 0
    }

    /// Decodes a batch into the workers' mailboxes, counting each record once its messages
    /// are there (rule D1).
    fn deliver(&mut self, sh: &Shared<'_, M>, bytes: &[u8]) {
        let per_worker = &mut self.per_worker;
        let dgvt = &mut self.dgvt;
        let out = &mut self.out;
        let r = codec::decode::<M::Event>(bytes, |epoch, msgs| {
            let mut touched = Vec::new();
            for m in msgs {
                let Ok(m) = m else { break };
                let lp = match &m {
                    Msg::Event(e, _) => e.dst,
                    Msg::Anti(a) => a.dst,
                };
                let w = sh.owner_of(lp);
                if per_worker[w].is_empty() {
                    touched.push(w);
                    // The Vec goes to the mailbox whole: start it at a batch's usual size
                    // rather than grow it message by message.
                    per_worker[w].reserve(BATCH_HINT);
                }
                per_worker[w].push(m);
                out.msgs_received += 1;
            }
            let net = sh.wires.ranks().expect("a run over ranks has rank wires");
            for w in touched {
                net.mailbox(w)
                    .push_batch(std::mem::take(&mut per_worker[w]));
            }
            dgvt.on_receive(epoch);
        });
        if let Err(e) = r {
            sh.fail(SimError::Process(format!("rank {}: {e}", self.comm.rank())));
        }
    }

    /// After the workers stopped on every rank: exchanges totals until every record sent has
    /// been delivered (into mailboxes: the workers' leftovers count them).
    fn settle(&mut self, sh: &Shared<'_, M>) {
        loop {
            let (sent, recv) = self.dgvt.totals();
            let comm = self.comm;
            let all = comm.all_gather(&[sent, recv], &mut |_, b| self.deliver(sh, b));
            let (s, r) = all
                .chunks_exact(2)
                .fold((0u64, 0u64), |(s, r), c| (s + c[0], r + c[1]));
            if s == r {
                return;
            }
            // Some record is still on its way: the next gather receives while it waits.
            self.receive(sh);
        }
    }
}
