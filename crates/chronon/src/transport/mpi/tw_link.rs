//! Time Warp's data path between ranks ([`RankLink`], the transport's side of `RankNet` in
//! `transport/tw.rs`): what the rank's workers handed over for other ranks (`RankWires`'
//! outgoing box) goes out as one record per destination rank (`tw_codec.rs`) through the rank
//! layer (`comm.rs`); what other ranks sent is decoded into the workers' mailboxes; at the end,
//! sent and received totals are exchanged until every record is delivered. The colour of each
//! record, and the counting GVT across ranks rests on, are the caller's colour book's
//! (`Colours`: Mattern's algorithm in `executor/time_warp/dgvt.rs`); the reduction it runs on is
//! this link's non-blocking all-gather.

use super::comm::{Backoff, PendingGather, RankComm};
use super::tw_codec as codec;
use super::{RankSafe, RankWires};
use crate::event::Keyed;
use crate::transport::tw::{Colours, RankNet, Reduce, SUMS};
use crate::tw_msg::Msg;

/// The capacity a delivered batch for one worker starts with.
const BATCH_HINT: usize = 32;

/// A rank's link to the other ranks, for Time Warp.
pub(crate) struct RankLink<'c, P> {
    comm: &'c RankComm,
    wires: &'c RankWires<P>,
    /// Workers per rank (worker `w` runs in rank `w / threads`).
    threads: usize,
    /// Per destination rank: the record being written, its message count, earliest time.
    bufs: Vec<Vec<u8>>,
    counts: Vec<u32>,
    mins: Vec<f64>,
    /// Scratch: decoded messages per destination worker.
    per_worker: Vec<Vec<Msg<P>>>,
    /// The reduction in progress.
    pending: Option<PendingGather>,
    /// The first record that did not decode.
    error: Option<String>,
    backoff: Backoff,
    records_sent: u64,
    msgs_sent: u64,
    msgs_received: u64,
}

impl<'c, P: RankSafe> RankLink<'c, P> {
    /// The link of rank `comm.rank()`, whose workers hand over through `wires`; `threads`
    /// workers per rank.
    pub(crate) fn new(comm: &'c RankComm, wires: &'c RankWires<P>, threads: usize) -> Self {
        let ranks = comm.size();
        RankLink {
            comm,
            wires,
            threads,
            bufs: (0..ranks).map(|_| Vec::new()).collect(),
            counts: vec![0; ranks],
            mins: vec![f64::INFINITY; ranks],
            per_worker: (0..ranks * threads).map(|_| Vec::new()).collect(),
            pending: None,
            error: None,
            backoff: Backoff::default(),
            records_sent: 0,
            msgs_sent: 0,
            msgs_received: 0,
        }
    }

    /// Appends `m` to the record for its destination rank.
    fn put(&mut self, owner: &dyn Fn(u32) -> usize, m: &Msg<P>) -> Result<(), String> {
        let dst = match m {
            Msg::Event(e, _) => e.dst,
            Msg::Anti(a) => a.dst,
        };
        let r = owner(dst) / self.threads;
        if self.counts[r] == 0 {
            self.bufs[r].clear();
            codec::begin_record(&mut self.bufs[r], 0);
        }
        let at = m.key().time;
        codec::put(&mut self.bufs[r], m)?;
        self.counts[r] += 1;
        self.mins[r] = self.mins[r].min(at);
        Ok(())
    }

    /// Decodes a batch into the workers' mailboxes, counting each record once its messages
    /// are there (rule D1).
    fn deliver(&mut self, owner: &dyn Fn(u32) -> usize, book: &mut dyn Colours, bytes: &[u8]) {
        let (per_worker, wires) = (&mut self.per_worker, self.wires);
        let received = &mut self.msgs_received;
        let r = codec::decode::<P>(bytes, |epoch, msgs| {
            let mut touched = Vec::new();
            for m in msgs {
                let Ok(m) = m else { break };
                let lp = match &m {
                    Msg::Event(e, _) => e.dst,
                    Msg::Anti(a) => a.dst,
                };
                let w = owner(lp);
                if per_worker[w].is_empty() {
                    touched.push(w);
                    // The Vec goes to the mailbox whole: start it at a batch's usual size
                    // rather than grow it message by message.
                    per_worker[w].reserve(BATCH_HINT);
                }
                per_worker[w].push(m);
                *received += 1;
            }
            for w in touched {
                wires
                    .mailbox(w)
                    .push_batch(std::mem::take(&mut per_worker[w]));
            }
            book.on_receive(epoch);
        });
        if let Err(e) = r {
            self.fail(format!("rank {}: {e}", self.comm.rank()));
        }
    }

