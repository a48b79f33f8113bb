//! Conservative parallel executors: W worker threads own disjoint sets of LPs and never execute
//! an event that an event still to come could precede.
//!
//! - [`window`]: the barrier (YAWNS) algorithm of seed 001 §2.2.2 — one global LBTS per round.
//! - [`lockstep`]: seed 002 Fig. 1 — per-worker SafeTime = max(InClock, GST) per lock-step.
//! - [`null_message`]: Chandy-Misra-Bryant (seed 001 §2.2.1) with per-link lookahead and null
//!   messages between workers.
//!
//! Shared here: the LP table, the worker (its pending set, event execution, per-destination
//! batching of remote events through the mailboxes), and report assembly. Each worker keeps
//! one pending set for all its LPs and pops it in key order below its safe bound, exactly like
//! the sequential executor restricted to its LPs; remote events travel as batches, one per
//! destination worker per flush, payloads moved. Determinism argument: `README.md`.

mod balance;
mod claim;
mod config;
mod launch;
mod lockstep;
mod lookahead;
mod lp_table;
mod null_message;
mod rounds;
mod shared;
mod window;
mod worker;
mod zero_links;

pub(crate) use config::Protocol;
pub use config::{ConservativeConfig, DEFAULT_MAX_NULL_MESSAGES};
pub(crate) use launch::{run, Outcome};
pub(crate) use shared::{Shared, WorkerStats};
pub(crate) use worker::Worker;
