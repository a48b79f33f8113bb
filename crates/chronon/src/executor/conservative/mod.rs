//! Conservative parallel executors: W worker threads own disjoint sets of LPs and never execute
//! an event that an event still to come could precede.
//!
//! - [`window`]: the barrier (YAWNS) algorithm of seed 001 §2.2.2 — one global LBTS per round.
//! - [`lockstep`]: seed 002 Fig. 1 — per-worker SafeTime = max(InClock, GST) per lock-step.
//! - [`null_message`]: Chandy-Misra-Bryant (seed 001 §2.2.1) with per-link lookahead and null
//!   messages between workers.
//!
//! Shared here: the LP table, the worker (its pending set, event execution, per-destination
//! batching of remote events through the [`Mailbox`]es), and report assembly. Each worker keeps
//! one pending set for all its LPs and pops it in key order below its safe bound, exactly like
//! the sequential executor restricted to its LPs; remote events travel as batches, one per
//! destination worker per flush, payloads moved. Determinism argument: `README.md`.

mod balance;
mod claim;
mod lockstep;
mod lp_table;
mod null_message;
mod rounds;
mod window;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Mutex;
use std::time::Instant;

use crossbeam_utils::CachePadded;

use super::global::GlobalQueue;
use super::links::Links;
use super::{finish_report, init_lps, LpSlot, RunConfig};
use crate::barrier::park::Sleepers;
use crate::barrier::BarrierKind;
use crate::comm::Mailbox;
use crate::error::{ModelError, SimError};
use crate::event::{Event, EventKey, Keyed, ENGINE_SENDER};
use crate::gsu::{Gsu, Published};
use crate::model::{CommitCtx, Ctx, LpId, Model, Time};
use crate::partition::Mapping;
use crate::queue::{HeapQueue, LadderQueue, PendingSet, QueueKind};
use crate::stats::Report;
use balance::Balance;
use lp_table::LpTable;

/// How events and lookahead are checked every so often for progress and stop requests.
const POLL_EVERY: u64 = 1 << 12;

/// Settings shared by the conservative executors.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConservativeConfig {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// How LPs are assigned to workers.
    pub mapping: Mapping,
    /// The barrier used between rounds (and for global events under null messages).
    pub barrier: BarrierKind,
    /// Load balancing (window only): the fraction of each worker's LPs dedicated to it, in
    /// [0, 1]; the rest go to the shared sets (seed 001 §3.4). 1.0: no balancing.
    pub dedicated: f64,
    /// Load balancing (window only): the number of shared LP sets (at least 1 when
    /// `dedicated < 1`).
    pub shared_sets: usize,
    /// Null messages only: the most null messages a channel between two workers may need to
    /// carry its clock from 0 to the end time (about `end / link lookahead`); a lookahead so
    /// small that it needs more is refused before the run
    /// ([`DEFAULT_MAX_NULL_MESSAGES`] by default).
    pub max_null_messages: u64,
}

/// The default of [`ConservativeConfig::max_null_messages`]: 10^10 per channel. A fixed cap
/// (the engine cannot know the event count in advance); a legitimate run that needs as many
/// null messages, such as lookahead 0.5 up to end 10^9, also commits billions of events.
pub const DEFAULT_MAX_NULL_MESSAGES: u64 = 10_000_000_000;

impl ConservativeConfig {
    /// `threads` workers, block mapping, the default barrier.
    pub fn new(threads: usize) -> Self {
        ConservativeConfig {
            threads,
            mapping: Mapping::Block,
            barrier: BarrierKind::default(),
            dedicated: 1.0,
            shared_sets: 0,
            max_null_messages: DEFAULT_MAX_NULL_MESSAGES,
        }
    }

    /// Sets the null-message cap per channel (see [`ConservativeConfig::max_null_messages`]).
    pub fn max_null_messages(mut self, cap: u64) -> Self {
        self.max_null_messages = cap;
        self
    }

    /// Sets the dedicated fraction (load balancing, `--sync window` only).
    pub fn dedicated(mut self, fraction: f64) -> Self {
        self.dedicated = fraction;
        self
    }

