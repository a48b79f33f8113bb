//! The split of a rank into a waiting parent and a running child, and the parent's wait.
//! Protocol, invariants and proof sketch: this folder's README.

use std::io::Write;

/// The signals the parent waits for: the child's end, and those a user or the launcher sends
/// to stop a run (which reach the child too, or are passed on to it).
const WAITED: [libc::c_int; 8] = [
    libc::SIGCHLD,
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Under MPICH's hydra (`PMI_RANK`/`PMI_SIZE` in the environment, more than one rank), splits
/// this process: returns in the child, which runs chronon; the parent never returns (it ends as the
/// child did). Outside a launcher, or when the fork fails, returns at once and nothing changes.
///
/// Must be called before any thread exists (the first call of `main`): the child of a fork
/// holds only the forking thread.
pub(crate) fn supervise() {
    // Hydra only: the protocol rests on its PMI socket and its group signals (README).
    let Some((rank, _)) =
        chronon::mpi::launched().filter(|_| std::env::var_os("PMI_RANK").is_some())
    else {
        return;
    };
    // Safety: `sigset_t` is plain data; all-zero is a valid value, and `sigemptyset` then
    // initializes it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Safety: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Safety: both sets are valid and exclusively borrowed; the signal numbers are valid. The
    // set is blocked before the fork so that no signal meant for the parent (the child's end
    // above all) can arrive before it waits: it stays pending until `sigwaitinfo` takes it.
    unsafe {
        libc::sigemptyset(&mut set);
        for s in WAITED {
            libc::sigaddset(&mut set, s);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) != 0 {
            return;
        }
    }
    // Safety: `getpid` has no preconditions.
    let parent = unsafe { libc::getpid() };
    // Safety: the process has one thread (this function's contract), so the child is a full
    // copy and may go on running Rust code.
    let child = unsafe { libc::fork() };
    if child < 0 {
        // No child: run unsupervised, as before.
        // Safety: `old` was filled by the call that blocked the set.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        return;
    }
    if child == 0 {
        // Safety: plain system calls on this process. The death signal makes the child die
        // with the parent (whoever kills the parent, hydra's cleanup included); the check
        // after it covers a parent that died before the call.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        return;
    }
    wait_for(child, rank, &set)
}

/// Sets the calling thread's name (the process's `comm` when called from the main thread),
/// cut to the kernel's 15 bytes.
pub(super) fn set_name(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // Safety: `buf` is a NUL-terminated string of at most 16 bytes, as PR_SET_NAME reads.
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong) };
}

/// The parent's life: wait for the child's end, pass on the stop signals that were not sent to
/// the whole process group, and end as the child did.
fn wait_for(child: libc::pid_t, rank: usize, set: &libc::sigset_t) -> ! {
    set_name("chronon-parent");
    // The parent keeps every descriptor it was started with, hydra's PMI socket above all:
    // hydra's proxy ends the job the moment a rank's PMI socket closes, and while the parent
    // holds its copy the child's death cannot close it, so hydra learns of it only from the
    // parent's own end, after the line.
    // Safety: `getppid` has no preconditions.
    let launcher = unsafe { libc::getppid() };
    let mut received: u64 = 0;
    loop {
        // Safety: `siginfo_t` is plain data; all-zero is a valid value for the call to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // Safety: `set` is a valid, initialized set; `info` is exclusively borrowed.
        let sig = unsafe { libc::sigwaitinfo(set, &mut info) };
        if sig < 0 {
            continue; // EINTR
        }
        if sig == libc::SIGCHLD {
            let mut status = 0;
            // Safety: `status` is exclusively borrowed; `child` is this process's child.
            if unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) } == child {
                end_as(child, status, rank, received, launcher);
            }
            continue;
        }
        received |= bit(sig);
        // Safety: reading the sender of a signal that `sigwaitinfo` filled in.
        let sender = unsafe { info.si_pid() };
        // The launcher signals each rank's whole process group (hydra's proxy: `killpg`), which
        // holds the child: passing it on would deliver it twice (a second Ctrl-C ends a run at
        // once). Anyone else signalled the parent alone, meaning the rank.
        if sender != launcher {
            // Safety: `child` is this process's child, not yet reaped, so its pid is its own.
            unsafe { libc::kill(child, sig) };
        }
    }
}

