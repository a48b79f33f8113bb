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
            "was still running after {:.1} s (slow or hung) and was killed",
            limit.as_secs_f64()
        ),
        Ran::Broken(msg) => msg.clone(),
    }
}

/// How long a parallel run may take before it counts as hung: `(floor + factor × seq)`, `seq`
/// the sequential run's own time (child start included), times the oversubscription of its
/// `workers` (threads × processes or ranks) over the `cores` this process may use, when there
/// are more workers than cores (each then gets a share of a core, and a conservative executor
/// waits for the slowest). A run that is merely slower than that is still a failure: no
/// executor should be that much slower than seq on the same machine.
pub(super) fn time_limit(
    seq: Duration,
    (workers, cores): (usize, usize),
    factor: f64,
    floor: Duration,
) -> Duration {
    let over = (workers as f64 / cores.max(1) as f64).max(1.0);
    (floor + seq.mul_f64(factor)).mul_f64(over)
}

/// The workers of a run with executor flags `exec` (`--threads` × `--procs`, or × `ranks`).
pub(super) fn workers(exec: &[String], ranks: Option<usize>) -> usize {
    let value = |flag: &str| {
        exec.iter()
            .position(|a| a == flag)
            .and_then(|i| exec.get(i + 1))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let threads = value("--threads").unwrap_or(1).max(1);
    threads * ranks.or(value("--procs")).unwrap_or(1).max(1)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn the_limit_grows_with_the_sequential_time_and_the_oversubscription() {
        let floor = Duration::from_secs(20);
        let seq = Duration::from_millis(1500);
        // As many workers as cores, or fewer: the floor plus the multiple of seq.
        let fit = time_limit(seq, (2, 2), 100.0, floor);
        assert_eq!(fit, Duration::from_secs(170));
        assert_eq!(time_limit(seq, (1, 16), 100.0, floor), fit);
        // 4 threads x 3 processes on 2 cores: six workers per core.
        assert_eq!(time_limit(seq, (12, 2), 100.0, floor), fit * 6);
        // A fast model still gets the floor; no cores known counts as one.
        let tiny = time_limit(Duration::ZERO, (3, 0), 100.0, floor);
        assert_eq!(tiny, Duration::from_secs(60));
        // A longer sequential run, a longer limit.
        assert!(time_limit(seq * 2, (2, 2), 100.0, floor) > fit);
    }

    #[test]
    fn workers_are_threads_times_processes_or_ranks() {
        assert_eq!(
            workers(&words("--sync window --threads 4 --procs 3"), None),
            12
        );
        assert_eq!(workers(&words("--sync timewarp --threads 2"), None), 2);
        assert_eq!(workers(&words("--sync lockstep --threads 2"), Some(3)), 6);
        assert_eq!(workers(&words("--sync seq"), None), 1);
    }
}
