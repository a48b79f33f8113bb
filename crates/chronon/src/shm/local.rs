//! The shared heap of each thread that runs model handlers (`Ctx::alloc_shared`): created on
//! first use, with an owner number taken from this process's pool, and retired when the thread
//! ends (or when a run on the calling thread ends: [`release_thread_heap`]).
//!
//! A heap is owned by one thread (only its owner allocates), so every worker thread of every
//! simulation running in this process gets its own; a `BPtr` into it is freed from any thread
//! or process through the heap's return stack. A retired heap whose items all came back gives
//! its owner number (and heap numbers) back for reuse and unmaps its segments; one with items
//! still referenced (a `BPtr` kept by the caller) waits in a list that every new heap sweeps.
//!
//! **Heap numbers.** A `BPtr` names its heap with a number: owner × 16 + segment, 256 owners
//! over all processes of a run. In a single-process run the pool is every owner (at most 256
//! threads holding a heap at once in the process); worker process `p` of `P` gets the owners
//! `p·⌊256/P⌋ .. (p+1)·⌊256/P⌋` (its worker threads and its main thread, which runs `init`),
//! and never reuses one (other processes may have mapped it). More threads than that fail with
//! [`HeapError::NoHeapNumber`]; a heap that needs a 17th segment fails with
//! [`HeapError::Exhausted`].
//!
//! **Reuse.** A thread's heap reuses an item as soon as its count drops to zero (GVT `+inf`,
//! right for the sequential and conservative executors). An optimistic executor calls
//! [`set_thread_gvt`] on each of its worker threads after every GVT: from the first call on,
//! that thread's heap keeps freed items dormant until GVT passes their time-to-zero (the
//! thread's simulation time when the count reached zero, which `Ctx` keeps up to date).
//!
//! **Receive heap.** A thread that decodes payloads arriving from other MPI ranks, or copies
//! them from other processes under the copy transport, does so into a second heap of its own
//! ([`Receiving`]), with the run's size classes and up to 16 segments, so that what other
//! workers send never fills the heap its handlers allocate in.

use std::cell::{Cell, RefCell};
use std::sync::Mutex;

use super::registry::{self, MAX_OWNERS, SEGMENTS_PER_OWNER};
use super::{Heap, HeapConfig, HeapError};

struct Pool {
    /// Owner numbers of this process not in use (lowest last).
    free: Vec<u32>,
    /// The owner range; `None`: not set up yet (the whole range).
    range: Option<(u32, u32)>,
    /// Whether released numbers may be reused (not in a worker process).
    reuse: bool,
    /// Heaps of ended threads with items still referenced.
    retired: Vec<Heap>,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    free: Vec::new(),
    range: None,
    reuse: true,
    retired: Vec::new(),
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    fn setup(&mut self) {
        if self.range.is_none() {
            self.range = Some((0, MAX_OWNERS));
            self.free = (0..MAX_OWNERS).rev().collect();
        }
    }

    /// Collects every retired heap; releases those whose items all came back.
    fn sweep(&mut self) {
        let mut keep = Vec::new();
        for mut h in std::mem::take(&mut self.retired) {
            if h.outstanding() == 0 && self.reuse {
                self.release(h);
            } else {
                keep.push(h);
            }
        }
        self.retired = keep;
    }

    fn release(&mut self, h: Heap) {
        let owner = h.owner();
        for k in 0..h.segments().len() {
            registry::unregister(owner * SEGMENTS_PER_OWNER + k as u32);
        }
        drop(h);
        self.free.push(owner);
    }

    fn retire(&mut self, mut h: Heap) {
        if self.reuse && h.outstanding() == 0 {
            self.release(h);
        } else {
            self.retired.push(h);
        }
    }
}

/// Sets the size classes of the heap this thread creates next (`None`: [`HeapConfig::default`]).
/// A run sets it on every thread that runs its handlers, from
/// [`Simulation::heap`](crate::Simulation::heap), so that runs side by side in one process
/// keep their own configurations.
pub(crate) fn set_thread_heap_config(config: Option<HeapConfig>) {
    LOCAL.with(|l| l.borrow_mut().config = config);
}

/// Makes this process worker process `p` of `procs` of a multi-process run: its heaps take
/// owner numbers from its share of the 256 and never give them back. Call before any heap is
/// created in the process.
// Only the multi-process runs call it (compiled out under loom).
#[cfg_attr(any(chronon_loom, not(target_os = "linux")), allow(dead_code))]
pub(crate) fn set_worker_process(p: usize, procs: usize) {
    let per = MAX_OWNERS / procs.max(1) as u32;
    let lo = p as u32 * per;
    let mut pool = pool();
    pool.range = Some((lo, lo + per));
    pool.free = (lo..lo + per).rev().collect();
    pool.reuse = false;
}

struct Local {
    heap: Option<Heap>,
    /// The heap that payloads received from other ranks are decoded into ([`Receiving`]):
    /// the run's size classes, and every segment a heap may have.
    received: Option<Heap>,
    /// The size classes of the heap this thread creates next (`None`: the default).
    config: Option<HeapConfig>,
    /// `Some(gvt)`: reuse deferred past GVT (an optimistic executor reported `gvt`).
    deferred: Option<f64>,
}

impl Local {
    /// The thread's heaps that exist: the handlers' and the receive heap.
    fn heaps(&mut self) -> impl Iterator<Item = &mut Heap> {
        self.heap.iter_mut().chain(self.received.iter_mut())
    }