/// How the parent ends, from the child's wait status and the signals the parent received.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The child exited with this code.
    Exit(i32),
    /// The child was ended by this signal; `own`: the parent did not receive it too (not the
    /// launcher's signal to the whole group, nor one the parent passed on), so it is the rank's
    /// own death (`kill -9` of the rank, a crash, the OOM killer) and the parent says it.
    Signal { sig: i32, own: bool },
}

fn end_of(status: libc::c_int, received: u64) -> End {
    if libc::WIFEXITED(status) {
        return End::Exit(libc::WEXITSTATUS(status));
    }
    let sig = libc::WTERMSIG(status);
    End::Signal {
        sig,
        own: received & bit(sig) == 0,
    }
}

/// The parent's one line for a rank's own death.
fn line(rank: usize, pid: libc::pid_t, sig: i32) -> String {
    format!("error: rank {rank} (pid {pid}) was killed by signal {sig}; every rank stops\n")
}

/// Ends the parent as the child ended: the same exit code, or the same signal. For the rank's
/// own death the parent first says it in one line and ends the job's other ranks on this
/// machine.
fn end_as(child: libc::pid_t, status: libc::c_int, rank: usize, received: u64, launcher: i32) -> ! {
    let sig = match end_of(status, received) {
        // Safety: ends this process; the parent has nothing buffered to flush.
        End::Exit(code) => unsafe { libc::_exit(code) },
        End::Signal { sig, own } => {
            if own {
                // One write of the whole line: a pipe write that short is atomic.
                let _ = std::io::stderr()
                    .lock()
                    .write_all(line(rank, child, sig).as_bytes());
                // Safety: `getpid` has no preconditions.
                let me = unsafe { libc::getpid() };
                for pid in super::siblings::pids(launcher, me) {
                    // Safety: a signal to a rank of this job; SIGKILL of a sibling's parent
                    // takes its child with it (the child's death signal).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            sig
        }
    };
    // Safety: restores the default action of `sig` and unblocks it, then raises it on this
    // process, which ends it as the child ended (the launcher reports the same signal); no core
    // file for the parent (`RLIMIT_CORE` 0). Should the signal not end the process, the exit
    // below does.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(sig, libc::SIG_DFL);
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}

/// `sig`'s bit in a set of signal numbers (0 for a number past 63).
fn bit(sig: libc::c_int) -> u64 {
    1u64.checked_shl(sig as u32).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{bit, end_of, line, End};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// The wait status of a real child: `sh -c script`.
    fn status_of(script: &str) -> libc::c_int {
        Command::new("sh")
            .args(["-c", script])
            .status()
            .unwrap()
            .into_raw()
    }

    /// An exit code is passed on; a signal is the rank's own unless the parent received it
    /// too.
    #[test]
    fn the_parent_ends_as_its_child_and_says_only_the_childs_own_death() {
        assert_eq!(end_of(status_of("exit 0"), 0), End::Exit(0));
        assert_eq!(
            end_of(status_of("exit 130"), bit(libc::SIGINT)),
            End::Exit(130)
        );
        let killed = status_of("kill -9 $$");
        assert_eq!(end_of(killed, 0), End::Signal { sig: 9, own: true });
        let termed = status_of("kill -TERM $$");
        assert_eq!(end_of(termed, 0), End::Signal { sig: 15, own: true });
        assert_eq!(
            end_of(termed, bit(libc::SIGTERM) | bit(libc::SIGINT)),
            End::Signal {
                sig: 15,
                own: false
            }
        );
        assert_eq!(
            end_of(termed, bit(libc::SIGINT)),
            End::Signal { sig: 15, own: true }
        );
        assert_eq!(bit(64), 0);
        assert_eq!(
            line(1, 4242, 9),
            "error: rank 1 (pid 4242) was killed by signal 9; every rank stops\n"
        );
    }
}
