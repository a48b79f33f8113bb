//! The per-worker history arena: every processed event's record, appended in processing order
//! to one worker-owned log, with a link from each record to the previous record of its LP.
//!
//! Processing writes sequentially (the record, then its sends and counter deltas in a second
//! log, [`Extra`]); fossil collection streams through both in order; nothing is allocated per
//! LP. An LP keeps only the position of its newest record (`TwLp::last`); following the `prev`
//! links from there visits its records newest first, which is all rollback needs.
//!
//! Positions (`seq`) are absolute and never reused. A record leaves its slot when it is rolled
//! back (the event goes back to the pending set), or when it is committed under reverse
//! computation; the slot stays as a hole until the front of the arena passes it. The front
//! advances past holes and committed records; the oldest uncommitted record holds it. Under
//! copy state saving committed records stay until the front passes them, and then move to their
//! LP's coast log while a checkpoint may still need them (`TwCold::coast`).
//!
//! Why records of one LP keep their LP's order in the arena: an LP's records form a stack
//! (appended when processed, removed from the top on rollback), and the arena only appends. So
//! streaming the arena and committing every record older than GVT commits each LP's records in
//! their order (an LP's history is in time order, so a record older than GVT never follows one
//! that is not). README.md, "History arena".

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU64;

use super::lp::Sent;
use crate::error::ModelError;
use crate::model::LpMeta;
use crate::tw_msg::TwEvent;

/// No record: the end of an LP's chain.
pub(super) const NONE: u64 = u64::MAX;

/// A processed event: the event itself, the LP's bookkeeping before it (for rollback: `meta`
/// restores the random stream and send counter; the LP's digest is restored by unfolding the
/// event's key, `LpDigest::uncommit`), the link to the LP's previous record, and where its
/// sends and counter deltas lie in the extras log.
#[derive(Debug)]
pub(super) struct Rec<P> {
    pub(super) ev: TwEvent<P>,
    pub(super) meta: LpMeta,
    /// Position of the LP's previous record (`NONE`: none).
    pub(super) prev: u64,
    /// Index of the first of this record's extras: `sent` sends, then `counts` deltas.
    pub(super) log_at: u64,
    /// Its sends, counter deltas and flags, in one word.
    pub(super) info: Info,
}

/// A record's sends (bits 0–31), counter deltas (32–47: at most the number of model counters,
/// which setup bounds by `u16::MAX`), `committed` (48) and `error` (49: the handler failed;
/// the error waits in the arena's side table until the event commits or rolls back). Bit 63
/// is always set: the niche that keeps `Option<Rec>` at the record's size. One word computed
/// in a register: as four narrow fields, the record's copy into its slot read them back wide
/// from the stack (a store-forwarding stall per event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Info(NonZeroU64);

const COMMITTED: u64 = 1 << 48;
const ERROR: u64 = 1 << 49;
const SET: u64 = 1 << 63;

impl Info {
    #[inline(always)]
    pub(super) fn new(sent: u32, counts: u16, error: bool) -> Self {
        let w = SET | u64::from(sent) | (u64::from(counts) << 32) | (u64::from(error) * ERROR);
        Info(NonZeroU64::new(w).expect("bit 63 is set"))
    }

    #[inline(always)]
    pub(super) fn sent(self) -> u32 {
        self.0.get() as u32
    }

    #[inline(always)]
    pub(super) fn counts(self) -> u16 {
        (self.0.get() >> 32) as u16
    }

    #[inline(always)]
    pub(super) fn committed(self) -> bool {
        self.0.get() & COMMITTED != 0
    }

    #[inline(always)]
    pub(super) fn error(self) -> bool {
        self.0.get() & ERROR != 0
    }

    #[inline(always)]
    fn with(self, bit: u64, on: bool) -> Self {
        let w = if on {
            self.0.get() | bit
        } else {
            self.0.get() & !bit
        };
        Info(NonZeroU64::new(w | SET).expect("bit 63 is set"))
    }
}

/// A send or a counter delta of a processed event, in processing order.
#[derive(Clone, Copy, Debug)]
pub(super) enum Extra {
    Sent(Sent),
    Count(u32, i64),
}

/// Where `rec`'s counter deltas lie in an extras log whose first entry has index `log_front`
/// (after its sends).
#[inline]
fn counts_in_log<P>(rec: &Rec<P>, log_front: u64) -> std::ops::Range<usize> {
    let from = (rec.log_at - log_front) as usize + rec.info.sent() as usize;
    from..from + usize::from(rec.info.counts())
}

