//! The one switch between std and loom synchronization primitives: code that uses atomics
//! imports them from here, and `RUSTFLAGS="--cfg chronon_loom" cargo test --release -p chronon
//! loom` model-checks it.

#[cfg(chronon_loom)]
pub(crate) use loom::sync::atomic;
#[cfg(chronon_loom)]
#[allow(unused_imports)]
pub(crate) use loom::{sync::Arc, sync::Mutex, thread};

#[cfg(not(chronon_loom))]
pub(crate) use std::sync::atomic;
#[cfg(not(chronon_loom))]
#[allow(unused_imports)]
pub(crate) use std::{sync::Arc, sync::Mutex, thread};