    /// Sets the number of shared LP sets (load balancing, `--sync window` only).
    pub fn shared_sets(mut self, sets: usize) -> Self {
        self.shared_sets = sets;
        self
    }

    /// Checks the load-balancing settings against `protocol`.
    fn check_balance(&self, protocol: Protocol) -> Result<(), SimError> {
        let d = self.dedicated;
        let given = d != 1.0 || self.shared_sets != 0;
        if given && protocol != Protocol::Window {
            return Err(SimError::Config(format!(
                "--dedicated and --shared-sets apply to --sync window only; got --sync {}",
                protocol.name()
            )));
        }
        if !(0.0..=1.0).contains(&d) {
            return Err(SimError::Config(format!(
                "--dedicated is {d}; it must be in [0, 1]"
            )));
        }
        if d < 1.0 && self.shared_sets == 0 {
            return Err(SimError::Config(format!(
                "--dedicated {d} leaves LPs to share, so --shared-sets must be at least 1; got 0"
            )));
        }
        Ok(())
    }

    /// Sets the LP mapping.
    pub fn mapping(mut self, mapping: Mapping) -> Self {
        self.mapping = mapping;
        self
    }

    /// Sets the barrier.
    pub fn barrier(mut self, barrier: BarrierKind) -> Self {
        self.barrier = barrier;
        self
    }
}

/// Which conservative protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    Window,
    Lockstep,
    NullMessage,
}

impl Protocol {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Protocol::Window => "window",
            Protocol::Lockstep => "lockstep",
            Protocol::NullMessage => "null-message",
        }
    }
}

/// Per-worker figures for the report.
#[derive(Clone, Debug, Default)]
pub(crate) struct WorkerStats {
    pub events: u64,
    pub rounds: u64,
    pub null_messages: u64,
    pub remote_sent: u64,
    pub batches_sent: u64,
    /// Seconds waiting at barriers (or for input bounds, under null messages).
    pub wait_s: f64,
    /// Seconds in synchronization: waiting plus receiving, publishing and computing bounds.
    pub sync_s: f64,
    pub busy_s: f64,
}

/// What every worker shares.
pub(crate) struct Shared<'a, M: Model> {
    pub model: &'a M,
    pub cfg: &'a RunConfig,
    pub lps: LpTable<M::State>,
    pub owner: Vec<u32>,
    pub links: Links,
    pub workers: usize,
    /// Per worker: the smallest lookahead of a link from one of its LPs to an LP of another
    /// worker (events sent inside a worker go through its own pending set, in key order).
    pub worker_la: Vec<Time>,
    /// `link_la[v * W + w]`: the smallest lookahead of a link from an LP of worker `v` to an LP
    /// of worker `w != v` (`+inf` when none).
    pub link_la: Vec<Time>,
    pub mail: Vec<CachePadded<Mailbox<Event<M::Event>>>>,
    pub gsu: Gsu,
    pub globals: Mutex<GlobalQueue>,
    /// The first error any worker met, with its (time, LP) for a deterministic choice.
    pub error: Mutex<Option<SimError>>,
    /// The next global event's time after the last safe point (bits; written by the thread
    /// that ran the global events, before the barrier or rendezvous that ends the safe point).
    pub global_next: AtomicU64,
    /// Null messages: `chan[v * W + w]` holds the bits of the time below which no event will
    /// ever come from worker `v` to worker `w`.
    pub chan: Vec<CachePadded<AtomicU64>>,
    /// Null messages: parking slots, one per worker.
    pub sleepers: Sleepers,
    /// Null messages: every worker stops (error or stop request).
    pub abort: AtomicBool,
    /// Null messages: the global-event rendezvous (arrivals, generation).
    pub arrived: AtomicUsize,
    pub generation: AtomicU64,
    /// Window load balancing: the shared LP sets (`None`: every LP is dedicated).
    pub balance: Option<Balance<M::Event>>,
}

