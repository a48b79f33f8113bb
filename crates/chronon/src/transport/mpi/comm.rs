//! The rank communication layer: what every protocol over MPI needs from the world
//! communicator, whatever it sends. One [`RankComm`] per process (rank); any of its threads may
//! drive it. Every MPI call is made while holding `RankComm::mpi` (MPI_THREAD_SERIALIZED; the
//! README says why), in short critical sections, so that a thread waiting for a collective never
//! keeps the others from sending or receiving.
//!
//! - **Batches per destination rank** ([`RankComm::post`], [`RankComm::flush`]): workers append
//!   records to the outbox of the destination rank (one `Mutex<Vec<u8>>` each); a flush sends
//!   every non-empty outbox as one message with a non-blocking send (`MPI_Isend`), whose buffer
//!   is kept until `MPI_Test` says it is done.
//! - **Probe and receive** ([`RankComm::progress`]): `MPI_Improbe` for any source, then a matched
//!   receive of a batch of any size; each batch goes to the caller's handler in the order the
//!   source sent them (MPI's non-overtaking rule for one source, tag and communicator). The
//!   handler runs under the lock, so two threads never deliver batches out of order.
//! - **Non-blocking collectives with progress** ([`RankComm::all_gather`]): `MPI_Iallgather`,
//!   tested in a loop that also delivers incoming batches and completes sends; it backs off
//!   (spin, yield, then sleeps up to 100 µs).
//! - **Abort** ([`RankComm::abort`]): a small message to every other rank; a rank that sees it
//!   (in any progress or collective wait) stops waiting, and its collectives return `None`.
//! - **Rank-0 gather** ([`RankComm::send_to_root`], [`RankComm::recv_from_root`], [`RankComm::broadcast`]):
//!   point-to-point messages to and from rank 0 for the report and the `Model::finish`
//!   requests, and a broadcast of the outcome.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mpi::point_to_point::MatchedReceiveVec;
use mpi::request::StaticScope;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

/// Message tags (one communicator per run, duplicated from the world: runs never mix).
pub(crate) const TAG_DATA: i32 = 1;
const TAG_ABORT: i32 = 2;
/// To rank 0 (reports, finish replies).
pub(crate) const TAG_UP: i32 = 3;
/// From rank 0 (finish requests; an empty message: no more).
pub(crate) const TAG_DOWN: i32 = 4;

/// No abort seen.
const NO_ABORT: usize = usize::MAX;

/// A non-blocking send whose buffer MPI still reads.
struct InFlight {
    req: mpi::request::Request<'static, [u8], StaticScope>,
    /// The buffer (leaked for the `'static` scope; freed when the request completes).
    buf: *mut [u8],
}

/// A non-blocking all-gather in progress ([`RankComm::start_all_gather`]); its buffers are
/// leaked until it completes (and for good if it is dropped unfinished: MPI may still write).
pub(crate) struct PendingGather {
    req: Option<mpi::request::Request<'static, [u64], StaticScope>>,
    send: *mut [u64],
    recv: *mut [u64],
    started: Instant,
}

// Safety: the buffers are owned by the gather (leaked boxes, freed once, by the thread whose
// `test_all_gather` sees the request complete) and reached by no other value; MPI calls on the
// request are made under `RankComm::mpi` (MPI_THREAD_SERIALIZED allows any thread to make them,
// one at a time). So the gather may move to another thread of the rank: a rank whose worker
// steps the Time Warp driver starts a reduction on the worker's thread and may test it on the
// rank's main thread once the worker stopped.
unsafe impl Send for PendingGather {}

impl Drop for PendingGather {
    fn drop(&mut self) {
        if let Some(req) = self.req.take() {
            // Unfinished (a bug: collectives are tested to completion): MPI may still use the
            // buffers; leave them leaked.
            std::mem::forget(req);
        }
    }
}

/// What only the holder of the MPI lock touches.
struct Locked {
    comm: SimpleCommunicator,
    sends: Vec<InFlight>,
}

// Safety: `Locked` is only reached through `RankComm::mpi`'s mutex, so one thread at a time
// makes MPI calls with it (MPI_THREAD_SERIALIZED, which `Mpi::init` checked is provided); the
// raw buffer pointers are owned by their requests and freed once, by the thread that sees the
// request complete.
unsafe impl Send for Locked {}

