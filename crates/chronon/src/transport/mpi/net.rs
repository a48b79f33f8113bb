//! The conservative [`Endpoint`] over MPI: workers are (rank, thread) pairs numbered
//! `rank * W + thread`. Inside a rank: one mailbox per worker and a local [`Gsu`] (as the
//! threads transport). To a worker of another rank: the batch is serialized into that rank's
//! outbox (`comm.rs`), counted (`sent_events`, `sent_min`: the sender's half of the distributed
//! TMC and MOM), and delivered there into the worker's mailbox through the local GSU (TMC up,
//! MOM lowered) when a thread of that rank receives the batch.
//!
//! The barrier is the distributed GSU snapshot (README.md, "LBTS"): the rank's threads meet at a
//! local barrier; the last one flushes the outboxes and all-gathers every rank's registers (per
//! local worker: MOE, bound, flags, aux, mailbox minimum, local TMC, events received from other
//! ranks; per worker of the run: events sent to it and the minimum time sent since the last
//! barrier), then receives until every event sent to its workers has arrived, and computes the
//! snapshot every worker of the run then reads (the same on every rank). The round protocols'
//! round end (`round_end`) is the local barrier only: the next snapshot barrier delivers the
//! round's sends to other ranks, its snapshot counts them in their destinations' MOE (the
//! earliest key sent), and `settle` takes them into the queues before anyone reads it — one
//! all-gather per round (README.md, "One collective per round").

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Barrier, Mutex, MutexGuard};

use crossbeam_utils::CachePadded;

use super::codec::{self, Record};
use super::comm::{Backoff, RankComm};
use super::RankSafe;
use crate::barrier::park::Sleepers;
use crate::comm::Mailbox;
use crate::event::{Event, EventKey, Keyed};
use crate::gsu::{Gsu, Published, Snapshot, WorkerView};
use crate::model::Time;
use crate::transport::Endpoint;

/// Words per local worker in the gathered record.
pub(super) const LOCAL_WORDS: usize = 9;
/// Words per worker of the run in the gathered record: the earliest key sent to it since the
/// last gather (time bits, seq, src) and the events sent to it.
pub(super) const SENT_WORDS: usize = 4;
/// Words after the per-worker ones: whether the rank saw an abort.
pub(super) const RANK_WORDS: usize = 1;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the threads of one rank share.
pub(crate) struct MpiNet<'c, E> {
    comm: &'c RankComm,
    rank: usize,
    /// Threads per rank (W) and workers of the run (N = ranks × W).
    threads: usize,
    workers: usize,
    /// Null messages: batches are flushed and received at every receive and wait (no barriers
    /// to carry them); the round protocols move them at barriers only.
    eager: bool,
    mail: Vec<CachePadded<Mailbox<Event<E>>>>,
    gsu: Gsu,
    /// `chan[v * N + w]`: bits of the time below which nothing will come from `v` to `w`.
    chan: Vec<AtomicU64>,
    sleepers: Sleepers,
    abort: AtomicBool,
    /// Per worker of the run: events this rank sent to it, and the earliest key sent to it
    /// since the last barrier's gather.
    sent_events: Vec<AtomicU64>,
    sent_min: Vec<Mutex<EventKey>>,
    /// Per local worker: events delivered to its mailbox from other ranks.
    recv_events: Vec<AtomicU64>,
    /// `recv_from[r * W + l]`: the part of `recv_events[l]` that came from rank `r`. A barrier
    /// waits on these, per sender: a fast rank's batches of the next round may arrive while
    /// this rank still waits for a slow rank's batches of this one, so the totals could reach
    /// what the gather counts with a slow rank's batch still missing.
    recv_from: Vec<AtomicU64>,
    local_barrier: Barrier,
    /// The last barrier's outcome and snapshot (written by its leader between the two local
    /// barrier waits).
    barrier_ok: AtomicBool,
    snap: Mutex<Snapshot>,
    /// A batch that did not decode (the run is aborted; reported at the end).
    decode_error: Mutex<Option<String>>,
}

