//! Time Warp against the sequential executor.