impl<M: Model> std::fmt::Debug for Shared<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl<M: Model> Shared<'_, M> {
    /// Records an error; of several, the one at the earliest (time, LP) wins.
    pub(crate) fn record_error(&self, e: SimError) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        let rank = |e: &SimError| match e {
            SimError::Model(m) => (m.time, m.lp),
            SimError::Panic { lp, time, .. } => (*time, *lp),
            _ => (f64::INFINITY, ENGINE_SENDER),
        };
        let better = match &*slot {
            None => true,
            Some(old) => {
                let (a, b) = (rank(&e), rank(old));
                a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
            }
        };
        if better {
            *slot = Some(e);
        }
    }

    /// The key below which nothing may run: the end time, capped by global event `g`.
    pub(crate) fn cap(&self, next_global: Time) -> EventKey {
        if next_global < self.cfg.end {
            EventKey {
                time: next_global,
                seq: 0,
                src: ENGINE_SENDER,
            }
        } else {
            EventKey {
                time: self.cfg.end,
                seq: 0,
                src: 0,
            }
        }
    }

    /// Runs the global events before `before` (every worker must be quiescent).
    pub(crate) fn run_globals(&self, before: Time) -> Result<Time, SimError> {
        let mut g = self.globals.lock().unwrap_or_else(|p| p.into_inner());
        let view = lp_table::AllStates(&self.lps);
        g.run_before(self.model, self.cfg.lps, &view, before, self.cfg.end)?;
        Ok(g.next_time(self.cfg.end))
    }
}

/// One worker: its pending set, its outgoing batches and its figures.
pub(crate) struct Worker<'s, 'a, M: Model, Q> {
    pub me: usize,
    pub sh: &'s Shared<'a, M>,
    pub queue: Q,
    out: Vec<Event<M::Event>>,
    outbox: Vec<Vec<Event<M::Event>>>,
    pub counters: Vec<i64>,
    error: Option<ModelError>,
    current: (LpId, Time),
    pub stats: WorkerStats,
    reported: u64,
    pub last_time: Time,
}

impl<'s, 'a, M: Model, Q: PendingSet<Event<M::Event>>> Worker<'s, 'a, M, Q> {
    fn new(me: usize, sh: &'s Shared<'a, M>, queue: Q) -> Self {
        Worker {
            me,
            sh,
            queue,
            out: Vec::with_capacity(16),
            outbox: (0..sh.workers).map(|_| Vec::new()).collect(),
            counters: vec![0; sh.model.counter_names().len()],
            error: None,
            current: (0, 0.0),
            stats: WorkerStats::default(),
            reported: 0,
            last_time: 0.0,
        }
    }

    /// The key of this worker's next event.
    #[inline]
    pub(crate) fn head(&mut self) -> Option<EventKey> {
        self.queue.peek().map(|e| e.key())
    }

    /// Executes, in key order, every event with time `< below` and key `< cap`, and also the
    /// event with key `extra` if it is this worker's head. A panic or model error is returned.
    pub(crate) fn run_below(
        &mut self,
        below: Time,
        cap: EventKey,
        extra: Option<EventKey>,
    ) -> Result<u64, SimError> {
        self.counted(|w| {
            if let (Some(x), Some(h)) = (extra, w.head()) {
                if x == h && h < cap {
                    let ev = w.queue.pop().expect("the head exists");
                    w.execute(ev)?;
                }
            }
            loop {
                match w.queue.peek() {
                    Some(e) if e.time < below && e.key() < cap => {}
                    _ => break,
                }
                let ev = w.queue.pop().expect("the head exists");
                w.execute(ev)?;
            }
            Ok(())
        })
    }

    /// Runs `f` (which executes events) under `catch_unwind`, adds its wall time to the busy
    /// time, and returns the number of events it executed; a panic becomes
    /// `SimError::Panic` naming the LP and time of the event that was running.
    fn counted(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<(), SimError>,
    ) -> Result<u64, SimError> {
        let start = Instant::now();
        let before = self.stats.events;
        let outcome = catch_unwind(AssertUnwindSafe(|| f(self)));
        self.stats.busy_s += start.elapsed().as_secs_f64();
        let done = self.stats.events - before;
        match outcome {
            Ok(Ok(())) => Ok(done),
            Ok(Err(e)) => Err(e),
            Err(payload) => Err(SimError::from_panic(
                self.current.0,
                self.current.1,
                payload.as_ref(),
            )),
        }
    }

