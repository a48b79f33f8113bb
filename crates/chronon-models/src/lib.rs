//! Models for chronon: PHOLD and the seeds' experiments (see docs/models.md).
//!
//! Every model keeps all per-LP data in its `State`, talks between LPs only through events and
//! declares a positive lookahead where it has one, so it runs unchanged under every executor.
//! Models whose LPs need timers shorter than the lookahead (arrival processes, service
//! completions) generate them one window ahead or compute departure times directly (Lindley's
//! recursion) instead of sending short self-events.
#![warn(missing_docs)]
#![deny(unreachable_pub, missing_debug_implementations)]

mod check;
pub mod datastore;
pub mod faulty;
pub mod manufacturing;
pub mod net;
pub mod pcs;
pub mod phold;
pub mod phold_phases;
pub mod random;
pub mod simplesim;

pub use datastore::DataStore;
pub use manufacturing::Manufacturing;
pub use net::campus::Campus;
pub use net::star_clique::StarClique;
pub use pcs::Pcs;
pub use phold::Phold;
pub use phold_phases::PholdPhases;
pub use random::Random;
pub use simplesim::SimpleSim;
