//! # chronon: parallel discrete event simulation with one committed history
//!
//! A chronon model is a set of *logical processes* (LPs) that exchange timestamped events. You
//! describe one LP's behaviour by implementing [`Model`]; chronon runs it sequentially or in
//! parallel (conservative executors or Time Warp, on threads, on worker processes of one
//! machine or on MPI ranks), and every executor commits the same events in the same order.
//! Each run prints a [`Fingerprint`] of its committed history so you can check that yourself.
//!
//! ## A first model
//!
//! A ring of LPs passes tokens: each token waits an exponential time, then moves on to the next
//! LP. Every LP counts the tokens it saw.
//!
//! ```
//! use chronon::{Ctx, LpId, Model, ModelStats, Simulation};
//!
//! struct Ring {
//!     tokens_per_lp: u32,
//! }
//!
//! /// The payload: which lap the token is on.
//! struct Token {
//!     lap: u32,
//! }
//!
//! impl Model for Ring {
//!     type State = u64; // tokens seen by this LP
//!     type Event = Token;
//!
//!     fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
//!         for _ in 0..self.tokens_per_lp {
//!             let delay = 1.0 + ctx.rng().exponential_mean(1.0);
//!             ctx.send(ctx.me(), delay, Token { lap: 0 });
//!         }
//!         0
//!     }
//!
//!     fn on_event(&self, seen: &mut u64, token: &Token, ctx: &mut Ctx<'_, Self>) {
//!         *seen += 1;
//!         let next = (ctx.me() + 1) % ctx.lps();
//!         let delay = 1.0 + ctx.rng().exponential_mean(1.0);
//!         ctx.send(next, delay, Token { lap: token.lap + 1 });
//!     }
//!
//!     // Every send above waits at least 1.0: that is the model's lookahead, which lets
//!     // conservative executors run LPs in parallel.
//!     fn lookahead(&self) -> f64 {
//!         1.0
//!     }
//!
//!     fn finish(&self, _lp: LpId, seen: &u64, stats: &mut ModelStats) {
//!         stats.add("tokens_seen", *seen as f64);
//!     }
//! }
//!
//! let run = |seed| {
//!     Simulation::new(Ring { tokens_per_lp: 2 })
//!         .lps(16)
//!         .end_time(100.0)
//!         .seed(seed)
//!         .run()
//! };
//! let report = run(7)?;
//! // 32 tokens, each moving about every 2 time units, for 100 time units.
//! assert!(report.committed > 1000 && report.committed < 2200);
//! assert_eq!(report.model_stats.get("tokens_seen"), Some(report.committed as f64));
//! // Same seed, same history; another seed, another history.
//! assert_eq!(run(7)?.fingerprint, report.fingerprint);
//! assert_ne!(run(8)?.fingerprint, report.fingerprint);
//! # Ok::<(), chronon::SimError>(())
//! ```
//!
//! ## Running in parallel, global events
//!
//! The conservative executors ([`Executor::Window`], [`Executor::Lockstep`],
//! [`Executor::NullMessage`]) run the LPs on several threads and commit the very same history.
//! They rely on the model's lookahead — globally ([`Model::lookahead`]) or per link
//! ([`Model::topology`]). *Global events* belong to no LP ([`Model::global_events`],
//! [`Model::on_global`]): they see every LP's state at a point where every LP event up to their
//! time has run and no later one has, on every executor, and may change states
//! ([`GlobalCtx::state_mut`]) and send LP events ([`GlobalCtx::send`]).
//!
//! ```
//! use chronon::{ConservativeConfig, Ctx, Executor, GlobalCtx, LpId, Model, Simulation};
//!
//! struct Counters;
//! impl Model for Counters {
//!     type State = u64;
//!     type Event = ();
//!     fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
//!         ctx.send(ctx.me(), 1.0, ());
//!         0
//!     }
//!     fn on_event(&self, n: &mut u64, _: &(), ctx: &mut Ctx<'_, Self>) {
//!         *n += 1;
//!         let next = (ctx.me() + 1) % ctx.lps();
//!         let delay = 1.0 + ctx.rng().below(3) as f64; // ties on purpose
//!         ctx.send(next, delay, ());
//!     }
//!     fn lookahead(&self) -> f64 {
//!         1.0
//!     }
//!     // Each LP only talks to the next one.
//!     fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
//!         Some(vec![((lp + 1) % 8, 1.0)])
//!     }
//!     // A census every 10 time units.
//!     fn global_events(&self) -> Vec<f64> {
//!         vec![10.0]
//!     }
//!     fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
//!         let total: u64 = (0..ctx.lps()).map(|lp| *ctx.state(lp)).sum();
//!         ctx.stats().add("census", total as f64);
//!         ctx.schedule(10.0);
//!     }
//! }
//!
//! let run = |executor| {
//!     Simulation::new(Counters).lps(8).end_time(100.0).seed(3).executor(executor).run()
//! };
//! let seq = run(Executor::Sequential)?;
//! for exec in [
//!     Executor::Window(ConservativeConfig::new(2)),
//!     Executor::Lockstep(ConservativeConfig::new(3)),
//!     Executor::NullMessage(ConservativeConfig::new(4)),
//! ] {
//!     let par = run(exec)?;
//!     assert_eq!(par.fingerprint, seq.fingerprint);
//!     assert_eq!(par.model_stats, seq.model_stats); // the census included
//! }
//! # Ok::<(), chronon::SimError>(())
//! ```
//!
//! ## Statistics
//!
//! A model keeps its statistics in its LP states as [`measure::Tally`] (observations: count,
//! mean, standard deviation, min, max), [`measure::TimeAverage`] (a level over simulated time,
//! such as a queue length) and [`measure::Histogram`], and hands them to the report in
//! [`Model::finish`]. They merge over every LP, in LP order, into the same figures under every
//! executor; the report derives `x.mean` and `x.sd`.
//!
//! ```
//! use chronon::measure::{Tally, TimeAverage};
//! use chronon::{ConservativeConfig, Ctx, Executor, LpId, Model, ModelStats, Simulation};
//!
//! struct Hops;
//!
//! #[derive(Clone)]
//! struct Lp {
//!     gap: Tally,          // time between two tokens at this LP
//!     last: f64,
//!     held: TimeAverage,   // tokens seen so far, over time
//! }
//!
//! impl Model for Hops {
//!     type State = Lp;
//!     type Event = ();
//!     fn init(&self, ctx: &mut Ctx<'_, Self>) -> Lp {
//!         ctx.send(ctx.me(), 1.0, ());
//!         Lp { gap: Tally::new(), last: 0.0, held: TimeAverage::new(0.0, 0.0) }
//!     }
//!     fn on_event(&self, lp: &mut Lp, _: &(), ctx: &mut Ctx<'_, Self>) {
//!         let now = ctx.now();
//!         lp.gap.record(now - lp.last);
//!         lp.last = now;
//!         lp.held.add(now, 1.0);
//!         let next = (ctx.me() + 1) % ctx.lps();
//!         let delay = 1.0 + ctx.rng().exponential_mean(1.0);
//!         ctx.send(next, delay, ());
//!     }
//!     fn lookahead(&self) -> f64 {
//!         1.0
//!     }
//!     fn finish(&self, _lp: LpId, lp: &Lp, stats: &mut ModelStats) {
//!         stats.tally("gap", &lp.gap);
//!         stats.time_average("held", &lp.held);
//!     }
//! }
//!
//! let run = |executor| {
//!     Simulation::new(Hops).lps(8).end_time(50.0).seed(3).executor(executor).run()
//! };
//! let seq = run(Executor::Sequential)?;
//! let n = seq.model_stats.get("gap.n").unwrap();
//! assert_eq!(n, seq.committed as f64);
//! assert_eq!(seq.model_stats.get("gap.mean"), Some(seq.model_stats.get("gap.sum").unwrap() / n));
//! assert!(seq.model_stats.get("held.mean").unwrap() > 0.0);
//! // Closed at the end time by `time_average`: 8 LPs, each observed for the whole run.
//! assert_eq!(seq.model_stats.get("held.time"), Some(8.0 * 50.0));
//! // The same figures, to the bit, on two threads.
//! let window = run(Executor::Window(ConservativeConfig::new(2)))?;
//! assert_eq!(window.model_stats, seq.model_stats);
//! # Ok::<(), chronon::SimError>(())
//! ```
//!
//! A model with a reverse handler keeps [`measure::ExactTally`] and
//! [`measure::ExactTimeAverage`] (and [`measure::Histogram`]), which its reverse handler
//! undoes exactly; [`measure`] says why and what they cannot do (no min or max).
//!
//! ```
//! use chronon::measure::{ExactTally, ExactTimeAverage};
//! use chronon::{Ctx, Executor, LpId, Model, ModelStats, ReverseCtx, ReverseFn, Simulation};
//! use chronon::{StateSaving, TimeWarpConfig};
//!
//! struct Hops;
//!
//! #[derive(Clone)]
//! struct Lp {
//!     delay: ExactTally,      // the delays this LP drew
//!     held: ExactTimeAverage, // tokens seen so far, over time
//! }
//!
//! impl Hops {
//!     fn undo(&self, lp: &mut Lp, delay: &f64, ctx: &ReverseCtx) {
//!         lp.delay.unrecord(*delay);
//!         lp.held.unadd(ctx.now, 1.0);
//!     }
//! }
//!
//! impl Model for Hops {
//!     type State = Lp;
//!     type Event = f64; // the delay that brought the token
//!     fn init(&self, ctx: &mut Ctx<'_, Self>) -> Lp {
//!         ctx.send(ctx.me(), 1.0, 1.0);
//!         Lp { delay: ExactTally::new(), held: ExactTimeAverage::new(0.0, 0.0) }
//!     }
//!     fn on_event(&self, lp: &mut Lp, delay: &f64, ctx: &mut Ctx<'_, Self>) {
//!         lp.delay.record(*delay);
//!         lp.held.add(ctx.now(), 1.0);
//!         let next = (ctx.me() + 1) % ctx.lps();
//!         let delay = 1.0 + ctx.rng().exponential_mean(1.0);
//!         ctx.send(next, delay, delay);
//!     }
//!     fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
//!         Some(Self::undo)
//!     }
//!     fn lookahead(&self) -> f64 {
//!         1.0
//!     }
//!     fn finish(&self, _lp: LpId, lp: &Lp, stats: &mut ModelStats) {
//!         stats.tally("delay", &lp.delay);
//!         stats.time_average("held", &lp.held);
//!     }
//! }
//!
//! let run = |executor| {
//!     Simulation::new(Hops).lps(8).end_time(50.0).seed(3).executor(executor).run()
//! };
//! let seq = run(Executor::Sequential)?;
//! let reverse = TimeWarpConfig::new(2).state_saving(StateSaving::Reverse);
//! let tw = run(Executor::TimeWarp(reverse))?;
//! assert_eq!(tw.fingerprint, seq.fingerprint);
//! assert_eq!(tw.model_stats, seq.model_stats);
//! # Ok::<(), chronon::SimError>(())
//! ```
//!
//! ## Rules a model keeps
//!
//! - All randomness comes from [`Ctx::rng`]: one stream per LP, derived from the run's seed and
//!   the LP id, saved and restored by the engine.
//! - Events are ordered by (time, sender, sender's send counter), so ties are broken the same way
//!   by every executor.
//! - A send goes to an existing LP with a finite delay of at least [`Model::lookahead`] (and,
//!   where [`Model::topology`] declares links, along a declared link with at least its
//!   lookahead); a send to the LP itself may take any delay >= 0. Anything else ends the run
//!   with a [`SimError::Model`] naming the LP and the time.
//! - Output that must happen once (printing, files) belongs in [`Model::commit`], which runs
//!   exactly once per committed event, even under optimistic execution.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![deny(unreachable_pub, missing_debug_implementations)]