impl<E> std::fmt::Debug for MpiNet<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiNet")
            .field("rank", &self.rank)
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl<'c, E: RankSafe> MpiNet<'c, E> {
    /// The net of rank `comm.rank()` with `threads` workers. The local GSU starts idle: every
    /// worker publishes its first key before the start barrier (G0 across ranks), and nothing
    /// is sent before it.
    pub(crate) fn new(comm: &'c RankComm, threads: usize, eager: bool) -> Self {
        let workers = threads * comm.size();
        MpiNet {
            comm,
            rank: comm.rank(),
            threads,
            workers,
            eager,
            mail: (0..threads)
                .map(|_| CachePadded::new(Mailbox::new()))
                .collect(),
            gsu: Gsu::new(threads),
            chan: (0..workers * workers)
                .map(|_| AtomicU64::new(0f64.to_bits()))
                .collect(),
            sleepers: Sleepers::new(threads),
            abort: AtomicBool::new(false),
            sent_events: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            sent_min: (0..workers)
                .map(|_| Mutex::new(Published::IDLE.moe))
                .collect(),
            recv_events: (0..threads).map(|_| AtomicU64::new(0)).collect(),
            recv_from: (0..threads * comm.size())
                .map(|_| AtomicU64::new(0))
                .collect(),
            local_barrier: Barrier::new(threads),
            barrier_ok: AtomicBool::new(true),
            snap: Mutex::new(Snapshot::default()),
            decode_error: Mutex::new(None),
        }
    }

    /// Local worker `t`'s endpoint (global number `rank * W + t`).
    pub(crate) fn endpoint(&self, t: usize) -> MpiEnd<'_, 'c, E> {
        MpiEnd {
            net: self,
            me: self.rank * self.threads + t,
            local: t,
            fresh: false,
        }
    }

    /// A batch that failed to decode, if one did.
    pub(crate) fn decode_error(&self) -> Option<String> {
        self.decode_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn is_local(&self, w: usize) -> bool {
        w / self.threads == self.rank
    }

    /// Delivers one batch from another rank (called under the comm lock, in arrival order).
    fn deliver(&self, src: usize, bytes: &[u8]) {
        let base = self.rank * self.threads;
        let r = codec::decode::<E>(bytes, |rec| match rec {
            Record::Events { dst, events } => {
                let l = dst - base;
                // Ordering: counted before the push; both are read by this rank's barrier
                // leader, which delivers itself, or after a local barrier.
                self.recv_events[l].fetch_add(events.len() as u64, SeqCst);
                self.recv_from[src * self.threads + l].fetch_add(events.len() as u64, SeqCst);
                self.gsu.send(l, &self.mail[l], events);
                self.sleepers.wake(l);
            }
            Record::Chan { from, to, t } => {
                self.chan[from * self.workers + to].store(t.to_bits(), SeqCst);
                self.sleepers.wake(to - base);
            }
        });
        if let Err(e) = r {
            *self.decode_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            self.abort.store(true, SeqCst);
            self.comm.abort();
        }
    }

    fn progress(&self) {
        self.comm.progress(&mut |src, b| self.deliver(src, b));
    }

    /// The barrier leader's part: flush, gather every rank's registers, receive every event
    /// sent to this rank's workers, compute the snapshot. `false`: a rank aborted (every rank
    /// returns the same: the abort word is gathered too, and the collective always completes).
    fn exchange(&self) -> bool {
        let (w, n) = (self.threads, self.workers);
        let mut local = Snapshot::default();
        self.gsu.snapshot(|i| self.mail[i].min_time(), &mut local);
        let mut mine = Vec::with_capacity(LOCAL_WORDS * w + SENT_WORDS * n + RANK_WORDS);
        for (l, v) in local.workers.iter().enumerate() {
            let p = &v.published;
            mine.extend_from_slice(&[
                p.moe.time.to_bits(),
                p.moe.seq,
                u64::from(p.moe.src),
                p.bound.to_bits(),
                p.flags,
                p.aux.to_bits(),
                v.mom.to_bits(),
                v.tmc as u64,
                self.recv_events[l].load(SeqCst),
            ]);
        }
        for x in 0..n {
            let k = std::mem::replace(&mut *lock(&self.sent_min[x]), Published::IDLE.moe);
            mine.extend_from_slice(&[
                k.time.to_bits(),
                k.seq,
                u64::from(k.src),
                self.sent_events[x].load(SeqCst),
            ]);
        }
        let aborted = self.abort.load(SeqCst) || self.comm.aborted().is_some();
        mine.push(u64::from(aborted));
        let words = mine.len();
        // (1) This rank's batches leave before its contribution: the gather may complete at its
        // first test, before any progress call would flush them, and then another rank would
        // wait for them in its receive loop until this rank's next barrier (a round later).
        self.comm.flush();
        let all = self
            .comm
            .all_gather(&mine, &mut |src, b| self.deliver(src, b));
        let ranks = self.comm.size();
        let any_aborted = (0..ranks).any(|r| all[r * words + words - RANK_WORDS] != 0);
        let at = |r: usize, i: usize| all[r * words + i];
        // Per worker of the run: events sent to it by every rank, and the earliest key sent
        // to it since the previous gather.
        let sent_to = |x: usize| -> (u64, EventKey) {
            (0..ranks).fold((0, Published::IDLE.moe), |(c, m), r| {
                let o = LOCAL_WORDS * w + SENT_WORDS * x;
                let k = EventKey {
                    time: f64::from_bits(at(r, o)),
                    seq: at(r, o + 1),
                    src: at(r, o + 2) as u32,
                };
                (c + at(r, o + 3), m.min(k))
            })
        };
        // Receive until every event sent to this rank's workers has been delivered (also after
        // an abort: every posted send arrives, and none may stay unmatched). Counted per
        // sending rank: the batches of one rank arrive in order (MPI's non-overtaking rule), so
        // once as many have come from rank `r` as `r` counted in its record, every one of them
        // has; a total could be reached early by another rank's batches of the next round.
        let expected: Vec<u64> = (0..ranks)
            .flat_map(|r| {
                (0..w).map(move |l| at(r, LOCAL_WORDS * w + SENT_WORDS * (self.rank * w + l) + 3))
            })
            .collect();
        let mut backoff = Backoff::default();
        loop {
            let done = (0..ranks * w).all(|i| self.recv_from[i].load(SeqCst) >= expected[i]);
            if done {
                break;
            }
            if self.comm.progress_wait(&mut |src, b| self.deliver(src, b)) > 0 {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
        let mut snap = Snapshot::default();
        for x in 0..n {
            let (r, l) = (x / w, x % w);
            let o = LOCAL_WORDS * l;
            let (sent, sent_min) = sent_to(x);
            let moe = EventKey {
                time: f64::from_bits(at(r, o)),
                seq: at(r, o + 1),
                src: at(r, o + 2) as u32,
            };
            snap.workers.push(WorkerView {
                published: Published {
                    // The events sent to `x` since the last gather are in `x`'s mailbox once
                    // this returns (the receive loop above), and the round protocols take them
                    // into `x`'s queue right after the barrier (`settle`) before reading the
                    // snapshot: its MOE is `x`'s head after that (README, "One collective per
                    // round").
                    moe: moe.min(sent_min),
                    bound: f64::from_bits(at(r, o + 3)),
                    flags: at(r, o + 4),
                    aux: f64::from_bits(at(r, o + 5)),
                },
                mom: f64::from_bits(at(r, o + 6)).min(sent_min.time),
                tmc: at(r, o + 7) as i64 + sent as i64 - at(r, o + 8) as i64,
            });
        }
        *self.snap.lock().unwrap_or_else(|p| p.into_inner()) = snap;
        if any_aborted {
            self.abort.store(true, SeqCst);
        }
        !any_aborted
    }
}

/// One worker's endpoint on an [`MpiNet`].
pub(crate) struct MpiEnd<'n, 'c, E> {
    net: &'n MpiNet<'c, E>,
    me: usize,
    local: usize,
    /// Set by a barrier, cleared by anything that changes registers: a snapshot taken while it
    /// is set is the barrier's (the same on every worker of the run).
    fresh: bool,
}

impl<E> std::fmt::Debug for MpiEnd<'_, '_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiEnd").field("me", &self.me).finish()
    }
}

impl<E: RankSafe> Endpoint<E> for MpiEnd<'_, '_, E> {
    fn me(&self) -> usize {
        self.me
    }

    fn send(&mut self, dst: usize, batch: Vec<Event<E>>) {
        let net = self.net;
        if batch.is_empty() {
            return;
        }
        if net.is_local(dst) {
            let l = dst % net.threads;
            net.gsu.send(l, &net.mail[l], batch);
            return;
        }
        // (S1) counted with its minimum time first, then (S2) posted; the rank's next flush
        // (a barrier, or under null messages the next receive or wait) sends it.
        let min = batch
            .iter()
            .map(|e| e.key())
            .min()
            .expect("the batch is not empty");
        {
            let mut k = lock(&net.sent_min[dst]);
            *k = (*k).min(min);
        }
        net.sent_events[dst].fetch_add(batch.len() as u64, SeqCst);
        net.comm
            .post(dst / net.threads, |out| codec::put_events(out, dst, &batch));
    }

    fn receive<S>(
        &mut self,
        state: &mut S,
        f: impl FnMut(&mut S, Event<E>),
        after: impl FnOnce(&mut S) -> Published,
    ) -> usize {
        self.fresh = false;
        if self.net.eager {
            self.net.progress();
        }
        let net = self.net;
        net.gsu
            .receive(self.local, &net.mail[self.local], state, f, after)
    }

    fn publish(&mut self, p: &Published) {
        self.fresh = false;
        self.net.gsu.publish(self.local, p);
    }

    fn snapshot(&mut self, out: &mut Snapshot) {
        let net = self.net;
        if self.fresh {
            out.clone_from(&net.snap.lock().unwrap_or_else(|p| p.into_inner()));
            return;
        }
        net.gsu.snapshot(|i| net.mail[i].min_time(), out);
        if net.comm.size() > 1 {
            // Outside a barrier no cut of the other ranks' registers is known: say "something
            // may be earlier than anything" (null messages' early termination test then fails
            // and the channels carry the run to its end time).
            out.workers.push(WorkerView {
                published: Published::IDLE,
                mom: f64::NEG_INFINITY,
                tmc: 0,
            });
        }
    }

    fn has_mail(&self) -> bool {
        !self.net.mail[self.local].is_empty()
    }

    fn barrier(&mut self) -> bool {
        let net = self.net;
        self.fresh = true;
        if net.local_barrier.wait().is_leader() {
            // Every rank makes the same collective calls, aborted or not (comm.rs): the
            // outcome is agreed inside the exchange.
            let ok = net.exchange();
            net.barrier_ok.store(ok, SeqCst);
        }
        net.local_barrier.wait();
        net.barrier_ok.load(SeqCst)
    }

    fn round_end(&mut self) -> bool {
        // Only the rank's threads meet (every local send is then in its mailbox); the sends to
        // other ranks are delivered by the next barrier's gather, which covers them in its
        // snapshot (`sent_min`, `sent_events`) and which the round protocols follow with
        // `settle`. An abort is agreed in that gather too, so every rank leaves at the same
        // barrier.
        self.net.local_barrier.wait();
        true
    }

    fn settle<S>(&mut self, state: &mut S, mut f: impl FnMut(&mut S, Event<E>)) {
        let net = self.net;
        if net.mail[self.local].is_empty() {
            return;
        }
        // The registers this worker published before the barrier, lowered to cover what it
        // takes now (a receive must publish registers that cover what it received).
        let mut p = net.gsu.published(self.local);
        let mut st = (state, p.moe);
        net.gsu.receive(
            self.local,
            &net.mail[self.local],
            &mut st,
            |(s, k), e| {
                *k = (*k).min(e.key());
                f(s, e)
            },
            |(_, k)| {
                p.moe = *k;
                p
            },
        );
    }

    fn channel(&self, from: usize, to: usize) -> Time {
        f64::from_bits(self.net.chan[from * self.net.workers + to].load(SeqCst))
    }

    fn raise_channel(&self, to: usize, t: Time) {
        let net = self.net;
        if net.is_local(to) {
            net.chan[self.me * net.workers + to].store(t.to_bits(), SeqCst);
        } else {
            let me = self.me;
            net.comm
                .post(to / net.threads, |out| codec::put_chan(out, me, to, t));
        }
    }

    fn wake(&self, w: usize) {
        if self.net.is_local(w) {
            self.net.sleepers.wake(w % self.net.threads);
        }
    }

    fn wait_until(&mut self, ready: impl Fn(&Self) -> bool) {
        // Batches from other ranks arrive only when some thread of this rank polls: poll with a
        // backoff (at most 100 µs asleep) instead of parking.
        let mut backoff = Backoff::default();
        loop {
            self.net.progress();
            if ready(self) || self.aborted() {
                return;
            }
            backoff.snooze();
        }
    }

    fn abort(&self) {
        self.net.abort.store(true, SeqCst);
        self.net.comm.abort();
        self.net.sleepers.wake_all();
    }

    fn aborted(&self) -> bool {
        self.net.abort.load(SeqCst) || self.net.comm.aborted().is_some()
    }

    fn rendezvous(&mut self, _last: impl FnOnce(&mut Self)) -> bool {
        // Global events are refused before a run over ranks starts (they read every LP's
        // state, which no rank holds): reaching here is a bug; stop every rank rather than hang.
        self.abort();
        false
    }
}
