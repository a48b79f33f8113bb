//! Models for chronon: PHOLD and (as they land) the seeds' experiments.
#![warn(missing_docs)]
#![deny(unreachable_pub, missing_debug_implementations)]

pub mod faulty;
pub mod phold;

pub use phold::Phold;
