//! Helpers shared by the test binaries that run the real `chronon` binary.
// Each test binary uses a subset of these helpers.
#![allow(dead_code)]

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A small PHOLD run (32 LPs, 2 start events each, end 20): well under a second.
pub const SMALL: &[&str] = &[
    "run",
    "phold",
    "--lps",
    "32",
    "--start-events",
    "2",
    "--end",
    "20",
];

/// Runs `chronon` with `args`: (exit code, stdout, stderr).
pub fn chronon(args: &[&str]) -> (i32, String, String) {
    chronon_at(env!("CARGO_BIN_EXE_chronon"), args)
}

/// Runs the `chronon` binary at `bin` (another build of it, e.g. the release one) with `args`.
pub fn chronon_at(bin: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The fingerprint a summary printed (its hex digits).
pub fn fingerprint(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint"))
        .unwrap_or_else(|| panic!("no fingerprint in {stdout}"))
        .trim()
        .to_string()
}

/// A fresh path for a report in the temp directory (`tag`, this test process, a counter).
pub fn out_path(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir()
        .join(format!(
            "chronon-{tag}-{}-{}.json",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ))
        .to_string_lossy()
        .into_owned()
}

/// The report `run` writes for `args` with `--output` to a fresh file (`run` must exit 0).
pub fn report_by(
    tag: &str,
    args: &[&str],
    run: impl FnOnce(&[&str]) -> (i32, String, String),
) -> serde_json::Value {
    let path = out_path(tag);
    let mut all = args.to_vec();
    all.extend(["--output", &path]);
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    serde_json::from_str(&text).unwrap()
}

/// What every executor's run must have equal to the sequential run's.
pub fn history(r: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "fingerprint": r["fingerprint"],
        "committed": r["committed"],
        "model_stats": r["model_stats"],
        "pending_at_end": r["pending_at_end"],
        "last_time": r["last_time"],
        "complete": r["complete"],
    })
}

/// A scratch file path for one test, in a directory of its own that is removed when the
/// value drops (tests leave nothing in the temporary directory, pass or fail).
pub struct Scratch {
    dir: std::path::PathBuf,
    path: std::path::PathBuf,
}

/// [`Scratch`] named `name`, unique to this test process and this name.
pub fn scratch(prefix: &str, name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join(name);
    Scratch { dir, path }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

/// A CSV text (a header line, then rows without quoted commas) as rows of column -> cell.
pub fn csv_rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(String::from)
        .collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

/// A study's `runs.csv` (`chronon sweep --out DIR`) without the columns that depend on the
/// machine's speed.
pub fn sweep_history(dir: &std::path::Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("runs.csv"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut rows = csv_rows(&text);
    for r in &mut rows {
        r.remove("wall_s");
        r.remove("events_per_s");
    }
    rows
}
