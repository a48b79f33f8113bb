//! Process figures from /proc.

/// The peak resident set size of this process, in bytes (0 where /proc is unavailable).
pub(crate) fn peak_rss_bytes() -> u64 {
    status_kib("VmHWM:") * 1024
}

/// The current resident set size, in bytes.
pub(crate) fn rss_bytes() -> u64 {
    status_kib("VmRSS:") * 1024
}

/// Resets the peak RSS to the current RSS (Linux `clear_refs` 5), so that one process can
/// measure the peak of several runs in turn. Returns whether it worked.
pub(crate) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