/// Per destination rank: the records waiting to be sent.
type Outbox = Mutex<Vec<u8>>;

/// Figures for the report (per rank).
#[derive(Debug, Default)]
pub(crate) struct CommStats {
    /// Data messages (batches) sent and received.
    pub msgs_sent: AtomicU64,
    pub msgs_received: AtomicU64,
    /// Their bytes.
    pub bytes_sent: AtomicU64,
    pub bytes_received: AtomicU64,
    /// Records (events or null messages) posted to other ranks.
    pub records_posted: AtomicU64,
    /// Collectives (gathers) and the nanoseconds spent waiting in them.
    pub collectives: AtomicU64,
    pub collective_ns: AtomicU64,
}

/// One rank's end of the world communicator (see the module documentation).
pub(crate) struct RankComm {
    rank: usize,
    size: usize,
    mpi: Mutex<Locked>,
    outbox: Vec<Outbox>,
    /// Per destination rank: data and abort messages sent to it; and how many this rank
    /// received (for [`RankComm::drain`]).
    sent_to: Vec<AtomicU64>,
    received: AtomicU64,
    /// The rank that asked everyone to stop ([`NO_ABORT`]: none yet).
    aborted_by: AtomicUsize,
    pub(crate) stats: CommStats,
}

impl std::fmt::Debug for RankComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// Calls `f` with the MPI lock held (a poisoned lock is still usable: the data it guards is
/// left consistent by every critical section).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Backs off while waiting: spins a little, then yields (about a millisecond of polling when
/// the machine is idle: a collective's partner is usually a few microseconds behind), then
/// sleeps up to 100 µs per round (2 cores are shared by every rank and thread of a test run;
/// a yield gives the core away on a loaded machine).
#[derive(Debug, Default)]
pub(crate) struct Backoff(u32);

impl Backoff {
    pub(crate) fn reset(&mut self) {
        self.0 = 0;
    }
    pub(crate) fn snooze(&mut self) {
        self.0 = self.0.saturating_add(1);
        match self.0 {
            0..=16 => std::hint::spin_loop(),
            17..=1024 => std::thread::yield_now(),
            n => std::thread::sleep(Duration::from_micros(u64::from((n - 1024).min(100)))),
        }
    }
}

impl RankComm {
    /// A communicator of its own for one run (a duplicate of the world: tags never meet
    /// another run's messages). Collective: every rank calls it.
    pub(crate) fn new(world: &SimpleCommunicator) -> RankComm {
        let comm = world.duplicate();
        let rank = comm.rank() as usize;
        let size = comm.size() as usize;
        RankComm {
            rank,
            size,
            mpi: Mutex::new(Locked {
                comm,
                sends: Vec::new(),
            }),
            outbox: (0..size).map(|_| Mutex::new(Vec::new())).collect(),
            sent_to: (0..size).map(|_| AtomicU64::new(0)).collect(),
            received: AtomicU64::new(0),
            aborted_by: AtomicUsize::new(NO_ABORT),
            stats: CommStats::default(),
        }
    }

    /// This process's rank.
    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Appends a record to the outbox of rank `dst` (`write` appends its bytes); sent by the
    /// next [`flush`](RankComm::flush).
    pub(crate) fn post(&self, dst: usize, write: impl FnOnce(&mut Vec<u8>)) {
        debug_assert!(dst != self.rank && dst < self.size);
        write(&mut lock(&self.outbox[dst]));
        self.stats.records_posted.fetch_add(1, SeqCst);
    }

    /// Sends every non-empty outbox to its rank as one message (non-blocking), and completes
    /// the sends that are done.
    pub(crate) fn flush(&self) {
        let mut m = lock(&self.mpi);
        self.flush_locked(&mut m);
    }

    fn flush_locked(&self, m: &mut Locked) {
        for dst in 0..self.size {
            if dst == self.rank {
                continue;
            }
            // The outbox lock is taken inside the MPI lock (never the other way round).
            let bytes = std::mem::take(&mut *lock(&self.outbox[dst]));
            if bytes.is_empty() {
                continue;
            }
            self.stats.msgs_sent.fetch_add(1, SeqCst);
            self.sent_to[dst].fetch_add(1, SeqCst);
            self.stats.bytes_sent.fetch_add(bytes.len() as u64, SeqCst);
            let buf: &'static mut [u8] = Box::leak(bytes.into_boxed_slice());
            let ptr: *mut [u8] = buf;
            let req = m.comm.process_at_rank(dst as i32).immediate_send_with_tag(
                StaticScope,
                &*buf,
                TAG_DATA,
            );
            m.sends.push(InFlight { req, buf: ptr });
        }
        complete_sends(m);
    }

