//! Under `mpirun` (MPICH's hydra), one line naming a rank that a signal killed.
//!
//! When a rank dies (`kill -9`, a crash, the OOM killer), hydra kills the other ranks and
//! prints its own banner on stdout, which names a pid and an exit code but not the rank (and
//! often not even the dead process: it names the first rank it cleaned up). So every rank
//! watches the other ranks on its machine — its siblings under the same `hydra_pmi_proxy`,
//! each rank read from `PMI_RANK` in its environment — through a pidfd each (readable the moment
//! the process ends, before its parent reaps it). When one ends by a signal (read from the
//! zombie's `/proc/PID/stat` exit status), the first survivor to see it prints
//! `error: rank R (pid P) was killed by signal S; every rank stops` and every survivor exits
//! with code 1 at once, without waiting for hydra (so no rank is left blocked on the dead
//! one, even under `mpirun -disable-auto-cleanup`).
//!
//! Best effort, and said so in the docs: hydra's cleanup may kill the survivors first (then
//! only its banner is seen); a sibling already reaped when its pidfd is read, or one that
//! exited with a code (every rank's own, orderly exit) is not reported; ranks on other
//! machines are not watched (their proxy's death ends the job through hydra).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fd::OwnedFd;
use rustix::process::{pidfd_open, Pid, PidfdFlags};

/// The watch, while it lasts: dropping it disarms it (the thread stops within a poll).
pub(crate) struct Watch {
    stop: Arc<AtomicBool>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        // Ordering: a lone flag; the thread reads nothing else through it.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One watched rank.
struct Sibling {
    rank: usize,
    pid: i32,
    fd: OwnedFd,
    ended: bool,
}

/// Starts watching this rank's siblings; `None` outside hydra or when there is none.
pub(crate) fn start() -> Option<Watch> {
    let siblings = siblings();
    if siblings.is_empty() {
        return None;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::Builder::new()
        .name("rank-watch".into())
        .spawn(move || watch(siblings, &flag))
        .ok()?;
    Some(Watch { stop })
}

/// Whether this process is the first of the run's ranks to report `pid`'s death (it holds the
/// name `chronon-rank-died-PID` in the abstract socket namespace until it exits).
fn first_to_report(pid: i32) -> bool {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let Ok(name) = SocketAddr::from_abstract_name(format!("chronon-rank-died-{pid}")) else {
        return true;
    };
    match UnixListener::bind_addr(&name) {
        Ok(l) => {
            // Held until the process exits.
            std::mem::forget(l);
            true
        }
        Err(_) => false,
    }
}

/// The other ranks started by this process's parent (the launcher's proxy), with a pidfd each.
fn siblings() -> Vec<Sibling> {
    let me = std::process::id() as i32;
    let Some(parent) = stat_fields(Path::new("/proc/self/stat")).and_then(|f| f[1].parse().ok())
    else {
        return Vec::new();
    };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v = Vec::new();
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let proc_dir = e.path();
        let ppid: Option<i32> = stat_fields(&proc_dir.join("stat")).and_then(|f| f[1].parse().ok());
        if ppid != Some(parent) {
            continue;
        }
        let Some(rank) = env_rank(&proc_dir.join("environ")) else {
            continue;
        };
        let Some(fd) = Pid::from_raw(pid).and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok())
        else {
            continue;
        };
        v.push(Sibling {
            rank,
            pid,
            fd,
            ended: false,
        });
    }
    v
}

/// `PMI_RANK` of a process's environment.
fn env_rank(environ: &Path) -> Option<usize> {
    let env = std::fs::read(environ).ok()?;
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(b"PMI_RANK="))
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
}

/// The fields of a `/proc/PID/stat` after the command name: `[state, ppid, ...]`, the exit
/// status last.
fn stat_fields(path: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(String::from).collect())
}

/// The signal that ended a zombie, if a signal did (`None`: an exit with a code, or already
/// reaped).
fn killed_by(pid: i32) -> Option<i32> {
    let f = stat_fields(&Path::new("/proc").join(pid.to_string()).join("stat"))?;
    if f.first().map(String::as_str) != Some("Z") {
        return None;
    }
    let status: i32 = f.last()?.parse().ok()?;
    let signal = status & 0x7f;
    (signal != 0).then_some(signal)
}

fn watch(mut siblings: Vec<Sibling>, stop: &AtomicBool) {
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 50_000_000,
    };
    // Ordering: a lone flag (see `Watch::drop`).
    while !stop.load(Ordering::Relaxed) {
        let mut fds: Vec<PollFd<'_>> = siblings
            .iter()
            .filter(|s| !s.ended)
            .map(|s| PollFd::new(&s.fd, PollFlags::IN))
            .collect();
        if fds.is_empty() {
            return;
        }
        if poll(&mut fds, Some(&tick)).unwrap_or(0) == 0 {
            continue;
        }
        let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        let mut dead = None;
        for (s, r) in siblings.iter_mut().filter(|s| !s.ended).zip(ready) {
            if r {
                s.ended = true;
                if dead.is_none() {
                    dead = killed_by(s.pid).map(|sig| (s.rank, s.pid, sig));
                }
            }
        }
        let Some((rank, pid, signal)) = dead else {
            continue;
        };
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // The first survivor to get here says it: binding an abstract Unix socket name is
        // atomic and exclusive, and the name goes with the process (nothing is left behind).
        if first_to_report(pid) {
            // One write of the whole line: hydra may kill this process at any moment, and
            // `eprintln!` writes the pieces of its format one by one.
            let line = format!(
                "error: rank {rank} (pid {pid}) was killed by signal {signal}; every rank stops\n"
            );
            use std::io::Write;
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
        // Give the line a moment to reach the launcher, then leave without waiting for hydra.
        std::thread::sleep(Duration::from_millis(20));
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn state(pid: i32) -> Option<String> {
        super::stat_fields(&Path::new("/proc").join(pid.to_string()).join("stat"))
            .map(|f| f[0].clone())
    }

    fn until_zombie(pid: i32) {
        let t0 = Instant::now();
        while state(pid).as_deref() != Some("Z") && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A child killed by a signal and not yet reaped is a zombie whose status names the
    /// signal; one that exited with a code is not reported, nor one already reaped.
    #[test]
    fn a_zombie_killed_by_a_signal_is_reported_and_an_exit_is_not() {
        let mut killed = Command::new("sleep")
            .arg("30")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = killed.id() as i32;
        assert!(Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success());
        let mut exited = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let pid2 = exited.id() as i32;
        until_zombie(pid);
        until_zombie(pid2);
        assert_eq!(super::killed_by(pid), Some(9));
        assert_eq!(super::killed_by(pid2), None);
        let _ = killed.wait();
        let _ = exited.wait();
        assert_eq!(super::killed_by(pid), None);
    }

    /// Only the first caller reports a given death.
    #[test]
    fn one_report_per_death() {
        let fake = i32::MAX - std::process::id() as i32;
        assert!(super::first_to_report(fake));
        assert!(!super::first_to_report(fake));
    }
}
