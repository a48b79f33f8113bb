//! The GSU register set and its algorithm, once, over any storage. [`Regs`] is one worker's
//! register block: `#[repr(C)]`, atomics only, no pointers, so it means the same wherever it
//! lives — in this process's heap ([`Gsu`](super::Gsu)) or in a segment that several processes
//! map (`shm::Control`). [`RegFile`] is a view over the blocks of every
//! worker (a plain slice, `Copy`); the operations S1, R1–R5, publish, bracket and the snapshot
//! C1–C4 of `README.md` are its methods, and both owners delegate to them (statically, inlined).

use super::{Published, Snapshot, WorkerView};
use crate::event::EventKey;
use crate::loom::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};

/// One worker's registers, on their own 128-byte lines (two cache lines: adjacent-line
/// prefetch on x86 pairs them), so workers never share a line. The layout is fixed
/// (`repr(C)`), every field is an atomic, and all-zero bytes are a valid value (std atomics), so
/// a block may live in a mapping shared by several processes.
#[derive(Debug)]
#[repr(C, align(128))]
pub(crate) struct Regs {
    /// Even: stable; odd: a receive, publish or bracket is in progress (a per-worker seqlock).
    epoch: AtomicU64,
    moe_time: AtomicU64,
    moe_seq: AtomicU64,
    moe_src: AtomicU64,
    bound: AtomicU64,
    flags: AtomicU64,
    aux: AtomicU64,
    /// Messages sent to this worker and not yet received.
    tmc: AtomicI64,
}

impl Regs {
    /// A block at epoch 0 holding `p`, no message in transit.
    pub(crate) fn new(p: &Published) -> Self {
        Regs {
            epoch: AtomicU64::new(0),
            moe_time: AtomicU64::new(p.moe.time.to_bits()),
            moe_seq: AtomicU64::new(p.moe.seq),
            moe_src: AtomicU64::new(u64::from(p.moe.src)),
            bound: AtomicU64::new(p.bound.to_bits()),
            flags: AtomicU64::new(p.flags),
            aux: AtomicU64::new(p.aux.to_bits()),
            tmc: AtomicI64::new(0),
        }
    }

    #[inline]
    fn store(&self, p: &Published) {
        self.moe_time.store(p.moe.time.to_bits(), SeqCst);
        self.moe_seq.store(p.moe.seq, SeqCst);
        self.moe_src.store(u64::from(p.moe.src), SeqCst);
        self.bound.store(p.bound.to_bits(), SeqCst);
        self.flags.store(p.flags, SeqCst);
        self.aux.store(p.aux.to_bits(), SeqCst);
    }

    #[inline]
    fn load(&self) -> Published {
        Published {
            moe: EventKey {
                time: f64::from_bits(self.moe_time.load(SeqCst)),
                seq: self.moe_seq.load(SeqCst),
                src: self.moe_src.load(SeqCst) as u32,
            },
            bound: f64::from_bits(self.bound.load(SeqCst)),
            flags: self.flags.load(SeqCst),
            aux: f64::from_bits(self.aux.load(SeqCst)),
        }
    }
}

/// The registers of every worker, wherever their blocks are stored (worker `w`'s block is
/// `regs[w]`). Every operation is SeqCst (README.md, "Operations").
#[derive(Clone, Copy, Debug)]
pub(crate) struct RegFile<'a> {
    regs: &'a [Regs],
}

impl<'a> RegFile<'a> {
    /// The view over `regs`, one block per worker.
    #[inline]
    pub(crate) fn new(regs: &'a [Regs]) -> Self {
        RegFile { regs }
    }

    /// (S1) Counts `n` messages as in transit to `dst`; the sender then pushes them (S2).
    #[inline]
    pub(crate) fn count_sent(self, dst: usize, n: usize) {
        self.regs[dst].tmc.fetch_add(n as i64, SeqCst);
    }

    /// Runs `f` inside one odd epoch of worker `me` (R1 … R5): a snapshot that overlaps it
    /// retries, so none sees a state halfway through `f`.
    #[inline]
    pub(crate) fn bracket<R>(self, me: usize, f: impl FnOnce(&Regs) -> R) -> R {
        let r = &self.regs[me];
        r.epoch.fetch_add(1, SeqCst);
        let out = f(r);
        r.epoch.fetch_add(1, SeqCst);
        out
    }

    /// Worker `me` receives: `take` empties its mailbox (R2) and returns how many messages it
    /// took and its new registers, which must cover them; they are stored (R3) and TMC goes
    /// down by that count (R4), all inside one odd epoch (R1, R5). Returns the count.
    #[inline]
    pub(crate) fn receive(self, me: usize, take: impl FnOnce() -> (usize, Published)) -> usize {
        self.bracket(me, |r| {
            let (n, p) = take();
            r.store(&p);
            r.tmc.fetch_sub(n as i64, SeqCst);
            n
        })
    }

    /// Worker `me` publishes its registers (inside an odd epoch).
    #[inline]
    pub(crate) fn publish(self, me: usize, p: &Published) {
        self.bracket(me, |r| r.store(p));
    }

    /// Worker `w`'s last published registers (no consistency with other workers implied).
    #[inline]
    pub(crate) fn published(self, w: usize) -> Published {
        self.regs[w].load()
    }

    /// A consistent cut of every worker's registers into `out` (double collect: C1 epochs,
    /// C2 every MOE, C3 every MOM and TMC, C4 epochs again; retried until no epoch was odd or
    /// moved). `mom(w)` reads worker `w`'s MOM (its mailbox's or incoming rings' registers).
    pub(crate) fn snapshot(self, mom: impl Fn(usize) -> f64, out: &mut Snapshot) {
        let regs = self.regs;
        let mut epochs = vec![0u64; regs.len()];
        #[cfg(not(chronon_loom))]
        let mut round = 0u32;
        loop {
            let mut stable = true;
            for (e, r) in epochs.iter_mut().zip(regs) {
                *e = r.epoch.load(SeqCst);
                stable &= *e % 2 == 0;
            }
            // Every MOE before every MOM: a sender pushes (lowering MOM) before it raises its
            // MOE, so a raised MOE read here implies the push is visible to the MOM reads below.
            out.workers.clear();
            out.workers.extend(regs.iter().map(|r| WorkerView {
                published: r.load(),
                mom: f64::INFINITY,
                tmc: 0,
            }));
            for (i, (v, r)) in out.workers.iter_mut().zip(regs).enumerate() {
                v.mom = mom(i);
                v.tmc = r.tmc.load(SeqCst);
            }
            for (e, r) in epochs.iter().zip(regs) {
                stable &= r.epoch.load(SeqCst) == *e;
            }
            if stable {
                return;
            }
            #[cfg(chronon_loom)]
            crate::loom::thread::yield_now();
            // A writer is inside its odd epoch: spin briefly, then give the CPU away (it may be
            // a thread or another process that the OS descheduled; spinning on would only
            // delay it).
            #[cfg(not(chronon_loom))]
            if round < 16 {
                round += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}