    /// Delivers every batch that has arrived to `on_batch(source rank, bytes)`, in arrival
    /// order, flushes the outboxes, and notes an abort. Returns the number of batches; 0
    /// without waiting when another thread holds the lock (it is delivering).
    pub(crate) fn progress(&self, on_batch: &mut dyn FnMut(usize, &[u8])) -> usize {
        let Ok(mut m) = self.mpi.try_lock() else {
            return 0;
        };
        self.progress_locked(&mut m, on_batch)
    }

    /// [`progress`](RankComm::progress), waiting for the lock.
    pub(crate) fn progress_wait(&self, on_batch: &mut dyn FnMut(usize, &[u8])) -> usize {
        let mut m = lock(&self.mpi);
        self.progress_locked(&mut m, on_batch)
    }

    fn progress_locked(&self, m: &mut Locked, on_batch: &mut dyn FnMut(usize, &[u8])) -> usize {
        self.flush_locked(m);
        let mut n = 0;
        // Only data and abort messages are probed here: reports and finish requests (tags up
        // and down) are received where they are expected, after the run.
        let any = m.comm.any_process();
        while let Some(probed) = any.immediate_matched_probe_with_tag(TAG_DATA) {
            let (bytes, status) = probed.matched_receive_vec::<u8>();
            self.stats.msgs_received.fetch_add(1, SeqCst);
            self.received.fetch_add(1, SeqCst);
            self.stats
                .bytes_received
                .fetch_add(bytes.len() as u64, SeqCst);
            on_batch(status.source_rank() as usize, &bytes);
            n += 1;
        }
        if let Some(probed) = any.immediate_matched_probe_with_tag(TAG_ABORT) {
            let (_, status) = probed.matched_receive_vec::<u8>();
            self.received.fetch_add(1, SeqCst);
            let _ = self.aborted_by.compare_exchange(
                NO_ABORT,
                status.source_rank() as usize,
                SeqCst,
                SeqCst,
            );
        }
        n
    }

    /// Asks every rank to stop (an error or a stop request): a message to every other rank.
    pub(crate) fn abort(&self) {
        if self
            .aborted_by
            .compare_exchange(NO_ABORT, self.rank, SeqCst, SeqCst)
            .is_err()
        {
            return;
        }
        let mut m = lock(&self.mpi);
        for dst in (0..self.size).filter(|&d| d != self.rank) {
            self.sent_to[dst].fetch_add(1, SeqCst);
            let buf: &'static mut [u8] = Box::leak(vec![0u8; 1].into_boxed_slice());
            let ptr: *mut [u8] = buf;
            let req = m.comm.process_at_rank(dst as i32).immediate_send_with_tag(
                StaticScope,
                &*buf,
                TAG_ABORT,
            );
            m.sends.push(InFlight { req, buf: ptr });
        }
        complete_sends(&mut m);
    }

    /// The rank that asked everyone to stop, if one did (this one included).
    pub(crate) fn aborted(&self) -> Option<usize> {
        match self.aborted_by.load(SeqCst) {
            NO_ABORT => None,
            r => Some(r),
        }
    }

    /// Every rank's `mine` (all the same length), concatenated in rank order, by a
    /// non-blocking all-gather; batches arriving meanwhile go to `on_batch`. A collective is
    /// never abandoned, not even after an abort (an abandoned one leaves the other ranks'
    /// contributions unmatched): every rank must make the same sequence of collective calls,
    /// and an abort travels inside the gathered words where the caller needs to agree on it.
    pub(crate) fn all_gather(
        &self,
        mine: &[u64],
        on_batch: &mut dyn FnMut(usize, &[u8]),
    ) -> Vec<u64> {
        // The buffers live as long as MPI may use them: leaked for the static scope, taken
        // back once the request completed (and left leaked if the run aborts meanwhile).
        let send: &'static mut [u64] = Box::leak(mine.to_vec().into_boxed_slice());
        let recv: &'static mut [u64] =
            Box::leak(vec![0u64; mine.len() * self.size].into_boxed_slice());
        let (send_ptr, recv_ptr): (*mut [u64], *mut [u64]) = (send, recv);
        let req = {
            let m = lock(&self.mpi);
            // Safety: both pointers come from `Box::leak` just above and are not used
            // elsewhere until the request completes.
            unsafe {
                m.comm
                    .immediate_all_gather_into(StaticScope, &*send_ptr, &mut *recv_ptr)
            }
        };
        self.wait(req, on_batch);
        // Safety: the request completed, so MPI no longer uses the buffers; they came from
        // `Box::leak` above and nothing else refers to them.
        let (_send, recv) = unsafe { (Box::from_raw(send_ptr), Box::from_raw(recv_ptr)) };
        recv.into_vec()
    }