    /// Runs shared LP `i` (claimed for this round): its events with time `< below` and key
    /// `< cap` in key order, and the event with key `extra` if it is the LP's head. Returns the
    /// number run.
    pub(crate) fn run_shared(
        &mut self,
        i: u32,
        below: Time,
        cap: EventKey,
        extra: Option<EventKey>,
    ) -> Result<u64, SimError> {
        self.counted(|w| {
            let b = w.sh.balance.as_ref().expect("load balancing is on");
            let mut first = true;
            loop {
                // The lock is not held while the event runs: its sends may go to this LP.
                let ev = {
                    let (_, mut q) = b.lock(i);
                    match q.peek().map(|e| e.key()) {
                        Some(k) if k < cap && (k.time < below || (first && Some(k) == extra)) => {
                            q.pop()
                        }
                        _ => None,
                    }
                };
                first = false;
                match ev {
                    Some(ev) => w.execute(ev)?,
                    None => break,
                }
            }
            Ok(())
        })
    }

    #[inline]
    fn execute(&mut self, ev: Event<M::Event>) -> Result<(), SimError> {
        let sh = self.sh;
        let now = ev.time;
        let dst = ev.dst;
        self.current = (dst, now);
        debug_assert!(
            sh.owner[dst as usize] as usize == self.me
                || sh.balance.as_ref().is_some_and(|b| b.is_shared(dst))
        );
        // Safety: `dst` is owned by this worker (its events only ever reach this worker's
        // queue) or is a shared LP this worker claimed for the round (one claimant per round,
        // rounds separated by barriers), and while workers run only an LP's owner or claimant
        // touches its slot (lp_table/README, README "Load balancing").
        let slot = unsafe { sh.lps.get_mut(dst) };
        {
            let mut ctx = Ctx::new(
                now,
                dst,
                sh.cfg.lps,
                sh.links.lookahead,
                &mut slot.meta,
                &mut self.out,
                &mut self.counters,
                &mut self.error,
            );
            sh.model.on_event(&mut slot.state, &ev.payload, &mut ctx);
        }
        if let Some(e) = self.error.take() {
            self.out.clear();
            return Err(SimError::Model(e));
        }
        if sh.links.declared {
            if let Err(e) = sh.links.check(dst, now, &self.out) {
                self.out.clear();
                return Err(SimError::Model(e));
            }
        }
        sh.model.commit(&ev.payload, &CommitCtx { me: dst, now });
        slot.digest.commit(&ev.key());
        for e in self.out.drain(..) {
            if let Some(b) = &sh.balance {
                if b.is_shared(e.dst) {
                    b.push(e);
                    continue;
                }
            }
            let w = sh.owner[e.dst as usize] as usize;
            if w == self.me {
                self.queue.push(e);
            } else {
                self.outbox[w].push(e);
            }
        }
        // The latest, not the last: with shared LPs a worker may run an earlier event last.
        self.last_time = self.last_time.max(now);
        self.stats.events += 1;
        if self.stats.events % POLL_EVERY == 0 {
            sh.cfg
                .progress
                .add_events(self.stats.events - self.reported);
            self.reported = self.stats.events;
        }
        Ok(())
    }

    /// Sends every outgoing batch (one per destination worker) through the GSU.
    pub(crate) fn flush(&mut self) {
        for w in 0..self.outbox.len() {
            if !self.outbox[w].is_empty() {
                let batch = std::mem::take(&mut self.outbox[w]);
                self.stats.remote_sent += batch.len() as u64;
                self.stats.batches_sent += 1;
                self.sh.gsu.send(w, &self.sh.mail[w], batch);
            }
        }
    }

    /// Reports the events not yet counted in the progress figures.
    pub(crate) fn report_progress(&mut self) {
        self.sh
            .cfg
            .progress
            .add_events(self.stats.events - self.reported);
        self.reported = self.stats.events;
    }
}