pub mod barrier;
/// Checkpoint and restart: save a run at simulated time T
/// ([`Simulation::checkpoint_every`], [`Simulation::checkpoint_at`]) and continue it later
/// under any executor, thread, process or rank count ([`Simulation::restore`]) with the same
/// committed history.
pub mod checkpoint {
    pub use crate::executor::checkpoint::{
        checkpoint_path, read_manifest, CheckpointPlan, Manifest, PartEntry, RestoredFrom, Saved,
        FORMAT,
    };
}
/// LPs that move between workers at run time ([`Simulation::balance`]).
pub mod balance {
    pub use crate::executor::checkpoint::{BalancePeriod, AUTO_FIRST, AUTO_MIN};
}
pub mod comm;
mod cpu;
mod error;
pub mod event;
pub mod executor;
mod fingerprint;
pub mod gsu;
pub mod limits;
mod loom;
pub mod lp_cost;
pub mod measure;
mod model;
mod model_stats;
pub mod partition;
pub mod placement;
mod preempt;
mod prefetch;
pub use preempt::{
    platform_mode, preemption_cost, tick_overhead, PlatformAlloc, PreemptionCost, TickOverhead,
};
mod program;
pub use program::{program, program_args, set_program, Program};
mod progress;
pub mod queue;
pub mod refcount;
mod rng;
mod run;
#[cfg(target_os = "linux")]
pub mod shm;
mod sim;
mod stats;
pub mod trace;
mod transport;
mod trim;
mod tw_msg;
mod types;
/// Runs over MPI ranks (`mpirun -n R`): detection (always), [`mpi::Mpi`] and the transport
/// behind the cargo feature `mpi`. See `transport/mpi/README.md`.
pub mod mpi {
    pub use crate::transport::mpi::{launched, COMPILED, NOT_COMPILED};
    #[cfg(feature = "mpi")]
    pub use crate::transport::mpi::{lbts_gather_secs, Mpi, RankSafe};
}

