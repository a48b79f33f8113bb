//! GVT across ranks: Mattern's two-colour algorithm ("Efficient Algorithms for Distributed
//! Snapshots and Global Virtual Time Approximation", JPDC 18(4), 1993), driven by non-blocking
//! all-reductions instead of a control message around a ring. Transport-independent: it needs
//! a reduction ([`Reduce`], which the transport between ranks lends: `transport/tw.rs`), a
//! colour book the transport writes as it sends and delivers ([`Colours`], which [`Dgvt`]
//! is) and a way to take a rank-local minimum over the rank's threads
//! ([`LocalRound`], the in-rank GVT round of `gvt.rs`). No rank and no worker ever waits for
//! another: the driver (one thread per rank that does the rank's message passing) calls
//! [`Dgvt::poll`] between its sends and receives, and workers keep processing throughout.
//!
//! Protocol, driver contract and proof sketch: README.md, "GVT across ranks".

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[cfg(test)]
use crate::transport::tw::SUMS;
pub(crate) use crate::transport::tw::{Colours, Reduce};

/// A rank-local minimum over the rank's workers (the in-rank GVT round: `gvt.rs`). Its result
/// must be a lower bound on the time of every event or anti-message of the rank that is
/// unprocessed after the round completes, or processed and later rolled back, except messages
/// that arrive from another rank after the round started and messages handed to the driver
/// (for another rank) before the round started (README, (L)).
pub(crate) trait LocalRound {
    /// Starts a round (none is in progress when this is called).
    fn start(&mut self);
    /// The round's minimum once every worker reported.
    fn result(&mut self) -> Option<f64>;
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// No computation in progress.
    Idle,
    /// The local round was started after `recv` white messages had been delivered.
    Local { recv: u64 },
    /// The local round gave `local`; contribute at the next poll (the driver pumps its sends
    /// in between).
    Pumped { recv: u64, local: f64 },
    /// A reduction is in progress.
    Reducing,
}

/// What a completed computation found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Outcome {
    /// The GVT (never lower than the one before).
    pub(crate) gvt: f64,
    /// Ranks that reported a failure in this computation's last reduction.
    pub(crate) failed: i64,
    /// Ranks that asked for another computation ([`Dgvt::want`]) during this one: the same on
    /// every rank, so every rank can begin the next computation as soon as it sees this one
    /// complete, and none waits in a reduction for a rank that had no reason to begin.
    pub(crate) wanted: i64,
}

/// Figures for the report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DgvtStats {
    /// GVT computations completed.
    pub(crate) rounds: u64,
    /// Reductions started (a computation needs more than one while white messages travel).
    pub(crate) reductions: u64,
    /// Local rounds started.
    pub(crate) local_rounds: u64,
    /// Wall time from starting a reduction until its result was seen.
    pub(crate) reduce_time: Duration,
}

/// One rank's state of the algorithm. Only the rank's driver thread uses it.
#[derive(Debug)]
pub(crate) struct Dgvt {
    /// The current colour: messages sent now carry it. Computation `k` turns the rank from
    /// epoch `k` (white) to `k + 1` (red).
    epoch: u64,
    /// Messages this rank sent, all epochs.
    sent: u64,
    /// `sent` when the current computation started: the white messages this rank sent (every
    /// message of an epoch up to the white one).
    sent_white: u64,
    /// Messages received per epoch (a message of epoch `e` may arrive while this rank is
    /// still in epoch `e - 1`), and the sum for every epoch already folded in.
    recv: BTreeMap<u64, u64>,
    recv_folded: u64,
    /// The earliest time sent in the current epoch since it started.
    red_min: f64,
    phase: Phase,
    gvt: f64,
    /// This rank failed: its contributions say so.
    failed: bool,
    /// This rank's workers asked for GVT since the current computation began (or the last
    /// one completed): its contributions say so.
    want: bool,
    reduce_start: Instant,
    stats: DgvtStats,
}

impl Default for Dgvt {
    fn default() -> Self {
        Dgvt::new()
    }
}

impl Dgvt {
    pub(crate) fn new() -> Self {
        Dgvt {
            epoch: 0,
            sent: 0,
            sent_white: 0,
            recv: BTreeMap::new(),
            recv_folded: 0,
            red_min: f64::INFINITY,
            phase: Phase::Idle,
            gvt: 0.0,
            failed: false,
            want: false,
            reduce_start: Instant::now(),
            stats: DgvtStats::default(),
        }
    }

