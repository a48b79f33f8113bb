//! The engine's two basic types, at the bottom of every layer: simulated time and the number
//! of a logical process. The model API re-exports them (`chronon::Time`, `chronon::LpId`).

/// Simulated time. Always finite and non-negative inside the engine.
pub type Time = f64;

/// The index of a logical process, `0..lps`.
pub type LpId = u32;
