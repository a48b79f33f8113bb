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

/// For the models' tests: writes `v` as JSON, reads it back and checks that what it read
/// writes the same JSON (states need not be `PartialEq`); returns what it read.
#[cfg(test)]
pub(crate) fn json_again<T: serde::Serialize + serde::de::DeserializeOwned>(v: &T) -> T {
    let json = serde_json::to_string(v).expect("writes JSON");
    let back: T = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(serde_json::to_string(&back).expect("writes JSON"), json);
    back
}
