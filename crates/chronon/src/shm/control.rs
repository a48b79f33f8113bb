//! The shared control segment: the GSU register files (MOE, MOM via the rings, TMC; seed 000
//! §3.1), the GVT registers, a barrier and an abort word, as atomics in one anonymous segment
//! that every process maps. The register operations are those of [`crate::gsu::Gsu`], with the
//! same protocol and proof (gsu/README.md), moved into shared memory; the barrier sleeps on a
//! shared futex (README.md here, "Barrier").

use std::io;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Segment;
use crate::event::EventKey;
use crate::gsu::{Published, Snapshot, WorkerView};

/// The most workers (over all processes) a control segment holds registers for.
pub const MAX_WORKERS: usize = 256;
const MAGIC: u64 = 0x6368_726f_6e6f_6e31; // "chronon1"

/// One worker's registers, on its own cache lines.
#[repr(C, align(128))]
struct Regs {
    epoch: AtomicU64,
    moe_time: AtomicU64,
    moe_seq: AtomicU64,
    moe_src: AtomicU64,
    bound: AtomicU64,
    flags: AtomicU64,
    aux: AtomicU64,
    tmc: AtomicI64,
}

#[repr(C, align(128))]
struct Globals {
    magic: AtomicU64,
    workers: AtomicU64,
    /// Arrivals in the current barrier generation.
    arrived: AtomicU32,
    /// Barrier generation (a futex word).
    generation: AtomicU32,
    /// 0, or 1 + the number of the process that asked every process to stop (a futex word).
    abort: AtomicU32,
    /// Bits of the last GVT (or LBTS) computed.
    gvt: AtomicU64,
    /// How many GVT values were published.
    gvt_round: AtomicU64,
}

#[repr(C)]
struct Block {
    g: Globals,
    regs: [Regs; MAX_WORKERS],
}

/// A handle on the control segment (cheap to clone; the segment stays mapped while any handle
/// lives). All operations are `SeqCst` atomics on shared memory.
#[derive(Clone, Debug)]
pub struct Control {
    seg: Arc<Segment>,
}

impl Control {
    /// Creates a control segment for `workers` workers, every MOE idle, GVT `-inf`.
    pub fn create(workers: usize) -> io::Result<Control> {
        if workers == 0 || workers > MAX_WORKERS {
            return Err(io::Error::other(format!(
                "workers must be in 1..={MAX_WORKERS}, got {workers}"
            )));
        }
        let seg = Segment::create(std::mem::size_of::<Block>())?;
        let c = Control { seg: Arc::new(seg) };
        // The segment is zero-filled: every atomic is 0, which is a valid value; set the rest.
        let b = c.block();
        for r in &b.regs[..workers] {
            store(r, &Published::IDLE);
        }
        b.g.gvt.store(f64::NEG_INFINITY.to_bits(), SeqCst);
        b.g.workers.store(workers as u64, SeqCst);
        b.g.magic.store(MAGIC, SeqCst);
        Ok(c)
    }

    /// Attaches to a control segment created by another process (inherited or opened).
    pub fn attach(seg: Segment) -> io::Result<Control> {
        if seg.len() < std::mem::size_of::<Block>() {
            return Err(io::Error::other("not a control segment (too small)"));
        }
        let c = Control { seg: Arc::new(seg) };
        if c.block().g.magic.load(SeqCst) != MAGIC {
            return Err(io::Error::other("not a control segment (bad magic)"));
        }
        Ok(c)
    }

    /// The segment (to hand its descriptor to a child).
    pub fn segment(&self) -> &Segment {
        &self.seg
    }

    fn block(&self) -> &Block {
        // Safety: the segment is at least `size_of::<Block>()` bytes (checked in `attach`,
        // made so in `create`), page aligned, and every field is an atomic or plain integer
        // for which all-zero bytes and any bytes another process stored are valid; it stays
        // mapped while `self.seg` lives.
        unsafe { self.seg.base().cast::<Block>().as_ref() }
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.block().g.workers.load(SeqCst) as usize
    }

    // ---- GSU registers (gsu/README.md: S1, R1–R5, C1–C4) ----

    /// (S1) Counts `n` messages as in transit to `dst`; call before pushing them into a ring.
    pub fn count_sent(&self, dst: usize, n: usize) {
        self.block().regs[dst].tmc.fetch_add(n as i64, SeqCst);
    }

    /// Worker `me` receives: `take` drains its rings (R2) and returns how many messages it
    /// took and its new registers, which must cover them (R3); TMC goes down by that count
    /// (R4), all inside one odd epoch (R1, R5).
    pub fn receive(&self, me: usize, take: impl FnOnce() -> (usize, Published)) -> usize {
        let r = &self.block().regs[me];
        r.epoch.fetch_add(1, SeqCst);
        let (n, p) = take();
        store(r, &p);
        r.tmc.fetch_sub(n as i64, SeqCst);
        r.epoch.fetch_add(1, SeqCst);
        n
    }

    /// Runs `f` inside one odd epoch of worker `me` (no register changes): a snapshot that
    /// overlaps it retries. The shared-memory transport moves records from a worker's rings
    /// to its private stash this way, so no stable snapshot sees them in neither place.
    pub fn bracket<R>(&self, me: usize, f: impl FnOnce() -> R) -> R {
        let r = &self.block().regs[me];
        r.epoch.fetch_add(1, SeqCst);
        let out = f();
        r.epoch.fetch_add(1, SeqCst);
        out
    }