    /// Keeps the first error of a receive (the run fails once it is reported).
    fn fail(&mut self, e: String) {
        self.error.get_or_insert(e);
    }
}

impl<P: RankSafe> RankNet for RankLink<'_, P> {
    fn send(
        &mut self,
        owner: &dyn Fn(u32) -> usize,
        book: &mut dyn Colours,
    ) -> Result<bool, String> {
        let (mut any, mut error) = (false, None);
        let wires = self.wires;
        wires.take_outgoing(|mut b| {
            any = true;
            b.drain_into(&mut |m: Msg<P>| {
                if let Err(e) = self.put(owner, &m) {
                    error.get_or_insert(e);
                }
                // The record holds the payload's bytes now; a shared-heap item the message
                // held is freed here, at the message's time. Left to this thread's clock
                // (`+inf`: no handler runs here) the item would wait for the end of the
                // run, and a sender's heap would fill with items nothing refers to. No rollback
                // needs it: the handler that sent the message runs again from scratch.
                #[cfg(all(target_os = "linux", not(chronon_loom)))]
                let _at = crate::shm::FreedAt::new(m.key().time);
                drop(m);
            });
            wires.give_back(b);
        });
        for r in 0..self.bufs.len() {
            let n = std::mem::take(&mut self.counts[r]);
            if n == 0 {
                continue;
            }
            let epoch = book.on_send(std::mem::replace(&mut self.mins[r], f64::INFINITY));
            let buf = &mut self.bufs[r];
            buf[..8].copy_from_slice(&epoch.to_le_bytes());
            codec::end_record(buf, 8, n);
            self.comm.post(r, |out| out.extend_from_slice(buf));
            self.records_sent += 1;
            self.msgs_sent += u64::from(n);
        }
        if any {
            self.comm.flush();
        }
        error.map_or(Ok(any), Err)
    }

    fn receive(
        &mut self,
        owner: &dyn Fn(u32) -> usize,
        book: &mut dyn Colours,
    ) -> Result<bool, String> {
        let comm = self.comm;
        let any = comm.progress(&mut |_, b| self.deliver(owner, book, b)) > 0;
        self.error.take().map_or(Ok(any), Err)
    }

    fn settle(
        &mut self,
        owner: &dyn Fn(u32) -> usize,
        book: &mut dyn Colours,
    ) -> Result<(), String> {
        loop {
            let (sent, recv) = book.totals();
            let comm = self.comm;
            let all = comm.all_gather(&[sent, recv], &mut |_, b| self.deliver(owner, book, b));
            let (s, r) = all
                .chunks_exact(2)
                .fold((0u64, 0u64), |(s, r), c| (s + c[0], r + c[1]));
            if s == r {
                return self.error.take().map_or(Ok(()), Err);
            }
            // Some record is still on its way: the next gather receives while it waits.
            self.receive(owner, book)?;
        }
    }

    fn aborted(&self) -> bool {
        self.comm.aborted().is_some()
    }

    fn abort(&self) {
        self.comm.abort();
    }

    fn figures(&self) -> (u64, u64, u64) {
        (self.records_sent, self.msgs_sent, self.msgs_received)
    }

    fn pause(&mut self, moved: bool) {
        if moved {
            self.backoff.reset();
        } else {
            self.backoff.snooze();
        }
    }
}

/// The reduction over the rank layer's non-blocking all-gather: each rank gathers every
/// rank's `[transit, failed, wanted, min bits]` and reduces them itself (the same result
/// everywhere).
impl<P: RankSafe> Reduce for RankLink<'_, P> {
    fn start(&mut self, sums: [i64; SUMS], min: f64) {
        let mut words = [0u64; SUMS + 1];
        for (w, s) in words.iter_mut().zip(sums) {
            *w = s as u64;
        }
        words[SUMS] = min.to_bits();
        self.pending = Some(self.comm.start_all_gather(&words));
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
