//! The GVT registers: an asynchronous shared-memory GVT in the style of Fujimoto and Hybinette
//! ("Computing Global Virtual Time in Shared-Memory Multiprocessors", ACM TOMACS 7(4), 1997),
//! adapted to mailboxes. No worker ever waits for another: a round is started by one CAS, each
//! worker reports its local minimum once when it next passes the top of its loop, and the last
//! reporter publishes the minimum of the reports. The protocol, the worker-side rules (drain
//! before reporting, `send_min` for messages pushed during a round) and the proof sketch are in
//! `README.md` beside this file.

use std::ptr::NonNull;

use crate::loom::atomic::{AtomicU64, Ordering::SeqCst};

/// Bits of the `remaining` field of `state`.
const REMAINING: u64 = (1 << 32) - 1;

/// Where the words are: `[state, published, gvt, reports[0..W]]`.
const STATE: usize = 0;
const PUBLISHED: usize = 1;
const GVT: usize = 2;
const REPORTS: usize = 3;

/// The shared GVT registers of one run: `3 + W` words, in this process's memory (threads) or
/// in a shared segment that every worker process maps (`procs.rs`). The protocol is the same
/// either way: every access is a SeqCst atomic on a word, and atomics in a `MAP_SHARED`
/// mapping are atomic across processes.
pub(crate) struct GvtRegisters {
    /// `state` (`round << 32 | remaining`: rounds started so far, and workers yet to report in
    /// the current round, 0 when none is in progress), `published` (the last round whose GVT
    /// is published; a new round starts only after it), `gvt` (bits of a non-negative `f64`,
    /// so bit order is numeric order), then each worker's report in the current round.
    words: NonNull<AtomicU64>,
    len: usize,
    /// The words when they live in this process's heap (`words` points into it).
    _own: Option<Box<[AtomicU64]>>,
    /// Keeps a shared mapping alive when the words live there.
    _keep: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
    /// Workers that report in a round (every worker, except over MPI ranks: the rank's own).
    participants: u64,
    /// Over MPI ranks (`ranked`): a round is the rank's *local* round (README, "GVT across
    /// ranks"): workers only ask for one (`wanted`), the rank's driver starts it, its minimum
    /// goes to `local` instead of `gvt`, and the driver publishes GVT.
    ranked: Option<Ranked>,
}

/// The registers' part that only runs over MPI ranks uses.
#[derive(Debug)]
struct Ranked {
    /// Bits of the last local round's minimum.
    local: AtomicU64,
    /// A worker asked for a GVT computation since the driver last looked.
    wanted: AtomicU64,
}

// Safety: the registers are atomics (shared by reference between threads by design); the
// pointer targets `_own`'s boxed slice or a mapping `_keep` holds, neither of which moves or
// goes away while `self` lives.
unsafe impl Send for GvtRegisters {}
// Safety: see `Send`: every access through `words` is an atomic operation.
unsafe impl Sync for GvtRegisters {}

impl std::fmt::Debug for GvtRegisters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GvtRegisters")
            .field("workers", &(self.len - REPORTS))
            .finish_non_exhaustive()
    }
}

impl GvtRegisters {
    /// Registers for `workers` workers (at least 1), GVT 0, no round started.
    pub(crate) fn new(workers: usize) -> Self {
        let own: Box<[AtomicU64]> = (0..REPORTS + workers.max(1))
            .map(|i| {
                AtomicU64::new(if i < REPORTS {
                    if i == GVT {
                        0f64.to_bits()
                    } else {
                        0
                    }
                } else {
                    f64::INFINITY.to_bits()
                })
            })
            .collect();
        GvtRegisters {
            words: NonNull::from(&own[0]),
            len: own.len(),
            participants: own.len() as u64 - REPORTS as u64,
            _own: Some(own),
            _keep: None,
            ranked: None,
        }
    }

