//! Starting worker processes and keeping them tidy.
//!
//! The parent re-executes its own program ([`crate::program`]: by default its binary) P times — a bare `fork`
//! after threads exist is not safe — with three environment variables: the worker's role
//! (`index/procs`), the parent's pid, and the numbers of the segment descriptors it inherits
//! (their `FD_CLOEXEC` is cleared in the child only, between fork and exec). Hygiene:
//!
//! - every child asks the kernel to `SIGKILL` it when its parent dies
//!   (`prctl(PR_SET_PDEATHSIG)`, set before exec), and checks that the parent is still the one
//!   that started it (the parent may have died before the `prctl`);
//! - the parent polls its children every 10 ms: the first one that exits with a failure (a
//!   signal such as `kill -9`, or a non-zero code) makes it print one line naming that process,
//!   `SIGKILL` every other child, reap them all and return [`LaunchError::WorkerDied`];
//! - a stop request (a flag the caller's Ctrl-C handler sets) does the same without blaming a
//!   child; a plain SIGINT that kills the parent kills the children through the death signal;
//! - a child starts with SIGINT blocked (kept across exec) and unblocks it when it reaches its
//!   run ([`Worker::from_env`]), by when its program has installed its Ctrl-C handler: a
//!   terminal's Ctrl-C during its start does not kill it.
//!
//! Segments are memfds, so no file is left in `/dev/shm` whatever happens.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits: [`Launcher::run`]
//! blocks that thread until every child is reaped, so it cannot exit first.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::Segment;

/// `index/procs` of a worker process.
pub const ROLE_ENV: &str = "CHRONON_SHM_WORKER";
/// The pid of the parent that started the worker.
pub const PARENT_ENV: &str = "CHRONON_SHM_PARENT";
/// Comma-separated descriptor numbers of the segments the worker inherits, in the order the
/// parent passed them.
pub const FDS_ENV: &str = "CHRONON_SHM_FDS";

/// Starts P worker processes running this program and waits for them (see module docs).
#[derive(Debug)]
pub struct Launcher<'a> {
    procs: usize,
    args: Vec<OsString>,
    fds: Vec<BorrowedFd<'a>>,
    env: Vec<(OsString, OsString)>,
    stop: Option<Arc<AtomicBool>>,
    interrupt: Option<Arc<crate::progress::Progress>>,
    quiet: bool,
}

/// How a multi-process run ended without success.
#[derive(Debug)]
#[non_exhaustive]
pub enum LaunchError {
    /// A worker could not be started.
    Spawn(io::Error),
    /// Worker `index` (process `pid`) failed first; every other worker was stopped.
    WorkerDied {
        /// Its worker number.
        index: usize,
        /// Its process id.
        pid: u32,
        /// How it ended.
        status: ExitStatus,
    },
    /// The stop flag was set; every worker was stopped.
    Stopped,
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Spawn(e) => write!(f, "cannot start a worker process: {e}"),
            LaunchError::WorkerDied { index, pid, status } => {
                write!(f, "worker process {index} (pid {pid}) ")?;
                match (status.signal(), status.code()) {
                    (Some(s), _) => write!(f, "was killed by signal {s}"),
                    (None, Some(c)) => write!(f, "exited with code {c}"),
                    _ => write!(f, "ended: {status}"),
                }?;
                write!(f, "; every other process was stopped")
            }
            LaunchError::Stopped => write!(f, "stopped: every worker process was stopped"),
        }
    }
}
impl std::error::Error for LaunchError {}

impl<'a> Launcher<'a> {
    /// `procs` workers, no extra arguments, no segments.
    pub fn new(procs: usize) -> Self {
        Launcher {
            procs,
            args: Vec::new(),
            fds: Vec::new(),
            env: Vec::new(),
            stop: None,
            interrupt: None,
            quiet: false,
        }
    }

    /// An argument for every worker's command line.
    pub fn arg(mut self, a: impl Into<OsString>) -> Self {
        self.args.push(a.into());
        self
    }

