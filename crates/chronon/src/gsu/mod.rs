//! The software Global Synchronization Unit (seed 000 §3.1).
//!
//! Per worker, three registers: **MOE** (the key of the worker's minimum outstanding event, with
//! a bound derived from it, such as that time plus the worker's lookahead), **MOM** (the
//! minimum timestamp of the messages in transit to the worker: its mailbox's min register) and
//! **TMC** (the count of messages in transit to it). Registers change only through the three
//! operations [`Gsu::send`], [`Gsu::receive`] and [`Gsu::publish`], and [`Gsu::snapshot`] reads
//! a consistent cut of them, so the minimum over MOE and MOM is a true lower bound on every
//! unprocessed event, in flight or not, even while workers run. The register block and the
//! algorithm are written once (`regs.rs`) and serve both this process-private `Gsu` and the
//! shared control segment of worker processes (`shm::Control`). Protocol, invariants and proof:
//! `README.md` beside this file. Every worker's registers sit on their own cache lines.

mod regs;

pub(crate) use regs::{RegFile, Regs};

use crate::comm::Mailbox;
use crate::event::{EventKey, Keyed};

/// What a worker publishes about itself (its MOE register and what rides with it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    /// The key of the worker's earliest unprocessed event (time `+inf` when none).
    pub moe: EventKey,
    /// A time derived from it by the protocol (e.g. `moe.time` + the worker's lookahead).
    pub bound: f64,
    /// Protocol flags (errors, stop requests, …), OR-ed over workers by a snapshot.
    pub flags: u64,
    /// A protocol-specific extra value (e.g. the next global event's time).
    pub aux: f64,
}

impl Published {
    /// Nothing outstanding.
    pub const IDLE: Published = Published {
        moe: EventKey {
            time: f64::INFINITY,
            seq: u64::MAX,
            src: u32::MAX,
        },
        bound: f64::INFINITY,
        flags: 0,
        aux: f64::INFINITY,
    };
}

/// One worker's registers as a snapshot saw them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkerView {
    /// Its MOE register and what rides with it.
    pub published: Published,
    /// Its MOM register: a lower bound on the times of the messages in transit to it.
    pub mom: f64,
    /// Its TMC register.
    pub tmc: i64,
}

/// A consistent cut of every worker's registers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Per worker.
    pub workers: Vec<WorkerView>,
}

impl Snapshot {
    /// The lower bound on every unprocessed event's time: min over workers of MOE and MOM.
    pub fn lbts(&self) -> f64 {
        self.workers
            .iter()
            .map(|w| w.published.moe.time.min(w.mom))
            .fold(f64::INFINITY, f64::min)
    }

    /// The smallest MOE key.
    pub fn min_moe(&self) -> EventKey {
        self.workers
            .iter()
            .map(|w| w.published.moe)
            .min()
            .unwrap_or(Published::IDLE.moe)
    }

    /// The minimum over workers of `bound` and of `MOM + extra[w]`.
    pub fn min_bound(&self, extra: &[f64]) -> f64 {
        self.workers
            .iter()
            .zip(extra)
            .map(|(w, x)| w.published.bound.min(w.mom + x))
            .fold(f64::INFINITY, f64::min)
    }

    /// All workers' flags OR-ed.
    pub fn flags(&self) -> u64 {
        self.workers.iter().fold(0, |a, w| a | w.published.flags)
    }

    /// Messages in transit, over all workers.
    pub fn in_transit(&self) -> i64 {
        self.workers.iter().map(|w| w.tmc).sum()
    }
}

/// The register files of `W` workers in this process's memory (see the module documentation).
/// Every operation is `RegFile`'s (`regs.rs`), the one implementation that the shared control
/// segment (`shm::Control`) uses too.
#[derive(Debug)]
pub struct Gsu {
    regs: Box<[Regs]>,
}

impl Gsu {
    /// Registers for `workers` workers, all idle.
    pub fn new(workers: usize) -> Self {
        Gsu {
            regs: (0..workers).map(|_| Regs::new(&Published::IDLE)).collect(),
        }
    }

    /// Registers for workers whose queues already hold their first events: worker `w`'s MOE
    /// starts at `first[w]` (the earliest key in its queue, [`Published::IDLE`]'s when empty).
    /// Seeding them before any worker runs keeps G1 from the start: an event that entered a
    /// queue before its worker ever published is still covered (invariant G0 in README.md).
    pub fn seeded(first: &[EventKey]) -> Self {
        Gsu {
            regs: first
                .iter()
                .map(|&moe| {
                    Regs::new(&Published {
                        moe,
                        ..Published::IDLE
                    })
                })
                .collect(),
        }
    }

    #[inline]
    fn file(&self) -> RegFile<'_> {
        RegFile::new(&self.regs)
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.regs.len()
    }

    /// Sends `batch` to worker `dst` through its mailbox: TMC up first, then the push (which
    /// lowers MOM). The sender must not raise its own MOE above these events' times before
    /// this returns.
    pub fn send<T: Keyed>(&self, dst: usize, mailbox: &Mailbox<T>, batch: Vec<T>) {
        if batch.is_empty() {
            return;
        }
        self.file().count_sent(dst, batch.len());
        mailbox.push_batch(batch);
    }

    /// Worker `me` receives everything in its mailbox: each event goes to `f`, then the
    /// worker's new registers (`after`, which must cover what was received) are published,
    /// and TMC goes down, all inside one odd epoch so that no snapshot can see the messages
    /// gone from MOM but not yet in MOE. Returns the number received.
    pub fn receive<T, S>(
        &self,
        me: usize,
        mailbox: &Mailbox<T>,
        state: &mut S,
        mut f: impl FnMut(&mut S, T),
        after: impl FnOnce(&mut S) -> Published,
    ) -> usize {
        self.file().receive(me, || {
            let n = mailbox.take(|e| f(state, e));
            (n, after(state))
        })
    }

    /// Worker `me` publishes its registers (inside an odd epoch, like `receive`).
    pub fn publish(&self, me: usize, p: &Published) {
        self.file().publish(me, p);
    }

    /// Worker `me` publishes `p`, then takes a snapshot into `out` and returns its LBTS: the
    /// termination test of a worker that has nothing left before the end ("is anything,
    /// anywhere, earlier than the end?"). Publishing first makes the cut cover this worker's own
    /// queue as it is now; G0 and G1 make it cover every other queue and every message in
    /// transit (README.md, "Termination").
    pub fn publish_and_snapshot(
        &self,
        me: usize,
        p: &Published,
        mom: impl Fn(usize) -> f64,
        out: &mut Snapshot,
    ) -> f64 {
        self.publish(me, p);
        self.snapshot(mom, out);
        out.lbts()
    }

    /// Worker `w`'s last published registers (no consistency with other workers implied).
    pub fn published(&self, w: usize) -> Published {
        self.file().published(w)
    }

    /// A consistent cut of every worker's registers (double collect: epochs, every MOE, every
    /// MOM and TMC, epochs again; retried until no epoch was odd or moved). `mom(w)` reads
    /// worker `w`'s mailbox register ([`Mailbox::min_time`]).
    pub fn snapshot(&self, mom: impl Fn(usize) -> f64, out: &mut Snapshot) {
        self.file().snapshot(mom, out);
    }
}

#[cfg(all(test, chronon_loom))]
mod loom_tests;
#[cfg(all(test, not(chronon_loom)))]
mod tests;