    /// Starts a non-blocking all-gather of every rank's `mine` (all the same length), for a
    /// caller that does its own progress meanwhile (Time Warp's driver: `test_all_gather`).
    pub(crate) fn start_all_gather(&self, mine: &[u64]) -> PendingGather {
        let send: &'static mut [u64] = Box::leak(mine.to_vec().into_boxed_slice());
        let recv: &'static mut [u64] =
            Box::leak(vec![0u64; mine.len() * self.size].into_boxed_slice());
        let (send_ptr, recv_ptr): (*mut [u64], *mut [u64]) = (send, recv);
        let m = lock(&self.mpi);
        // Safety: both pointers come from `Box::leak` just above and are not used elsewhere
        // until the request completes (`test_all_gather` frees them then).
        let req = unsafe {
            m.comm
                .immediate_all_gather_into(StaticScope, &*send_ptr, &mut *recv_ptr)
        };
        self.stats.collectives.fetch_add(1, SeqCst);
        PendingGather {
            req: Some(req),
            send: send_ptr,
            recv: recv_ptr,
            started: Instant::now(),
        }
    }

    /// Tests a gather from [`start_all_gather`](RankComm::start_all_gather): `None` while it
    /// runs, every rank's values in rank order once complete. Like every collective here it is
    /// never abandoned (see [`all_gather`](RankComm::all_gather)): an abort travels in the
    /// gathered words.
    pub(crate) fn test_all_gather(&self, g: &mut PendingGather) -> Option<Vec<u64>> {
        let req = g.req.take()?;
        let done = {
            let _m = lock(&self.mpi);
            req.test()
        };
        match done {
            Ok(_) => {
                self.stats
                    .collective_ns
                    .fetch_add(g.started.elapsed().as_nanos() as u64, SeqCst);
                // Safety: the request completed, so MPI no longer uses the buffers; they came
                // from `Box::leak` in `start_all_gather` and nothing else refers to them.
                let (_send, recv) = unsafe { (Box::from_raw(g.send), Box::from_raw(g.recv)) };
                Some(recv.into_vec())
            }
            Err(req) => {
                g.req = Some(req);
                None
            }
        }
    }

    /// An all-gather that receives nothing while it waits (backing off): for agreements
    /// before a run starts or around its setup, where a rank that finished the collective may
    /// already be sending the run's first batches, which must wait for the run's receiver
    /// rather than reach [`all_gather`](RankComm::all_gather)'s handler.
    pub(crate) fn all_gather_quiet(&self, mine: &[u64]) -> Vec<u64> {
        let mut g = self.start_all_gather(mine);
        let mut backoff = Backoff::default();
        loop {
            match self.test_all_gather(&mut g) {
                Some(all) => return all,
                None => backoff.snooze(),
            }
        }
    }

