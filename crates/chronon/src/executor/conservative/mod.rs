//! Conservative parallel executors: W worker threads own disjoint sets of LPs and never execute
//! an event that an event still to come could precede.
//!
//! - window: the barrier (YAWNS) algorithm of seed 001 §2.2.2 — one global LBTS per round
//!   (`rounds.rs`).
//! - [`lockstep`]: seed 002 Fig. 1 — per-worker SafeTime = max(InClock, GST) per lock-step.
//!   On the work-stealing runtime (`work_stealing.rs`, the seed's Cilk) the same rule at LP
//!   granularity spawns every LP each lock-step by divide and conquer down to rayon tasks of
//!   `threshold` LPs; on the active-threads runtime (`active_threads.rs`) light-weight threads
//!   of `threshold` LPs, bound to worker threads, run it; `lp_step.rs` is their shared piece.
//! - [`null_message`]: Chandy-Misra-Bryant (seed 001 §2.2.1) with per-link lookahead and null
//!   messages between workers.
//!
//! What the protocols decide (when an event is safe, when to stop) lives in their files:
//! `rounds.rs` (the round driver of window and lock-step, and the window's LBTS), `lockstep.rs`,
//! `null_message.rs`, `zero_links.rs` (null messages' start-up check) and `lookahead.rs` (the
//! lookaheads and crossing LPs they derive from the declared links). How events move lives
//! apart: `worker.rs` executes below a bound it is given and batches events per destination
//! worker, flushed through the worker's transport endpoint (`crate::transport`: mailboxes and
//! the GSU between threads, shared-memory rings between processes); `shared.rs` is what the
//! workers share; `part.rs` sets up a part of a run (every worker on threads, or one worker
//! process or rank: mapping, links, lookaheads, start-up checks, globals, LPs, pending sets);
//! `parts.rs` is the family as the part runner (`crate::run`) sees it: its checks, a part's
//! threads and output, and the one report from the parts' outputs (a run on threads makes it
//! too); `over/` runs the family over each transport (`threads.rs`: the whole run on threads;
//! `shm.rs`, `mpi.rs`: a part across processes or ranks), the only files of the family that
//! name a concrete transport; `outcome.rs` is what a worker's loop hands back and its figures;
//! `config.rs` the
//! settings; `lp_table.rs`, `balance.rs`, `claim.rs` LP ownership and load balancing. Each
//! worker keeps one pending set for all its LPs and pops it in key order below its safe bound,
//! exactly like the sequential executor restricted to its LPs; remote events travel as batches,
//! one per destination worker per flush, payloads moved. Determinism argument: `README.md`.

mod active_threads;
mod balance;
mod claim;
mod config;
mod lockstep;
mod lookahead;
mod lp_step;
mod lp_table;
mod null_message;
mod outcome;
mod over;
mod part;
mod parts;
mod rounds;
mod shared;
mod work_stealing;
mod worker;
mod zero_links;

pub(crate) use config::Protocol;
pub use config::{ConservativeConfig, Runtime, DEFAULT_MAX_NULL_MESSAGES};
pub(crate) use outcome::Outcome;
pub(crate) use over::threads::run;
#[cfg_attr(chronon_loom, allow(unused_imports))]
pub(crate) use parts::Conservative;
pub(crate) use shared::{Shared, WorkerStats};
pub(crate) use worker::Worker;
