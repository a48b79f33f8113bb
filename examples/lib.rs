//! Example simulation programs built on chronon's runner, one file each (the `[[example]]`
//! targets in this folder): `ring` (a token ring, the tutorial's program), `tandem` (M/M/1
//! stations in a line, checked against queueing theory), `reversible` (reverse computation for
//! Time Warp), `links` (a declared topology with a lookahead per link) and `order-bug` (a model
//! with a planted bug that `check` finds). Run one with
//! `cargo run --release --example ring -- run --sync window --threads 2`.