    /// Arguments for every worker's command line.
    pub fn args<S: Into<OsString>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// A segment every worker inherits ([`Worker::segment`] with the same position).
    pub fn segment(mut self, seg: &'a Segment) -> Self {
        self.fds.push(seg.fd());
        self
    }

    /// Any other descriptor every worker inherits (a pipe end, say), in the same numbering as
    /// segments ([`Worker::fd`]).
    pub fn fd(mut self, fd: BorrowedFd<'a>) -> Self {
        self.fds.push(fd);
        self
    }

    /// An environment variable for every worker.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// A flag that, once set (e.g. by a Ctrl-C handler), stops every worker.
    pub fn stop_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop = Some(flag);
        self
    }

    /// Passes a stop request on: once `progress` asks the run to stop (a Ctrl-C or SIGINT
    /// that reached this process alone, or a host that stops the run), every running worker
    /// gets one SIGINT, as from a terminal's Ctrl-C, and stops cleanly with its report.
    pub fn interrupt_on(mut self, progress: Arc<crate::progress::Progress>) -> Self {
        self.interrupt = Some(progress);
        self
    }

    /// Do not print the line naming a dead worker (the error still names it).
    pub fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    /// Starts the workers and waits until all exit. `Ok` iff every one exited with code 0.
    pub fn run(self) -> Result<(), LaunchError> {
        let (exe, prefix) = crate::program::program().map_err(LaunchError::Spawn)?;
        let raw: Vec<RawFd> = self.fds.iter().map(|f| f.as_raw_fd()).collect();
        let list = raw
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut children: Vec<Option<Child>> = Vec::with_capacity(self.procs);
        for index in 0..self.procs {
            let mut cmd = Command::new(&exe);
            cmd.args(&prefix)
                .args(&self.args)
                .env(ROLE_ENV, format!("{index}/{}", self.procs))
                .env(PARENT_ENV, std::process::id().to_string())
                .env(FDS_ENV, &list)
                .envs(self.env.iter().map(|(k, v)| (k, v)));
            let fds = raw.clone();
            // Safety: the closure runs between fork and exec and makes only async-signal-safe
            // calls (prctl, sigemptyset, sigaddset, sigprocmask, fcntl) on memory allocated
            // before the fork or on its own stack; it allocates nothing and takes no lock.
            unsafe {
                cmd.pre_exec(move || {
                    rustix::process::set_parent_process_death_signal(Some(
                        rustix::process::Signal::KILL,
                    ))?;
                    // SIGINT waits (blocked, kept across exec) until the worker reaches its
                    // run, after its program installed its Ctrl-C handler: a terminal's Ctrl-C
                    // that comes while it starts does not kill it (`Worker::from_env`).
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, libc::SIGINT);
                    libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                    for &fd in &fds {
                        // Safety: `fd` is open in the parent and so in this forked child.
                        let fd = BorrowedFd::borrow_raw(fd);
                        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
                    }
                    Ok(())
                })
            };
            match cmd.spawn() {
                Ok(c) => children.push(Some(c)),
                Err(e) => {
                    kill_all(&mut children);
                    return Err(LaunchError::Spawn(e));
                }
            }
        }
        let mut interrupted = false;
        loop {
            let mut running = 0;
            for (index, slot) in children.iter_mut().enumerate() {
                let Some(child) = slot else { continue };
                match child.try_wait() {
                    Ok(None) => running += 1,
                    Ok(Some(status)) => {
                        let pid = child.id();
                        *slot = None;
                        if !status.success() {
                            let err = LaunchError::WorkerDied { index, pid, status };
                            if !self.quiet {
                                eprintln!("chronon: {err}");
                            }
                            kill_all(&mut children);
                            return Err(err);
                        }
                    }
                    Err(_) => running += 1,
                }
            }
            if running == 0 {
                return Ok(());
            }
            if self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
                kill_all(&mut children);
                return Err(LaunchError::Stopped);
            }
            if !interrupted && self.interrupt.as_ref().is_some_and(|p| p.stop_requested()) {
                interrupted = true;
                for c in children.iter().flatten() {
                    let pid = rustix::process::Pid::from_raw(c.id() as i32);
                    if let Some(pid) = pid {
                        // A worker that already exited is reaped by `try_wait` above.
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Lets SIGINT reach this thread again (the launcher blocked it for the worker's start): a
/// Ctrl-C that came meanwhile is delivered now, to the program's handler if it has one.
fn unblock_sigint() {
    // Safety: plain libc calls on a signal set on this stack.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// SIGKILLs and reaps every child still running.
fn kill_all(children: &mut [Option<Child>]) {
    for c in children.iter_mut().flatten() {
        let _ = c.kill();
    }
    for c in children.iter_mut() {
        if let Some(mut child) = c.take() {
            let _ = child.wait();
        }
    }
}

/// What a worker process knows about itself.
#[derive(Debug)]
pub struct Worker {
    /// Its number, `0..procs`.
    pub index: usize,
    /// How many workers the parent started.
    pub procs: usize,
    /// The parent's pid.
    pub parent: u32,
    fds: Vec<Option<RawFd>>,
}

impl Worker {
    /// `None` in a process that is not a worker; otherwise who this worker is, or an error
    /// (`NotConnected`) if its parent is already gone: the worker should then exit at once.
    /// Only the first call hands out the inherited descriptors; later calls fail.
    pub fn from_env() -> Option<io::Result<Worker>> {
        static TAKEN: AtomicBool = AtomicBool::new(false);
        let role = std::env::var(ROLE_ENV).ok()?;
        if TAKEN.swap(true, Ordering::SeqCst) {
            return Some(Err(io::Error::other(
                "the worker's descriptors were taken by an earlier Worker::from_env",
            )));
        }
        unblock_sigint();
        Some(Self::parse(&role))
    }

    fn parse(role: &str) -> io::Result<Worker> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("bad {what}"));
        let (i, p) = role.split_once('/').ok_or_else(|| bad(ROLE_ENV))?;
        let index = i.parse().map_err(|_| bad(ROLE_ENV))?;
        let procs = p.parse().map_err(|_| bad(ROLE_ENV))?;
        let parent: u32 = std::env::var(PARENT_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad(PARENT_ENV))?;
        let fds = std::env::var(FDS_ENV).unwrap_or_default();
        let fds = fds
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map(Some).map_err(|_| bad(FDS_ENV)))
            .collect::<io::Result<Vec<_>>>()?;
        let ppid = rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32);
        if ppid != Some(parent) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("worker process {index}: its parent {parent} is gone"),
            ));
        }
        Ok(Worker {
            index,
            procs,
            parent,
            fds,
        })
    }

    /// Takes the `i`-th descriptor the parent passed, unmapped (each can be taken once).
    pub fn fd(&mut self, i: usize) -> io::Result<std::os::fd::OwnedFd> {
        let fd = self
            .fds
            .get_mut(i)
            .and_then(Option::take)
            .ok_or_else(|| io::Error::other(format!("no descriptor {i} (or taken already)")))?;
        // Safety: the parent passed `fd` for this worker to own, and `take` above makes sure we
        // own it only once.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
        Ok(fd)
    }

    /// Maps the `i`-th segment the parent passed (each can be taken once).
    pub fn segment(&mut self, i: usize) -> io::Result<Segment> {
        let fd = self
            .fds
            .get_mut(i)
            .and_then(Option::take)
            .ok_or_else(|| io::Error::other(format!("no segment {i} (or taken already)")))?;
        // Safety: the parent passed `fd` for this worker to own, and `take` above makes sure we
        // own it only once.
        let seg = unsafe { Segment::from_raw_fd(fd) }?;
        // It stays open across any exec this worker does only if it says so.
        rustix::io::fcntl_setfd(seg.fd(), rustix::io::FdFlags::CLOEXEC)?;
        Ok(seg)
    }
}
