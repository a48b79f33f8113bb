//! What the example programs' tests share.

use std::path::{Path, PathBuf};

/// The example binary `name`: `cargo test` builds the examples before it runs the tests; a run
/// that names its tests (`--test mpi`) builds them first with `cargo build --example NAME`.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/examples/<name>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the target directory");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} was not built (cargo build --example {name})",
        path.display()
    );
    path
}
