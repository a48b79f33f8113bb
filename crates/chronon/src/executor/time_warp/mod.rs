//! Time Warp (Jefferson 1985) on threads, worker processes or MPI ranks (the
//! family as the part runner drives it: `parts.rs`, `ranks/`), organised as in seed 003 §2.1–2.2: each worker owns a set of LPs and dispatches
//! the lowest-timestamp event among them (LTF); workers exchange events and anti-messages
//! through per-worker mailboxes (the bottom-half queues, whose `min` register is BH_min; rings
//! between processes, MPI records between ranks, behind one seam: `transport/tw.rs`); an LP
//! that receives an event in its past, or an anti-message for an event it processed, rolls
//! back (copy state saving with coasting forward, or reverse computation) and cancels what it
//! sent with anti-messages (aggressive cancellation). An
//! asynchronous GVT (`gvt.rs`) lets workers commit and free what is older than GVT, run the
//! commit hooks, and update the fingerprint in commit order. Global events run at GVT
//! (`global.rs`). Protocols and proofs: README.md.

mod admission;
mod cancelled;
mod contexts;
mod endpoint;
mod event;
mod fossil;
// Used by the MPI transport only (feature `mpi`); built and unit-tested without it, where
// nothing outside its tests calls it.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod dgvt;
mod global;
mod global_phase;
mod gvt;
mod history;
mod interval;
mod lp;
mod mail;
mod memory;
mod on_threads;
mod optimism;
mod options;
mod over;
mod parts;
mod preempt;
#[cfg(feature = "mpi")]
mod ranks;
mod report;
mod rollback;
mod round;
mod safe;
mod scratch;
mod setup;
mod shared;
mod stats;
mod worker;

pub use options::{StateSaving, Ticks, TimeWarpConfig, MIN_TICK_US};
#[cfg_attr(chronon_loom, allow(unused_imports))]
pub(crate) use parts::TimeWarp;
pub(crate) use setup::run;
pub(crate) use shared::StateEq;