    // Only Time Warp over MPI ranks calls it (`ranks/`, feature `mpi`).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    /// Registers for one MPI rank: `workers` report slots (workers are numbered over every
    /// rank), of which the `local` ones (this rank's) report in each round; rounds are local
    /// rounds, started by the rank's driver ([`start_local`](Self::start_local)), and GVT is
    /// what the driver [`publish`](Self::publish)es.
    pub(crate) fn ranked(workers: usize, local: usize) -> Self {
        let mut g = GvtRegisters::new(workers);
        g.participants = local.max(1) as u64;
        g.ranked = Some(Ranked {
            local: AtomicU64::new(f64::INFINITY.to_bits()),
            wanted: AtomicU64::new(0),
        });
        g
    }

    /// The bytes the registers of `workers` workers take in a shared segment.
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    pub(crate) fn shared_bytes(workers: usize) -> usize {
        (REPORTS + workers.max(1)) * std::mem::size_of::<AtomicU64>()
    }

    /// Initializes registers for `workers` workers at `at` (GVT 0, no round started).
    ///
    /// # Safety
    /// `at` is 8-byte aligned, [`shared_bytes`](Self::shared_bytes) long, writable, and no
    /// process uses the registers yet.
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    pub(crate) unsafe fn init_shared(at: NonNull<u8>, workers: usize) {
        let w = at.cast::<AtomicU64>();
        for i in 0..REPORTS + workers.max(1) {
            let v = match i {
                GVT => 0f64.to_bits(),
                i if i >= REPORTS => f64::INFINITY.to_bits(),
                _ => 0,
            };
            // Safety: inside the range the caller gave; nobody else uses it yet.
            unsafe { w.add(i).as_ptr().write(AtomicU64::new(v)) };
        }
    }

    /// The registers of `workers` workers at `at`, initialized by
    /// [`init_shared`](Self::init_shared) in some process.
    ///
    /// # Safety
    /// As for `init_shared`, except that other processes may use them; `keep` keeps the
    /// mapping alive.
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    pub(crate) unsafe fn attach_shared(
        at: NonNull<u8>,
        workers: usize,
        keep: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        GvtRegisters {
            words: at.cast(),
            len: REPORTS + workers.max(1),
            participants: workers.max(1) as u64,
            _own: None,
            _keep: Some(keep),
            ranked: None,
        }
    }