/// Runs `model` with `protocol`.
pub(crate) fn run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
) -> Result<Report, SimError> {
    match cfg.queue {
        QueueKind::Heap => run_with::<M, HeapQueue<Event<M::Event>>>(model, cfg, protocol, cc),
        QueueKind::Ladder => run_with::<M, LadderQueue<Event<M::Event>>>(model, cfg, protocol, cc),
    }
}

fn run_with<M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
) -> Result<Report, SimError> {
    let w = cc.threads;
    if w == 0 {
        return Err(SimError::Config(format!(
            "--sync {} needs at least 1 thread; got 0",
            protocol.name()
        )));
    }
    cc.check_balance(protocol)?;
    let owner = cc.mapping.owners(cfg.lps, w).map_err(SimError::Config)?;
    let links = Links::new(model, cfg.lps)?;
    let (mut worker_la, link_la) = worker_lookaheads(&links, &owner, w);
    let balance = if cc.dedicated < 1.0 {
        let set_of = crate::partition::shared_split(&owner, w, cc.dedicated, cc.shared_sets);
        let shared_la = balance_lookaheads(&links, &owner, &set_of, &mut worker_la);
        Some(Balance::new(
            cc.dedicated,
            &set_of,
            cc.shared_sets,
            shared_la,
        ))
    } else {
        None
    };
    if protocol == Protocol::NullMessage {
        null_message::check_links(&links, &owner, &link_la, w)?;
        null_message::check_budget(&link_la, w, cfg.end, cc.max_null_messages)?;
    }
    let globals = GlobalQueue::new(model)?;
    let first_global = globals.next_time(cfg.end);

    let init_start = Instant::now();
    let mut counters = vec![0i64; model.counter_names().len()];
    let (slots, initial) = init_lps(model, cfg, &mut counters)?;
    let mut queues: Vec<Q> = (0..w).map(|_| Q::new()).collect();
    for ev in initial {
        match &balance {
            Some(b) if b.is_shared(ev.dst) => b.push(ev),
            _ => queues[owner[ev.dst as usize] as usize].push(ev),
        }
    }
    let first: Vec<EventKey> = queues
        .iter_mut()
        .map(|q| q.peek().map_or(Published::IDLE.moe, |e| e.key()))
        .collect();
    let mut report = Report::new(protocol.name(), w, cfg.queue.name(), cfg.lps, cfg.end);
    report.init_s = init_start.elapsed().as_secs_f64();

    let shared = Shared {
        model,
        cfg,
        lps: LpTable::new(slots),
        owner,
        links,
        workers: w,
        worker_la,
        link_la,
        mail: (0..w).map(|_| CachePadded::new(Mailbox::new())).collect(),
        // Seeded with every queue's first event before any worker runs (G0 in gsu/README.md):
        // a worker that starts idle must not see the others as idle before they publish.
        gsu: Gsu::seeded(&first),
        globals: Mutex::new(globals),
        error: Mutex::new(None),
        global_next: AtomicU64::new(first_global.to_bits()),
        chan: (0..w * w)
            .map(|_| CachePadded::new(AtomicU64::new(0f64.to_bits())))
            .collect(),
        sleepers: Sleepers::new(w),
        abort: AtomicBool::new(false),
        arrived: AtomicUsize::new(0),
        generation: AtomicU64::new(0),
        balance,
    };
    let barrier = cc.barrier.build(w);
    let start = Instant::now();
    let results: Vec<WorkerResult> = std::thread::scope(|s| {
        let handles: Vec<_> = queues
            .into_iter()
            .enumerate()
            .map(|(me, q)| {
                let shared = &shared;
                let barrier = &*barrier;
                s.spawn(move || {
                    let mut worker = Worker::new(me, shared, q);
                    let outcome = match protocol {
                        Protocol::Window | Protocol::Lockstep => {
                            rounds::run(&mut worker, barrier, protocol)
                        }
                        Protocol::NullMessage => null_message::run(&mut worker, barrier),
                    };
                    worker.report_progress();
                    WorkerResult {
                        stats: worker.stats,
                        counters: worker.counters,
                        pending: worker.queue.len(),
                        last_time: worker.last_time,
                        stopped: outcome.stopped,
                        extra: outcome.extra,
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("a worker thread panicked outside a model handler")
            })
            .collect()
    });
    let wall = start.elapsed().as_secs_f64();
    if let Some(e) = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    let mut shared = shared;
    let balance = shared.balance.take();
    let globals = shared
        .globals
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let lps: Vec<LpSlot<M::State>> = shared.lps.into_vec();
    for r in &results {
        for (c, x) in counters.iter_mut().zip(&r.counters) {
            *c += x;
        }
    }
    report.processed = results.iter().map(|r| r.stats.events).sum();
    report.complete = !results.iter().any(|r| r.stopped);
    report.last_time = results.iter().map(|r| r.last_time).fold(0.0, f64::max);
    cfg.progress.set_now(report.last_time);
    finish_report(model, &lps, &counters, &mut report)?;
    globals.add_to(&mut report);
    report.set_wall(wall);
    let mut pending: usize = results.iter().map(|r| r.pending).sum();
    if let Some(b) = &balance {
        pending += b.pending();
        let st = &mut report.executor_stats;
        st.insert("dedicated".into(), b.dedicated);
        st.insert("shared_sets".into(), b.sets.len() as f64);
        st.insert("shared_lps".into(), b.shared_lps() as f64);
    }
    // Every worker has stopped: what is still in a mailbox was sent by a committed event and
    // is pending too (null messages leave without waiting for events at or after the end).
    for m in shared.mail.iter() {
        m.take(|_| pending += 1);
    }
    report.pending_at_end = pending as u64;
    if let crate::barrier::BarrierKind::Tree { fan_in } = cc.barrier {
        report
            .executor_stats
            .insert("tree_fan_in".into(), fan_in as f64);
    }
    let rounds = results.iter().map(|r| r.stats.rounds).max().unwrap_or(0);
    if protocol != Protocol::NullMessage {
        report.executor_stats.insert("rounds".into(), rounds as f64);
        if rounds > 0 {
            report
                .executor_stats
                .insert("round_us".into(), wall * 1e6 / rounds as f64);
            report.executor_stats.insert(
                "events_per_round".into(),
                report.processed as f64 / rounds as f64,
            );
        }
    } else {
        let nulls: u64 = results.iter().map(|r| r.stats.null_messages).sum();
        report
            .executor_stats
            .insert("null_messages".into(), nulls as f64);
    }
    for r in results {
        let s = &r.stats;
        let mut m = std::collections::BTreeMap::new();
        m.insert("events".to_string(), s.events as f64);
        if protocol == Protocol::NullMessage {
            m.insert("null_messages".to_string(), s.null_messages as f64);
        } else {
            m.insert("rounds".to_string(), s.rounds as f64);
        }
        m.insert("remote_sent".to_string(), s.remote_sent as f64);
        m.insert("batches_sent".to_string(), s.batches_sent as f64);
        m.insert("wait_s".to_string(), s.wait_s);
        m.insert("sync_s".to_string(), s.sync_s);
        m.insert("busy_s".to_string(), s.busy_s);
        if wall > 0.0 {
            m.insert("wait_share".to_string(), s.wait_s / wall);
            m.insert("sync_share".to_string(), s.sync_s / wall);
        }
        for (k, v) in r.extra {
            m.insert(k.to_string(), v);
        }
        report.workers.push(m);
    }
    Ok(report)
}

/// What a protocol's worker loop returns besides its figures.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub stopped: bool,
    pub extra: Vec<(&'static str, f64)>,
}

struct WorkerResult {
    stats: WorkerStats,
    counters: Vec<i64>,
    pending: usize,
    last_time: Time,
    stopped: bool,
    extra: Vec<(&'static str, f64)>,
}

/// Per-worker minimum outgoing lookahead and the worker-to-worker link lookahead matrix.
fn worker_lookaheads(links: &Links, owner: &[u32], w: usize) -> (Vec<Time>, Vec<Time>) {
    let mut worker_la = vec![Time::INFINITY; w];
    let mut link_la = vec![Time::INFINITY; w * w];
    let n = owner.len();
    // Workers that own at least one LP (a full-mesh LP links to every one of them).
    let mut has_lp = vec![false; w];
    for &o in owner {
        has_lp[o as usize] = true;
    }
    for lp in 0..n {
        let v = owner[lp] as usize;
        match links.of(lp as LpId) {
            None => {
                if n > 1 {
                    for x in 0..w {
                        if x != v && has_lp[x] {
                            let l = &mut link_la[v * w + x];
                            *l = l.min(links.lookahead);
                        }
                    }
                }
            }
            Some(ls) => {
                for &(d, la) in ls {
                    let x = owner[d as usize] as usize;
                    if x != v {
                        let l = &mut link_la[v * w + x];
                        *l = l.min(la);
                    }
                }
            }
        }
    }
    for v in 0..w {
        worker_la[v] = (0..w)
            .filter(|&x| x != v)
            .map(|x| link_la[v * w + x])
            .fold(Time::INFINITY, f64::min);
    }
    (worker_la, link_la)
}

/// Load balancing: a link between a dedicated LP and a shared LP, or from a shared LP to any
/// other LP, crosses between execution units (a shared LP may run on any worker, at any point
/// of a round). Lowers `worker_la[v]` by worker `v`'s dedicated-to-shared links and returns the
/// smallest lookahead of a link out of a shared LP (`+inf` when none).
fn balance_lookaheads(
    links: &Links,
    owner: &[u32],
    set_of: &[u32],
    worker_la: &mut [Time],
) -> Time {
    use crate::partition::DEDICATED;
    let n = owner.len();
    let any_shared = set_of.iter().any(|&s| s != DEDICATED);
    let mut shared_la = Time::INFINITY;
    for lp in 0..n {
        let shared = set_of[lp] != DEDICATED;
        let v = owner[lp] as usize;
        match links.of(lp as LpId) {
            None => {
                if shared && n > 1 {
                    shared_la = shared_la.min(links.lookahead);
                } else if !shared && any_shared {
                    worker_la[v] = worker_la[v].min(links.lookahead);
                }
            }
            Some(ls) => {
                for &(d, la) in ls {
                    if d as usize == lp {
                        continue;
                    }
                    if shared {
                        shared_la = shared_la.min(la);
                    } else if set_of[d as usize] != DEDICATED {
                        worker_la[v] = worker_la[v].min(la);
                    }
                }
            }
        }
    }
    shared_la
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Ctx;
    use crate::partition::DEDICATED;

    /// Three LPs: 0 → 1 with lookahead 0.1, 1 → 2 with 0.5, 2 → 0 with 2.0.
    struct Chain;

    impl Model for Chain {
        type State = ();
        type Event = ();
        fn init(&self, _ctx: &mut Ctx<'_, Self>) {}
        fn on_event(&self, _s: &mut (), _e: &(), _ctx: &mut Ctx<'_, Self>) {}
        fn lookahead(&self) -> f64 {
            0.1
        }
        fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
            Some(vec![[(1, 0.1), (2, 0.5), (0, 2.0)][lp as usize]])
        }
    }

    #[test]
    fn links_touching_shared_lps_count_as_links_between_workers() {
        let links = Links::new(&Chain, 3).unwrap();
        // Everything on worker 0: no link between workers.
        let owner = vec![0, 0, 0];
        let (mut la, _) = worker_lookaheads(&links, &owner, 1);
        assert_eq!(la, vec![f64::INFINITY]);
        // LP 1 shared: 0 → 1 (dedicated to shared) lowers worker 0's lookahead, and 1 → 2
        // (out of a shared LP) is the shared lookahead.
        let shared = balance_lookaheads(&links, &owner, &[DEDICATED, 0, DEDICATED], &mut la);
        assert_eq!((la[0], shared), (0.1, 0.5));
        // LP 2 shared instead: 1 → 2 (0.5) and 2 → 0 (2.0).
        let (mut la, _) = worker_lookaheads(&links, &owner, 1);
        let shared = balance_lookaheads(&links, &owner, &[DEDICATED, DEDICATED, 0], &mut la);
        assert_eq!((la[0], shared), (0.5, 2.0));
    }
}