pub use error::{panic_message, ConfigError, ModelError, Setting, SimError};
pub use event::{Event, EventKey};
pub use executor::{
    ConservativeConfig, Executor, Runtime, StateSaving, Ticks, TimeWarpConfig,
    DEFAULT_MAX_NULL_MESSAGES, MIN_TICK_US,
};
pub use fingerprint::{Fingerprint, LpDigest};
pub use limits::SizeHint;
pub use model::{
    CommitCtx, Ctx, GlobalCtx, LpId, LpMeta, Model, ModelSeries, ModelStats, ReverseCtx, ReverseFn,
    Time,
};
pub use progress::{Progress, StallDetector};
pub use queue::QueueKind;
pub use rng::LpRng;
#[cfg(all(target_os = "linux", not(chronon_loom)))]
pub use run::procs::is_worker_process;
pub use sim::Simulation;
pub use stats::Report;

/// The README's example is compiled and run as a doctest, so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The tutorial's library example is compiled and run as a doctest (its runner examples are
/// `examples/ring.rs`, checked word for word by that crate's tests).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/tutorial.md")]
struct TutorialDoctests;

// The library's own tests run as a program on the runner does: allocation is platform mode, so
// ticks may preempt by interrupt (preempt/README.md, "Ticks that preempt").
#[cfg(test)]
#[global_allocator]
static TEST_ALLOC: preempt::PlatformAlloc = preempt::PlatformAlloc;