/// The arena (see the module docs).
#[derive(Debug)]
pub(super) struct History<P> {
    slots: VecDeque<Option<Rec<P>>>,
    /// Position of `slots[0]`.
    front: u64,
    log: VecDeque<Extra>,
    /// Index of `log[0]`.
    log_front: u64,
    /// No uncommitted record lies before this position.
    scan: u64,
    /// Positions of the records whose time is below the time of the record pushed before
    /// them (the worker went back, after a rollback). From one of them to the next the
    /// arena's times never decrease, so `commit_older` skips from a record at or after GVT to
    /// the next of these positions instead of visiting the rest of its run.
    runs: VecDeque<u64>,
    /// Time of the newest record pushed.
    last_time: f64,
    /// Model errors of records that hold `error` (rare).
    errors: HashMap<u64, Box<ModelError>>,
    /// Records in their slots, committed ones included.
    live: u64,
}

impl<P> Default for History<P> {
    fn default() -> Self {
        History {
            slots: VecDeque::new(),
            front: 0,
            log: VecDeque::new(),
            log_front: 0,
            scan: 0,
            runs: VecDeque::new(),
            last_time: f64::NEG_INFINITY,
            errors: HashMap::new(),
            live: 0,
        }
    }
}

impl<P> History<P> {
    /// Position the next record gets.
    #[inline(always)]
    pub(super) fn next_seq(&self) -> u64 {
        self.front + self.slots.len() as u64
    }

    /// Index the next extra gets.
    #[inline(always)]
    pub(super) fn log_next(&self) -> u64 {
        self.log_front + self.log.len() as u64
    }

    /// Appends an extra of the record about to be pushed.
    #[inline(always)]
    pub(super) fn push_extra(&mut self, e: Extra) {
        self.log.push_back(e);
    }

    /// Appends a record (its extras are already in the log); returns its position. Inlined so
    /// that the record is written into its slot, not built on the stack and copied (the copy's
    /// wide loads of fields just written narrower stalled on store forwarding: 13 ns/event).
    #[inline(always)]
    pub(super) fn push(&mut self, rec: Rec<P>, error: Option<Box<ModelError>>) -> u64 {
        let seq = self.next_seq();
        debug_assert_eq!(rec.info.error(), error.is_some());
        if let Some(e) = error {
            self.errors.insert(seq, e);
        }
        if rec.ev.time < self.last_time {
            self.runs.push_back(seq);
        }
        self.last_time = rec.ev.time;
        self.slots.push_back(Some(rec));
        self.live += 1;
        seq
    }

    /// The record at `seq`, if it is still in its slot.
    #[inline]
    pub(super) fn get(&self, seq: u64) -> Option<&Rec<P>> {
        if seq < self.front {
            return None;
        }
        self.slots.get((seq - self.front) as usize)?.as_ref()
    }

    /// Removes the record at `seq` (rollback), leaving a hole, and drops its error if any.
    pub(super) fn take(&mut self, seq: u64) -> Rec<P> {
        let rec = self.slots[(seq - self.front) as usize]
            .take()
            .expect("a record in its slot");
        if rec.info.error() {
            self.errors.remove(&seq);
        }
        self.live -= 1;
        rec
    }

    /// Extra number `i` (it must not have been freed: its record is in the arena).
    #[inline]
    pub(super) fn extra(&self, i: u64) -> Extra {
        self.log[(i - self.log_front) as usize]
    }