    /// Tests `req` until it completes, taking the MPI lock per test and releasing it between
    /// tests (so this rank's other threads can flush and deliver), delivering batches and
    /// backing off.
    fn wait<D: ?Sized>(
        &self,
        mut req: mpi::request::Request<'static, D, StaticScope>,
        on_batch: &mut dyn FnMut(usize, &[u8]),
    ) {
        let t0 = Instant::now();
        let mut backoff = Backoff::default();
        loop {
            let mut m = lock(&self.mpi);
            match req.test() {
                Ok(_) => break,
                Err(r) => req = r,
            }
            let got = self.progress_locked(&mut m, on_batch);
            drop(m);
            if got > 0 {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
        self.stats.collectives.fetch_add(1, SeqCst);
        self.stats
            .collective_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, SeqCst);
    }

    /// The end of a run on every rank (collective; call it after the last data message was
    /// posted, whether the run completed or aborted): sends what is left in the outboxes, then
    /// receives and drops every data and abort message still addressed to this rank (each rank
    /// says how many it sent to each, by a blocking all-gather), and waits for its own sends,
    /// so that MPI finalizes with no message unmatched.
    pub(crate) fn drain(&self) {
        let mut m = lock(&self.mpi);
        self.flush_locked(&mut m);
        let mine: Vec<u64> = self.sent_to.iter().map(|c| c.load(SeqCst)).collect();
        let mut all = vec![0u64; self.size * self.size];
        m.comm.all_gather_into(&mine[..], &mut all[..]);
        let expected: u64 = (0..self.size).map(|r| all[r * self.size + self.rank]).sum();
        let any = m.comm.any_process();
        while self.received.load(SeqCst) < expected {
            let (probed_msg, status) = any.matched_probe();
            let _ = (probed_msg, status).matched_receive_vec::<u8>();
            match status.tag() {
                TAG_DATA | TAG_ABORT => {
                    self.received.fetch_add(1, SeqCst);
                }
                other => panic!(
                    "rank {}: unexpected MPI message tag {other} at the end",
                    self.rank
                ),
            }
        }
        for InFlight { req, buf } in m.sends.drain(..) {
            req.wait();
            // Safety: as in `complete_sends`.
            drop(unsafe { Box::from_raw(buf) });
        }
    }

    /// Sends `bytes` to rank 0 (tag up; rank 0 keeps its own). Blocking (after the run).
    pub(crate) fn send_to_root(&self, bytes: &[u8]) {
        debug_assert!(self.rank != 0);
        lock(&self.mpi)
            .comm
            .process_at_rank(0)
            .send_with_tag(bytes, TAG_UP);
    }

    /// Rank 0: the next message from rank `src` (tag up).
    pub(crate) fn recv_from(&self, src: usize) -> Vec<u8> {
        let m = lock(&self.mpi);
        m.comm
            .process_at_rank(src as i32)
            .receive_vec_with_tag::<u8>(TAG_UP)
            .0
    }

    /// Rank 0: sends `bytes` to rank `dst` (tag down).
    pub(crate) fn send_to(&self, dst: usize, bytes: &[u8]) {
        lock(&self.mpi)
            .comm
            .process_at_rank(dst as i32)
            .send_with_tag(bytes, TAG_DOWN);
    }

    /// The next message from rank 0 (tag down).
    pub(crate) fn recv_from_root(&self) -> Vec<u8> {
        let m = lock(&self.mpi);
        m.comm
            .process_at_rank(0)
            .receive_vec_with_tag::<u8>(TAG_DOWN)
            .0
    }

    /// Rank 0's `bytes` on every rank (`bytes` is ignored elsewhere). Blocking.
    pub(crate) fn broadcast(&self, bytes: &[u8]) -> Vec<u8> {
        let m = lock(&self.mpi);
        let root = m.comm.process_at_rank(0);
        let mut len = [bytes.len() as u64];
        root.broadcast_into(&mut len[..]);
        let mut buf = if self.rank == 0 {
            bytes.to_vec()
        } else {
            vec![0u8; len[0] as usize]
        };
        root.broadcast_into(&mut buf[..]);
        buf
    }
}

/// Completes the sends MPI is done with and frees their buffers.
fn complete_sends(m: &mut Locked) {
    let mut i = 0;
    while i < m.sends.len() {
        let InFlight { req, buf } = m.sends.swap_remove(i);
        match req.test() {
            Ok(_) => {
                // Safety: `buf` came from `Box::leak` in `flush_locked`/`abort` and MPI no longer
                // reads it (the request completed); nothing else refers to it.
                drop(unsafe { Box::from_raw(buf) });
            }
            Err(req) => {
                m.sends.push(InFlight { req, buf });
                let last = m.sends.len() - 1;
                m.sends.swap(i, last);
                i += 1;
            }
        }
    }
}

impl Drop for RankComm {
    fn drop(&mut self) {
        // `drain` completed every send of a run that got to its end; what is left here belongs
        // to a run that failed before it: the requests are abandoned (their buffers leaked)
        // rather than waited for.
        let m = self.mpi.get_mut().unwrap_or_else(|p| p.into_inner());
        for f in m.sends.drain(..) {
            std::mem::forget(f.req);
        }
    }
}
