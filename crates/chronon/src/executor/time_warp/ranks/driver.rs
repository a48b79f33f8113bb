//! A rank's driver: the one thread of a rank at a time that moves the rank's messages to and
//! from other ranks, through the transport between ranks (`RankNet`, `transport/tw.rs`; over
//! MPI `transport/mpi/tw_link.rs`), and runs GVT across ranks (`dgvt.rs`). Its loop:
//!
//! 1. **send** (rule D2): the transport sends every batch workers handed over, one record per
//!    destination rank, each coloured by `Dgvt::on_send` with the record's earliest time;
//! 2. **receive**: the transport delivers each record that arrived into its workers'
//!    mailboxes, and only then counts it (`Dgvt::on_receive`, rule D1);
//! 3. **GVT**: `Dgvt::poll`, on the transport's reduction, with the rank's in-rank round
//!    (`GvtRegisters::ranked`) as its local round; a computation begins when a worker asked
//!    (`try_start` every `gvt_every` events, or while it has nothing it may run), when the last
//!    one's outcome says a worker of *some* rank asked during it (`Outcome::wanted`: then every
//!    rank begins at once, in step), or when the last one ended more than [`PACE`] ago. A
//!    completed computation publishes GVT to the rank's workers (the same value on every rank).
//!
//! It ends when GVT reaches the end time on every rank (the same reduction result everywhere),
//! or when a rank failed (its contribution says so, and the transport's abort goes out at
//! once). Then it waits for the rank's workers to stop, and (complete runs) the transport
//! settles: sent/received totals are exchanged until every message is delivered, so each is
//! counted once in `pending_at_end`. Nothing here names the transport's types.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use super::super::dgvt::{Dgvt, DgvtStats, LocalRound};
use super::super::shared::Shared;
use crate::error::SimError;
use crate::model::Model;
use crate::transport::tw::RankNet;

/// A rank begins a GVT computation at least this often, asked or not (so that GVT moves while
/// workers are idle, e.g. waiting for it at the end).
const PACE: Duration = Duration::from_millis(1);

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

/// Runs the rank's driver `d` on a thread of its own until the run is over; `stopped` counts
/// the rank's workers whose loop ended.
pub(crate) fn drive<M: Model>(
    sh: &Shared<'_, M>,
    mut d: Driver<'_>,
    stopped: &AtomicUsize,
) -> DriverOut {
    // Payloads from other ranks are decoded on this thread, into its receive heap: the run's
    // size classes, so that every payload a handler can allocate also arrives.
    sh.run.enter_thread();
    d.run(sh, stopped)
}

/// The rank's driver: its state between two steps. A step is one pass of the loop in the
/// module documentation; the driver thread ([`drive`]) makes them in a loop, a rank without a
/// driver thread lets its worker make them (`Shared::driver`, README "Which thread talks MPI").
pub(crate) struct Driver<'c> {
    /// The transport between ranks (and the reduction it lends).
    net: Box<dyn RankNet + 'c>,
    threads: usize,
    dgvt: Dgvt,
    /// The local round in progress (its number).
    round: u64,
    out: DriverOut,
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

impl<'c> Driver<'c> {
    /// The driver of a rank of `threads` workers, over `net`.
    pub(crate) fn new(net: Box<dyn RankNet + 'c>, threads: usize) -> Self {
        Driver {
            net,
            threads,
            dgvt: Dgvt::new(),
            round: 0,
            out: DriverOut::default(),
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
    pub(crate) fn run<M: Model>(&mut self, sh: &Shared<'_, M>, stopped: &AtomicUsize) -> DriverOut {
        loop {
            let all_stopped = stopped.load(SeqCst) == self.threads;
            if self.done && all_stopped {
                break;
            }
            let moved = self.step(sh, all_stopped);
            self.net.pause(moved);
        }
        self.finish(sh)
    }

    /// One pass of the driver's loop: send, receive, and (until the run is over) one step of
    /// the GVT computation. `all_stopped`: every worker of the rank stopped. Returns whether
    /// anything moved.
    pub(crate) fn step<M: Model>(&mut self, sh: &Shared<'_, M>, all_stopped: bool) -> bool {
        let mut busy = self.send(sh);
        busy |= self.receive(sh);
        if self.done {
            return busy;
        }
        if self.net.aborted() || all_stopped {
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
            self.net.abort();
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
        let out = self.dgvt.poll(&mut *self.net, &mut local, begin);
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

    /// Once every worker of the rank stopped: sends what is left, and (complete runs) lets the
    /// transport settle, so each message is counted once in `pending_at_end`.
    pub(crate) fn finish<M: Model>(&mut self, sh: &Shared<'_, M>) -> DriverOut {
        self.send(sh);
        if self.out.complete {
            let owner = |lp| sh.owner_of(lp);
            if let Err(e) = self.net.settle(&owner, &mut self.dgvt) {
                sh.fail(SimError::Process(e));
            }
        }
        self.out.gvt = self.dgvt.stats();
        (
            self.out.records_sent,
            self.out.msgs_sent,
            self.out.msgs_received,
        ) = self.net.figures();
        std::mem::take(&mut self.out)
    }

    /// Sends what workers handed over (rule D2). Returns whether there was anything.
    fn send<M: Model>(&mut self, sh: &Shared<'_, M>) -> bool {
        let owner = |lp| sh.owner_of(lp);
        self.net
            .send(&owner, &mut self.dgvt)
            // The run ends on every rank (the driver's next contribution says failed).
            .unwrap_or_else(|e| {
                sh.fail(SimError::Process(e));
                true
            })
    }

    /// Delivers what arrived from other ranks. Returns whether anything did.
    fn receive<M: Model>(&mut self, sh: &Shared<'_, M>) -> bool {
        let owner = |lp| sh.owner_of(lp);
        self.net
            .receive(&owner, &mut self.dgvt)
            .unwrap_or_else(|e| {
                sh.fail(SimError::Process(e));
                true
            })
    }
}