    /// Visits, in arena order, every uncommitted record older than `g`, with its extras;
    /// `commit` returns whether the record is to be dropped now (reverse computation) or kept
    /// until the front passes it. The record is marked committed first. Stops at the first
    /// error `commit` returns. A record that raised a model error is not handed over: its
    /// error is returned instead.
    pub(super) fn commit_older<E>(
        &mut self,
        g: f64,
        mut commit: impl FnMut(&Rec<P>, std::collections::vec_deque::Iter<'_, Extra>) -> Result<bool, E>,
        mut on_error: impl FnMut(&Rec<P>, Box<ModelError>) -> E,
    ) -> Result<u64, E> {
        let mut first_left = None;
        let mut n = 0;
        let mut i = (self.scan.max(self.front) - self.front) as usize;
        // The next run to start after position `i`.
        let mut run = self.runs.partition_point(|&r| r <= self.front + i as u64);
        while i < self.slots.len() {
            let Some(rec) = &mut self.slots[i] else {
                i += 1;
                continue;
            };
            if rec.info.committed() {
                i += 1;
                continue;
            }
            if rec.ev.time >= g {
                first_left.get_or_insert(i);
                // The rest of this run is at or after `g` too: go to the next run.
                let here = self.front + i as u64;
                while self.runs.get(run).is_some_and(|&r| r <= here) {
                    run += 1;
                }
                match self.runs.get(run) {
                    Some(&r) => i = (r - self.front) as usize,
                    None => break,
                }
                continue;
            }
            let seq = self.front + i as u64;
            if rec.info.error() {
                let e = self
                    .errors
                    .remove(&seq)
                    .expect("an error for a failed record");
                rec.info = rec.info.with(ERROR, false);
                return Err(on_error(rec, e));
            }
            rec.info = rec.info.with(COMMITTED, true);
            n += 1;
            let counts = counts_in_log(rec, self.log_front);
            if commit(rec, self.log.range(counts))? {
                self.slots[i] = None;
                self.live -= 1;
            }
            i += 1;
        }
        self.scan = self.front + first_left.unwrap_or(self.slots.len()) as u64;
        Ok(n)
    }

    /// Commits the record at `seq` before GVT passes it (an older record of a safe event's LP,
    /// safe.rs): hands it and its counter deltas to `commit`, then drops it, as commit does
    /// under reverse state saving. The record must be uncommitted and without an error.
    pub(super) fn commit_early(
        &mut self,
        seq: u64,
        commit: impl FnOnce(&Rec<P>, std::collections::vec_deque::Iter<'_, Extra>),
    ) {
        let rec = self.slots[(seq - self.front) as usize]
            .take()
            .expect("a record in its slot");
        debug_assert!(!rec.info.committed() && !rec.info.error());
        self.live -= 1;
        commit(&rec, self.log.range(counts_in_log(&rec, self.log_front)));
    }

    /// Frees the front of the arena up to the oldest uncommitted record: holes go, committed
    /// records are handed to `f` (in arena order), and the extras before the new front go.
    pub(super) fn free_front(&mut self, mut f: impl FnMut(Rec<P>)) {
        while let Some(slot) = self.slots.front_mut() {
            match slot {
                Some(rec) if !rec.info.committed() => break,
                Some(_) => {
                    let rec = slot.take().expect("a committed record");
                    self.live -= 1;
                    f(rec);
                }
                None => {}
            }
            self.slots.pop_front();
            self.front += 1;
        }
        while self.runs.front().is_some_and(|&r| r < self.front) {
            self.runs.pop_front();
        }
        let keep = match self.slots.front() {
            Some(Some(rec)) => rec.log_at,
            _ => self.log_next(),
        };
        let drop = (keep - self.log_front) as usize;
        self.log.drain(..drop);
        self.log_front = keep;
    }

    /// Records in their slots (committed ones not yet freed included).
    pub(super) fn live(&self) -> u64 {
        self.live
    }

    /// Bytes allocated for the arena and its extras log.
    pub(super) fn bytes(&self) -> u64 {
        (self.slots.capacity() * std::mem::size_of::<Option<Rec<P>>>()
            + self.log.capacity() * std::mem::size_of::<Extra>()) as u64
    }

    /// Bytes of the slots and log entries in use (holes included, spare capacity not): what
    /// grows with the records held.
    pub(super) fn used_bytes(&self) -> u64 {
        (self.slots.len() * std::mem::size_of::<Option<Rec<P>>>()
            + self.log.len() * std::mem::size_of::<Extra>()) as u64
    }

    /// Gives back memory that the arena no longer uses (under a memory bound).
    pub(super) fn shrink(&mut self) {
        if self.slots.capacity() > 1024 && self.slots.capacity() > 4 * self.slots.len() {
            self.slots.shrink_to(2 * self.slots.len());
        }
        if self.log.capacity() > 1024 && self.log.capacity() > 4 * self.log.len() {
            self.log.shrink_to(2 * self.log.len());
        }
    }

    /// Visits the uncommitted records newest first (at the end of a run).
    pub(super) fn uncommitted_newest_first(&self) -> impl Iterator<Item = &Rec<P>> {
        self.slots
            .iter()
            .rev()
            .flatten()
            .filter(|r| !r.info.committed())
    }
}

#[cfg(test)]
mod tests;
