//! The shared-memory transport between worker processes on one machine (`--procs`, Linux): a
//! worker is a (process, thread) pair, numbered over every process.
//!
//! - `mesh.rs`: the ring mesh, one bounded SPSC ring per ordered pair of workers in one shared
//!   segment after a header region the protocol sizes and fills; `CHRONON_RING_CAP`;
//! - `ends.rs`: one worker's ends of the mesh (producers, consumers, a private stash), the
//!   bounded-wait push with the protocol's *make room* callback, absorb, receive;
//! - `part.rs`: what one process holds of a mesh run, for both families: the mesh and the
//!   control segment attached once, the full-ring push and the barrier that absorbs while it
//!   waits (each family bringing its own absorb), the copy transport (`--payload copy`);
//! - `net.rs`: the conservative protocols' [`Endpoint`](super::Endpoint) over the mesh
//!   (`ShmNet`, `ShmEnd`): its header holds stash registers, wake-up words and channel clocks,
//!   and the GSU registers are those of the shared `Control` segment;
//! - `shared.rs`: the ends of one process's workers behind per-worker locks, for a protocol
//!   whose transport is one value shared by its threads, beside the process's part (abort
//!   word, end barrier);
//! - `tw.rs`: Time Warp's seam over those shared ends (`ShmWires`): its messages encoded as
//!   ring records (order-stack keys before their event, anti-messages).
//!
//! Invariants and proof sketches: README.md beside this folder, "Shared memory".

#[cfg(not(chronon_loom))]
mod ends;
#[cfg(not(chronon_loom))]
mod mesh;
#[cfg(not(chronon_loom))]
mod net;
#[cfg(not(chronon_loom))]
mod part;
#[cfg(not(chronon_loom))]
mod shared;
#[cfg(not(chronon_loom))]
mod tw;

#[cfg(all(test, chronon_loom))]
mod loom_tests;
#[cfg(all(test, not(chronon_loom)))]
mod tests;

#[cfg(not(chronon_loom))]
pub(crate) use ends::Ends;
#[cfg(not(chronon_loom))]
pub(crate) use mesh::{Mesh, Record};
#[cfg(not(chronon_loom))]
pub(crate) use net::ShmNet;
#[cfg(not(chronon_loom))]
pub(crate) use shared::{SharedEnds, Slot};
#[cfg(not(chronon_loom))]
pub(crate) use tw::ShmWires;

/// A barrier or rendezvous wait longer than this is a hang, not a slow worker.
#[cfg(not(chronon_loom))]
const BARRIER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