    /// Takes both heaps out (each `None` if it was never created).
    fn take_heaps(&mut self) -> [Option<Heap>; 2] {
        [self.heap.take(), self.received.take()]
    }
}

/// Hands heaps taken from a thread to the pool, which releases each once its items are back.
fn retire_all(heaps: [Option<Heap>; 2]) {
    for h in heaps.into_iter().flatten() {
        pool().retire(h);
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        retire_all(self.take_heaps());
    }
}

thread_local! {
    /// Allocations go to the receive heap (a [`Receiving`] guard is alive). Apart from
    /// `LOCAL` so that entering the guard, once per payload decoded, costs no borrow.
    static RECEIVING: Cell<bool> = const { Cell::new(false) };
    static LOCAL: RefCell<Local> = const {
        RefCell::new(Local {
            heap: None,
            received: None,
            config: None,
            deferred: None,
        })
    };
}

fn new_heap(deferred: Option<f64>, config: HeapConfig) -> Result<Heap, HeapError> {
    let mut pool = pool();
    pool.setup();
    loop {
        if pool.free.is_empty() {
            pool.sweep();
        }
        let owner = pool.free.pop().ok_or(HeapError::NoHeapNumber)?;
        match Heap::new(owner, config.clone()) {
            Ok(mut h) => {
                match deferred {
                    Some(g) => h.defer_reuse(g),
                    None => h.set_gvt(f64::INFINITY),
                }
                return Ok(h);
            }
            // Taken by a heap made directly with `Heap::new` (not through this pool): leave
            // the number out and try the next.
            Err(_) if registry::is_mapped(owner * SEGMENTS_PER_OWNER) => continue,
            Err(e) => {
                pool.free.push(owner);
                return Err(HeapError::Io(e));
            }
        }
    }
}

/// Runs `f` on this thread's heap, creating it on first use (its receive heap while a
/// [`Receiving`] guard is alive).
pub fn with_thread_heap<R>(f: impl FnOnce(&mut Heap) -> R) -> Result<R, HeapError> {
    // The thread's heap is shared by every event context on the thread: no tick may switch a
    // context off the CPU while it is borrowed (preempt/README.md, "Ticks that preempt").
    let _p = crate::preempt::interrupt::Platform::enter();
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        let l = &mut *l;
        let receiving = RECEIVING.with(Cell::get);
        let slot = if receiving {
            &mut l.received
        } else {
            &mut l.heap
        };
        if slot.is_none() {
            let mut config = l.config.clone().unwrap_or_default();
            if receiving {
                config = config.max_segments(SEGMENTS_PER_OWNER);
            }
            *slot = Some(new_heap(l.deferred, config)?);
        }
        Ok(f(slot.as_mut().expect("just created")))
    })
}

/// While alive, this thread's allocations go to its *receive heap*: payloads that arrive from
/// another rank as bytes are decoded into it, and the copy transport (`--payload copy`) copies
/// payloads from other processes into it. It has the run's size classes (so that every item a
/// handler can allocate also decodes) and every segment a heap may have: the copies a worker
/// receives are the transport's, not the model's, and how many are alive at once depends on
/// how far the other workers speculate, which no heap of this worker bounds. The heaps
/// handlers allocate in keep `--heap-segments`, as in a sequential run.
pub(crate) struct Receiving(bool);

impl Receiving {
    pub(crate) fn enter() -> Receiving {
        Receiving(RECEIVING.with(|r| r.replace(true)))
    }
}

impl Drop for Receiving {
    fn drop(&mut self) {
        RECEIVING.with(|r| r.set(self.0));
    }
}

/// Whether this thread's heap has a class near full ([`Heap::tight`]); false without a heap.
pub fn thread_heap_tight() -> bool {
    LOCAL.with(|l| l.borrow().heap.as_ref().is_some_and(Heap::tight))
}

/// An optimistic executor's worker thread reports GVT `gvt`: from the first call on, this
/// thread's heap reuses a freed item only once GVT has passed its time-to-zero (seed 000
/// §3.3.3). Time Warp calls it after every GVT computation (and `+inf` at the end).
pub fn set_thread_gvt(gvt: f64) {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        let first = l.deferred.is_none();
        l.deferred = Some(gvt);
        for h in l.heaps() {
            if first {
                h.defer_reuse(gvt);
            } else {
                h.set_gvt(gvt);
            }
        }
    });
}

/// Ends this thread's heaps (a run on this thread ended): each is released at once if every
/// item came back, else when they have. The next allocation on this thread creates a new one.
pub fn release_thread_heap() {
    let heaps = LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        l.deferred = None;
        l.take_heaps()
    });
    retire_all(heaps);
}

/// Items of this process's thread heaps not yet come back: this thread's heaps and the heaps
/// of ended threads (not the heaps of threads still running). For tests and leak checks.
pub fn outstanding_items() -> usize {
    let mine = LOCAL.with(|l| l.borrow_mut().heaps().map(Heap::outstanding).sum::<usize>());
    let mut pool = pool();
    pool.sweep();
    mine + pool
        .retired
        .iter_mut()
        .map(Heap::outstanding)
        .sum::<usize>()
}

/// Owner numbers this process can still give to new thread heaps (after sweeping).
pub fn free_heap_numbers() -> usize {
    let mut pool = pool();
    pool.setup();
    pool.sweep();
    pool.free.len()
}