    #[inline(always)]
    fn word(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < self.len);
        // Safety: `i` is in bounds, and the words live as long as `self` (see the fields).
        unsafe { &*self.words.as_ptr().add(i) }
    }

    fn reports(&self) -> impl Iterator<Item = &AtomicU64> {
        (REPORTS..self.len).map(|i| self.word(i))
    }

    /// The GVT published last.
    #[inline]
    pub(crate) fn gvt(&self) -> f64 {
        f64::from_bits(self.word(GVT).load(SeqCst))
    }

    /// The round in progress, if any: workers that have not reported in it must.
    #[inline]
    pub(crate) fn active_round(&self) -> Option<u64> {
        let s = self.word(STATE).load(SeqCst);
        (s & REMAINING != 0).then_some(s >> 32)
    }

    /// Rounds whose GVT is published.
    pub(crate) fn rounds(&self) -> u64 {
        self.word(PUBLISHED).load(SeqCst)
    }

    /// Starts a round unless one is in progress or the last one is not published yet. Returns
    /// whether this call started it.
    pub(crate) fn try_start(&self) -> bool {
        if let Some(r) = &self.ranked {
            // Over ranks the driver starts rounds; a worker only asks.
            // Ordering: a hint; the driver also computes GVT on a timer.
            r.wanted.store(1, std::sync::atomic::Ordering::Relaxed);
            return false;
        }
        self.start_round()
    }

    // Only Time Warp over MPI ranks calls it (`ranks/`, feature `mpi`).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    /// Over MPI ranks, the rank's driver: whether a worker asked for GVT since the last call.
    pub(crate) fn take_wanted(&self) -> bool {
        self.ranked.as_ref().is_some_and(|r| {
            // Ordering: a hint (see `try_start`).
            r.wanted.swap(0, std::sync::atomic::Ordering::Relaxed) != 0
        })
    }

    // Only Time Warp over MPI ranks calls it (`ranks/`, feature `mpi`).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    /// Over MPI ranks, the rank's driver starts a local round (none is in progress); returns
    /// its number.
    pub(crate) fn start_local(&self) -> Option<u64> {
        self.start_round()
            .then(|| self.word(STATE).load(SeqCst) >> 32)
    }

    // Only Time Warp over MPI ranks calls it (`ranks/`, feature `mpi`).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    /// Over MPI ranks: local round `round`'s minimum, once every worker of the rank reported.
    pub(crate) fn local_result(&self, round: u64) -> Option<f64> {
        let r = self.ranked.as_ref()?;
        (self.word(PUBLISHED).load(SeqCst) >= round).then(|| f64::from_bits(r.local.load(SeqCst)))
    }

    // Only Time Warp over MPI ranks calls it (`ranks/`, feature `mpi`).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    /// Over MPI ranks, the driver publishes GVT `g` (every rank publishes the same; never
    /// lowers it).
    pub(crate) fn publish(&self, g: f64) {
        self.word(GVT).fetch_max(g.to_bits(), SeqCst);
    }

    fn start_round(&self) -> bool {
        let s = self.word(STATE).load(SeqCst);
        if s & REMAINING != 0 || self.word(PUBLISHED).load(SeqCst) != s >> 32 {
            return false;
        }
        let next = ((s >> 32) + 1) << 32 | self.participants;
        self.word(STATE)
            .compare_exchange(s, next, SeqCst, SeqCst)
            .is_ok()
    }

    /// Worker `w` reports `local_min` in `round` (the value `active_round` returned). The last
    /// reporter of the round computes and publishes the GVT and gets it back.
    pub(crate) fn report(&self, w: usize, round: u64, local_min: f64) -> Option<f64> {
        assert!(REPORTS + w < self.len, "worker {w} has no report register");
        self.word(REPORTS + w).store(local_min.to_bits(), SeqCst);
        let old = self.word(STATE).fetch_sub(1, SeqCst);
        debug_assert_eq!(
            old >> 32,
            round,
            "a report for a round that is not in progress"
        );
        if old & REMAINING != 1 {
            return None;
        }
        // Every worker stored its report before its decrement, so all are visible here; no new
        // round can start (and overwrite a report) before `published` moves on below.
        let min = self
            .reports()
            .map(|r| f64::from_bits(r.load(SeqCst)))
            .fold(f64::INFINITY, f64::min);
        if let Some(r) = &self.ranked {
            // A local round: its minimum is the rank's contribution, not GVT (the slots of
            // other ranks' workers are never written: they stay +inf).
            r.local.store(min.to_bits(), SeqCst);
            self.word(PUBLISHED).store(round, SeqCst);
            return None;
        }
        // The GVT never decreases (the proof says the minimum cannot; `fetch_max` keeps a
        // mistake from turning into an uncommit).
        let prev = f64::from_bits(self.word(GVT).fetch_max(min.to_bits(), SeqCst));
        self.word(PUBLISHED).store(round, SeqCst);
        Some(prev.max(min))
    }
}

#[cfg(all(test, not(chronon_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_round_needs_every_report_and_publishes_the_minimum() {
        let g = GvtRegisters::new(3);
        assert_eq!(g.active_round(), None);
        assert!(g.try_start());
        assert!(!g.try_start(), "one round at a time");
        assert_eq!(g.active_round(), Some(1));
        assert_eq!(g.report(0, 1, 5.0), None);
        assert_eq!(g.report(2, 1, 3.0), None);
        assert_eq!(g.gvt(), 0.0);
        assert_eq!(g.report(1, 1, 4.0), Some(3.0));
        assert_eq!(g.gvt(), 3.0);
        assert_eq!(g.rounds(), 1);
        assert_eq!(g.active_round(), None);
        assert!(g.try_start());
        assert_eq!(g.active_round(), Some(2));
    }

    #[test]
    fn a_ranked_round_is_local_and_the_driver_publishes() {
        // Workers 2 and 3 of 4 live on this rank.
        let g = GvtRegisters::ranked(4, 2);
        assert!(!g.try_start(), "workers only ask");
        assert!(g.take_wanted());
        assert!(!g.take_wanted());
        let r = g.start_local().expect("no round in progress");
        assert_eq!(g.start_local(), None, "one round at a time");
        assert_eq!(g.active_round(), Some(r));
        assert_eq!(g.report(3, r, 7.0), None);
        assert_eq!(g.local_result(r), None);
        assert_eq!(
            g.report(2, r, 4.0),
            None,
            "the last reporter publishes no GVT"
        );
        assert_eq!(g.local_result(r), Some(4.0));
        assert_eq!(g.gvt(), 0.0);
        g.publish(3.0);
        assert_eq!(g.gvt(), 3.0);
        g.publish(2.0);
        assert_eq!(g.gvt(), 3.0, "GVT never goes back");
        assert_eq!(g.active_round(), None);
    }
}

