//! Shared memory between worker processes on one machine (seed 000 §3.1–3.3):
//!
//! - [`Segment`]: anonymous shared memory (memfd, mode 0600) passed by descriptor;
//! - [`Heap`] and [`BPtr`]: per-process shared heaps in size classes, zero-copy pointers that
//!   mean the same in every process, reference counts in shared memory, reuse deferred past GVT;
//! - [`ShmSafe`]: what may cross a process boundary, checked by the type system;
//! - [`Producer`]/[`Consumer`]: bounded SPSC rings of records with a minimum-timestamp register
//!   and the seed's bounded wait;
//! - [`Control`]: the GSU and GVT registers, an abort word and a barrier in a shared segment;
//! - [`Launcher`]/[`Worker`]: worker processes started by re-executing this binary, with the
//!   their hygiene (a dead worker stops all, children die with the parent).
//!
//! Linux only. Protocols, invariants and proof sketches: `README.md` beside this file.

mod bptr;
mod control;
pub(crate) mod futex;
mod heap;
mod heap_config;
mod launch;
pub mod local;
pub mod registry;
mod retstack;
mod ring;
pub(crate) mod safe;
mod segment;
mod serde_item;
mod slice;

pub use bptr::BPtr;
pub use control::{BarrierError, Control, MAX_WORKERS};
#[cfg(not(chronon_loom))]
pub(crate) use heap::FreedAt;
pub use heap::{set_time, time, Heap, HeapConfig, HeapError, HeapStats, ITEM_ALIGN};
pub use launch::{LaunchError, Launcher, Worker, FDS_ENV, PARENT_ENV, ROLE_ENV};
pub(crate) use local::set_thread_heap_config;
pub use local::{release_thread_heap, set_thread_gvt, thread_heap_tight, with_thread_heap};
pub use ring::{init_ring, local_ring, ring_bytes, Consumer, Full, Producer, RingRegister};
pub use safe::ShmSafe;
pub use segment::{page_size, Segment};
pub use serde_item::ItemSerde;
pub use slice::{Bytes, Slice};

#[cfg(all(test, chronon_loom))]
mod loom_tests;
#[cfg(all(test, not(chronon_loom)))]
mod tests;
