//! Waiting on a 32-bit word in shared memory: spin with backoff, yield, then sleep in the
//! kernel on a *shared* futex (not `FUTEX_PRIVATE`, so waiters and wakers may be in different
//! processes; std's parking is process-private and cannot be used here).

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::{Duration, Instant};

use rustix::thread::futex;

/// Sleeps while `word == expected`, for at most `timeout` (spurious returns are possible:
/// callers re-check their condition).
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = futex::Timespec {
        tv_sec: timeout.as_secs() as i64,
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    // EAGAIN (the word already changed), EINTR and ETIMEDOUT all mean "re-check".
    let _ = futex::wait(word, futex::Flags::empty(), expected, Some(&ts));
}

/// Wakes every process and thread sleeping on `word`.
pub(crate) fn wake_all(word: &AtomicU32) {
    let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
}

/// Waits until `ready()` holds or `deadline` passes (returns whether it holds). Spins with a
/// growing pause, then yields, then sleeps on `word` (re-reading it first, so a change made
/// between the check and the sleep is not slept through) in slices of at most 1 ms.
pub(crate) fn wait_until(
    word: &AtomicU32,
    deadline: Instant,
    mut ready: impl FnMut() -> bool,
) -> bool {
    let mut round = 0u32;
    loop {
        let seen = word.load(SeqCst);
        if ready() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        if round < 6 {
            for _ in 0..(1 << round) {
                std::hint::spin_loop();
            }
        } else if round < 12 {
            std::thread::yield_now();
        } else {
            wait(word, seen, (deadline - now).min(Duration::from_millis(1)));
        }
        round = round.saturating_add(1);
    }
}