#[cfg(all(test, chronon_loom))]
mod loom_tests {
    use super::*;
    use crate::loom::{thread, Arc};

    /// Two workers, each starting a round and reporting whatever round it sees: rounds never
    /// overlap, every published GVT is the minimum of one round's reports, and it never
    /// decreases.
    #[test]
    fn rounds_publish_the_minimum_of_their_own_reports() {
        loom::model(|| {
            let g = Arc::new(GvtRegisters::new(2));
            let hs: Vec<_> = (0..2)
                .map(|w| {
                    let g = g.clone();
                    thread::spawn(move || {
                        let mut seen = 0.0;
                        let mut last_round = 0;
                        for step in 0..2u64 {
                            g.try_start();
                            if let Some(r) = g.active_round() {
                                if r > last_round {
                                    last_round = r;
                                    // Reports grow with the round: round r's reports are
                                    // 10 r + w, so its minimum is 10 r.
                                    let v = (10 * r + w) as f64;
                                    if let Some(gvt) = g.report(w as usize, r, v) {
                                        assert_eq!(gvt, (10 * r) as f64);
                                    }
                                }
                            }
                            let now = g.gvt();
                            assert!(now >= seen, "GVT went back at step {step}");
                            seen = now;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
    }

    /// The transient-message race: worker 0 turns its only pending event (time 5) into a
    /// message to worker 1 while worker 1 may be starting a round, draining and reporting. With
    /// the worker rules (R1: drain after seeing the round, before reporting; R2: after a push,
    /// a worker that has not reported in the active round lowers its `send_min`), no published
    /// GVT ever passes the message, which nobody processes here.
    #[test]
    fn a_message_in_flight_during_a_round_holds_gvt_back() {
        use crate::comm::Mailbox;
        use crate::event::EventKey;
        loom::model(|| {
            let g = Arc::new(GvtRegisters::new(2));
            let m = Arc::new(Mailbox::<EventKey>::new());
            let (g0, m0) = (g.clone(), m.clone());
            let sender = thread::spawn(move || {
                let mut pending = 5.0f64; // its one event
                let mut send_min = f64::INFINITY;
                let mut reported = 0;
                for step in 0..2 {
                    if let Some(r) = g0.active_round() {
                        if r > reported {
                            if let Some(gvt) = g0.report(0, r, pending.min(send_min)) {
                                assert!(gvt <= 5.0);
                            }
                            reported = r;
                            send_min = f64::INFINITY;
                        }
                    }
                    if step == 0 {
                        // Process the event: it becomes a message at time 5.
                        pending = f64::INFINITY;
                        m0.push(EventKey {
                            time: 5.0,
                            src: 0,
                            seq: 0,
                        });
                        if g0.active_round().is_some_and(|r| r > reported) {
                            send_min = send_min.min(5.0);
                        }
                    }
                }
            });
            let mut pending = f64::INFINITY;
            let mut reported = 0;
            for _ in 0..2 {
                g.try_start();
                if let Some(r) = g.active_round() {
                    if r > reported {
                        m.take(|e| pending = pending.min(e.time));
                        if let Some(gvt) = g.report(1, r, pending) {
                            assert!(gvt <= 5.0, "GVT {gvt} passed a message in flight");
                        }
                        reported = r;
                    }
                }
            }
            sender.join().unwrap();
            assert!(g.gvt() <= 5.0);
        });
    }
}
