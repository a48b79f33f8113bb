//! CPU time of the calling thread, from the OS (`getrusage(RUSAGE_THREAD)` on Linux), so that
//! a report can show what each worker cost and not only how long the run took.

/// User and system CPU time of the calling thread, in seconds (`None` where the OS does not
/// report per-thread figures).
pub(crate) fn thread_times() -> Option<(f64, f64)> {
    #[cfg(target_os = "linux")]
    {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // Safety: `getrusage` writes one `rusage` through the pointer, which points to a
        // zero-initialized `rusage` we own; nothing else aliases it.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // Safety: `getrusage` returned 0, so it filled the struct (and it was zeroed before).
        let ru = unsafe { ru.assume_init() };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Some((secs(ru.ru_utime), secs(ru.ru_stime)))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_busy_thread_accumulates_user_time() {
        let Some((u0, _)) = super::thread_times() else {
            return; // not reported on this OS
        };
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while start.elapsed().as_millis() < 50 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let (u1, s1) = super::thread_times().expect("reported once, reported again");
        assert!(
            u1 + s1 > u0,
            "thread CPU time did not grow: {u0} -> {u1} + {s1}"
        );
    }
}
