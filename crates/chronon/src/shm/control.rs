//! The shared control segment: the GSU register files (MOE, MOM via the rings, TMC; seed 000
//! §3.1), a barrier and an abort word, as atomics in one anonymous segment
//! that every process maps. The GSU registers are `gsu::Regs` blocks placed in the segment, and
//! every register operation is `gsu::RegFile`'s over them: the one implementation that
//! [`crate::gsu::Gsu`] uses over process memory, with its protocol and proof (gsu/README.md).
//! The barrier sleeps on a shared futex (README.md here, "Barrier").

use std::io;
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Segment;
use crate::gsu::{Published, RegFile, Regs, Snapshot};

/// The most workers (over all processes) a control segment holds registers for.
pub const MAX_WORKERS: usize = 256;
const MAGIC: u64 = 0x6368_726f_6e6f_6e31; // "chronon1"

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
}

/// The segment's layout: [`Globals`], then one register block per worker (only the first
/// `workers` are initialized and ever used). Never referenced as a whole: `Control::globals`
/// and `Control::regs` reach the parts.
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
    /// The number of workers (the segment's `workers` word, which never changes after
    /// `create`).
    workers: usize,
}

impl Control {
    /// Creates a control segment for `workers` workers, every MOE idle.
    pub fn create(workers: usize) -> io::Result<Control> {
        if workers == 0 || workers > MAX_WORKERS {
            return Err(io::Error::other(format!(
                "workers must be in 1..={MAX_WORKERS}, got {workers}"
            )));
        }
        let seg = Segment::create(size_of::<Block>())?;
        let first = regs_at(&seg);
        for w in 0..workers {
            // Safety: block `w` < MAX_WORKERS lies inside the segment (at least
            // `size_of::<Block>()` bytes, page aligned, so aligned for `Regs`), and no other
            // handle or process reaches the segment yet.
            unsafe { first.add(w).write(Regs::new(&Published::IDLE)) };
        }
        let c = Control {
            seg: Arc::new(seg),
            workers,
        };
        // The segment is zero-filled: every global is 0, which is a valid value; set the rest.
        let g = c.globals();
        g.workers.store(workers as u64, SeqCst);
        g.magic.store(MAGIC, SeqCst);
        Ok(c)
    }

    /// Attaches to a control segment created by another process (inherited or opened).
    pub fn attach(seg: Segment) -> io::Result<Control> {
        if seg.len() < size_of::<Block>() {
            return Err(io::Error::other("not a control segment (too small)"));
        }
        let mut c = Control {
            seg: Arc::new(seg),
            workers: 0,
        };
        let g = c.globals();
        if g.magic.load(SeqCst) != MAGIC {
            return Err(io::Error::other("not a control segment (bad magic)"));
        }
        // `create` stores `workers` before `magic`, so it is there.
        let workers = g.workers.load(SeqCst) as usize;
        if workers == 0 || workers > MAX_WORKERS {
            return Err(io::Error::other("not a control segment (bad worker count)"));
        }
        c.workers = workers;
        Ok(c)
    }

    /// The segment (to hand its descriptor to a child).
    pub fn segment(&self) -> &Segment {
        &self.seg
    }

    fn globals(&self) -> &Globals {
        // Safety: the segment is at least `size_of::<Block>()` bytes (checked in `attach`,
        // made so in `create`) and page aligned, `Globals` is its first field, and every field
        // of `Globals` is a std atomic, for which all-zero bytes and any bytes another process
        // stored are valid; it stays mapped while `self.seg` lives.
        unsafe { self.seg.base().cast::<Globals>().as_ref() }
    }

    /// The register blocks of the workers, as the one GSU implementation's view.
    #[inline]
    fn regs(&self) -> RegFile<'_> {
        // Safety: blocks 0..workers lie inside the segment (see `globals`; workers <=
        // MAX_WORKERS, checked in `create` and `attach`), were initialized by `create` (a
        // `Regs` is atomics only, so any bytes another process stored there are valid), and
        // stay mapped while `self.seg` lives.
        let regs = unsafe { std::slice::from_raw_parts(regs_at(&self.seg), self.workers) };
        RegFile::new(regs)
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    // ---- GSU registers (gsu/README.md: S1, R1–R5, C1–C4) ----

    /// (S1) Counts `n` messages as in transit to `dst`; call before pushing them into a ring.
    pub fn count_sent(&self, dst: usize, n: usize) {
        self.regs().count_sent(dst, n);
    }

    /// Worker `me` receives: `take` drains its rings (R2) and returns how many messages it
    /// took and its new registers, which must cover them (R3); TMC goes down by that count
    /// (R4), all inside one odd epoch (R1, R5).
    pub fn receive(&self, me: usize, take: impl FnOnce() -> (usize, Published)) -> usize {
        self.regs().receive(me, take)
    }

    /// Runs `f` inside one odd epoch of worker `me` (no register changes): a snapshot that
    /// overlaps it retries. The shared-memory transport moves records from a worker's rings
    /// to its private stash this way, so no stable snapshot sees them in neither place.
    pub fn bracket<R>(&self, me: usize, f: impl FnOnce() -> R) -> R {
        self.regs().bracket(me, |_| f())
    }

    /// Worker `me` publishes its registers (inside an odd epoch).
    pub fn publish(&self, me: usize, p: &Published) {
        self.regs().publish(me, p);
    }

    /// A consistent cut of every worker's registers; `mom(w)` reads worker `w`'s MOM (the
    /// minimum of the registers of the rings into it).
    pub fn snapshot(&self, mom: impl Fn(usize) -> f64, out: &mut Snapshot) {
        self.regs().snapshot(mom, out);
    }

    // ---- abort ----

    /// Asks every process to stop, naming process `who` (the first request wins); wakes every
    /// barrier waiter.
    pub fn abort(&self, who: u32) {
        let g = &self.globals();
        let _ = g.abort.compare_exchange(0, who + 1, SeqCst, SeqCst);
        super::futex::wake_all(&g.abort);
        super::futex::wake_all(&g.generation);
    }

    /// The process that asked every process to stop, if any.
    pub fn aborted(&self) -> Option<u32> {
        self.globals().abort.load(SeqCst).checked_sub(1)
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
        let g = &self.globals();
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

/// The first register block of the control segment `seg` (which is at least
/// `size_of::<Block>()` bytes).
fn regs_at(seg: &Segment) -> *mut Regs {
    // Safety: the offset of `Block::regs` is inside the segment's `size_of::<Block>()` bytes.
    unsafe { seg.base().add(offset_of!(Block, regs)) }
        .cast::<Regs>()
        .as_ptr()
}
