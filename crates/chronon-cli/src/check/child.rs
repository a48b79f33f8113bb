//! `check`'s children: what became of one (`Ran`), waiting for one with a time limit, and the
//! scratch directory their reports and traces go to.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Failure;

/// What happened to one child.
pub(super) enum Ran {
    /// Exited 0 with a report.
    Report(Value, Duration),
    /// Exited with this code; the first line of its stderr.
    Exit(i32, String),
    /// Killed at the time limit.
    Timeout(Duration),
    /// Could not be started or its report could not be read.
    Broken(String),
}

/// Waits for `child` up to `limit`; kills and reaps it past that (`None`). An `mpirun` child
/// (`launcher`) gets SIGTERM first, which it forwards to its ranks and then cleans up (a
/// SIGKILL would leave its ranks running), and SIGKILL only if it is still there 5 s later.
pub(super) fn wait_with_limit(
    child: &mut Child,
    limit: Duration,
    launcher: bool,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    let mut nap = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() >= deadline => {
                if launcher {
                    let _ = Command::new("kill")
                        .args(["-TERM", &child.id().to_string()])
                        .status();
                    let grace = Instant::now() + Duration::from_secs(5);
                    while Instant::now() < grace {
                        if let Ok(Some(_)) = child.try_wait() {
                            return None;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(50));
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// `flags` with `--end` set to `end` (in place, or added when the flags have none).
pub(crate) fn with_end(flags: &[String], end: f64) -> Vec<String> {
    let mut f = flags.to_vec();
    match f.iter().position(|a| a == "--end") {
        Some(i) if i + 1 < f.len() => f[i + 1] = end.to_string(),
        _ => f.extend(["--end".to_string(), end.to_string()]),
    }
    f
}

pub(super) fn describe(c: &Ran) -> String {
    match c {
        Ran::Report(_, _) => "did not complete".into(),
        Ran::Exit(code, msg) => format!("exited with code {code}: {msg}"),
        Ran::Timeout(limit) => format!(
            "was still running after {:.1} s (too slow or hung) and was killed",
            limit.as_secs_f64()
        ),
        Ran::Broken(msg) => msg.clone(),
    }
}

/// A private scratch directory for the children's reports, removed when the check ends.
pub(super) struct ScratchDir {
    pub(super) path: PathBuf,
}

impl ScratchDir {
    pub(super) fn new() -> Result<Self, Failure> {
        let path = std::env::temp_dir().join(format!("chronon-check-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", path.display())))?;
        Ok(ScratchDir { path })
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(Path::new(&self.path));
    }
}
