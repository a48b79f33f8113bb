//! Communication between workers: per-worker mailboxes with a minimum-timestamp register.
//! See `README.md` beside this file for the protocol and its proof sketch.

mod mailbox;

pub use mailbox::{Batch, BatchPool, Mailbox};

#[cfg(all(test, chronon_loom))]
mod loom_tests;
#[cfg(all(test, not(chronon_loom)))]
mod tests;