    /// Worker `me` publishes its registers (inside an odd epoch).
    pub fn publish(&self, me: usize, p: &Published) {
        let r = &self.block().regs[me];
        r.epoch.fetch_add(1, SeqCst);
        store(r, p);
        r.epoch.fetch_add(1, SeqCst);
    }

    /// A consistent cut of every worker's registers; `mom(w)` reads worker `w`'s MOM (the
    /// minimum of the registers of the rings into it).
    pub fn snapshot(&self, mom: impl Fn(usize) -> f64, out: &mut Snapshot) {
        let regs = &self.block().regs[..self.workers()];
        let mut epochs = vec![0u64; regs.len()];
        let mut round = 0u32;
        loop {
            let mut stable = true;
            for (e, r) in epochs.iter_mut().zip(regs) {
                *e = r.epoch.load(SeqCst);
                stable &= *e % 2 == 0;
            }
            out.workers.clear();
            out.workers.extend(regs.iter().map(|r| WorkerView {
                published: load(r),
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
            // The writer in an odd epoch may be another process that the OS preempted.
            round += 1;
            if round < 16 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    // ---- GVT registers ----

    /// Publishes a new GVT (or LBTS) value; it never goes down.
    pub fn publish_gvt(&self, gvt: f64) {
        let g = &self.block().g;
        // f64 bits of non-negative values order like the values; GVT is >= 0 after start,
        // and -inf (the initial value) has the sign bit set, so compare as floats.
        let mut cur = g.gvt.load(SeqCst);
        while f64::from_bits(cur) < gvt {
            match g.gvt.compare_exchange(cur, gvt.to_bits(), SeqCst, SeqCst) {
                Ok(_) => {
                    g.gvt_round.fetch_add(1, SeqCst);
                    return;
                }
                Err(c) => cur = c,
            }
        }
    }

    /// The last GVT published (`-inf` before the first).
    pub fn gvt(&self) -> f64 {
        f64::from_bits(self.block().g.gvt.load(SeqCst))
    }

    // ---- abort ----

    /// Asks every process to stop, naming process `who` (the first request wins); wakes every
    /// barrier waiter.
    pub fn abort(&self, who: u32) {
        let g = &self.block().g;
        let _ = g.abort.compare_exchange(0, who + 1, SeqCst, SeqCst);
        super::futex::wake_all(&g.abort);
        super::futex::wake_all(&g.generation);
    }

    /// The process that asked every process to stop, if any.
    pub fn aborted(&self) -> Option<u32> {
        self.block().g.abort.load(SeqCst).checked_sub(1)
    }

    // ---- barrier ----

    /// Waits until `parties` participants (over all processes) have called `barrier` for this
    /// generation, or returns `Err(Aborted)` if a process asked to stop, or `Err(TimedOut)`
    /// after `timeout`. A central counter with a generation word: the last arrival resets the
    /// counter, then bumps the generation and wakes every sleeper (README.md, "Barrier").
    /// Every participant must pass the same `parties`.
    pub fn barrier(&self, parties: u32, timeout: Duration) -> Result<(), BarrierError> {
        self.barrier_with(parties, timeout, || {})
    }

    /// [`Control::barrier`], calling `idle` at least every millisecond while it waits (the
    /// shared-memory transport drains its rings there, so that a sender blocked on a full ring
    /// into a waiting worker always gets space).
    pub fn barrier_with(
        &self,
        parties: u32,
        timeout: Duration,
        mut idle: impl FnMut(),
    ) -> Result<(), BarrierError> {
        let g = &self.block().g;
        let gen = g.generation.load(SeqCst);
        if let Some(who) = self.aborted() {
            return Err(BarrierError::Aborted(who));
        }
        if g.arrived.fetch_add(1, SeqCst) + 1 == parties {
            g.arrived.store(0, SeqCst);
            g.generation.fetch_add(1, SeqCst);
            super::futex::wake_all(&g.generation);
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        let released = super::futex::wait_until(&g.generation, deadline, || {
            idle();
            g.generation.load(SeqCst) != gen || g.abort.load(SeqCst) != 0
        });
        if g.generation.load(SeqCst) != gen {
            Ok(())
        } else if let Some(who) = self.aborted() {
            Err(BarrierError::Aborted(who))
        } else {
            debug_assert!(!released);
            Err(BarrierError::TimedOut)
        }
    }
}

/// Why a barrier wait ended without every participant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierError {
    /// Process `.0` asked every process to stop; the run cannot go on.
    Aborted(u32),
    /// The timeout passed first; the barrier is now broken (the caller's arrival counts).
    TimedOut,
}

impl std::fmt::Display for BarrierError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BarrierError::Aborted(p) => write!(f, "process {p} stopped the run"),
            BarrierError::TimedOut => write!(f, "barrier timed out"),
        }
    }
}
impl std::error::Error for BarrierError {}

fn store(r: &Regs, p: &Published) {
    r.moe_time.store(p.moe.time.to_bits(), SeqCst);
    r.moe_seq.store(p.moe.seq, SeqCst);
    r.moe_src.store(u64::from(p.moe.src), SeqCst);
    r.bound.store(p.bound.to_bits(), SeqCst);
    r.flags.store(p.flags, SeqCst);
    r.aux.store(p.aux.to_bits(), SeqCst);
}

fn load(r: &Regs) -> Published {
    Published {
        moe: EventKey {
            time: f64::from_bits(r.moe_time.load(SeqCst)),
            seq: r.moe_seq.load(SeqCst),
            src: r.moe_src.load(SeqCst) as u32,
        },
        bound: f64::from_bits(r.bound.load(SeqCst)),
        flags: r.flags.load(SeqCst),
        aux: f64::from_bits(r.aux.load(SeqCst)),
    }
}