    /// A message at `time` leaves this rank now; returns the colour it carries.
    #[inline]
    pub(crate) fn on_send(&mut self, time: f64) -> u64 {
        self.sent += 1;
        self.red_min = self.red_min.min(time);
        self.epoch
    }

    /// A message of colour `epoch` was delivered to the worker it is for (after it is there,
    /// never before: README, driver rule D1).
    #[inline]
    pub(crate) fn on_receive(&mut self, epoch: u64) {
        *self.recv.entry(epoch).or_insert(0) += 1;
    }

    /// Marks this rank failed: every rank sees it in the next reduction's result.
    pub(crate) fn fail(&mut self) {
        self.failed = true;
    }

    /// This rank's workers asked for GVT: the computation in progress (or the next one)
    /// carries it, and its outcome's [`wanted`](Outcome::wanted) tells every rank.
    pub(crate) fn want(&mut self) {
        self.want = true;
    }

    /// Whether a computation is in progress.
    pub(crate) fn busy(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// Which step of a computation this rank is at (changes when `poll` moved it).
    pub(crate) fn step_of(&self) -> u8 {
        match self.phase {
            Phase::Idle => 0,
            Phase::Local { .. } => 1,
            Phase::Pumped { .. } => 2,
            Phase::Reducing => 3,
        }
    }

    pub(crate) fn stats(&self) -> DgvtStats {
        self.stats
    }

    /// Messages sent and received so far, all colours (for the end of a run).
    pub(crate) fn totals(&self) -> (u64, u64) {
        (
            self.sent,
            self.recv_folded + self.recv.values().sum::<u64>(),
        )
    }

    /// White messages delivered here: every epoch up to the white one.
    fn recv_white(&self) -> u64 {
        let white = self.epoch - 1;
        self.recv_folded + self.recv.range(..=white).map(|(_, n)| n).sum::<u64>()
    }

    fn start_local(&mut self, local: &mut impl LocalRound) {
        let recv = self.recv_white();
        local.start();
        self.stats.local_rounds += 1;
        self.phase = Phase::Local { recv };
    }

    /// Advances the computation one step. `begin`: start a computation if none is in
    /// progress. Between two calls the driver must hand every message that workers gave it to
    /// the transport, through [`on_send`](Self::on_send) (rule D2). Returns the outcome when a
    /// computation completes.
    pub(crate) fn poll(
        &mut self,
        comm: &mut (impl Reduce + ?Sized),
        local: &mut impl LocalRound,
        begin: bool,
    ) -> Option<Outcome> {
        match self.phase {
            Phase::Idle => {
                if begin {
                    // Turn red: what is sent from now on carries the next colour.
                    self.epoch += 1;
                    self.sent_white = self.sent;
                    self.red_min = f64::INFINITY;
                    self.start_local(local);
                }
                None
            }
            Phase::Local { recv } => {
                if let Some(local) = local.result() {
                    self.phase = Phase::Pumped { recv, local };
                }
                None
            }
            Phase::Pumped { recv, local } => {
                let transit = self.sent_white as i64 - recv as i64;
                comm.start(
                    [transit, i64::from(self.failed), i64::from(self.want)],
                    local.min(self.red_min),
                );
                self.stats.reductions += 1;
                self.reduce_start = Instant::now();
                self.phase = Phase::Reducing;
                None
            }
            Phase::Reducing => {
                let ([transit, failed, wanted], min) = comm.test()?;
                self.stats.reduce_time += self.reduce_start.elapsed();
                if transit != 0 && failed == 0 {
                    // White messages are still travelling: another local round and reduction.
                    self.start_local(local);
                    return None;
                }
                if transit == 0 {
                    self.gvt = self.gvt.max(min);
                    // Every white message has arrived: fold their counts.
                    let white = self.epoch - 1;
                    let keep = self.recv.split_off(&(white + 1));
                    self.recv_folded += self.recv.values().sum::<u64>();
                    self.recv = keep;
                }
                self.stats.rounds += 1;
                self.phase = Phase::Idle;
                // Told to every rank; a request that came after this rank's contribution is
                // lost here, and the worker that made it asks again (it asks while idle).
                self.want = false;
                Some(Outcome {
                    gvt: self.gvt,
                    failed,
                    wanted,
                })
            }
        }
    }
}

impl Colours for Dgvt {
    fn on_send(&mut self, time: f64) -> u64 {
        Dgvt::on_send(self, time)
    }
    fn on_receive(&mut self, epoch: u64) {
        Dgvt::on_receive(self, epoch)
    }
    fn totals(&self) -> (u64, u64) {
        Dgvt::totals(self)
    }
}

#[cfg(test)]
mod tests;
